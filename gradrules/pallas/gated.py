"""Pallas (Triton) kernels of the gated ops' three primitives (silu_gated:
SwiGLU; gelu_gated: GeGLU, exact and tanh forms): forward, tangent map
(JVP) and backward, elementwise over large blocks.

The wrapper views every operand as ``[rows, width]`` (the leading axes
flattened to rows, free for a contiguous array); the grid is ``(row blocks,
column blocks)`` and each program reads and writes one ``[block_rows,
block_cols]`` tile of each operand, with masked loads and stores where the
tile passes the end of the rows or of the width (a width of 1000 is one
masked block of 1024). Everything is computed in float32 for 16-bit input,
with the formulas of ``core.numerics`` (``gated_clamp``, ``gate_and_slope``)
that the XLA forward uses too; Triton has no erf, so the exact gelu's erfc
is ``erfc_from_exp`` (relative error below 1.2e-7):

* ``forward``: ``out = act(gate) up``;
* ``jvp``: ``t = act'(gate) up tg + act(gate) tu``;
* ``backward``: ``dgate = g up act'(gate)``, ``dup = g act(gate)``;

with silu_gated's swigluLimit clamp (``limit``): gate clamped from above, up
to ``[-limit, limit]``, and each term times its clamp's mask in the
derivatives. Block sizes: ``BlockSizes`` (the caller's), else
``_pallas.TILE_ELEMENTS`` per tile by dtype with at most ``MAX_COLS`` columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..core.numerics import erfc_from_exp, gate_and_slope, gated_clamp
from ._pallas import (BlockSpec, ds, DTYPES, F32, iota, is_power_of_2, load, next_power_of_2,
                      program_id, RowBlocks, store, TILE_ELEMENTS,
                      triton_call)

Array = jax.Array
MAX_COLS = 1024


BlockSizes = RowBlocks


@dataclass(frozen=True)
class Tiles:
    """The static sizes of one launch over a ``[rows, width]`` view."""

    rows: int
    width: int
    br: int
    bc: int
    num_warps: int
    num_stages: int

    @property
    def grid(self) -> tuple[int, int]:
        return -(-self.rows // self.br), -(-self.width // self.bc)


def rows_and_width(shape: tuple[int, ...]) -> tuple[int, int]:
    """An array's ``[rows, width]`` view: leading axes flattened (a scalar is 1 x 1)."""
    return (math.prod(shape[:-1]), shape[-1]) if shape else (1, 1)


def tiles(x: Any, blocks: BlockSizes | None) -> Tiles:
    """The tiles of one call: the caller's block sizes, else the defaults
    (capped at the padded rows and width)."""
    rows, width = rows_and_width(tuple(x.shape))
    elements, warps = TILE_ELEMENTS[min(np.dtype(x.dtype).itemsize, 4)]
    b = blocks or BlockSizes()
    bc = min(b.block_cols or MAX_COLS, next_power_of_2(width))
    br = min(b.block_rows or max(1, elements // bc), next_power_of_2(rows))
    return Tiles(rows, width, br, bc, b.num_warps or warps, b.num_stages or 1)


def supports(gate: Any, *rest: Any, blocks: Any = None, **params: Any) -> str | None:
    """float16, bfloat16 and float32, any shape with no size-0 axis (leading
    axes flattened to rows, any width: partial blocks masked); block sizes
    powers of two.

    None if the kernels take the call, else why not."""
    if np.dtype(gate.dtype) not in DTYPES:
        return f"dtype {np.dtype(gate.dtype)} (the kernels take float16, bfloat16, float32)"
    if 0 in tuple(gate.shape):
        return f"empty operand of shape {tuple(gate.shape)}"
    if blocks is not None:
        for name in ("block_rows", "block_cols"):
            size = getattr(blocks, name)
            if size is not None and not is_power_of_2(size):
                return f"{name}={size} (the kernels take powers of two)"
    return None


# ------------------------------------------------------------ in-kernel pieces
def _tile(t: Tiles) -> tuple[Any, Array | None]:
    """The index of this program's tile and where it lies inside the array
    (None: everywhere)."""
    r0, c0 = program_id(0) * t.br, program_id(1) * t.bc
    ok = None
    if t.rows % t.br:
        ok = (iota(r0, t.br) < t.rows)[:, None]
    if t.width % t.bc:
        in_cols = (iota(c0, t.bc) < t.width)[None, :]
        ok = in_cols if ok is None else ok & in_cols
    return (ds(r0, t.br), ds(c0, t.bc)), ok


def _read(ref: Any, at: Any, ok: Array | None) -> Array:
    """A tile in float32 (0 outside the array)."""
    x = load(ref.at[at]) if ok is None else load(ref.at[at], mask=ok, other=0)
    return x.astype(F32)


def _write(ref: Any, at: Any, ok: Array | None, x: Array) -> None:
    store(ref.at[at], x.astype(ref.dtype), mask=ok)


def _keep(x: Array, mask: Array | None) -> Array:
    return x if mask is None else jnp.where(mask, x, jnp.zeros((), x.dtype))


def _terms(gate_ref: Any, up_ref: Any, at: Any, ok: Array | None, activation: str,
           limit: float | None, approximate: bool
           ) -> tuple[Array, Array, Array, Array | None, Array | None]:
    """(clamped up, act(gate), act'(gate), gate mask, up mask) of the tile."""
    g, u, mg, mu = gated_clamp(_read(gate_ref, at, ok), _read(up_ref, at, ok), limit)
    act, slope = gate_and_slope(activation, g, approximate=approximate, erfc=erfc_from_exp)
    return u, act, slope, mg, mu


# ------------------------------------------------------------------ kernels
def _forward_kernel(gate_ref: Any, up_ref: Any, out_ref: Any, *, t: Tiles,
                    **activation: Any) -> None:
    at, ok = _tile(t)
    u, act, _, _, _ = _terms(gate_ref, up_ref, at, ok, **activation)
    _write(out_ref, at, ok, act * u)


def _jvp_kernel(gate_ref: Any, up_ref: Any, tg_ref: Any, tu_ref: Any, t_ref: Any, *, t: Tiles,
                **activation: Any) -> None:
    at, ok = _tile(t)
    u, act, slope, mg, mu = _terms(gate_ref, up_ref, at, ok, **activation)
    tangent = (_keep(slope * u * _read(tg_ref, at, ok), mg)
               + _keep(act * _read(tu_ref, at, ok), mu))
    _write(t_ref, at, ok, tangent)


def _backward_kernel(gate_ref: Any, up_ref: Any, g_ref: Any, dgate_ref: Any, dup_ref: Any, *,
                     t: Tiles, **activation: Any) -> None:
    at, ok = _tile(t)
    u, act, slope, mg, mu = _terms(gate_ref, up_ref, at, ok, **activation)
    g = _read(g_ref, at, ok)
    _write(dgate_ref, at, ok, _keep(g * (u * slope), mg))     # no g u = inf times slope 0
    _write(dup_ref, at, ok, _keep(g * act, mu))


# ----------------------------------------------------------------- wrappers
def _launch(kernel: Any, suffix: str, operands: tuple[Array, ...], outputs: int,
            blocks: BlockSizes | None, interpret: bool, activation: str,
            limit: float | None = None, approximate: bool = False) -> list[Array]:
    """``kernel`` over the ``[rows, width]`` views of ``operands`` (one shape
    and dtype), with ``outputs`` results of that shape and dtype; the kernel
    is named after the op (``silu_gated`` or ``gelu_gated``) and ``suffix``."""
    x = operands[0]
    t = tiles(x, blocks)
    views = [y.reshape(t.rows, t.width) for y in operands]
    spec = BlockSpec((t.rows, t.width), lambda i, j: (0, 0))
    params = dict(activation=activation, limit=limit, approximate=approximate)
    out = triton_call(partial(kernel, t=t, **params), name=f"{activation}_gated_{suffix}",
                      grid=t.grid, in_specs=[spec] * len(views), out_specs=[spec] * outputs,
                      out_shape=[jax.ShapeDtypeStruct((t.rows, t.width), x.dtype)] * outputs,
                      num_warps=t.num_warps, num_stages=t.num_stages,
                      interpret=interpret)(*views)
    return [y.reshape(x.shape) for y in out]


def forward(gate: Array, up: Array, *, blocks: BlockSizes | None = None, interpret: bool,
            **activation: Any) -> Array:
    """``act(gate) up``; ``activation``: the op's ``activation`` ("silu" or
    "gelu") and its params (``limit`` or ``approximate``)."""
    (out,) = _launch(_forward_kernel, "forward", (gate, up), 1, blocks, interpret, **activation)
    return out


def jvp(gate: Array, up: Array, tg: Array, tu: Array, *, blocks: BlockSizes | None = None,
        interpret: bool, **activation: Any) -> Array:
    """``act'(gate) up tg + act(gate) tu``."""
    (t,) = _launch(_jvp_kernel, "jvp", (gate, up, tg, tu), 1, blocks, interpret, **activation)
    return t


def backward(gate: Array, up: Array, g: Array, *, blocks: BlockSizes | None = None,
             interpret: bool, **activation: Any) -> list[Array]:
    """``[g up act'(gate), g act(gate)]``."""
    return _launch(_backward_kernel, "vjp", (gate, up, g), 2, blocks, interpret, **activation)
