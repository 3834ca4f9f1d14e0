"""gradrules demo: a handful of steps on a tiny model, run as a user runs it
(the installed ``gradrules demo`` with flags). The loss goes down, and the
Hessian-vector product and the jacfwd of the logits agree with the same model
in plain jax.numpy."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradrules import demo

TINY = ["--steps", "20", "--d-model", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
        "--seq", "16", "--batch", "8", "--seed", "3"]


def test_demo_trains_and_its_derivatives_agree():
    """Through the installed ``gradrules`` command, with its flags."""
    done = subprocess.run([str(Path(sys.executable).with_name("gradrules")), "demo", *TINY],
                          capture_output=True, text=True, timeout=900)
    text = done.stdout.replace("\r", "\n")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1-layer decoder-only transformer, d_model 32" in text
    losses = np.array([float(v) for v in re.findall(r"step +\d+/20  loss +([-\d.naif]+)", text)])
    assert len(losses) == 20 and np.all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < losses[0] - 0.5
    errors = re.findall(r"(Hessian-vector product|jax.jacfwd)[^:]*: ([\d.e+-]+)", text)
    assert [name for name, _ in errors] == ["Hessian-vector product", "jax.jacfwd"]
    assert all(float(err) < 1e-10 for _, err in errors)
    ours, other = re.search(r"primitives: (.*); from JAX itself: (.*)", text).groups()
    for op in ("attention", "attention_vjp", "rope", "rms_norm", "silu_gated", "embedding",
               "cross_entropy", "matmul"):
        assert op in ours.split(", ")
    assert set(other.split(", ")) <= {"add_any", "broadcast_in_dim", "convert_element_type",
                                      "mul"}
    assert text.endswith("ok\n")


def test_corpus_is_shipped_and_unigram_entropy_is_sane():
    data = demo.Data.from_text(demo.load_corpus())
    assert 50_000 <= len(data.train) + len(data.held_out) <= 200_000
    assert 2.0 < data.unigram_entropy() < np.log(data.vocab)


@pytest.mark.parametrize("argv", [["--heads", "3", "--kv-heads", "2", "--d-model", "12"],
                                  ["--d-model", "30", "--heads", "4"], ["--steps", "0"]])
def test_bad_flags(argv):
    with pytest.raises(SystemExit):
        demo.parse_args(argv)
