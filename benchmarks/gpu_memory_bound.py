"""gradrules' Pallas kernels for the memory-bound fused ops on one GPU:
checked against gradrules' XLA path and timed beside plain jax.numpy.

For every op (rms_norm, layer_norm, softmax, log_softmax, silu_gated,
gelu_gated exact and tanh, rope, cross_entropy at two vocabularies,
fused_linear_cross_entropy) in bfloat16 and float32, one row per mode:

* ``fwd``: the jitted forward;
* ``fwd+bwd``: the jitted ``jax.value_and_grad`` of ``sum(out * g)`` (of the
  mean loss for the losses) with respect to every float input.

Columns: ``check``: max |kernel - XLA path| / max |XLA path| over the mode's
outputs, on the GPU (bfloat16 tolerance for both dtypes: float32 dots may
use TF32); ``ms`` (median of interleaved repeats); ``GB/s``: the bytes the
mode must move at least (inputs and outputs; for fwd+bwd also the inputs
again, the cotangent and the gradients) over the time; ``%copy``: that
against the copy bandwidth measured in the same run (a jitted ``x + 0`` of
the op's largest input); ``/jnp``: time ratio against the plain jax.numpy
version compiled by XLA (below 1: gradrules is faster). Below the table,
the peak memory (XLA's compiled temp) of the fused linear cross-entropy grad
against plain jax.numpy's, and the targets: the norms, softmax, gated MLPs
and rope at >= 85% of the copy bandwidth; every kernel no slower than
jax.numpy; the fused linear cross-entropy grad at most 1/8 of plain
jax.numpy's memory and at most 1.1x its time. A row that fails shows its
error; the others still run.

Run from the repository root, on a GPU (only jax and numpy needed; meant to
take under five minutes on one H200; ``--ops`` and ``--dtype`` cut it)::

    PYTHONPATH=. python benchmarks/gpu_memory_bound.py
    PYTHONPATH=. python benchmarks/gpu_memory_bound.py --ops rms_norm softmax --dtype bfloat16

``--dry-run`` runs nothing, on any machine: it lowers every configuration for
CUDA (``gradrules.testing.gpu.cuda_hlo``) under ``kernel="pallas"`` and prints
the Triton calls in each program; an op with no kernel yet says so. It exits
nonzero if a lowering of an op with kernels fails.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

import gradrules
from gradrules.bench import compiled_stats, format_columns, time_interleaved
from gradrules.core.registry import get_op
from gradrules.testing.gpu import cuda_hlo, triton_calls

TOLERANCE = 2e-2
COPY_TARGET, JNP_TARGET, FLCE_MEMORY_TARGET, FLCE_TIME_TARGET = 0.85, 1.0, 1 / 8, 1.1
BANDWIDTH_OPS = ("rms_norm", "layer_norm", "softmax", "log_softmax", "silu_gated",
                 "gelu_gated", "gelu_gated_tanh", "rope")
MODES = ("fwd", "fwd+bwd")


def _rms_norm(x: jax.Array, w: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    return (x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + 1e-6) * w).astype(
        x.dtype)


def _layer_norm(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    mean = jnp.mean(x32, -1, keepdims=True)
    var = jnp.mean(jnp.square(x32 - mean), -1, keepdims=True)
    return ((x32 - mean) * jax.lax.rsqrt(var + 1e-5) * w + b).astype(x.dtype)


def _rope(x: jax.Array) -> jax.Array:
    _, s, _, d = x.shape
    freqs = 10000.0 ** (-jnp.arange(0, d // 2, dtype=jnp.float32) * 2 / d)
    angle = jnp.arange(s, dtype=jnp.float32)[:, None] * freqs
    cos, sin = jnp.cos(angle)[None, :, None], jnp.sin(angle)[None, :, None]
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).astype(x.dtype)


def _cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], -1))


@dataclass(frozen=True)
class Op:
    """One benchmarked op: float input shapes, an optional int label input
    (``labels`` tokens drawn below ``vocab``), the gradrules function and the
    plain jax.numpy one, and whether it returns a scalar loss."""

    name: str
    op: str                                   # the gradrules op whose kernels it runs
    shapes: tuple[tuple[int, ...], ...]
    gradrules_fn: Callable[..., jax.Array]
    jnp_fn: Callable[..., jax.Array]
    labels: tuple[int, int] | None = None     # (tokens, vocab)

    @property
    def loss(self) -> bool:
        return self.labels is not None

    def inputs(self, dtype: str, seed: int = 0) -> list[jax.Array]:
        keys = jax.random.split(jax.random.key(seed), len(self.shapes) + 1)
        xs = [jax.random.normal(k, s, jnp.float32).astype(dtype)
              for k, s in zip(keys, self.shapes)]
        if self.labels is not None:
            tokens, vocab = self.labels
            xs.append(jax.random.randint(keys[-1], (tokens,), 0, vocab))
        return xs

    def structs(self, dtype: str) -> list[jax.ShapeDtypeStruct]:
        out = [jax.ShapeDtypeStruct(s, dtype) for s in self.shapes]
        if self.labels is not None:
            out.append(jax.ShapeDtypeStruct((self.labels[0],), jnp.int32))
        return out

    def min_bytes(self, mode: str, dtype: str) -> float:
        """What the mode must move at least: inputs and the output (and, with
        the backward, the inputs again, the output's cotangent and the grads)."""
        item = np.dtype(dtype).itemsize
        inputs = sum(math.prod(s) for s in self.shapes) * item
        out = 4 if self.loss else math.prod(self.shapes[0]) * item
        labels = self.labels[0] * 4 if self.labels else 0
        fwd = inputs + out + labels
        return fwd if mode == "fwd" else 2 * fwd + out + inputs


def ops(shrink: int = 1) -> list[Op]:
    """The benchmarked ops, every size divided by ``shrink`` (the tests run
    them tiny on the CPU)."""
    rows, hidden, vocab, big_vocab = (n // shrink for n in (16384, 4096, 32000, 131072))
    half = rows // 2
    return [
        Op("rms_norm", "rms_norm", ((rows, hidden), (hidden,)),
           lambda x, w: gradrules.rms_norm(x, w), _rms_norm),
        Op("layer_norm", "layer_norm", ((rows, hidden), (hidden,), (hidden,)),
           lambda x, w, b: gradrules.layer_norm(x, w, b), _layer_norm),
        Op("softmax", "softmax", ((rows, hidden),), gradrules.softmax, jax.nn.softmax),
        Op("log_softmax", "log_softmax", ((rows, hidden),), gradrules.log_softmax,
           jax.nn.log_softmax),
        Op("silu_gated", "silu_gated", ((rows, hidden),) * 2, gradrules.silu_gated,
           lambda g, u: jax.nn.silu(g) * u),
        Op("gelu_gated", "gelu_gated", ((rows, hidden),) * 2, gradrules.gelu_gated,
           lambda g, u: jax.nn.gelu(g, approximate=False) * u),
        Op("gelu_gated_tanh", "gelu_gated", ((rows, hidden),) * 2,
           lambda g, u: gradrules.gelu_gated(g, u, approximate=True),
           lambda g, u: jax.nn.gelu(g, approximate=True) * u),
        Op("rope", "rope", ((16, 1024 // shrink, 32, 128),), gradrules.rope, _rope),
        Op("cross_entropy_32k", "cross_entropy", ((rows, vocab),),
           gradrules.cross_entropy, _cross_entropy, labels=(rows, vocab)),
        Op("cross_entropy_131k", "cross_entropy", ((half, big_vocab),),
           gradrules.cross_entropy, _cross_entropy, labels=(half, big_vocab)),
        Op("flce_131k", "fused_linear_cross_entropy", ((half, hidden), (hidden, big_vocab)),
           gradrules.fused_linear_cross_entropy,
           lambda h, w, y: _cross_entropy(h @ w, y), labels=(half, big_vocab)),
    ]


def has_kernels(op: str) -> bool:
    return any("pallas" in info.lowerings for info in get_op(op).primitive_infos)


# ------------------------------------------------------------ programs
def program(fn: Callable[..., jax.Array], op: Op, mode: str) -> Callable[..., Any]:
    """The jitted program of a mode: fwd, or value_and_grad of sum(out * g)
    (the loss itself for a loss) with respect to the float inputs."""
    floats = tuple(range(len(op.shapes)))
    if mode == "fwd":
        return jax.jit(fn)

    def objective(*args: jax.Array) -> jax.Array:
        *xs, g = args if not op.loss else (*args, None)
        out = fn(*xs)
        return out.astype(jnp.float32) if op.loss else jnp.sum(
            out.astype(jnp.float32) * g.astype(jnp.float32))
    return jax.jit(jax.value_and_grad(objective, argnums=floats))


def _with_cotangent(op: Op, args: list[Any], mode: str, dtype: str, *,
                    abstract: bool = False) -> list[Any]:
    """``args`` and, for a grad of a non-loss op, the output cotangent: an
    array, or (``abstract``: for lowering only) its ``ShapeDtypeStruct``,
    never a full-size random draw that nothing runs."""
    if mode == "fwd" or op.loss:
        return args
    if abstract:
        return [*args, jax.ShapeDtypeStruct(op.shapes[0], dtype)]
    g = jax.random.normal(jax.random.key(7), op.shapes[0], jnp.float32).astype(dtype)
    return [*args, g]


def _under(kernel: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        with gradrules.config.using(kernel=kernel):
            return fn(*args)
    return run


def _max_rel(a: Any, b: Any) -> float:
    worst = 0.0
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
        worst = max(worst, float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-30)))
    return worst


# ------------------------------------------------------------ runs
def run_row(op: Op, dtype: str, mode: str, kernel: str, repeats: int,
            copy_bandwidth: float) -> dict[str, Any]:
    args = _with_cotangent(op, op.inputs(dtype), mode, dtype)
    ours = program(op.gradrules_fn, op, mode)
    with gradrules.config.using(kernel=kernel):
        got = jax.block_until_ready(ours(*args))
    with gradrules.config.using(kernel="xla"):
        want = jax.block_until_ready(program(op.gradrules_fn, op, mode)(*args))
    plain = program(op.jnp_fn, op, mode)
    ours_under = _under(kernel, ours)
    t = time_interleaved({"gradrules": lambda: ours_under(*args), "jnp": lambda: plain(*args)},
                         repeats=repeats)
    gbs = op.min_bytes(mode, dtype) / t["gradrules"] / 1e9
    return {"check": _max_rel(got, want), "ms": t["gradrules"] * 1e3, "GB/s": gbs,
            "%copy": gbs / copy_bandwidth, "/jnp": t["gradrules"] / t["jnp"]}


def copy_bandwidth(op: Op, dtype: str, repeats: int) -> float:
    """GB/s of a jitted ``x + 0`` of the op's largest input (read and write)."""
    shape = max(op.shapes, key=math.prod)
    x = jnp.zeros(shape, dtype)
    copy = jax.jit(lambda x: x + 0)
    seconds = time_interleaved({"copy": lambda: copy(x)}, repeats=repeats)["copy"]
    return 2 * x.nbytes / seconds / 1e9


def flce_memory(dtype: str) -> tuple[int, int]:
    """Compiled temp bytes of the flce grad: gradrules (pallas) and plain jnp."""
    op = next(o for o in ops() if o.name == "flce_131k")
    args = op.structs(dtype)
    with gradrules.config.using(kernel="pallas"):
        _, ours, _ = compiled_stats(program(op.gradrules_fn, op, "fwd+bwd"), *args)
    _, plain, _ = compiled_stats(program(op.jnp_fn, op, "fwd+bwd"), *args)
    return ours, plain


def dry_run(ops: Sequence[Op], dtypes: Sequence[str], kernel: str) -> int:
    rows, failed = [], 0
    for op in ops:
        for dtype in dtypes:
            for mode in MODES:
                if not has_kernels(op.op):
                    rows.append([op.name, dtype, mode, "-", "no kernel yet"])
                    continue
                args = _with_cotangent(op, op.structs(dtype), mode, dtype, abstract=True)
                try:
                    with gradrules.config.using(kernel=kernel):
                        text = cuda_hlo(program(op.gradrules_fn, op, mode), *args)
                    rows.append([op.name, dtype, mode, str(triton_calls(text)), "lowered"])
                except Exception as err:                # noqa: BLE001 (one row per failure)
                    failed += 1
                    rows.append([op.name, dtype, mode, "-",
                                 f"FAILED {type(err).__name__}: {str(err)[:80]}"])
    print(f"dry run: kernel={kernel!r}, lowered for CUDA; jax {jax.__version__}")
    print(format_columns(["op", "dtype", "mode", "triton calls", "status"], rows))
    print(f"dry run: {len(rows)} programs, {failed} failed")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--ops", nargs="*", default=[o.name for o in ops()])
    parser.add_argument("--dtype", nargs="*", default=["bfloat16", "float32"])
    parser.add_argument("--kernel", default="pallas", choices=["pallas", "auto", "xla"])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--shrink", type=int, default=1, help="divide every size by this")
    args = parser.parse_args(argv)
    chosen = [o for o in ops(args.shrink) if o.name in args.ops]
    if args.dry_run:
        return dry_run(chosen, args.dtype, args.kernel)
    rows, missed = [], []
    for op in chosen:
        for dtype in args.dtype:
            try:
                bandwidth = copy_bandwidth(op, dtype, args.repeats)
            except Exception as err:                    # noqa: BLE001
                rows.append([op.name, dtype, "copy", f"FAILED {type(err).__name__}"])
                continue
            for mode in MODES:
                try:
                    r = run_row(op, dtype, mode, args.kernel, args.repeats, bandwidth)
                except Exception as err:                # noqa: BLE001
                    rows.append([op.name, dtype, mode, f"FAILED {type(err).__name__}: "
                                 f"{str(err)[:80]}"])
                    missed.append(f"{op.name} {dtype} {mode} failed")
                    continue
                rows.append([op.name, dtype, mode, f"{r['check']:.1e}", f"{r['ms']:.3f}",
                             f"{r['GB/s']:.0f}", f"{100 * r['%copy']:.0f}%",
                             f"{r['/jnp']:.2f}"])
                if r["check"] > TOLERANCE:
                    missed.append(f"{op.name} {dtype} {mode}: check {r['check']:.1e}")
                if r["/jnp"] > (FLCE_TIME_TARGET if op.op == "fused_linear_cross_entropy"
                                else JNP_TARGET):
                    missed.append(f"{op.name} {dtype} {mode}: {r['/jnp']:.2f}x jax.numpy")
                if op.name in BANDWIDTH_OPS and r["%copy"] < COPY_TARGET:
                    missed.append(f"{op.name} {dtype} {mode}: {100 * r['%copy']:.0f}% of copy")
    print(f"gradrules kernel={args.kernel!r} against XLA and jax.numpy; jax {jax.__version__}, "
          f"{jax.devices()[0].device_kind}")
    print(format_columns(["op", "dtype", "mode", "check", "ms", "GB/s", "%copy", "/jnp"], rows))
    if "flce_131k" in args.ops and args.kernel != "xla" and has_kernels(
            "fused_linear_cross_entropy"):
        ours, plain = flce_memory("bfloat16")
        print(f"flce grad temp memory: gradrules {ours / 2**20:.0f} MiB, jax.numpy "
              f"{plain / 2**20:.0f} MiB, ratio {ours / max(plain, 1):.3f}")
        if ours > FLCE_MEMORY_TARGET * plain:
            missed.append("flce grad memory above 1/8 of jax.numpy's")
    print(f"targets: >= {COPY_TARGET:.0%} of copy for {', '.join(BANDWIDTH_OPS)}; no slower than "
          f"jax.numpy; flce grad <= 1/8 memory, <= {FLCE_TIME_TARGET}x time")
    print("missed: " + ("; ".join(missed) if missed else "none"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
