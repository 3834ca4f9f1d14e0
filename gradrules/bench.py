"""Side-by-side measurements of a gradrules function and its plain
jax.numpy reference, in the same run, reported as ratios.

``compare(name, fn, ref, *args)`` compiles both with ``jax.jit`` and
measures wall time (median of repeats), compiled peak temp memory (XLA's
memory analysis) and FLOPs (XLA's cost analysis). ``time_interleaved``
times several functions in turns, ``format_columns`` lays out any table.
``gradrules bench`` runs the small built-in table below; ``benchmarks/``
holds the larger scripts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp


@dataclass
class BenchRow:
    name: str
    time_s: float
    ref_time_s: float
    temp_bytes: int
    ref_temp_bytes: int
    flops: float
    ref_flops: float

    @property
    def time_ratio(self) -> float:
        return self.time_s / self.ref_time_s if self.ref_time_s else float("nan")

    @property
    def mem_ratio(self) -> float:
        return self.temp_bytes / self.ref_temp_bytes if self.ref_temp_bytes else float("nan")

    @property
    def flops_ratio(self) -> float:
        return self.flops / self.ref_flops if self.ref_flops else float("nan")


def compiled_stats(fn: Callable[..., Any], *args: Any) -> tuple[Any, int, float]:
    """(compiled executable, peak temp bytes, flops) of ``jax.jit(fn)``."""
    compiled = jax.jit(fn).lower(*args).compile()
    mem = compiled.memory_analysis()
    temp = int(getattr(mem, "temp_size_in_bytes", 0)) if mem is not None else 0
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    flops = float((cost or {}).get("flops", 0.0))
    return compiled, temp, flops


def time_compiled(compiled: Any, *args: Any, repeats: int = 5) -> float:
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def time_interleaved(calls: Mapping[str, Callable[[], Any]], *, repeats: int = 10,
                     min_sample_s: float = 2e-3, max_inner: int = 64) -> dict[str, float]:
    """Median seconds per call of each of ``calls`` (functions of no arguments:
    a compiled executable with its arguments bound).

    The functions run in turns, the order rotated every repeat, so a drift of
    the machine (clocks, temperature, other load) reaches all of them alike.
    After a warm-up call, each sample of a function is ``inner`` calls in a
    row then one wait (``inner`` from one timed call: enough calls for
    ``min_sample_s``, at most ``max_inner``), so dispatch overhead does not
    swamp a call of a few microseconds."""
    names = list(calls)
    inner = {}
    for name in names:
        jax.block_until_ready(calls[name]())
        t0 = time.perf_counter()
        jax.block_until_ready(calls[name]())
        once = time.perf_counter() - t0
        inner[name] = max(1, min(max_inner, int(min_sample_s / max(once, 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            for _ in range(inner[name]):
                out = calls[name]()
            jax.block_until_ready(out)
            samples[name].append((time.perf_counter() - t0) / inner[name])
    return {name: float(np.median(s)) for name, s in samples.items()}


def compare(name: str, fn: Callable[..., Any], ref: Callable[..., Any], *args: Any,
            repeats: int = 5) -> BenchRow:
    c, temp, flops = compiled_stats(fn, *args)
    rc, rtemp, rflops = compiled_stats(ref, *args)
    return BenchRow(name, time_compiled(c, *args, repeats=repeats),
                    time_compiled(rc, *args, repeats=repeats), temp, rtemp, flops, rflops)


def format_table(rows: Sequence[BenchRow]) -> str:
    head = ("benchmark", "time ms", "ref ms", "time x", "temp MiB", "ref MiB", "mem x", "flops x")
    body = [(r.name, f"{r.time_s * 1e3:.2f}", f"{r.ref_time_s * 1e3:.2f}", f"{r.time_ratio:.2f}",
             f"{r.temp_bytes / 2**20:.2f}", f"{r.ref_temp_bytes / 2**20:.2f}",
             f"{r.mem_ratio:.2f}", f"{r.flops_ratio:.2f}") for r in rows]
    return format_columns(head, body)


def format_columns(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns: the header, a rule of dashes, then the body rows."""
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip()
             for row in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def builtin_rows(size: int = 1 << 20) -> list[BenchRow]:
    """A quick table: forward and grad of a few elementwise compositions."""
    import gradrules as gr
    x = jnp.linspace(-2.0, 2.0, size, dtype=jnp.float32)
    y = jnp.linspace(0.5, 1.5, size, dtype=jnp.float32)

    def ours(a: Any, b: Any) -> Any:
        return gr.sum(gr.multiply(gr.tanh(a), gr.exp(gr.divide(a, b))))

    def ref(a: Any, b: Any) -> Any:
        return jnp.sum(jnp.tanh(a) * jnp.exp(a / b))

    return [compare("tanh*exp(x/y) forward", ours, ref, x, y),
            compare("tanh*exp(x/y) grad", jax.grad(ours, argnums=(0, 1)),
                    jax.grad(ref, argnums=(0, 1)), x, y),
            compare("tanh*exp(x/y) hessian-vector", _hvp(ours), _hvp(ref), x, y)]


def _hvp(f: Callable[..., Any]) -> Callable[..., Any]:
    def hvp(a: Any, b: Any) -> Any:
        return jax.jvp(jax.grad(f), (a, b), (jnp.ones_like(a), jnp.zeros_like(b)))[1]
    return hvp
