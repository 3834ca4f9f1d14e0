"""Pallas (Triton) kernels of the rms_norm and layer_norm primitives: forward,
tangent map (JVP) and backward, on ``x`` seen as ``[N, D]`` rows (its
leading axes flattened; the norm is over the last axis, ``D``).

With ``xhat = x rstd`` (rms_norm, ``rstd = rsqrt(mean(x**2) + eps)``, scale
``w = gamma + weight_offset``) or ``xhat = (x - mean) rstd`` (layer_norm,
``rstd = rsqrt(mean((x - mean)**2) + eps)``, scale ``w = weight``, shift
``b = bias``), every sum and mean below over a row in float32:

* ``forward``: grid over blocks of ``block_rows`` rows; ``out = xhat w (+ b)``
  and the row statistics (``rstd``; ``mean`` too for layer_norm), which the
  other two primitives take as residuals.
* ``jvp``: grid over row blocks; ``t_out = rstd (t - [mean(t)] - xhat
  mean(xhat t)) w + xhat t_w (+ t_b)``.
* ``backward``: with ``gw = g w``, ``dx = rstd (gw - [mean(gw)] - xhat
  mean(gw xhat))`` in one pass, a grid ``(programs, column blocks)`` where
  each program loops over a chunk of row blocks and sums ``g xhat`` (and
  ``g``) over its rows into one row of a float32 partial ``[programs, D]``;
  a second small kernel sums the partials over the programs into
  ``dweight`` (and ``dbias``): no atomics.

A row wider than ``block_cols`` is visited in column blocks: forward and jvp
loop over them once per row reduction (layer_norm's forward: mean, then the
centred variance) and once to write; the backward then reads ``mean(gw)``
and ``mean(gw xhat)`` from a small stats kernel (``[N]`` each) run first.
A row that fits is loaded once. Partial blocks (rows past N, columns past D,
widths that are not powers of two) are masked loads and stores.

Block sizes: ``BlockSizes`` (the caller's), else by dtype and width:
``block_cols`` the padded width up to ``MAX_COLS``, ``block_rows`` to fill
``ELEMENTS`` (half of it for the backward). ``supports`` says which calls
the kernels take; the others run the XLA lowering under ``kernel="auto"``.
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

from ._pallas import (BlockSpec, ds, DTYPES, F32, iota, is_power_of_2, load, load_row_values,
                      next_power_of_2, program_id, store, triton_call)

Array = jax.Array
MAX_WIDTH = 65536
MIN_COLS = 16
MAX_COLS = {2: 16384, 4: 8192}      # by itemsize: the widest column block
ELEMENTS = {2: 8192, 4: 4096}       # by itemsize: a forward block's rows x columns
MAX_ROWS = 64
PROGRAMS_BWD = 512                  # the backward's programs (each a chunk of row blocks)
REDUCE_ROWS, REDUCE_COLS = 32, 64   # the tile of the dweight / dbias kernel


@dataclass(frozen=True)
class BlockSizes:
    """Block sizes of rms_norm and layer_norm, carried by the
    ``implementation`` param: ``block_rows`` rows per block (the forward's
    and jvp's; the backward's default is half), ``block_cols`` columns per
    block (a wider row loops over column blocks), ``programs_bwd`` the most
    programs of the backward (each sums dweight over a chunk of row blocks),
    ``num_warps`` / ``num_stages`` the Triton launch. None takes the default
    (by dtype and width). They never change the result."""

    block_rows: int | None = None
    block_cols: int | None = None
    programs_bwd: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None


@dataclass(frozen=True)
class Geometry:
    """The static sizes of one launch: ``N`` rows of width ``D`` in blocks of
    ``rows`` x ``bc``; the backward's programs take ``chunk`` row blocks each."""

    N: int
    D: int
    rows: int
    bc: int
    chunk: int
    num_warps: int
    num_stages: int

    @property
    def nb(self) -> int:
        return -(-self.N // self.rows)

    @property
    def nc(self) -> int:
        return -(-self.D // self.bc)

    @property
    def programs(self) -> int:
        return -(-self.nb // self.chunk)

    def rows_ok(self, r0: Any) -> Array | None:
        """``[rows, 1]``: which rows of the block at r0 exist (None: all of them)."""
        return None if self.N % self.rows == 0 else (iota(r0, self.rows) < self.N)[:, None]

    def cols_ok(self, c0: Any) -> Array | None:
        """``[bc]``: which columns of the block at c0 exist (None: all of them)."""
        return None if self.D % self.bc == 0 else iota(c0, self.bc) < self.D


def geometry(x: Any, blocks: BlockSizes | None, backward: bool = False) -> Geometry:
    """The blocks of one call: the caller's, else by dtype and width."""
    n, d = int(np.prod(x.shape[:-1])), x.shape[-1]
    size = np.dtype(x.dtype).itemsize
    b = blocks or BlockSizes()
    bc = min(b.block_cols or MAX_COLS[size], next_power_of_2(d))
    rows = b.block_rows or max(1, min(MAX_ROWS, ELEMENTS[size] // bc))
    if backward and not b.block_rows:
        rows = max(1, rows // 2)
    rows = min(rows, next_power_of_2(n))
    nb = -(-n // rows)
    chunk = -(-nb // (b.programs_bwd or PROGRAMS_BWD))
    tile = rows * bc
    warps = b.num_warps or (4 if tile <= 2048 else 8 if tile <= 8192 else 16)
    return Geometry(n, d, rows, bc, chunk, warps, b.num_stages or 2)


def supports(x: Any, w: Any, *rest: Any, blocks: Any = None, **params: Any) -> str | None:
    """float16, bfloat16 and float32; rows of any width from 1 to 65536 (a
    row wider than the column block loops over column blocks); a weight of
    one entry per column; block_rows and block_cols powers of two
    (block_cols >= 16).

    None if the kernels take the call, else why not."""
    if np.dtype(x.dtype) not in DTYPES:
        return f"dtype {np.dtype(x.dtype)} (the kernels take float16, bfloat16, float32)"
    d = x.shape[-1]
    if 0 in x.shape or d > MAX_WIDTH:
        return f"x with shape {tuple(x.shape)} (rows of width 1 to {MAX_WIDTH})"
    if int(np.prod(w.shape)) != d:
        return f"a weight of shape {tuple(w.shape)} (one entry per column: {d})"
    if blocks is not None:
        for name, low in (("block_rows", 1), ("block_cols", MIN_COLS)):
            size = getattr(blocks, name)
            if size is not None and (size < low or not is_power_of_2(size)):
                return f"{name}={size} (the kernels take powers of two >= {low})"
    return None


# ------------------------------------------------------------ in-kernel pieces
def _and(a: Array | None, b: Array | None) -> Array | None:
    return a if b is None else b if a is None else a & b


def _masked_load(at: Any, mask: Array | None) -> Array:
    return (load(at) if mask is None else load(at, mask=mask, other=0)).astype(F32)


def _masked_store(at: Any, value: Array, mask: Array | None) -> None:
    value = value.astype(at.dtype)
    if mask is None:
        store(at, value)
    else:
        store(at, value, mask=mask)


def _tile_mask(g: Geometry, r0: Any, c0: Any) -> Array | None:
    cols = g.cols_ok(c0)
    return _and(g.rows_ok(r0), None if cols is None else cols[None, :])


def _tile(ref: Any, g: Geometry, r0: Any, c0: Any) -> Array:
    """The float32 ``[rows, bc]`` block at (r0, c0), 0 outside ``[N, D]``."""
    return _masked_load(ref.at[ds(r0, g.rows), ds(c0, g.bc)], _tile_mask(g, r0, c0))


def _vector(ref: Any, g: Geometry, c0: Any) -> Array:
    """The float32 ``[1, bc]`` block at c0 of a per-column ``[D]`` operand."""
    return _masked_load(ref.at[ds(c0, g.bc)], g.cols_ok(c0))[None, :]


def _put(ref: Any, g: Geometry, r0: Any, c0: Any, value: Array) -> None:
    _masked_store(ref.at[ds(r0, g.rows), ds(c0, g.bc)], value, _tile_mask(g, r0, c0))


def _row_values(ref: Any, g: Geometry, r0: Any) -> Array:
    """``[rows, 1]``: one value per row (a statistic), 0 past N."""
    return load_row_values(ref, r0, g.N, g.rows)[:, None]


def _put_rows(ref: Any, g: Geometry, r0: Any, value: Array) -> None:
    store(ref.at[ds(r0, g.rows)], value[:, 0], mask=iota(r0, g.rows) < g.N)


class _Loads:
    """The loads of one row block. When a row is one column block, each
    block is loaded once and kept for the later passes."""

    def __init__(self, g: Geometry, r0: Any):
        self.g, self.r0, self.kept = g, r0, {}

    def _get(self, key: tuple[Any, ...], load_it: Callable[[], Array]) -> Array:
        if self.g.nc > 1:
            return load_it()
        if key not in self.kept:
            self.kept[key] = load_it()
        return self.kept[key]

    def tile(self, ref: Any, c0: Any) -> Array:
        return self._get(("tile", id(ref)), lambda: _tile(ref, self.g, self.r0, c0))

    def vector(self, ref: Any, c0: Any) -> Array:
        return self._get(("vector", id(ref)), lambda: _vector(ref, self.g, c0))


def _fold(g: Geometry, body: Callable[[Any, Any], Any], init: Any) -> Any:
    """``body(c0, carry)`` over the column blocks of a row (no loop for one)."""
    if g.nc == 1:
        return body(jnp.int32(0), init)
    return lax.fori_loop(0, g.nc, lambda j, carry: body(j * g.bc, carry), init)


def _row_means(g: Geometry, terms: Callable[[Any], tuple[Array, ...]], k: int
               ) -> tuple[Array, ...]:
    """The ``[rows, 1]`` means over each row of the k ``terms(c0)`` blocks."""
    def body(c0: Any, sums: tuple[Array, ...]) -> tuple[Array, ...]:
        return tuple(s + t.sum(-1, keepdims=True) for s, t in zip(sums, terms(c0)))
    sums = _fold(g, body, tuple(jnp.zeros((g.rows, 1), F32) for _ in range(k)))
    return tuple(s / g.D for s in sums)


def _each_column_block(g: Geometry, write: Callable[[Any], None]) -> None:
    def body(c0: Any, carry: Any) -> Any:
        write(c0)
        return carry
    _fold(g, body, 0)


def _centred(ld: _Loads, x_ref: Any, c0: Any, mean: Array | None) -> Array:
    """``x - mean`` (0 past D), or ``x`` without a mean (rms_norm)."""
    x = ld.tile(x_ref, c0)
    if mean is None:
        return x
    ok = ld.g.cols_ok(c0)
    return x - mean if ok is None else jnp.where(ok[None, :], x - mean, 0)


# ------------------------------------------------------------------ kernels
def _forward_kernel(x_ref: Any, w_ref: Any, b_ref: Any, out_ref: Any, mean_ref: Any,
                    rstd_ref: Any, *, g: Geometry, eps: float, offset: float) -> None:
    """``out = xhat (w + offset) + b`` and the statistics (layer_norm where
    ``mean_ref`` is given, else rms_norm: no b, no mean)."""
    r0 = program_id(0) * g.rows
    ld = _Loads(g, r0)
    mean = None
    if mean_ref is not None:
        mean, = _row_means(g, lambda c0: (ld.tile(x_ref, c0),), 1)
    ms, = _row_means(g, lambda c0: (jnp.square(_centred(ld, x_ref, c0, mean)),), 1)
    rstd = lax.rsqrt(ms + eps)

    def write(c0: Any) -> None:
        out = _centred(ld, x_ref, c0, mean) * rstd * (ld.vector(w_ref, c0) + offset)
        if b_ref is not None:
            out = out + ld.vector(b_ref, c0)
        _put(out_ref, g, r0, c0, out)

    _each_column_block(g, write)
    _put_rows(rstd_ref, g, r0, rstd)
    if mean_ref is not None:
        _put_rows(mean_ref, g, r0, mean)


def _jvp_kernel(x_ref: Any, w_ref: Any, mean_ref: Any, rstd_ref: Any, tx_ref: Any,
                tw_ref: Any, tb_ref: Any, out_ref: Any, *, g: Geometry, offset: float) -> None:
    """``t_out = rstd (t - [mean(t)] - xhat mean(xhat t)) (w + offset) + xhat
    t_w [+ t_b]`` (the bracketed terms: layer_norm)."""
    r0 = program_id(0) * g.rows
    ld = _Loads(g, r0)
    rstd = _row_values(rstd_ref, g, r0)
    mean = None if mean_ref is None else _row_values(mean_ref, g, r0)

    def xhat(c0: Any) -> Array:
        return _centred(ld, x_ref, c0, mean) * rstd

    def terms(c0: Any) -> tuple[Array, ...]:
        t = ld.tile(tx_ref, c0)
        return (xhat(c0) * t,) + ((t,) if mean is not None else ())

    means = _row_means(g, terms, 1 if mean is None else 2)

    def write(c0: Any) -> None:
        t, xh = ld.tile(tx_ref, c0), xhat(c0)
        inner = t if mean is None else t - means[1]
        out = rstd * (inner - xh * means[0]) * (ld.vector(w_ref, c0) + offset)
        out = out + xh * ld.vector(tw_ref, c0)
        if tb_ref is not None:
            out = out + ld.vector(tb_ref, c0)
        _put(out_ref, g, r0, c0, out)

    _each_column_block(g, write)


def _backward_terms(ld: _Loads, refs: tuple[Any, ...], c0: Any, mean: Array | None,
                    rstd: Array, offset: float) -> tuple[Array, Array, Array]:
    """``(g, xhat, gw = g (w + offset))`` of the block at c0 (refs: x, w, g)."""
    x_ref, w_ref, g_ref = refs
    gy = ld.tile(g_ref, c0)
    return gy, _centred(ld, x_ref, c0, mean) * rstd, gy * (ld.vector(w_ref, c0) + offset)


def _grad_means(gw: Array, xh: Array, centred: bool) -> tuple[Array, ...]:
    """The per-row terms of dx: ``gw xhat`` and, for layer_norm, ``gw``."""
    return (gw * xh,) + ((gw,) if centred else ())


def _stats_kernel(x_ref: Any, w_ref: Any, mean_ref: Any, rstd_ref: Any, g_ref: Any,
                  *out_refs: Any, g: Geometry, offset: float) -> None:
    """``mean(gw xhat)`` (and ``mean(gw)``) of each row, for a backward whose
    rows are wider than one column block."""
    r0 = program_id(0) * g.rows
    ld = _Loads(g, r0)
    rstd = _row_values(rstd_ref, g, r0)
    mean = None if mean_ref is None else _row_values(mean_ref, g, r0)

    def terms(c0: Any) -> tuple[Array, ...]:
        _, xh, gw = _backward_terms(ld, (x_ref, w_ref, g_ref), c0, mean, rstd, offset)
        return _grad_means(gw, xh, mean is not None)

    for ref, value in zip(out_refs, _row_means(g, terms, len(out_refs))):
        _put_rows(ref, g, r0, value)


def _backward_kernel(x_ref: Any, w_ref: Any, mean_ref: Any, rstd_ref: Any, g_ref: Any,
                     *refs: Any, g: Geometry, offset: float, n_stats: int) -> None:
    """dx of the rows of this program's chunk in its column block, and the
    sums of ``g xhat`` (and ``g``) over those rows (one row of the partials).
    ``refs``: the stats kernel's ``n_stats`` row means (wide rows), dx, the
    partials."""
    stat_refs, (dx_ref, *part_refs) = refs[:n_stats], refs[n_stats:]
    p, c0 = program_id(0), program_id(1) * g.bc
    centred = mean_ref is not None

    def row_block(i: Any, acc: tuple[Array, ...]) -> tuple[Array, ...]:
        r0 = i * g.rows
        ld = _Loads(g, r0)
        rstd = _row_values(rstd_ref, g, r0)
        mean = _row_values(mean_ref, g, r0) if centred else None
        gy, xh, gw = _backward_terms(ld, (x_ref, w_ref, g_ref), c0, mean, rstd, offset)
        if stat_refs:
            means = tuple(_row_values(ref, g, r0) for ref in stat_refs)
        else:
            means = tuple(t.sum(-1, keepdims=True) / g.D for t in _grad_means(gw, xh, centred))
        inner = gw - means[1] if centred else gw
        _put(dx_ref, g, r0, c0, rstd * (inner - xh * means[0]))
        return tuple(a + t.sum(0) for a, t in zip(acc, (gy * xh, gy)))

    start = p * g.chunk
    acc = lax.fori_loop(start, jnp.minimum(start + g.chunk, g.nb), row_block,
                        tuple(jnp.zeros((g.bc,), F32) for _ in part_refs))
    ok = g.cols_ok(c0)
    for ref, value in zip(part_refs, acc):
        _masked_store(ref.at[ds(p, 1), ds(c0, g.bc)], value[None, :],
                      None if ok is None else ok[None, :])


def _reduce_kernel(*refs: Any, P: int, D: int, pr: int, bc: int) -> None:
    """Each ``[P, D]`` partial summed over its P rows, into its ``[D]`` output."""
    n = len(refs) // 2
    c0 = program_id(0) * bc
    ok = iota(c0, bc) < D

    def body(k: Any, acc: tuple[Array, ...]) -> tuple[Array, ...]:
        r0 = k * pr
        mask = (iota(r0, pr) < P)[:, None] & ok[None, :]
        return tuple(a + _masked_load(ref.at[ds(r0, pr), ds(c0, bc)], mask)
                     for a, ref in zip(acc, refs[:n]))

    acc = lax.fori_loop(0, -(-P // pr), body, tuple(jnp.zeros((pr, bc), F32) for _ in range(n)))
    for ref, a in zip(refs[n:], acc):
        _masked_store(ref.at[ds(c0, bc)], a.sum(0), ok)


# ----------------------------------------------------------------- wrappers
def _full(shape: tuple[int, ...]) -> BlockSpec:
    """The whole operand in every program (the kernels index it themselves)."""
    return BlockSpec(shape, lambda *_: (0,) * len(shape))


def _call(kernel: Any, name: str, g: Geometry, grid: tuple[int, ...], args: list[Array],
          outs: list[tuple[tuple[int, ...], Any]], interpret: bool) -> list[Array]:
    """``kernel`` on the operands that are not None (the kernel gets None for
    the others), with outputs of the given shapes and dtypes."""
    present = [a is not None for a in args]
    given = [a for a in args if a is not None]

    def body(*refs: Any) -> None:
        it = iter(refs[:len(given)])
        kernel(*(next(it) if here else None for here in present), *refs[len(given):])

    call = triton_call(body, name=name, grid=grid, in_specs=[_full(a.shape) for a in given],
                       out_specs=[_full(shape) for shape, _ in outs],
                       out_shape=[jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in outs],
                       num_warps=g.num_warps, num_stages=g.num_stages, interpret=interpret)
    return list(call(*given))


def _rows(x: Array | None, d: int) -> Array | None:
    return None if x is None else x.reshape(-1, d)


def _flat(x: Array | None) -> Array | None:
    return None if x is None else x.reshape(-1)


def _no_mean_forward(kernel: Any, x_ref: Any, w_ref: Any, b_ref: Any, out_ref: Any,
                     rstd_ref: Any) -> None:
    """rms_norm's forward: no bias and no mean."""
    kernel(x_ref, w_ref, b_ref, out_ref, None, rstd_ref)


def _forward(x: Array, w: Array, b: Array | None, *, eps: float, offset: float,
             blocks: BlockSizes | None, interpret: bool, name: str) -> list[Array]:
    g = geometry(x, blocks)
    lead, centred = x.shape[:-1], b is not None
    outs = [((g.N, g.D), x.dtype)] + [((g.N,), F32)] * (2 if centred else 1)
    kernel = partial(_forward_kernel, g=g, eps=float(eps), offset=float(offset))
    if not centred:
        kernel = partial(_no_mean_forward, kernel)
    res = _call(kernel, f"{name}_forward", g, (g.nb,), [_rows(x, g.D), _flat(w), _flat(b)],
                outs, interpret)
    return [res[0].reshape(x.shape)] + [r.reshape(lead) for r in res[1:]]


def _jvp(x: Array, w: Array, mean: Array | None, rstd: Array, tx: Array, tw: Array,
         tb: Array | None, *, offset: float, blocks: BlockSizes | None, interpret: bool,
         name: str) -> Array:
    g = geometry(x, blocks)
    kernel = partial(_jvp_kernel, g=g, offset=float(offset))
    args = [_rows(x, g.D), _flat(w), _flat(mean), _flat(rstd), _rows(tx, g.D), _flat(tw),
            _flat(tb)]
    out, = _call(kernel, f"{name}_jvp", g, (g.nb,), args, [((g.N, g.D), x.dtype)], interpret)
    return out.reshape(x.shape)


def _backward(x: Array, w: Array, mean: Array | None, rstd: Array, gy: Array, *,
              offset: float, blocks: BlockSizes | None, interpret: bool, name: str
              ) -> list[Array]:
    g = geometry(x, blocks, backward=True)
    centred = mean is not None
    args = [_rows(x, g.D), _flat(w), _flat(mean), _flat(rstd), _rows(gy, g.D)]
    n_parts = 2 if centred else 1      # dweight (and dbias); as many row means of dx
    stats: list[Array] = []
    if g.nc > 1:
        stats = _call(partial(_stats_kernel, g=g, offset=float(offset)), f"{name}_backward_stats",
                      g, (g.nb,), args, [((g.N,), F32)] * n_parts, interpret)
    kernel = partial(_backward_kernel, g=g, offset=float(offset), n_stats=len(stats))
    dx, *parts = _call(kernel, f"{name}_backward", g, (g.programs, g.nc), args + stats,
                       [((g.N, g.D), x.dtype)] + [((g.programs, g.D), F32)] * n_parts,
                       interpret)
    pr = min(REDUCE_ROWS, next_power_of_2(g.programs))
    bc = min(REDUCE_COLS, next_power_of_2(g.D))
    reduce = partial(_reduce_kernel, P=g.programs, D=g.D, pr=pr, bc=bc)
    sums = _call(reduce, f"{name}_dweight", g, (-(-g.D // bc),), parts,
                 [((g.D,), w.dtype)] * n_parts, interpret)
    return [dx.reshape(x.shape)] + [s.reshape(w.shape) for s in sums]


# ------------------------------------------------- the primitives' entries
def rms_norm_forward(x: Array, gamma: Array, *, eps: float, weight_offset: float,
                     blocks: BlockSizes | None = None, interpret: bool = False) -> list[Array]:
    return _forward(x, gamma, None, eps=eps, offset=weight_offset, blocks=blocks,
                    interpret=interpret, name="rms_norm")


def rms_norm_jvp(x: Array, gamma: Array, rstd: Array, tx: Array, tgamma: Array, *,
                 eps: float, weight_offset: float, blocks: BlockSizes | None = None,
                 interpret: bool = False) -> Array:
    return _jvp(x, gamma, None, rstd, tx, tgamma, None, offset=weight_offset, blocks=blocks,
                interpret=interpret, name="rms_norm")


def rms_norm_backward(x: Array, gamma: Array, rstd: Array, g: Array, *, eps: float,
                      weight_offset: float, blocks: BlockSizes | None = None,
                      interpret: bool = False) -> list[Array]:
    return _backward(x, gamma, None, rstd, g, offset=weight_offset, blocks=blocks,
                     interpret=interpret, name="rms_norm")


def layer_norm_forward(x: Array, weight: Array, bias: Array, *, eps: float,
                       blocks: BlockSizes | None = None, interpret: bool = False
                       ) -> list[Array]:
    return _forward(x, weight, bias, eps=eps, offset=0.0, blocks=blocks, interpret=interpret,
                    name="layer_norm")


def layer_norm_jvp(x: Array, weight: Array, mean: Array, rstd: Array, tx: Array, tw: Array,
                   tb: Array, *, eps: float, blocks: BlockSizes | None = None,
                   interpret: bool = False) -> Array:
    return _jvp(x, weight, mean, rstd, tx, tw, tb, offset=0.0, blocks=blocks,
                interpret=interpret, name="layer_norm")


def layer_norm_backward(x: Array, weight: Array, mean: Array, rstd: Array, g: Array, *,
                        eps: float, blocks: BlockSizes | None = None, interpret: bool = False
                        ) -> list[Array]:
    return _backward(x, weight, mean, rstd, g, offset=0.0, blocks=blocks, interpret=interpret,
                     name="layer_norm")


_ENTRIES = {"rms_norm": rms_norm_forward, "rms_norm_jvp": rms_norm_jvp,
            "rms_norm_vjp": rms_norm_backward, "layer_norm": layer_norm_forward,
            "layer_norm_jvp": layer_norm_jvp, "layer_norm_vjp": layer_norm_backward}


def table(primitive: str, xla: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    """The implementation table of one of the six primitives: ``xla`` and its kernel."""
    return {"xla": xla, "pallas": _ENTRIES[primitive], "supports": supports}
