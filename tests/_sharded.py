"""Run by tests/test_sharding.py in processes of its own (one per job of
``JOBS``, given as the argument), with 8 simulated CPU devices. For each case of ``CASES`` and each mesh axis type (Explicit,
and Auto with ``gradrules.config.batch_axes`` / ``head_axes``), the jitted
``value_and_grad`` of the case's loss under kernel "interpret" with the
operands sharded as the case says, against the unsharded run. Prints one
JSON line per (case, axis type): the largest relative differences of the
loss and the grads, the all-gathers in the compiled HLO and the spec of the
first grad. "user-shard-map" is gradrules ops (rms_norm, tanh) inside the
user's own ``jax.shard_map`` (its default vma checks) over a batch-sharded x
and a replicated weight, whose gradient sums over the shards.
"c-embedding": c_embedding as the vocab-parallel embedding inside
``shard_map`` (table rows over ``model``, a psum) against a plain lookup,
grads included; "check-vocab-parallel": ``gradrules.check`` of
vocab_parallel_cross_entropy with its logits over 8 (or 4) shards; "table-<op>-<axis type>": every op of the
sample table on a 2x4 mesh beside its jax.numpy reference
(``gradrules.testing.mesh.walk``), with the problems found."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

os.environ["XLA_FLAGS"] = " ".join(
    [os.environ.get("XLA_FLAGS", ""), "--xla_force_host_platform_device_count=8"]).strip()

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

import gradrules  # noqa: E402
from gradrules.testing.check import CHECKS  # noqa: E402
from gradrules.testing.mesh import walk  # noqa: E402
from gradrules.testing.samples import table  # noqa: E402
from gradrules.pallas.loss import BlockSizes as LossBlocks  # noqa: E402
from gradrules.pallas.softmax import BlockSizes as SoftmaxBlocks  # noqa: E402

rng = np.random.default_rng(0)
normal = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731


@dataclass
class Case:
    """A loss of ``arrays`` (the grads taken at ``argnums``) on a mesh of
    ``mesh`` sizes and axis names; ``specs[axis type]``: each array's
    PartitionSpec (None: left unplaced); ``axes``: the config's batch and
    head axes for Auto meshes."""

    loss: Callable[..., Any]
    arrays: list[np.ndarray]
    argnums: tuple[int, ...]
    mesh: tuple[tuple[int, ...], tuple[str, ...]]
    specs: dict[AxisType, tuple[P | None, ...]]
    axes: dict[str, str] = field(default_factory=lambda: {"batch_axes": "data"})


def _attention(hkv: int) -> Case:
    kv = P("data", None, "model" if hkv > 1 else None, None)
    specs = (P("data", None, "model", None), kv, kv, None)
    return Case(lambda q, k, v, bias: jnp.sum(gradrules.attention(
        q, k, v, bias=bias, causal=True, block_q=16, block_k=16) ** 2),
        [normal(4, 32, 8, 16), normal(4, 32, hkv, 16), normal(4, 32, hkv, 16),
         normal(1, 8, 1, 32)], (0, 1, 2, 3), ((2, 4), ("data", "model")),
        {AxisType.Explicit: specs, AxisType.Auto: specs},
        {"batch_axes": "data", "head_axes": "model"})


def _cross_entropy_labels(tokens: tuple[int, ...]) -> np.ndarray:
    labels = rng.integers(0, 300, tokens).astype(np.int32)
    labels[0, :2] = -100
    return labels


_CE = dict(label_smoothing=0.1, z_loss=1e-3)
CASES = {
    "attention-gqa": _attention(4),
    "attention-mqa": _attention(1),
    "norm": Case(
        lambda x, w, b: jnp.sum(jnp.sin(gradrules.layer_norm(x, w, b))
                                + gradrules.rms_norm(x, w, weight_offset=1.0) ** 2),
        [normal(4, 8, 100) + 0.5, normal(100), normal(100)], (0, 1, 2),
        ((2, 4), ("data", "seq")),
        {AxisType.Explicit: (P("data", "seq", None), None, None),
         AxisType.Auto: (P("data", None, None), None, None)}),
    "softmax": Case(
        lambda x: jnp.sum(gradrules.log_softmax(x, axis=1)
                          * gradrules.softmax(x, axis=1, block_sizes=SoftmaxBlocks(4, 32))),
        [normal(4, 100, 8)], (0,), ((2, 4), ("data", "model")),
        {AxisType.Explicit: (P("data", None, "model"),), AxisType.Auto: (P("data"),)}),
    "cross_entropy": Case(
        lambda x, labels: gradrules.cross_entropy(x, labels, **_CE,
                                                  block_sizes=LossBlocks(rows=2, vocab=128)),
        [normal(4, 6, 300), _cross_entropy_labels((4, 6))], (0,), ((4, 2), ("data", "model")),
        {AxisType.Explicit: (P("data", "model", None), P("data", "model")),
         AxisType.Auto: (P("data", None), P("data"))}),
    "fused_linear_cross_entropy": Case(
        lambda h, w, labels: gradrules.fused_linear_cross_entropy(h, w, labels, **_CE),
        [normal(8, 4, 16), 0.3 * normal(16, 300), _cross_entropy_labels((8, 4))], (0, 1),
        ((8,), ("data",)),
        {AxisType.Explicit: (P("data", None, None), None, P("data", None)),
         AxisType.Auto: (P("data", None), None, P("data"))}),
    "gated": Case(
        lambda g, u: jnp.sum(jnp.square(gradrules.silu_gated(g, u, limit=2.0))
                             + gradrules.gelu_gated(g, u, approximate=True)),
        [normal(8, 6, 1000), normal(8, 6, 1000)], (0, 1), ((2, 4), ("data", "model")),
        {AxisType.Explicit: (P("data", None, "model"),) * 2,
         AxisType.Auto: (P("data", None, None),) * 2}),
    "rope": Case(
        lambda x, p: jnp.sum(jnp.square(gradrules.rope(x, positions=p)) * jnp.cos(x)),
        [normal(4, 6, 8, 64), rng.integers(0, 100, (4, 6))], (0,), ((2, 4), ("data", "model")),
        {t: (P("data", None, "model", None), P("data", None))
         for t in (AxisType.Explicit, AxisType.Auto)},
        {"batch_axes": "data", "head_axes": "model"}),
}


def run(name: str, axis_type: AxisType) -> dict:
    case = CASES[name]
    grad = jax.value_and_grad(case.loss, argnums=case.argnums)
    with gradrules.config.using(kernel="interpret"):
        ref = jax.jit(grad)(*case.arrays)
    sizes, names = case.mesh
    mesh = jax.make_mesh(sizes, names, axis_types=(axis_type,) * len(sizes))
    args = [a if s is None else jax.device_put(a, NamedSharding(mesh, s))
            for a, s in zip(case.arrays, case.specs[axis_type])]
    with jax.set_mesh(mesh), gradrules.config.using(kernel="interpret", **case.axes):
        f = jax.jit(grad)
        got = f(*args)
        hlo = f.lower(*args).compile().as_text()
    return _row(f"{name}-{axis_type.name}", ref, got, hlo)


def run_user_shard_map() -> dict:
    x, w = normal(16, 32), normal(32)

    def norm_loss(x, w):
        return jnp.sum(gradrules.rms_norm(x, w) * gradrules.tanh(x))

    grad = jax.value_and_grad(norm_loss, argnums=(0, 1))
    ref = jax.jit(grad)(x, w)
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    per_shard = jax.shard_map(lambda x, w: jax.lax.psum(norm_loss(x, w), "data"), mesh=mesh,
                              in_specs=(P("data"), P()), out_specs=P())
    xs = jax.device_put(x, NamedSharding(mesh, P("data")))
    f = jax.jit(jax.value_and_grad(per_shard, argnums=(0, 1)))
    got = f(xs, w)
    return _row("user-shard-map", ref, got, f.lower(xs, w).compile().as_text())


def run_vocab_parallel_check() -> dict:
    """gradrules.check of vocab_parallel_cross_entropy with its logits split
    over 8 (or 4) shards (``testing.samples.parallel.over_vocab_shards``)."""
    # not export: calling the 8-device export of vmap(grad) with a symbolic
    # batch segfaults in XLA's CPU runtime here (JAX 0.10.2); the export
    # round trip is checked on one shard in the main process (test_checks)
    checks = [c for c in CHECKS if c != "export"]
    report = gradrules.check("vocab_parallel_cross_entropy", checks=checks)
    rows = report.results
    return {"case": "check-vocab-parallel", "shards": jax.device_count(),
            "passed": sum(r.status == "pass" for r in rows),
            "failed": [f"{r.check}: {r.detail}" for r in rows if r.status == "FAIL"]}


def run_c_embedding() -> dict:
    """c_embedding as the vocab-parallel embedding: the table split over
    ``model`` by rows, each shard looking the ids up at its start index, a
    psum; against a plain lookup, with the gradients of the table."""
    table, ids = normal(40, 6), rng.integers(0, 40, (8, 5)).astype(np.int32)
    weights = normal(8, 5, 6)

    def plain(table):
        return jnp.sum(jnp.sin(jnp.take(table, ids, axis=0)) * weights)

    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def lookup(shard, ids, weights):
        start = jax.lax.axis_index("model") * shard.shape[0]
        rows = jax.lax.psum(gradrules.c_embedding(shard, ids - start), "model")
        return jax.lax.psum(jnp.sum(gradrules.sin(rows) * weights), "data")

    sharded = jax.shard_map(lookup, mesh=mesh, in_specs=(P("model", None), P("data"),
                                                         P("data")), out_specs=P())
    args = (jax.device_put(table, NamedSharding(mesh, P("model", None))), ids, weights)
    f = jax.jit(jax.value_and_grad(lambda t: sharded(t, *args[1:])))
    got = f(args[0])
    row = _row("c-embedding", jax.value_and_grad(plain)(table), got,
               f.lower(args[0]).compile().as_text())
    return {**row, "grad_spec": str(got[1].sharding.spec)}


def _row(name: str, ref: Any, got: Any, hlo: str) -> dict:
    diffs = [float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(a).max(), 1e-30))
             for a, b in zip(jax.tree.leaves(ref), jax.tree.leaves(got))]
    return {"case": name, "diffs": diffs, "all_gathers": hlo.count("all-gather"),
            "grad_spec": str(got[1][0].sharding.spec)}


def run_kernels() -> None:
    for name in CASES:
        for axis_type in (AxisType.Explicit, AxisType.Auto):
            print(json.dumps(run(name, axis_type)), flush=True)
    print(json.dumps(run_user_shard_map()), flush=True)
    print(json.dumps(run_c_embedding()), flush=True)
    print(json.dumps(run_vocab_parallel_check()), flush=True)


def run_walk(part: int, parts: int = 2) -> None:
    """The walk of every ``parts``-th op of the table, from the ``part``-th."""
    for row in walk(sorted(table())[part::parts]):
        print(json.dumps({"case": f"table-{row.name}-{row.axis_type}", **row.as_dict()}),
              flush=True)


JOBS = {"kernels": run_kernels, "walk-0": lambda: run_walk(0), "walk-1": lambda: run_walk(1)}

if __name__ == "__main__":
    # a job of JOBS (tests/_jobs.py runs them side by side), or all of them
    for job in sys.argv[1:] or JOBS:
        JOBS[job]()
