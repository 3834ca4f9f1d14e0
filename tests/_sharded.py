"""Run by tests/test_sharding.py in a process of its own, with 8 simulated
CPU devices. Prints one JSON line per case: the largest differences of the
loss and the grads from the unsharded run, the all-gathers in the compiled
HLO and the spec of the first grad.

* attention cases: under jax.jit on a (data=2, model=4) mesh with q, k, v
  sharded on batch and heads, kernel "interpret"; the grads of q, k, v and
  of a bias broadcast over batch and queries;
* "user-shard-map": gradrules ops (rms_norm, tanh) inside the user's own
  ``jax.shard_map`` (with its default vma checks) over a batch-sharded x and
  a replicated weight, whose gradient sums over the shards."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec  # noqa: E402

import gradrules  # noqa: E402

CASES = {"explicit-gqa": (AxisType.Explicit, 4), "auto-gqa": (AxisType.Auto, 4),
         "auto-mqa": (AxisType.Auto, 1)}


def loss(q, k, v, bias):
    out = gradrules.attention(q, k, v, bias=bias, causal=True, block_q=16, block_k=16)
    return jnp.sum(out * out)


def run(name: str) -> dict:
    axis_type, hkv = CASES[name]
    rng = np.random.default_rng(0)
    B, S, H, D = 4, 32, 8, 16
    q = rng.standard_normal((B, S, H, D), np.float32)
    k, v = (rng.standard_normal((B, S, hkv, D), np.float32) for _ in range(2))
    bias = rng.standard_normal((1, H, 1, S), np.float32)
    grad = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))
    with gradrules.config.using(kernel="interpret"):
        ref = jax.jit(grad)(q, k, v, bias)
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)
    spec = PartitionSpec("data", None, "model" if hkv > 1 else None, None)
    qs = jax.device_put(q, NamedSharding(mesh, PartitionSpec("data", None, "model", None)))
    ks, vs = (jax.device_put(x, NamedSharding(mesh, spec)) for x in (k, v))
    with jax.set_mesh(mesh), gradrules.config.using(kernel="interpret", batch_axes="data",
                                                    head_axes="model"):
        f = jax.jit(grad)
        got = f(qs, ks, vs, bias)
        hlo = f.lower(qs, ks, vs, bias).compile().as_text()
    return _row(name, ref, got, hlo)


def run_user_shard_map() -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32), np.float32)
    w = rng.standard_normal((32,), np.float32)

    def norm_loss(x, w):
        return jnp.sum(gradrules.rms_norm(x, w) * gradrules.tanh(x))

    grad = jax.value_and_grad(norm_loss, argnums=(0, 1))
    ref = jax.jit(grad)(x, w)
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    per_shard = jax.shard_map(lambda x, w: jax.lax.psum(norm_loss(x, w), "data"), mesh=mesh,
                              in_specs=(PartitionSpec("data"), PartitionSpec()),
                              out_specs=PartitionSpec())
    xs = jax.device_put(x, NamedSharding(mesh, PartitionSpec("data")))
    f = jax.jit(jax.value_and_grad(per_shard, argnums=(0, 1)))
    got = f(xs, w)
    return _row("user-shard-map", ref, got, f.lower(xs, w).compile().as_text())


def _row(name: str, ref: Any, got: Any, hlo: str) -> dict:
    diffs = [float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(a).max(), 1e-30))
             for a, b in zip(jax.tree.leaves(ref), jax.tree.leaves(got))]
    return {"case": name, "diffs": diffs, "all_gathers": hlo.count("all-gather"),
            "grad_spec": str(got[1][0].sharding.spec)}


if __name__ == "__main__":
    for case in sys.argv[1:] or [*CASES, "user-shard-map"]:
        print(json.dumps(run_user_shard_map() if case == "user-shard-map" else run(case)),
              flush=True)
