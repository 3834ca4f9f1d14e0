"""gradrules demo: a handful of steps on a tiny model. The loss goes down, and
the Hessian-vector product and the jacfwd of the logits agree with the same
model in plain jax.numpy."""

import io

import numpy as np
import pytest

from gradrules import demo

TINY = ["--steps", "20", "--d-model", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
        "--seq", "16", "--batch", "8", "--seed", "3"]


def test_demo_trains_and_its_derivatives_agree():
    out = io.StringIO()
    result = demo.run(demo.parse_args(TINY), out=out)
    text = out.getvalue()
    assert len(result.losses) == 20 and np.all(np.isfinite(result.losses))
    assert np.mean(result.losses[-5:]) < result.losses[0] - 0.5
    assert result.errors["hvp"] < 1e-10 and result.errors["jacfwd"] < 1e-10
    assert result.ok
    ours, other = result.primitives
    for op in ("attention", "attention_vjp", "rope", "rms_norm", "silu_gated", "embedding",
               "cross_entropy", "matmul"):
        assert op in ours
    assert set(other) <= {"add_any", "broadcast_in_dim", "convert_element_type", "mul"}
    assert "step   20/20" in text and "Hessian-vector product" in text and text.endswith("ok\n")


def test_corpus_is_shipped_and_unigram_entropy_is_sane():
    data = demo.Data.from_text(demo.load_corpus())
    assert 50_000 <= len(data.train) + len(data.held_out) <= 200_000
    assert 2.0 < data.unigram_entropy() < np.log(data.vocab)


@pytest.mark.parametrize("argv", [["--heads", "3", "--kv-heads", "2", "--d-model", "12"],
                                  ["--d-model", "30", "--heads", "4"], ["--steps", "0"]])
def test_bad_flags(argv):
    with pytest.raises(SystemExit):
        demo.parse_args(argv)
