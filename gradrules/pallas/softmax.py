"""Pallas (Triton) kernels of the softmax family: softmax and log_softmax
over the last axis, each with its forward, tangent-map (JVP) and backward
(VJP) kernel.

The operand ``[..., N]`` is seen as ``[R, N]`` rows (a free reshape); the
grid is over blocks of ``block_rows`` rows, and each program reads its rows
in ``[block_rows, block_cols]`` tiles in the operands' own dtype and
computes in float32 (``core.numerics.acc_dtype``). Partial blocks at the
ends of the rows and of the width are masked loads and stores, so any ``N``
works (a width of 1000 is one masked block of 1024).

* ``forward``: the row's shift m (its finite maximum) and ``total = sum
  exp(x - m)`` by the online log-sum-exp (``core.numerics.online_lse_step``),
  then ``y = exp(x - m) / total`` (softmax) or ``(x - m) - log(total)``
  (log_softmax): normalised by the maximum, never by a rounded log-sum-exp.
  When the row fits one block it is read once; otherwise a first loop over
  the column blocks finds m and the total and a second writes the output.
* tangent maps: one row sum ``s``, then an elementwise map (a ``Rule``):
  softmax's tangent map and backward are the same, ``y (t - sum(y t))``;
  log_softmax's tangent map is ``t - sum(exp(logp) t)``. Again one read
  when the row fits a block, else a loop for ``s`` and one for the output.
* log_softmax's backward ``g - softmax(x) sum(g)`` from ``x``, as its XLA
  lowering: the row statistics of the forward and ``sum(g)``, then the
  output (``_normalised``); one read when the row fits a block, else loops
  for the statistics, for ``sum(g)`` and for the output.

Block sizes: ``BlockSizes`` (the caller's), else ``defaults``: the padded
width up to ``MAX_BLOCK_COLS`` in one block, and rows enough for a tile of
``TILE`` entries. ``supports`` says which calls the kernels take; the others
run the XLA lowering under ``kernel="auto"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from ..core.numerics import finite_or_zero, online_lse_step
from ._pallas import (BlockSpec, ds, DTYPES, F32, iota, is_power_of_2, load, next_power_of_2,
                      program_id, RowBlocks, store, triton_call)

Array = jax.Array
MAX_BLOCK_COLS = 16384      # the widest row read as one block (padded to a power of two)
TILE = 16384                # entries per program that the default row count aims at
MAX_BLOCK_ROWS = 256
MAX_ENTRIES = 2 ** 31       # int32 offsets


BlockSizes = RowBlocks


@dataclass(frozen=True)
class Geometry:
    """The static sizes of one launch: ``R`` rows of width ``N`` in blocks of
    ``br`` rows and ``bc`` columns."""

    R: int
    N: int
    br: int
    bc: int
    num_warps: int
    num_stages: int

    @property
    def nr(self) -> int:
        return -(-self.R // self.br)

    @property
    def nc(self) -> int:
        return -(-self.N // self.bc)


def defaults(rows: int, width: int) -> tuple[int, int, int, int]:
    """``(block_rows, block_cols, num_warps, num_stages)`` for ``rows`` rows
    of ``width``: the padded width up to ``MAX_BLOCK_COLS`` columns, rows
    for a tile of ``TILE`` entries (at most ``MAX_BLOCK_ROWS``, at most the
    padded row count), warps by tile size, two stages when the row loops."""
    bc = min(next_power_of_2(width), MAX_BLOCK_COLS)
    br = max(1, min(TILE // bc, MAX_BLOCK_ROWS, next_power_of_2(rows)))
    tile = br * bc
    warps = 4 if tile <= 2048 else 8 if tile <= 8192 else 16
    return br, bc, warps, 2 if bc < width else 1


def geometry(shape: tuple[int, ...], blocks: BlockSizes | None) -> Geometry:
    """The blocks of one call: the caller's, else ``defaults`` (block_cols
    capped at the padded width)."""
    width = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    br, bc, warps, stages = defaults(rows, width)
    b = blocks or BlockSizes()
    bc = min(b.block_cols or bc, next_power_of_2(width))
    return Geometry(rows, width, b.block_rows or br, bc, b.num_warps or warps,
                    b.num_stages or stages)


def supports(x: Any, *rest: Any, axis: int, blocks: Any = None, **params: Any) -> str | None:
    """float16, bfloat16 and float32 over the last axis (the public
    functions move another axis there when a kernel may run); static,
    non-empty shapes of fewer than 2**31 entries; block sizes powers of two.

    None if the kernels take the call, else why not."""
    if np.dtype(x.dtype) not in DTYPES:
        return f"dtype {np.dtype(x.dtype)} (the kernels take float16, bfloat16, float32)"
    if len(x.shape) == 0 or axis != len(x.shape) - 1:
        return f"axis {axis} of a rank-{len(x.shape)} operand (the kernels take the last axis)"
    if not all(isinstance(d, (int, np.integer)) for d in x.shape):
        return f"symbolic shape {tuple(x.shape)} (the kernels take static shapes)"
    size = int(np.prod(x.shape, dtype=np.int64))
    if size == 0 or size >= MAX_ENTRIES:
        return f"{size} entries (the kernels take 1 to 2**31 - 1)"
    if blocks is not None:
        for name in ("block_rows", "block_cols"):
            value = getattr(blocks, name)
            if value is not None and not is_power_of_2(value):
                return f"{name}={value} (the kernels take powers of two)"
    return None


# ------------------------------------------------------------ in-kernel pieces
def _where(g: Geometry, r0: Any, c0: Any) -> Array | None:
    """Which entries of the tile at rows r0, columns c0 lie inside ``[R, N]``
    (None: all of them)."""
    ok = None
    if g.R % g.br:
        ok = (iota(r0, g.br) < g.R)[:, None]
    if g.N % g.bc:
        in_n = (iota(c0, g.bc) < g.N)[None, :]
        ok = in_n if ok is None else ok & in_n
    return ok


def _tile(ref: Any, g: Geometry, r0: Any, c0: Any, other: float) -> Array:
    """The ``[br, bc]`` tile at rows r0, columns c0 in float32, ``other``
    outside ``[R, N]``."""
    ok = _where(g, r0, c0)
    at = ref.at[ds(r0, g.br), ds(c0, g.bc)]
    tile = load(at) if ok is None else load(at, mask=ok, other=other)
    return tile.astype(F32)


def _put(ref: Any, g: Geometry, r0: Any, c0: Any, value: Array) -> None:
    """Store the float32 tile ``value`` at rows r0, columns c0 (inside ``[R, N]``)."""
    ok = _where(g, r0, c0)
    at = ref.at[ds(r0, g.br), ds(c0, g.bc)]
    value = value.astype(ref.dtype)
    if ok is None:
        store(at, value)
    else:
        store(at, value, mask=ok)


def _col(j: Any, g: Geometry) -> Array:
    """The first column of column block ``j`` (int32)."""
    return jnp.asarray(j, jnp.int32) * g.bc


def _no_rows(g: Geometry) -> tuple[Array, Array]:
    """The online log-sum-exp's start for ``br`` rows: maxima ``-inf``, totals 0."""
    return jnp.full((g.br,), -jnp.inf, F32), jnp.zeros((g.br,), F32)


def _row_stats(x_ref: Any, g: Geometry, r0: Any) -> tuple[Array, Array]:
    """``[br]`` shifts (finite maxima) and totals ``sum exp(x - shift)`` of
    the rows at r0, by the online log-sum-exp over the column blocks."""
    def column_block(j: Any, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        m, _, _, total = online_lse_step(*carry, _tile(x_ref, g, r0, _col(j, g), -jnp.inf))
        return m, total

    m, total = lax.fori_loop(0, g.nc, column_block, _no_rows(g))
    return finite_or_zero(m), total


def _tile_stats(x: Array, g: Geometry) -> tuple[Array, Array, Array]:
    """``(shift, total, e)`` of a tile that holds its rows whole: the row
    shifts and totals of ``_row_stats`` and ``e = exp(x - shift)``, in one
    step."""
    m, _, e, total = online_lse_step(*_no_rows(g), x)
    return finite_or_zero(m), total, e


def _normalised(x: Array, shift: Array, total: Array, log: bool, p: Array | None = None
                ) -> Array:
    """A tile's softmax ``exp(x - shift) / total`` (``p`` if already
    computed) or log_softmax ``(x - shift) - log(total)``: normalised by the
    row maximum, never by a rounded log-sum-exp (as ``_fused.softmax_rows``);
    0 and ``-inf`` for a row of all ``-inf``."""
    some = total > 0
    if log:
        return (x - shift[:, None]) - jnp.log(jnp.where(some, total, 1))[:, None]
    e = jnp.exp(x - shift[:, None]) if p is None else p
    return e * jnp.where(some, 1 / jnp.where(some, total, 1), 0)[:, None]


# ------------------------------------------------------------------ kernels
def _forward_kernel(x_ref: Any, y_ref: Any, *, g: Geometry, log: bool) -> None:
    """softmax or log_softmax of ``br`` rows (``_normalised``): one pass over
    a row that fits one column block, else the row statistics then a second
    pass."""
    r0 = program_id(0) * g.br
    if g.nc == 1:
        c0 = _col(0, g)
        x = _tile(x_ref, g, r0, c0, -jnp.inf)
        shift, total, e = _tile_stats(x, g)
        _put(y_ref, g, r0, c0, _normalised(x, shift, total, log, e))
        return
    shift, total = _row_stats(x_ref, g, r0)

    def column_block(j: Any, carry: Any) -> Any:
        c0 = _col(j, g)
        _put(y_ref, g, r0, c0, _normalised(_tile(x_ref, g, r0, c0, -jnp.inf), shift, total, log))
        return carry
    lax.fori_loop(0, g.nc, column_block, 0)


@dataclass(frozen=True)
class Rule:
    """A tangent map or backward ``out = finish(a, b, s)`` with the row sum
    ``s = sum(reduce(a, b))`` (``a`` the forward's output, ``b`` the tangent
    or cotangent; float32 tiles)."""

    reduce: Callable[[Array, Array], Array]
    finish: Callable[[Array, Array, Array], Array]


def _product(a: Array, b: Array) -> Array:
    return a * b


def _softmax_finish(y: Array, t: Array, s: Array) -> Array:
    return y * (t - s)


def _prob_times(logp: Array, t: Array) -> Array:
    return jnp.exp(logp) * t


def _minus_sum(logp: Array, t: Array, s: Array) -> Array:
    return t - s


SOFTMAX_MAP = Rule(_product, _softmax_finish)                  # y (t - sum(y t))
LOG_SOFTMAX_JVP = Rule(_prob_times, _minus_sum)                # t - sum(exp(logp) t)


def _map_kernel(a_ref: Any, b_ref: Any, out_ref: Any, *, g: Geometry, rule: Rule) -> None:
    """``rule`` on ``br`` rows: their sums ``s``, then the elementwise map."""
    r0 = program_id(0) * g.br
    if g.nc == 1:
        c0 = _col(0, g)
        a, b = _tile(a_ref, g, r0, c0, 0.0), _tile(b_ref, g, r0, c0, 0.0)
        _put(out_ref, g, r0, c0, rule.finish(a, b, rule.reduce(a, b).sum(-1)[:, None]))
        return

    def row_sum(j: Any, s: Array) -> Array:
        c0 = _col(j, g)
        return s + rule.reduce(_tile(a_ref, g, r0, c0, 0.0), _tile(b_ref, g, r0, c0, 0.0)).sum(-1)
    s = lax.fori_loop(0, g.nc, row_sum, jnp.zeros((g.br,), F32))[:, None]

    def column_block(j: Any, carry: Any) -> Any:
        c0 = _col(j, g)
        a, b = _tile(a_ref, g, r0, c0, 0.0), _tile(b_ref, g, r0, c0, 0.0)
        _put(out_ref, g, r0, c0, rule.finish(a, b, s))
        return carry
    lax.fori_loop(0, g.nc, column_block, 0)


def _log_softmax_vjp_kernel(x_ref: Any, ct_ref: Any, out_ref: Any, *, g: Geometry) -> None:
    """``ct - softmax(x) sum(ct)`` on ``br`` rows: the row statistics of
    ``x`` (as the forward's) and ``sum(ct)``, then the output."""
    r0 = program_id(0) * g.br
    if g.nc == 1:
        c0 = _col(0, g)
        x, ct = _tile(x_ref, g, r0, c0, -jnp.inf), _tile(ct_ref, g, r0, c0, 0.0)
        shift, total, e = _tile_stats(x, g)
        y = _normalised(x, shift, total, False, e)
        _put(out_ref, g, r0, c0, ct - y * ct.sum(-1)[:, None])
        return
    shift, total = _row_stats(x_ref, g, r0)

    def row_sum(j: Any, s: Array) -> Array:
        return s + _tile(ct_ref, g, r0, _col(j, g), 0.0).sum(-1)
    s = lax.fori_loop(0, g.nc, row_sum, jnp.zeros((g.br,), F32))[:, None]

    def column_block(j: Any, carry: Any) -> Any:
        c0 = _col(j, g)
        y = _normalised(_tile(x_ref, g, r0, c0, -jnp.inf), shift, total, False)
        _put(out_ref, g, r0, c0, _tile(ct_ref, g, r0, c0, 0.0) - y * s)
        return carry
    lax.fori_loop(0, g.nc, column_block, 0)


# ----------------------------------------------------------------- wrappers
def _launch(kernel: Callable[..., None], name: str, args: tuple[Array, ...],
            blocks: BlockSizes | None, interpret: bool) -> Array:
    """``kernel`` over the rows of ``args`` (seen as ``[R, N]``), one output
    of their shape and dtype."""
    shape, dtype = args[0].shape, args[0].dtype
    g = geometry(shape, blocks)
    rows = [a.reshape(g.R, g.N) for a in args]
    spec = BlockSpec((g.R, g.N), lambda i: (0, 0))
    (out,) = triton_call(partial(kernel, g=g), name=name, grid=(g.nr,),
                         in_specs=[spec] * len(rows), out_specs=[spec],
                         out_shape=[jax.ShapeDtypeStruct((g.R, g.N), dtype)],
                         num_warps=g.num_warps, num_stages=g.num_stages,
                         interpret=interpret)(*rows)
    return out.reshape(shape)


def softmax_forward(x: Array, *, axis: int, blocks: BlockSizes | None = None,
                    interpret: bool = False) -> Array:
    """``softmax_p``'s kernel: ``exp(x - lse(x))`` over the last axis."""
    return _launch(partial(_forward_kernel, log=False), "softmax_forward", (x,), blocks,
                   interpret)


def softmax_jvp(y: Array, t: Array, *, axis: int, blocks: BlockSizes | None = None,
                interpret: bool = False) -> Array:
    """``softmax_jvp_p``'s kernel: ``y (t - sum(y t))``."""
    return _launch(partial(_map_kernel, rule=SOFTMAX_MAP), "softmax_jvp", (y, t), blocks,
                   interpret)


def softmax_vjp(y: Array, g: Array, *, axis: int, blocks: BlockSizes | None = None,
                interpret: bool = False) -> Array:
    """``softmax_vjp_p``'s kernel: ``y (g - sum(y g))`` (the same map)."""
    return _launch(partial(_map_kernel, rule=SOFTMAX_MAP), "softmax_vjp", (y, g), blocks,
                   interpret)


def log_softmax_forward(x: Array, *, axis: int, blocks: BlockSizes | None = None,
                        interpret: bool = False) -> Array:
    """``log_softmax_p``'s kernel: ``x - lse(x)`` over the last axis."""
    return _launch(partial(_forward_kernel, log=True), "log_softmax_forward", (x,), blocks,
                   interpret)


def log_softmax_jvp(x: Array, logp: Array, t: Array, *, axis: int,
                    blocks: BlockSizes | None = None, interpret: bool = False) -> Array:
    """``log_softmax_jvp_p``'s kernel: ``t - sum(exp(logp) t)`` (``x`` not read)."""
    return _launch(partial(_map_kernel, rule=LOG_SOFTMAX_JVP), "log_softmax_jvp",
                   (logp, t), blocks, interpret)


def log_softmax_vjp(x: Array, logp: Array, g: Array, *, axis: int,
                    blocks: BlockSizes | None = None, interpret: bool = False) -> Array:
    """``log_softmax_vjp_p``'s kernel: ``g - softmax(x) sum(g)`` (``logp``
    not read)."""
    return _launch(_log_softmax_vjp_kernel, "log_softmax_vjp", (x, g), blocks, interpret)
