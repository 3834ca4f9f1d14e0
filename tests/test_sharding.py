"""On a mesh of 8 simulated CPU devices (``_sharded.py``, in a process of
its own so that it gets the devices), every fused op with Pallas kernels:

* with its batch-like dims sharded under ``jax.jit``, the kernel path
  (``interpret``) stays sharded on meshes with Explicit axes (read from the
  types) and with Auto axes (``gradrules.config.batch_axes`` /
  ``head_axes``): the same loss and grads as unsharded (float32 round-off),
  no all-gather in the compiled HLO, and the first grad sharded like its
  primal (attention GQA and MQA, norm rows on two dims, softmax over a middle
  axis, cross-entropy tokens, the fused linear loss with w replicated,
  silu_gated and gelu_gated, rope with positions);
* gradrules ops inside a user's ``jax.shard_map`` (vma checks on) with a
  replicated weight: the same loss and grads as unsharded;
* c_embedding as a vocab-parallel embedding (table rows over ``model``,
  ``psum``), and the rule checker on vocab_parallel_cross_entropy with its
  logits split over 8 and 4 devices.

The script runs once per test run: the xdist workers share its output
through a file (the first to get the lock runs it).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("_sharded.py")
# (case, mesh axis type): the spec of the first grad
GRAD_SPECS = {
    ("attention-gqa", "Explicit"): "P('data', None, 'model', None)",
    ("attention-gqa", "Auto"): "P('data', None, 'model', None)",
    ("attention-mqa", "Explicit"): "P('data', None, 'model', None)",
    ("attention-mqa", "Auto"): "P('data', None, 'model', None)",
    ("norm", "Explicit"): "P('data', 'seq', None)",
    ("norm", "Auto"): "P('data', None, None)",
    ("softmax", "Explicit"): "P('data', None, 'model')",
    ("softmax", "Auto"): "P('data',)",
    ("cross_entropy", "Explicit"): "P('data', 'model', None)",
    ("cross_entropy", "Auto"): "P('data', None)",
    ("fused_linear_cross_entropy", "Explicit"): "P('data', None, None)",
    ("fused_linear_cross_entropy", "Auto"): "P('data', None)",
    ("gated", "Explicit"): "P('data', None, 'model')",
    ("gated", "Auto"): "P('data', None, None)",
    ("rope", "Explicit"): "P('data', None, 'model', None)",
    ("rope", "Auto"): "P('data', None, 'model', None)",
}


@pytest.fixture(scope="module")
def results(tmp_path_factory, worker_id) -> dict[str, dict]:
    # this run's directory, shared by the xdist workers (each has a subfolder)
    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent
    out = root / "sharded.json"
    with open(root / "sharded.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            env = dict(os.environ, PYTHONPATH=str(SCRIPT.parents[1]))
            done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True,
                                  text=True, env=env, timeout=900)
            out.write_text(json.dumps({"returncode": done.returncode, "stdout": done.stdout,
                                       "stderr": done.stderr[-3000:]}))
    done = json.loads(out.read_text())
    assert done["returncode"] == 0, done["stderr"]
    rows = [json.loads(line) for line in done["stdout"].splitlines() if line.startswith("{")]
    return {row["case"]: row for row in rows}


@pytest.mark.parametrize("case, axis_type", GRAD_SPECS, ids=lambda x: str(x))
def test_sharded_kernels_match_unsharded_without_gathering(results, case, axis_type):
    row = results[f"{case}-{axis_type}"]
    assert max(row["diffs"]) < 2e-5, row
    assert row["all_gathers"] == 0, row
    assert row["grad_spec"] == GRAD_SPECS[case, axis_type], row


def test_gradrules_ops_inside_a_user_shard_map_match_unsharded(results):
    """Operands varying over different manual axes vary together (pvary), and
    the cotangent of the replicated weight sums over the shards."""
    row = results["user-shard-map"]
    assert len(row["diffs"]) == 3 and max(row["diffs"]) < 1e-5, row
    assert row["grad_spec"] == "P('data',)", row


def test_c_embedding_is_a_vocab_parallel_embedding(results):
    row = results["c-embedding"]
    assert max(row["diffs"]) < 1e-5, row
    assert row["grad_spec"] == "P('model', None)", row


def test_the_checker_passes_vocab_parallel_cross_entropy_on_8_shards(results):
    row = results["check-vocab-parallel"]
    assert row["shards"] == 8 and row["failed"] == [] and row["passed"] >= 20, row
