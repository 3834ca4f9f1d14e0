"""Peak temp memory and runtime of jax.grad of attention: gradrules (blockwise
XLA lowering) against plain jax.numpy attention, measured in the same run.

``gradrules.bench.compare`` compiles ``jax.jit(jax.grad(loss))`` of both:
memory is XLA's own analysis of the compiled program (temp bytes of
``.lower(...).compile().memory_analysis()``); runtime is the median of
``--repeats`` timed calls after one warm-up call. Targets
(issue 5): at seq 8192, gradrules' temp memory at most 1/16 of the plain
version's, and its runtime at most 1.5x.

    python benchmarks/bench_attention_memory.py               # seq 8192, causal GQA
    python benchmarks/bench_attention_memory.py --seq 2048 8192 --no-causal
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from gradrules.bench import compare
from gradrules.primitives.attention import attention

MEMORY_TARGET = 1 / 16
TIME_TARGET = 1.5


def plain_attention(q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool) -> jax.Array:
    """Attention as one writes it in jax.numpy: the [B, H, S, S] scores at once."""
    group = q.shape[2] // k.shape[2]
    k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * q.shape[-1] ** -0.5
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        s = jnp.where(jnp.tril(jnp.ones((sq, sk), bool), sk - sq), s, -jnp.inf)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)


def grad_of_loss(attn: Callable[..., jax.Array], causal: bool) -> Callable[..., Any]:
    """The grad of sum(attn(q, k, v) ** 2) with respect to q, k and v."""
    def loss(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return jnp.sum(attn(q, k, v, causal=causal) ** 2)
    return jax.grad(loss, argnums=(0, 1, 2))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, nargs="+", default=[8192])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"jax.grad of attention, float32, batch {args.batch}, heads {args.heads} "
          f"(kv heads {args.kv_heads}), head_dim {args.head_dim}, causal {args.causal}, "
          f"{jax.devices()[0].platform}")
    head = f"{'seq':>6}  {'impl':<10} {'temp MiB':>10} {'seconds':>9}"
    print(head + f"  {'memory ratio':>12}  {'time ratio':>10}")
    print("-" * (len(head) + 26))
    ok = True
    for seq in args.seq:
        shapes = [(args.batch, seq, args.heads, args.head_dim)] + \
                 [(args.batch, seq, args.kv_heads, args.head_dim)] * 2
        qkv: Any = tuple(jnp.asarray(rng.standard_normal(s), jnp.float32) for s in shapes)
        row = compare(f"attention grad, seq {seq}", grad_of_loss(attention, args.causal),
                      grad_of_loss(plain_attention, args.causal), *qkv, repeats=args.repeats)
        mem, speed = row.mem_ratio, row.time_ratio
        print(f"{seq:>6}  {'plain jnp':<10} {row.ref_temp_bytes / 2**20:>10.1f} "
              f"{row.ref_time_s:>9.2f}")
        print(f"{seq:>6}  {'gradrules':<10} {row.temp_bytes / 2**20:>10.1f} {row.time_s:>9.2f}  "
              f"{mem:>12.4f}  {speed:>10.2f}")
        if seq >= 8192:
            ok &= mem <= MEMORY_TARGET and speed <= TIME_TARGET
    print(f"targets at seq >= 8192: memory ratio <= {MEMORY_TARGET:.4f} (1/16), time ratio "
          f"<= {TIME_TARGET}: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
