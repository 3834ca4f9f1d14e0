"""gradrules' Pallas attention kernels on one GPU: checked against gradrules'
XLA path, and timed beside ``jax.nn.dot_product_attention`` (cuDNN and XLA).

For every configuration (sequence S with batch B = 16384 // S, H = 16
heads, head_dim D, causal or not, bfloat16) it prints one row per mode of
``gradrules.attention`` under ``gradrules.config.using(kernel=--kernel)``:

* ``fwd``: the jitted forward;
* ``bwd``: the backward alone, as (time of the jitted grad) - (time of fwd),
  where the grad is ``jax.vjp(attention, q, k, v)[1](do)``, i.e. the grad of
  ``sum(out * do)`` with respect to q, k and v (forward + backward);
* ``jvp``: the jitted ``jax.jvp`` (primal and tangent together).

Columns: ``check``: max |kernel - XLA path| / max |XLA path| over the mode's
outputs (out; dq, dk, dv; out and its tangent), on the GPU, with the
tolerance of bfloat16 (float32 rows too: the GPU's float32 dots may use
TF32); ``ms`` (median of interleaved repeats); ``TF/s`` and ``%peak`` of
989 TFLOP/s (H200 dense bf16), counting 4 B H S^2 D FLOPs for the forward
(half of it when causal), 2.5 times that for the backward and for the JVP
(5 matmuls against 2); ``/cudnn``, ``/jax-xla``, ``/gr-xla``: the time
ratio gradrules / other (below 1: gradrules is faster) against
``jax.nn.dot_product_attention(implementation="cudnn")`` (no forward mode),
``implementation="xla"`` and gradrules' own ``kernel="xla"``; ``temp MiB``
and its ratios: XLA's compiled temp memory of the mode's program (the grad's
for ``bwd``). Float32 rows at the smallest S are checks only; rows at S =
32768, B = 1 give the compiled temp memory of the grad only (nothing runs,
so the XLA path may need more than the GPU has). A configuration that fails
shows its error in its row; the others still run. Below the table, the
targets: fwd >= 50% and bwd >= 35% of peak at S >= 4096 with head_dim 128,
never slower than either XLA path, and every check within tolerance.

Run from the repository root, on a GPU (meant to take under five minutes on
one H200; ``--seq``, ``--head-dim``, ``--causal`` and ``--no-check`` cut it)::

    PYTHONPATH=. python benchmarks/gpu_attention.py
    PYTHONPATH=. python benchmarks/gpu_attention.py --seq 4096 --head-dim 128

``--dry-run`` runs nothing, on any machine (CPU included): it lowers every
gradrules configuration for CUDA (``gradrules.testing.gpu.cuda_hlo``) and
prints, per configuration and program, the Triton kernel calls in it; it
exits nonzero if a lowering fails. The exit status of a full run is nonzero
when a check fails, a gradrules configuration fails, or a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

import gradrules
from gradrules.bench import compiled_stats, format_columns, time_interleaved
from gradrules.testing.gpu import cuda_hlo, triton_calls

TOKENS = 16384
HEADS = 16
SEQS = (1024, 2048, 4096, 8192, 16384)
HEAD_DIMS = (64, 128)
MEMORY_SEQ = 32768
PEAK_TFLOPS = 989.0          # H200 SXM, dense bfloat16
TOLERANCE = 2e-2             # bfloat16 (and TF32) rounding of sums over S terms
FWD_TARGET, BWD_TARGET, TARGET_SEQ, TARGET_HEAD_DIM = 0.50, 0.35, 4096, 128

PROGRAMS = ("fwd", "grad", "jvp")
ROW_PROGRAM = {"fwd": "fwd", "bwd": "grad", "jvp": "jvp"}   # row mode -> program checked
FLOP_FACTOR = {"fwd": 1.0, "bwd": 2.5, "jvp": 2.5}
ARGS = {"fwd": ("q", "k", "v"), "grad": ("q", "k", "v", "do"),
        "jvp": ("q", "k", "v", "tq", "tk", "tv")}
REFERENCES = ("cudnn", "jax-xla", "gr-xla")

AttentionFn = Callable[..., jax.Array]


@dataclass(frozen=True)
class Config:
    """One row group. ``kind``: "time" (check, time, memory), "check" (check
    only) or "memory" (compiled temp memory of the grad only)."""

    seq: int
    batch: int
    head_dim: int
    causal: bool
    dtype: str = "bfloat16"
    kind: str = "time"
    heads: int = HEADS

    def shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.seq, self.heads, self.head_dim)

    def flops(self, mode: str) -> float:
        full = 4.0 * self.batch * self.heads * self.seq * self.seq * self.head_dim
        return full * (0.5 if self.causal else 1.0) * FLOP_FACTOR[mode]

    def programs(self) -> tuple[str, ...]:
        return ("grad",) if self.kind == "memory" else PROGRAMS

    def modes(self) -> tuple[str, ...]:
        return ("bwd",) if self.kind == "memory" else tuple(ROW_PROGRAM)

    def cells(self) -> list[str]:
        dtype = {"bfloat16": "bf16", "float32": "f32"}.get(self.dtype, self.dtype)
        return [str(self.seq), str(self.batch), str(self.head_dim),
                "yes" if self.causal else "no", dtype]


def configs(seqs: Sequence[int], head_dims: Sequence[int], causals: Sequence[bool],
            memory_seq: int, tokens: int = TOKENS, heads: int = HEADS,
            float32_check: bool = True) -> list[Config]:
    """The timed configurations (batch ``tokens // seq``), float32 checks at
    the smallest S, and the memory-only configurations at ``memory_seq`` (none
    when 0)."""
    out = []
    for head_dim in head_dims:
        for causal in causals:
            timed = [Config(s, max(1, tokens // s), head_dim, causal, heads=heads)
                     for s in seqs]
            out += timed
            if seqs and float32_check:
                out.append(replace(timed[0], dtype="float32", kind="check"))
            if memory_seq:
                out.append(Config(memory_seq, 1, head_dim, causal, kind="memory", heads=heads))
    return out


# ------------------------------------------------------------ what runs
@dataclass(frozen=True)
class Impl:
    """An attention implementation: ``make(causal)`` gives ``f(q, k, v)``;
    ``kernel`` is the gradrules kernel it is traced under (None: not gradrules)."""

    name: str
    make: Callable[[bool], AttentionFn]
    kernel: str | None = None
    programs: tuple[str, ...] = PROGRAMS

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        if self.kernel is None:
            yield
        else:
            with gradrules.config.using(kernel=self.kernel):
                yield


def gradrules_attention(causal: bool) -> AttentionFn:
    return partial(gradrules.attention, causal=causal)


def jax_attention(implementation: str) -> Callable[[bool], AttentionFn]:
    def make(causal: bool) -> AttentionFn:
        return partial(jax.nn.dot_product_attention, is_causal=causal,
                       implementation=implementation)
    return make


def implementations(kernel: str) -> dict[str, Impl]:
    """gradrules under ``kernel``, then the references (cuDNN's is a
    custom_vjp: it has no JVP)."""
    impls = [Impl("gradrules", gradrules_attention, kernel),
             Impl("cudnn", jax_attention("cudnn"), programs=("fwd", "grad")),
             Impl("jax-xla", jax_attention("xla")),
             Impl("gr-xla", gradrules_attention, "xla")]
    return {impl.name: impl for impl in impls}


def program(attn: AttentionFn, name: str) -> Callable[..., Any]:
    """The function of ``ARGS[name]`` that the program ``name`` jits."""
    if name == "fwd":
        return attn
    if name == "grad":
        def grad(q: jax.Array, k: jax.Array, v: jax.Array, do: jax.Array) -> Any:
            return jax.vjp(attn, q, k, v)[1](do)
        return grad

    def jvp(q: jax.Array, k: jax.Array, v: jax.Array, tq: jax.Array, tk: jax.Array,
            tv: jax.Array) -> Any:
        return jax.jvp(attn, (q, k, v), (tq, tk, tv))
    return jvp


def abstract_inputs(cfg: Config) -> dict[str, jax.ShapeDtypeStruct]:
    struct = jax.ShapeDtypeStruct(cfg.shape(), jnp.dtype(cfg.dtype))
    return {name: struct for name in ("q", "k", "v", "do", "tq", "tk", "tv")}


def random_inputs(cfg: Config, seed: int = 0) -> dict[str, jax.Array]:
    names = ("q", "k", "v", "do", "tq", "tk", "tv")
    keys = jax.random.split(jax.random.key(seed), len(names))
    return {n: jax.random.normal(key, cfg.shape(), jnp.dtype(cfg.dtype))
            for n, key in zip(names, keys)}


# ------------------------------------------------------------ measuring
def describe(err: BaseException, width: int = 160) -> str:
    """The exception's type and the first line of its message."""
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first}"[:width]


@dataclass
class Measured:
    """What one configuration gave, keyed by (implementation, program)."""

    times: dict[tuple[str, str], float] = field(default_factory=dict)
    temps: dict[tuple[str, str], int] = field(default_factory=dict)
    checks: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def fail(self, impl: str, err: BaseException) -> None:
        self.errors.setdefault(impl, describe(err))

    def time(self, impl: str, mode: str) -> float | None:
        """Seconds of the mode; ``bwd`` is grad - fwd."""
        if mode != "bwd":
            return self.times.get((impl, mode))
        grad, fwd = self.times.get((impl, "grad")), self.times.get((impl, "fwd"))
        return None if grad is None or fwd is None else grad - fwd


def compile_all(cfg: Config, impls: Sequence[Impl], args: dict[str, Any],
                m: Measured) -> dict[tuple[str, str], Any]:
    """Each implementation's compiled programs; a failure is noted in ``m``."""
    compiled = {}
    for impl in impls:
        for name in cfg.programs():
            if name not in impl.programs:
                continue
            try:
                with impl.context():
                    fn = program(impl.make(cfg.causal), name)
                    exe, temp, _ = compiled_stats(fn, *(args[a] for a in ARGS[name]))
            except Exception as err:     # one failing configuration must not end the run
                m.fail(impl.name, err)
                continue
            compiled[impl.name, name] = exe
            m.temps[impl.name, name] = temp
    return compiled


@jax.jit
def relative_error(got: Any, want: Any) -> jax.Array:
    """max |got - want| / max |want| over the leaves (NaN propagates)."""
    errs = [jnp.max(jnp.abs(g.astype(jnp.float32) - w.astype(jnp.float32)))
            / jnp.maximum(jnp.max(jnp.abs(w.astype(jnp.float32))), 1e-30)
            for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want))]
    return jnp.max(jnp.stack(errs))


def check_kernels(compiled: dict[tuple[str, str], Any], args: dict[str, jax.Array],
                  m: Measured) -> None:
    """Each program of gradrules against the same program of its XLA path."""
    for name in PROGRAMS:
        ours, ref = compiled.get(("gradrules", name)), compiled.get(("gr-xla", name))
        if ours is None or ref is None:
            continue
        call_args = [args[a] for a in ARGS[name]]
        try:
            m.checks[name] = float(relative_error(ours(*call_args), ref(*call_args)))
        except Exception as err:
            m.fail("gradrules", err)


def time_all(compiled: dict[tuple[str, str], Any], args: dict[str, jax.Array],
             m: Measured, repeats: int) -> None:
    """Interleaved timing, program by program, of the implementations that
    compiled it (none when gradrules did not)."""
    for name in PROGRAMS:
        if ("gradrules", name) not in compiled:
            continue
        calls = {impl: partial(exe, *(args[a] for a in ARGS[name]))
                 for (impl, prog), exe in compiled.items() if prog == name}
        runnable = {}
        for impl, call in calls.items():
            try:
                jax.block_until_ready(call())
                runnable[impl] = call
            except Exception as err:
                m.fail(impl, err)
        try:
            m.times.update({(impl, name): seconds for impl, seconds
                            in time_interleaved(runnable, repeats=repeats).items()})
        except Exception as err:
            m.fail(f"timing {name}", err)


def measure(cfg: Config, impls: dict[str, Impl], repeats: int, check: bool) -> Measured:
    m = Measured()
    if cfg.kind == "memory":
        compile_all(cfg, list(impls.values()), abstract_inputs(cfg), m)
        return m
    use = (list(impls.values()) if cfg.kind == "time"
           else [impls["gradrules"], impls["gr-xla"]])
    try:
        args = random_inputs(cfg)
    except Exception as err:
        m.fail("inputs", err)
        return m
    compiled = compile_all(cfg, use, args, m)
    if check or cfg.kind == "check":
        check_kernels(compiled, args, m)
    if cfg.kind == "time":
        time_all(compiled, args, m, repeats)
    return m


# ------------------------------------------------------------ the table
HEAD = ("seq", "batch", "hd", "causal", "dtype", "mode", "check", "ms", "TF/s", "%peak",
        *(f"/{r}" for r in REFERENCES), "temp MiB", *(f"temp/{r}" for r in REFERENCES),
        "errors")


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b or b <= 0 else f"{a / b:.2f}"


def check_cell(err: float | None) -> str:
    if err is None:
        return "-"
    return f"{'ok' if err <= TOLERANCE else 'BAD'} {err:.1e}"


def rows(cfg: Config, m: Measured, peak: float) -> list[list[str]]:
    out = []
    for i, mode in enumerate(cfg.modes()):
        prog = ROW_PROGRAM[mode]
        t = m.time("gradrules", mode)
        tflops = None if t is None or t <= 0 else cfg.flops(mode) / t / 1e12
        temp = m.temps.get(("gradrules", prog))
        errors = "; ".join(f"{k}: {v}" for k, v in m.errors.items()) if i == 0 else ""
        out.append([*cfg.cells(), mode, check_cell(m.checks.get(prog)),
                    "-" if t is None else f"{t * 1e3:.3f}",
                    "-" if tflops is None else f"{tflops:.0f}",
                    "-" if tflops is None else f"{100 * tflops / peak:.0f}%",
                    *(ratio(t, m.time(r, mode)) for r in REFERENCES),
                    "-" if temp is None else f"{temp / 2**20:.1f}",
                    *(ratio(temp, m.temps.get((r, prog))) for r in REFERENCES), errors])
    return out


def targets(results: Sequence[tuple[Config, Measured]], peak: float) -> list[tuple[str, bool]]:
    """(line, met) for each target of issue 10."""
    out = []
    big = [(c, m) for c, m in results if c.kind == "time" and c.seq >= TARGET_SEQ
           and c.head_dim == TARGET_HEAD_DIM]
    for mode, goal in (("fwd", FWD_TARGET), ("bwd", BWD_TARGET)):
        fracs = [c.flops(mode) / t / 1e12 / peak if (t := m.time("gradrules", mode)) else 0.0
                 for c, m in big]
        worst = min(fracs, default=0.0)
        out.append((f"{mode} >= {goal:.0%} of peak at seq >= {TARGET_SEQ}, head_dim "
                    f"{TARGET_HEAD_DIM}: worst {worst:.0%}", bool(fracs) and worst >= goal))
    ratios = [t / r for c, m in results if c.kind == "time" for mode in ROW_PROGRAM
              for ref in ("jax-xla", "gr-xla")
              if (t := m.time("gradrules", mode)) is not None
              and (r := m.time(ref, mode)) is not None and r > 0]
    worst = max(ratios, default=float("inf"))
    out.append((f"never slower than the XLA paths (/jax-xla, /gr-xla <= 1): worst {worst:.2f}",
                bool(ratios) and worst <= 1.0))
    checks = [e for _, m in results for e in m.checks.values()]
    failed = [c for c, m in results if "gradrules" in m.errors or "inputs" in m.errors]
    out.append((f"kernels match the XLA path (check <= {TOLERANCE:g}); gradrules failed in "
                f"{len(failed)} configurations", bool(checks) and not failed
                and all(e <= TOLERANCE for e in checks)))
    return out


def run(cfgs: Sequence[Config], kernel: str, repeats: int, check: bool, peak: float) -> int:
    impls = implementations(kernel)
    device = jax.devices()[0]
    heads = ", ".join(str(h) for h in sorted({cfg.heads for cfg in cfgs}))
    print(f"gradrules.attention, kernel={kernel!r}, against jax.nn.dot_product_attention; "
          f"{device.platform} {device.device_kind}, jax {jax.__version__}; heads {heads}")
    results, start = [], time.perf_counter()
    for cfg in cfgs:
        try:
            m = measure(cfg, impls, repeats, check)
        except Exception as err:          # whatever it is, the next configuration runs
            m = Measured()
            m.fail("gradrules", err)
        results.append((cfg, m))
        print(f"[{time.perf_counter() - start:6.1f}s] {' '.join(cfg.cells())} {cfg.kind}",
              file=sys.stderr, flush=True)
    body = [row for cfg, m in results for row in rows(cfg, m, peak)]
    print(format_columns(HEAD, body))
    lines = targets(results, peak)
    for line, met in lines:
        print(f"target: {line}: {'met' if met else 'NOT met'}")
    print(f"total {time.perf_counter() - start:.0f}s")
    return 0 if all(met for _, met in lines) else 1


# ------------------------------------------------------------ dry run
DRY_HEAD = ("seq", "batch", "hd", "causal", "dtype", "program", "triton calls", "status")


def lower_config(cfg: Config, kernel: str) -> list[list[str]]:
    """A row per program: its Triton kernel calls when lowered for CUDA."""
    impl = implementations(kernel)["gradrules"]
    args = abstract_inputs(cfg)
    out = []
    for name in cfg.programs():
        try:
            with impl.context():
                text = cuda_hlo(program(impl.make(cfg.causal), name),
                                *(args[a] for a in ARGS[name]))
            cells = [str(triton_calls(text)), "lowered"]
        except Exception as err:
            cells = ["-", f"FAILED {describe(err, 200)}"]
        out.append([*cfg.cells(), name, *cells])
    return out


def dry_run(cfgs: Sequence[Config], kernel: str) -> int:
    body = [row for cfg in cfgs for row in lower_config(cfg, kernel)]
    print(f"dry run: gradrules.attention, kernel={kernel!r}, lowered for CUDA; "
          f"jax {jax.__version__}")
    print(format_columns(DRY_HEAD, body))
    failed = sum(row[-1] != "lowered" for row in body)
    with_triton = sum(row[-2] not in ("-", "0") for row in body)
    print(f"dry run: {len(body)} lowerings, {failed} failed, {with_triton} with Triton calls")
    return 1 if failed else 0


# ------------------------------------------------------------ command line
def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--dry-run", action="store_true",
                   help="lower every gradrules configuration for CUDA; run nothing")
    p.add_argument("--kernel", default="pallas", choices=("pallas", "auto", "xla"),
                   help="the gradrules kernel measured (default: pallas)")
    p.add_argument("--seq", type=int, nargs="+", default=list(SEQS))
    p.add_argument("--head-dim", type=int, nargs="+", default=list(HEAD_DIMS))
    p.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    p.add_argument("--memory-seq", type=int, default=MEMORY_SEQ,
                   help="S of the memory-only rows (B = 1); 0: none")
    p.add_argument("--tokens", type=int, default=TOKENS, help="B * S of the timed rows")
    p.add_argument("--heads", type=int, default=HEADS)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="skip the check of the timed rows (float32 rows still check)")
    p.add_argument("--float32-check", action=argparse.BooleanOptionalAction, default=True,
                   help="the float32 check-only rows at the smallest S")
    p.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    causals = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    cfgs = configs(args.seq, args.head_dim, causals, args.memory_seq, args.tokens, args.heads,
                   args.float32_check)
    if args.dry_run:
        return dry_run(cfgs, args.kernel)
    return run(cfgs, args.kernel, args.repeats, args.check, args.peak_tflops)


if __name__ == "__main__":
    raise SystemExit(main())
