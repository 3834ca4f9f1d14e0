"""On a mesh of 8 simulated CPU devices (``_sharded.py``, in a process of
its own so that it gets the devices):

* attention with q, k, v sharded on batch and heads under ``jax.jit``: the
  Pallas kernel path (``interpret``) stays sharded on meshes with Explicit
  and with Auto axes, GQA and MQA: the same loss and grads as unsharded, and
  no all-gather in the compiled HLO;
* gradrules ops inside a user's ``jax.shard_map`` (vma checks on) with a
  replicated weight: the same loss and grads as unsharded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("_sharded.py")
CASES = ("explicit-gqa", "auto-gqa", "auto-mqa")


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(SCRIPT.parents[1]))
    done = subprocess.run([sys.executable, str(SCRIPT), *CASES, "user-shard-map"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {row["case"]: row for row in rows}


@pytest.mark.parametrize("case", CASES)
def test_sharded_attention_matches_unsharded_without_gathering(results, case):
    row = results[case]
    assert len(row["diffs"]) == 5                       # the loss and four grads
    assert max(row["diffs"]) < 1e-5, row
    assert row["all_gathers"] == 0, row
    assert row["grad_spec"] == "P('data', None, 'model', None)", row


def test_gradrules_ops_inside_a_user_shard_map_match_unsharded(results):
    """Operands varying over different manual axes vary together (pvary), and
    the cotangent of the replicated weight sums over the shards."""
    row = results["user-shard-map"]
    assert len(row["diffs"]) == 3 and max(row["diffs"]) < 1e-5, row
    assert row["grad_spec"] == "P('data',)", row
