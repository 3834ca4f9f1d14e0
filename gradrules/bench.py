"""Side-by-side measurements of a gradrules function and its plain
jax.numpy reference, in the same run, reported as ratios.

``compare(name, fn, ref, *args)`` compiles both with ``jax.jit`` and
measures wall time (median of repeats), compiled peak temp memory (XLA's
memory analysis) and FLOPs (XLA's cost analysis). ``time_interleaved``
times several functions in turns, ``format_columns`` lays out any table.

``gradrules bench`` runs ``all_cases()``: ``BENCH_CASES`` (hand-sized, in
``bench_cases``) and, for every other op of the sample table, its largest
sample grown by tiling (``catalog_cases``), each in forward, grad and
Hessian-vector-product mode beside its registered reference, through
``bench_rows``: interleaved timing (the median of per-pair time ratios, with
its quartiles), XLA's FLOPs and bytes accessed, compiled temp memory and
compile time; ``BenchRow.shortfalls`` says where a row falls short of the
reference. ``benchmarks/`` holds the larger scripts.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .bench_cases import BENCH_CASES, BenchCase
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
    bytes_accessed: float = 0.0
    ref_bytes_accessed: float = 0.0
    compile_s: float = 0.0
    ref_compile_s: float = 0.0
    pair_ratios: tuple[float, float, float] | None = None   # per-pair q1, median, q3
    loops: tuple[int, int] = (0, 0)     # while loops in the compiled programs (ours, ref)

    @property
    def work_counted(self) -> bool:
        """Whether XLA's FLOPs and bytes are comparable: its cost analysis
        counts a while loop's body once, whatever the trip count, so a side
        with a loop (a lax.scan reference, a blockwise fori_loop) has its
        work undercounted."""
        return self.loops == (0, 0)

    @property
    def time_ratio(self) -> float:
        """The median of the per-pair ratios where timed in pairs, else the
        ratio of the median times."""
        if self.pair_ratios is not None:
            return self.pair_ratios[1]
        return ratio(self.time_s, self.ref_time_s)

    @property
    def mem_ratio(self) -> float:
        return ratio(self.temp_bytes, self.ref_temp_bytes)

    @property
    def flops_ratio(self) -> float:
        return ratio(self.flops, self.ref_flops)

    @property
    def bytes_ratio(self) -> float:
        return ratio(self.bytes_accessed, self.ref_bytes_accessed)

    def shortfalls(self) -> list[str]:
        """Where this row falls short of the reference: time above
        ``TIME_LIMIT`` (unless its lower quartile is at or below 1, which is
        noise), bytes or FLOPs above ``WORK_LIMIT`` (where they are counted:
        ``work_counted``), temp memory more than ``TEMP_SLACK`` bytes above."""
        out = []
        low = self.pair_ratios[0] if self.pair_ratios is not None else self.time_ratio
        if self.time_ratio > TIME_LIMIT and low > 1.0:
            out.append(f"time {self.time_ratio:.2f}x")
        if self.work_counted and self.bytes_ratio > WORK_LIMIT:
            out.append(f"bytes {self.bytes_ratio:.2f}x")
        if self.work_counted and self.flops_ratio > WORK_LIMIT:
            out.append(f"flops {self.flops_ratio:.2f}x")
        if self.temp_bytes > self.ref_temp_bytes + TEMP_SLACK:
            out.append(f"temp +{(self.temp_bytes - self.ref_temp_bytes) / 2**20:.1f} MiB")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The row as plain numbers (``gradrules bench --json``)."""
        return {"name": self.name, "time_s": self.time_s, "ref_time_s": self.ref_time_s,
                "time_ratio": self.time_ratio, "time_ratio_quartiles":
                    None if self.pair_ratios is None else [self.pair_ratios[0],
                                                           self.pair_ratios[2]],
                "temp_bytes": self.temp_bytes, "ref_temp_bytes": self.ref_temp_bytes,
                "flops": self.flops, "ref_flops": self.ref_flops,
                "bytes_accessed": self.bytes_accessed,
                "ref_bytes_accessed": self.ref_bytes_accessed, "compile_s": self.compile_s,
                "ref_compile_s": self.ref_compile_s, "loops": list(self.loops),
                "shortfalls": self.shortfalls()}


TIME_LIMIT = 1.15       # time ratio above which a row falls short
WORK_LIMIT = 1.1        # bytes / FLOPs ratio above which a row falls short
TEMP_SLACK = 2**20      # extra temp memory (bytes) a row may use


def ratio(ours: float, ref: float) -> float:
    """``ours / ref``: 1 when both are the same (both zero included), inf
    when only the reference is zero."""
    if ours == ref:
        return 1.0
    return ours / ref if ref else float("inf")


@dataclass
class Costs:
    """A compiled function and XLA's analyses of it."""

    compiled: Any
    temp_bytes: int
    flops: float
    bytes_accessed: float
    compile_s: float
    loops: int = 0


def compiled_costs(fn: Callable[..., Any], *args: Any) -> Costs:
    """``jax.jit(fn)`` compiled for ``args``, with its peak temp bytes
    (memory analysis), FLOPs and bytes accessed (cost analysis), the
    seconds lowering and compiling took and the number of while loops in
    the optimised HLO (whose bodies the cost analysis counts once)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    seconds = time.perf_counter() - t0
    mem = compiled.memory_analysis()
    temp = int(getattr(mem, "temp_size_in_bytes", 0)) if mem is not None else 0
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    cost = cost or {}
    loops = len(re.findall(r" while\(", compiled.as_text() or ""))
    return Costs(compiled, temp, float(cost.get("flops", 0.0)),
                 float(cost.get("bytes accessed", 0.0)), seconds, loops)


def compiled_stats(fn: Callable[..., Any], *args: Any) -> tuple[Any, int, float]:
    """(compiled executable, peak temp bytes, flops) of ``jax.jit(fn)``."""
    c = compiled_costs(fn, *args)
    return c.compiled, c.temp_bytes, c.flops


def time_compiled(compiled: Any, *args: Any, repeats: int = 5) -> float:
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def interleaved_samples(calls: Mapping[str, Callable[[], Any]], *, repeats: int = 10,
                        min_sample_s: float = 2e-3, max_inner: int = 64,
                        max_seconds: float | None = None) -> dict[str, list[float]]:
    """Seconds per call of each of ``calls`` (functions of no arguments: a
    compiled executable with its arguments bound), one sample per repeat.

    The functions run in turns, the order rotated every repeat, so a drift of
    the machine (clocks, temperature, other load) reaches all of them alike.
    After a warm-up call, each sample of a function is ``inner`` calls in a
    row then one wait, so dispatch overhead does not swamp a call of a few
    microseconds. ``inner`` is the same for every function: enough calls of
    the fastest for ``min_sample_s`` (from the median of three timed calls
    of each), at most ``max_inner``. A sample's wait for the last call is
    spread over its calls, so unequal counts would bias the ratio: one
    executable of 0.1 ms timed 0.21 ms per call in samples of 1 call and
    0.11 ms in samples of 26. With ``max_seconds``, the repeats stop once
    they have taken that long (after three at least)."""
    names = list(calls)
    start = time.perf_counter()
    once = []
    for name in names:
        jax.block_until_ready(calls[name]())
        timed = []
        for _ in range(3):
            t0 = time.perf_counter()
            jax.block_until_ready(calls[name]())
            timed.append(time.perf_counter() - t0)
        once.append(float(np.median(timed)))
    inner = max(1, min(max_inner, int(min_sample_s / max(min(once), 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            for _ in range(inner):
                out = calls[name]()
            jax.block_until_ready(out)
            samples[name].append((time.perf_counter() - t0) / inner)
        if max_seconds is not None and r >= 2 and time.perf_counter() - start > max_seconds:
            break
    return samples


def time_interleaved(calls: Mapping[str, Callable[[], Any]], *, repeats: int = 10,
                     min_sample_s: float = 2e-3, max_inner: int = 64) -> dict[str, float]:
    """Median seconds per call of each of ``calls``, timed in turns
    (``interleaved_samples``)."""
    samples = interleaved_samples(calls, repeats=repeats, min_sample_s=min_sample_s,
                                  max_inner=max_inner)
    return {name: float(np.median(s)) for name, s in samples.items()}


def compare(name: str, fn: Callable[..., Any], ref: Callable[..., Any], *args: Any,
            repeats: int = 5) -> BenchRow:
    c, temp, flops = compiled_stats(fn, *args)
    rc, rtemp, rflops = compiled_stats(ref, *args)
    return BenchRow(name, time_compiled(c, *args, repeats=repeats),
                    time_compiled(rc, *args, repeats=repeats), temp, rtemp, flops, rflops)


def format_table(rows: Sequence[BenchRow]) -> str:
    """The rows as columns: times, the time ratio (with its quartiles where
    timed in pairs), temp memory, FLOPs and bytes ratios ("loop" where a
    while loop leaves them uncounted: ``BenchRow.work_counted``), compile
    times."""
    head = ("benchmark", "time ms", "ref ms", "time x", "q1-q3", "temp MiB", "ref MiB",
            "flops x", "bytes x", "compile s", "ref s")

    def work(r: BenchRow, value: float) -> str:
        return f"{value:.2f}" if r.work_counted else "loop"

    body = [(r.name, f"{r.time_s * 1e3:.2f}", f"{r.ref_time_s * 1e3:.2f}", f"{r.time_ratio:.2f}",
             "" if r.pair_ratios is None else f"{r.pair_ratios[0]:.2f}-{r.pair_ratios[2]:.2f}",
             f"{r.temp_bytes / 2**20:.2f}", f"{r.ref_temp_bytes / 2**20:.2f}",
             work(r, r.flops_ratio), work(r, r.bytes_ratio), f"{r.compile_s:.2f}",
             f"{r.ref_compile_s:.2f}") for r in rows]
    return format_columns(head, body)


def summary(rows: Sequence[BenchRow], failures: Sequence[tuple[str, str]] = ()) -> str:
    """The median time ratio of each mode, then every row that falls short
    (``BenchRow.shortfalls``), then every row that failed to run."""
    lines = []
    for mode in MODES:
        ratios = [r.time_ratio for r in rows if r.name.endswith(f" {mode}")]
        if ratios:
            lines.append(f"median time ratio, {mode}: {np.median(ratios):.2f} "
                         f"({len(ratios)} rows)")
    short = [(r.name, ", ".join(r.shortfalls())) for r in rows if r.shortfalls()]
    lines.append(f"rows that fall short of the reference: {len(short)} of {len(rows)} "
                 f"(time > {TIME_LIMIT}x with q1 > 1, bytes or flops > {WORK_LIMIT}x, "
                 f"temp > +{TEMP_SLACK / 2**20:.0f} MiB)")
    uncounted = [r.name for r in rows if not r.work_counted]
    if uncounted:
        lines.append(f"rows with a while loop, bytes and flops not compared: {len(uncounted)}"
                     f" ({', '.join(uncounted)})")
    lines += [f"  {name}: {why}" for name, why in short]
    if failures:
        lines.append(f"rows that failed to run: {len(failures)}")
        lines += [f"  {name}: {why}" for name, why in failures]
    return "\n".join(lines)


def format_columns(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns: the header, a rule of dashes, then the body rows."""
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip()
             for row in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


MODES = ("forward", "grad", "hvp")


def _tanh_exp_ratio(a: Any, b: Any) -> Any:
    return multiply(tanh(a), exp(divide(a, b)))


def _tanh_exp_ratio_reference(a: Any, b: Any) -> Any:
    return jnp.tanh(a) * jnp.exp(a / b)


def _functions(case: BenchCase) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(gradrules, plain jax.numpy) of a case, params bound."""
    if case.op == "tanh_exp_ratio":
        return _tanh_exp_ratio, _tanh_exp_ratio_reference
    from .testing.samples import sample_fn
    op = get_op(case.op)
    assert op.reference is not None
    kw = dict(case.kwargs)
    rebuild = case.rebuild or (lambda a: tuple(a))

    def pick(fn: Callable[..., Any]) -> Callable[..., Any]:
        if case.output is None:
            return lambda *a: fn(*rebuild(a), **kw)
        return lambda *a: fn(*rebuild(a), **kw)[case.output]
    return pick(sample_fn(case.op)), pick(op.reference)


def _float_leaves(tree: Any) -> list[Any]:
    return [x for x in jax.tree_util.tree_leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)]


def mode_function(fn: Callable[..., Any], mode: str, args: Sequence[Any],
                  diff: Sequence[int] = (0,)) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
    """(function, extra arguments): ``fn`` itself, the gradient of ``sum_i
    sum(w_i * out_i)`` over its float outputs in the ``diff`` arguments, or
    that gradient's JVP along tangents (a Hessian-vector product); None where
    the mode does not apply (no float output or nothing to differentiate).
    The weights and tangents are arguments, not constants, so that XLA cannot
    fold a linear op's derivative away at compile time; the function takes
    ``(*args, *extra)``."""
    if mode == "forward":
        return fn, ()
    outs = _float_leaves(jax.eval_shape(fn, *args))
    if not outs or not diff:
        return None
    ws = tuple(jnp.cos(jnp.arange(np.prod(o.shape), dtype=o.dtype)).reshape(o.shape)
               for o in outs)
    n, m = len(args), len(ws)

    def grad(*a: Any) -> Any:
        def loss(*d: Any) -> Any:
            full = list(a[:n])
            for i, v in zip(diff, d):
                full[i] = v
            return sum(jnp.sum(w * o) for w, o in zip(a[n:n + m], _float_leaves(fn(*full))))
        return jax.grad(loss, argnums=tuple(range(len(diff))))(*(a[i] for i in diff))

    if mode == "grad":
        return grad, ws
    tangents = tuple(jnp.sin(jnp.arange(args[i].size, dtype=args[i].dtype)
                             ).reshape(args[i].shape) for i in diff)

    def hvp(*a: Any) -> Any:
        def g(*d: Any) -> Any:
            full = list(a[:n + m])
            for i, v in zip(diff, d):
                full[i] = v
            return grad(*full)
        return jax.jvp(g, tuple(a[i] for i in diff), tuple(a[n + m:]))[1]
    return hvp, ws + tangents


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    q1, q2, q3 = np.percentile(values, [25, 50, 75])
    return float(q1), float(q2), float(q3)


def _bench_row(name: str, made: tuple[Callable[..., Any], tuple[Any, ...]], ref_made: Any,
               args: tuple[Any, ...], repeats: int, max_seconds: float) -> BenchRow:
    """One row: both sides compiled and analysed, then timed in turns."""
    (fn, extra), (ref_fn, _) = made, ref_made
    call_args = args + extra
    c, rc = compiled_costs(fn, *call_args), compiled_costs(ref_fn, *call_args)
    s = interleaved_samples({"ours": partial(c.compiled, *call_args),
                             "ref": partial(rc.compiled, *call_args)},
                            repeats=repeats, max_seconds=max_seconds)
    pairs = [a / b if b else float("inf") for a, b in zip(s["ours"], s["ref"])]
    return BenchRow(name, float(np.median(s["ours"])), float(np.median(s["ref"])),
                    c.temp_bytes, rc.temp_bytes, c.flops, rc.flops, c.bytes_accessed,
                    rc.bytes_accessed, c.compile_s, rc.compile_s, _quartiles(pairs),
                    (c.loops, rc.loops))


def bench_rows(cases: Sequence[BenchCase] = BENCH_CASES, *, quick: bool = False,
               modes: Sequence[str] = MODES, repeats: int = 10, max_seconds: float = 20.0,
               progress: Callable[[str], None] | None = None,
               failures: list[tuple[str, str]] | None = None) -> list[BenchRow]:
    """Each case in each mode that applies beside plain jax.numpy, compiled
    and timed in turns (``interleaved_samples``; the time ratio is the median
    of the per-pair ratios), with XLA's temp memory, FLOPs, bytes accessed
    and compile times. A row's repeats stop after ``max_seconds`` (three at
    least), so that the largest cases stay within minutes. With
    ``failures``, a row that raises (out of memory, say) is appended there as
    ``(name, error)`` and the run goes on; without it, the error propagates."""
    rows = []
    for case in cases:
        ours, ref = _functions(case)
        args = case.make(np.random.default_rng(0), quick)
        for mode in modes:
            name = f"{case.name} {mode}"
            try:
                made = mode_function(ours, mode, args, case.diff)
                if made is None:
                    continue
                if progress:
                    progress(name)
                rows.append(_bench_row(name, made, mode_function(ref, mode, args, case.diff), args,
                                       repeats, max_seconds))
            except Exception as e:  # noqa: BLE001  (reported, the run goes on)
                if failures is None:
                    raise
                failures.append((name, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"))
    return rows


# ----------------------------------------------- the rest of the catalog
CATALOG_ELEMENTS = 1 << 20
"""The size the largest operand of a catalog case is grown to (about)."""


def _grown(case: Any, quick: bool) -> tuple[Any, ...]:
    """A case's array leaves as jax arrays, tiled up to about
    ``CATALOG_ELEMENTS`` in their largest: every axis longer than 1 by the
    same factor (size-1 axes keep broadcasting); else the leading axis of
    the operands where it is 1 (a batch of one: conv3d, patchify, fold,
    whose params fix every other size), by that factor to the
    power of the axes it replaces; else only the leading axes longer than
    1; the sample's own size where none grows an operand and gives the op
    and its reference the same output shapes. The factor halves until no
    output exceeds 4 ``CATALOG_ELEMENTS`` (operands that broadcast against
    each other into an outer product)."""
    leaves = [np.asarray(x) for x in case.leaves]
    if not leaves:          # no array operand (arange, zeros): nothing to grow
        return ()
    big = max(leaves, key=np.size)
    axes = sum(d > 1 for d in big.shape)
    factor = int((CATALOG_ELEMENTS / big.size) ** (1 / axes)) if axes and not quick else 1

    def reps(x: np.ndarray, rule: str) -> list[int]:
        if rule == "batch":
            return [factor ** axes if i == 0 and d == 1 else 1 for i, d in enumerate(x.shape)]
        return [factor if d > 1 and (i == 0 or rule == "every") else 1
                for i, d in enumerate(x.shape)]

    def shapes(fn: Callable[..., Any], xs: list[Any]) -> Any:
        return [o.shape for o in jax.tree_util.tree_leaves(jax.eval_shape(fn, *xs))]

    while factor > 1:
        for rule in ("every", "batch", "leading"):
            if all(r == 1 for x in leaves for r in reps(x, rule)):
                continue
            grown = [jax.ShapeDtypeStruct(
                tuple(d * r for d, r in zip(x.shape, reps(x, rule))), jnp.asarray(x).dtype)
                for x in leaves]
            try:
                out = shapes(case.call, grown)
                if out != shapes(case.reference, grown):
                    continue
            except (TypeError, ValueError, IndexError):
                continue
            if max((math.prod(o) for o in out), default=0) <= 4 * CATALOG_ELEMENTS:
                return tuple(jnp.asarray(np.tile(x, reps(x, rule))) for x in leaves)
        factor //= 2        # outputs far larger than the operands (outer broadcasts)
    return tuple(jnp.asarray(x) for x in leaves)


def catalog_cases(exclude: Sequence[str] = ()) -> list[BenchCase]:
    """A case for every op with samples and a reference, but those named in
    ``exclude``: its largest sample, grown (``_grown``), differentiated in
    its float operands that take a tangent."""
    from .core.registry import OPS
    from .testing.case import make_case
    from .testing.samples import largest_sample, opinfo, sample_fn, table
    cases = []
    for name, op in OPS.items():
        if name in exclude or op.reference is None or name not in table():
            continue
        sample = largest_sample(name)
        if sample is None:
            continue
        case = make_case(name, op, sample_fn(name), sample, opinfo(name))
        cases.append(BenchCase(name, name, lambda rng, quick, case=case: _grown(case, quick),
                               tuple(sample.kwargs.items()), tuple(case.diff_idx),
                               rebuild=case.rebuild))
    return cases


def all_cases() -> list[BenchCase]:
    """``BENCH_CASES`` and ``catalog_cases`` for every op they do not cover."""
    return list(BENCH_CASES) + catalog_cases(exclude=[c.op for c in BENCH_CASES])
