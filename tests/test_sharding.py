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
* every op of the sample table with its leading axis sharded over ``data``
  of a 2x4 mesh (Explicit and Auto axes), forward and grad in one jitted
  program beside its jax.numpy reference (``gradrules.testing.mesh``): the
  unsharded values, the reference's output and gradient shardings, no more
  all-gathers or all-to-alls than it;
* c_embedding as a vocab-parallel embedding (table rows over ``model``,
  ``psum``), and the rule checker on vocab_parallel_cross_entropy with its
  logits split over 8 and 4 devices.

The script runs once per test run, in three jobs started in the background
when the run begins (``_jobs.py``): the kernel cases, and each half of the
table walk.
"""

from __future__ import annotations

import json

import pytest

import _jobs

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
def results() -> dict[str, dict]:
    """The rows the script's jobs printed, by case (the jobs started with
    the test run: ``_jobs.py``)."""
    rows = {}
    for job in _jobs.JOBS:
        code, stdout, stderr = _jobs.result(job)
        assert code == 0, f"{job}: {stderr[-3000:]}"
        rows.update((row["case"], row) for row in
                    (json.loads(line) for line in stdout.splitlines() if line.startswith("{")))
    return rows


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


# Ops whose gradient XLA places differently from the jax.numpy reference's on
# Auto axes (measured with the HLO of both; the issue stays open for them):
KNOWN_AUTO = {
    # ours slices the sharded cotangent and stays sharded; the reference
    # gathers and all-reduces it (0 vs 1 all-reduce; set_value: one
    # collective-permute vs one all-reduce)
    "slice_scatter": "grad of src sharded, the reference's replicated",
    "set_value": "grad of value sharded, the reference's replicated",
    # ours take_along_axis, sharded; the reference a dense one-hot sum
    # (3 collective-permutes + 2 all-reduces vs 2 all-gathers + 1 all-reduce)
    "scatter_reduce": "grad of src sharded, the reference's replicated",
    # a gather of windows from a sharded axis: XLA places it replicated (an
    # all-reduce of the output, no all-gather); the reference's per-window
    # slices, stacked, stay sharded but compile in time linear in the windows
    "tensor_unfold": "output replicated, the reference's sharded on the window elements",
}


@pytest.mark.parametrize("axis_type", ["Explicit", "Auto"])
def test_every_op_on_a_mesh_is_sharded_like_jax_numpy(results, axis_type):
    """No problem on Explicit axes; on Auto axes exactly the placements of
    ``KNOWN_AUTO`` differ (a new difference fails, and so does a fixed one
    left in the list), with no more all-gathers or all-to-alls."""
    rows = [row for case, row in results.items()
            if case.startswith("table-") and row["axis_type"] == axis_type]
    assert len(rows) > 200
    problems = {row["name"]: row["problems"] for row in rows if row["problems"]}
    known = KNOWN_AUTO if axis_type == "Auto" else {}
    assert set(problems) == set(known), "\n".join(f"{k}: {v}" for k, v in problems.items())
    for name in known:
        assert all(p.startswith("sharded ") for p in problems[name]), problems[name]
