"""Side-by-side measurements of a gradrules function and its plain
jax.numpy reference, in the same run, reported as ratios.

``compare(name, fn, ref, *args)`` compiles both with ``jax.jit`` and
measures wall time (median of repeats), compiled peak temp memory (XLA's
memory analysis) and FLOPs (XLA's cost analysis). ``time_interleaved``
times several functions in turns, ``format_columns`` lays out any table.
``gradrules bench`` runs ``BENCH_CASES`` (an elementwise composition and the
fused ops, forward, grad and Hessian-vector product) through
``bench_rows``; ``benchmarks/`` holds the larger scripts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .core.registry import get_op
from .primitives.arithmetic import divide, multiply
from .primitives.unary import exp, tanh


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
        return ratio(self.time_s, self.ref_time_s)

    @property
    def mem_ratio(self) -> float:
        return ratio(self.temp_bytes, self.ref_temp_bytes)

    @property
    def flops_ratio(self) -> float:
        return ratio(self.flops, self.ref_flops)


def ratio(ours: float, ref: float) -> float:
    """``ours / ref``: 1 when both are the same (both zero included), inf
    when only the reference is zero."""
    if ours == ref:
        return 1.0
    return ours / ref if ref else float("inf")


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


@dataclass(frozen=True)
class BenchCase:
    """One row group of ``gradrules bench``: the op ``op`` called as
    ``op(*args, **kwargs)`` beside its registered plain jax.numpy reference,
    on ``make(rng, quick)``'s arguments (a realistic size, or a tiny one with
    ``quick``), differentiated in the arguments at positions ``diff``."""

    name: str
    op: str
    make: Callable[[np.random.Generator, bool], tuple[Any, ...]]
    kwargs: tuple[tuple[str, Any], ...] = ()
    diff: tuple[int, ...] = (0,)


def _normal(rng: np.random.Generator, *shape: int) -> Any:
    return jnp.asarray(rng.standard_normal(shape), jnp.float32)


def _pick(quick: bool, full: tuple[int, ...], small: tuple[int, ...]) -> tuple[int, ...]:
    return small if quick else full


def _elementwise_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    (n,) = _pick(quick, (1 << 22,), (1024,))
    return jnp.linspace(-2.0, 2.0, n, dtype=jnp.float32), jnp.linspace(0.5, 1.5, n,
                                                                      dtype=jnp.float32)


def _rows_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    t, d = _pick(quick, (8192, 1024), (64, 128))
    return _normal(rng, t, d), _normal(rng, d)


def _attention_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    shape = _pick(quick, (2, 1024, 8, 64), (1, 64, 2, 16))
    return tuple(_normal(rng, *shape) for _ in range(3))


def _ce_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    t, v = _pick(quick, (4096, 32000), (64, 512))
    return _normal(rng, t, v), jnp.asarray(rng.integers(0, v, t), jnp.int32)


def _flce_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    t, h, v = _pick(quick, (4096, 1024, 32000), (64, 32, 512))
    return (_normal(rng, t, h), _normal(rng, h, v) / h ** 0.5,
            jnp.asarray(rng.integers(0, v, t), jnp.int32))


BENCH_CASES = (
    BenchCase("tanh*exp(x/y)", "tanh_exp_ratio", _elementwise_args, diff=(0, 1)),
    BenchCase("softmax", "softmax", lambda rng, q: _rows_args(rng, q)[:1]),
    BenchCase("log_softmax", "log_softmax", lambda rng, q: _rows_args(rng, q)[:1]),
    BenchCase("rms_norm", "rms_norm", _rows_args, diff=(0, 1)),
    BenchCase("layer_norm", "layer_norm", _rows_args, diff=(0, 1)),
    BenchCase("attention", "attention", _attention_args, diff=(0, 1, 2)),
    BenchCase("attention causal", "attention", _attention_args, (("causal", True),),
              diff=(0, 1, 2)),
    BenchCase("cross_entropy", "cross_entropy", _ce_args),
    BenchCase("fused_linear_cross_entropy", "fused_linear_cross_entropy", _flce_args,
              diff=(0, 1)),
)
"""The ops ``gradrules bench`` measures: a small elementwise composition and
the fused ops, each in forward, grad and Hessian-vector-product mode."""

MODES = ("forward", "grad", "hvp")


def _tanh_exp_ratio(a: Any, b: Any) -> Any:
    return multiply(tanh(a), exp(divide(a, b)))


def _tanh_exp_ratio_reference(a: Any, b: Any) -> Any:
    return jnp.tanh(a) * jnp.exp(a / b)


def _functions(case: BenchCase) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(gradrules, plain jax.numpy) of a case, params bound."""
    if case.op == "tanh_exp_ratio":
        return _tanh_exp_ratio, _tanh_exp_ratio_reference
    op = get_op(case.op)
    assert op.reference is not None
    kw = dict(case.kwargs)
    return (lambda *a: op.fn(*a, **kw)), (lambda *a: op.reference(*a, **kw))


def _mode(fn: Callable[..., Any], mode: str, case: BenchCase, args: tuple[Any, ...]
          ) -> Callable[..., Any]:
    """``fn`` itself, the gradient of ``sum(w * fn)`` (``w`` a fixed weight of
    the output's shape) in the ``diff`` arguments, or that gradient's JVP
    along fixed tangents (a Hessian-vector product)."""
    if mode == "forward":
        return fn
    out = jax.eval_shape(fn, *args)
    w = jnp.cos(jnp.arange(np.prod(out.shape), dtype=out.dtype)).reshape(out.shape)

    def loss(*a: Any) -> Any:
        return jnp.sum(w * fn(*a))

    grad = jax.grad(loss, argnums=case.diff)
    if mode == "grad":
        return grad
    tangents = [jnp.sin(jnp.arange(args[i].size, dtype=args[i].dtype)).reshape(args[i].shape)
                if i in case.diff else None for i in range(len(args))]

    def hvp(*a: Any) -> Any:
        def g(*d: Any) -> Any:
            full = list(a)
            for i, v in zip(case.diff, d):
                full[i] = v
            return grad(*full)
        return jax.jvp(g, tuple(a[i] for i in case.diff),
                       tuple(tangents[i] for i in case.diff))[1]
    return hvp


def bench_rows(cases: Sequence[BenchCase] = BENCH_CASES, *, quick: bool = False,
               modes: Sequence[str] = MODES, repeats: int = 10,
               progress: Callable[[str], None] | None = None) -> list[BenchRow]:
    """Each case in each mode beside plain jax.numpy, compiled and timed in
    turns (``time_interleaved``), with XLA's temp memory and FLOPs."""
    rows = []
    for case in cases:
        ours, ref = _functions(case)
        args = case.make(np.random.default_rng(0), quick)
        for mode in modes:
            name = f"{case.name} {mode}"
            if progress:
                progress(name)
            c, temp, flops = compiled_stats(_mode(ours, mode, case, args), *args)
            rc, rtemp, rflops = compiled_stats(_mode(ref, mode, case, args), *args)
            times = time_interleaved({"ours": partial(c, *args), "ref": partial(rc, *args)},
                                     repeats=repeats)
            rows.append(BenchRow(name, times["ours"], times["ref"], temp, rtemp, flops,
                                 rflops))
    return rows
