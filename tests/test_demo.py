"""gradrules demo: a handful of steps on a tiny model, run as a user runs it
(the installed ``gradrules demo`` with flags). The loss goes down, and the
Hessian-vector product and the jacfwd of the logits agree with the same model
in plain jax.numpy."""

import io
import re
import time
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


MESH_TINY = ["--steps", "8", "--d-model", "32", "--layers", "1", "--heads", "4",
             "--kv-heads", "2", "--seq", "16", "--batch", "8", "--seed", "3"]


def _mesh_demo(flags: list[str]) -> str:
    done = subprocess.run([str(Path(sys.executable).with_name("gradrules")), "demo", *flags,
                           *MESH_TINY], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout


@pytest.mark.parametrize("flags, processes", [(["--devices", "8", "--mesh", "2x4"], 1),
                                              (["--processes", "2", "--devices", "4"], 2)],
                         ids=["one-process", "two-processes"])
def test_demo_on_a_mesh_trains_like_one_device(flags, processes):
    """Data parallel x tensor parallel (kv heads fewer than shards, so wk/wv
    replicated), in one process and in two joined by jax.distributed: the
    same loss curve as one device to float32 round-off."""
    text = _mesh_demo(flags)
    assert "2x4 mesh (data x model) of 8 devices" in text
    assert ("in 2 processes" in text) == (processes == 2)
    diff = float(re.search(r"max \|loss difference\| vs one device: ([\d.e+-]+)", text)[1])
    assert diff < 1e-4, text
    mesh, one = map(float, re.search(r"per device: ([\d.]+) MiB on the mesh, ([\d.]+) MiB on "
                                     r"one device", text).groups())
    assert 0 < mesh < one, text


def test_a_failing_process_stops_the_others():
    """Process 1 fails at once, process 0 would wait for ever: the launcher
    stops it and says which one failed."""
    from gradrules import demo_parallel
    script = ("import sys, time\n"
              "if sys.argv[-1] == '1': sys.exit('process 1: broken on purpose')\n"
              "time.sleep(600)\n")
    out = io.StringIO()
    mesh = demo_parallel.Mesh(devices=2, data=2, model=1, processes=2)
    start = time.monotonic()
    status = demo_parallel.launch([], mesh, out, command=[sys.executable, "-c", script])
    assert status == 1 and time.monotonic() - start < 60
    text = out.getvalue()
    assert "process 1 exited with status 1; stopped the others" in text
    assert "broken on purpose" in text


def test_the_launcher_times_out():
    from gradrules import demo_parallel
    out = io.StringIO()
    mesh = demo_parallel.Mesh(devices=2, data=2, model=1, processes=2)
    status = demo_parallel.launch([], mesh, out, timeout_s=1.0,
                                  command=[sys.executable, "-c", "import time; time.sleep(600)"])
    assert status == 1
    assert "did not finish within 1 s; stopped the others" in out.getvalue()


@pytest.mark.parametrize("argv", [["--devices", "8", "--mesh", "3x4"], ["--mesh", "2x4"],
                                  ["--devices", "4", "--mesh", "2by2"],
                                  ["--processes", "2"]])
def test_bad_mesh_flags(argv):
    with pytest.raises(SystemExit):
        demo._parse(argv)
