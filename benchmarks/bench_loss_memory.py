"""Memory and time of cross_entropy and fused_linear_cross_entropy against
plain jax.numpy, on the CPU.

For each case ``gradrules.bench.compare`` compiles ``jax.jit(jax.grad(loss))``
of the gradrules op and of the same loss written in plain jax.numpy, reads
the peak temporary memory from XLA's memory analysis
(``.lower(...).compile().memory_analysis()``: temp bytes, i.e. beyond the
arguments and the outputs) and times both in the same run (median of
``--repeats`` calls after a warm-up). Prints the table and the issue's
targets next to the measured ratios:

    python benchmarks/bench_loss_memory.py                 # the issue's sizes
    python benchmarks/bench_loss_memory.py --tokens 1024 --vocab 32768

Targets (issue 5): cross_entropy's grad needs no more temp memory than the
plain version; fused_linear_cross_entropy's grad at most 1/8 of the temp
memory of ``jax.grad`` of ``cross_entropy(h @ w)`` in plain jax.numpy, in at
most 1.2x its time. Nothing is asserted: the table is the result (wall time
depends on what else the machine runs).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

import gradrules  # noqa: F401  (registers every op)
from gradrules.bench import BenchRow, compare, format_table
from gradrules.primitives.loss import cross_entropy, fused_linear_cross_entropy


def plain_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean token cross entropy in plain jax.numpy (what XLA fuses well)."""
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return jnp.mean(lse - picked)


def run(tokens: int, vocab: int, hidden: int, repeats: int) -> list[tuple[BenchRow, str]]:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    labels = jax.random.randint(k3, (tokens,), 0, vocab)
    logits = jax.random.normal(k1, (tokens, vocab), jnp.float32)
    ce = compare(f"cross_entropy grad [{tokens} x {vocab}]",
                 jax.grad(lambda x: cross_entropy(x, labels)),
                 jax.grad(lambda x: plain_cross_entropy(x, labels)), logits, repeats=repeats)
    del logits
    h = jax.random.normal(k1, (tokens, hidden), jnp.float32)
    w = jax.random.normal(k2, (hidden, vocab), jnp.float32) * hidden ** -0.5
    flce = compare(f"fused_linear_cross_entropy grad [{tokens} x {hidden} x {vocab}]",
                   jax.grad(lambda h, w: fused_linear_cross_entropy(h, w, labels), (0, 1)),
                   jax.grad(lambda h, w: plain_cross_entropy(h @ w, labels), (0, 1)), h, w,
                   repeats=repeats)
    return [(ce, "temp memory <= 1x"), (flce, "temp memory <= 1/8 (0.125x), time <= 1.2x")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--vocab", type=int, default=131072)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = run(args.tokens, args.vocab, args.hidden, args.repeats)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, float32, "
          f"{args.repeats} timed calls each; 'ref' is plain jax.numpy")
    print(format_table([r for r, _ in rows]))
    for r, target in rows:
        print(f"{r.name}: mem x {r.mem_ratio:.4f}, time x {r.time_ratio:.2f} "
              f"(target: {target})")


if __name__ == "__main__":
    main()
