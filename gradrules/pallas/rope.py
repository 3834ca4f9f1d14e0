"""Pallas (Triton) kernel of rope's one primitive (rotate-half rotary
embedding), elementwise over large blocks: rope is linear in x, so the same
kernel is its forward, its tangent map (rope of the tangent) and, with the
angle negated (``inverse``), its transpose, the backward.

The wrapper views ``x [B, S, H, D]`` as ``[T = B S, H, D]`` (free) and the
positions (``[S]`` broadcast to ``[B, S]``) as ``[T]`` float32; the grid is
``(token blocks, heads, column blocks of D / 2)``. Each program reads the
two halves ``x1 = x[t, h, c]``, ``x2 = x[t, h, D/2 + c]`` of one
``[block_rows, block_cols]`` tile, the tile's positions and frequencies
``f_c = theta ** (-2 c / D)`` (``core.numerics.rope_inv_freq``, passed as
an operand), and writes ``(x1 cos a - x2 sin a, x2 cos a + x1 sin a)`` with
``a = p f_c`` (``-a`` for ``inverse``), in float32 for 16-bit input: the
angle is the same float32 product as in the XLA lowering. Partial tiles
(the end of the tokens, a half width that is not a power of two) are masked
loads and stores. Block sizes: ``BlockSizes`` (the caller's), else
``_pallas.TILE_ELEMENTS`` per tile (both halves) by dtype, at most ``MAX_COLS`` columns
of each half.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..core.numerics import rope_inv_freq, rope_rotate
from ._pallas import (BlockSpec, ds, DTYPES, F32, iota, is_power_of_2, load, next_power_of_2,
                      program_id, RowBlocks, store, TILE_ELEMENTS,
                      triton_call)

Array = jax.Array
MAX_COLS = 512


BlockSizes = RowBlocks


@dataclass(frozen=True)
class Tiles:
    """The static sizes of one launch: ``tokens`` rows of ``heads`` heads,
    ``half`` columns per half."""

    tokens: int
    heads: int
    half: int
    br: int
    bc: int
    num_warps: int
    num_stages: int

    @property
    def grid(self) -> tuple[int, int, int]:
        return -(-self.tokens // self.br), self.heads, -(-self.half // self.bc)


def tiles(x: Any, blocks: BlockSizes | None) -> Tiles:
    """The tiles of one call: the caller's block sizes, else the defaults
    (capped at the padded tokens and half width)."""
    b_, s, h, d = x.shape
    elements, warps = TILE_ELEMENTS[min(np.dtype(x.dtype).itemsize, 4)]
    b = blocks or BlockSizes()
    bc = min(b.block_cols or MAX_COLS, next_power_of_2(d // 2))
    br = min(b.block_rows or max(1, elements // (2 * bc)), next_power_of_2(b_ * s))
    return Tiles(b_ * s, h, d // 2, br, bc, b.num_warps or warps, b.num_stages or 1)


def supports(x: Any, positions: Any, *, blocks: Any = None, **params: Any) -> str | None:
    """float16, bfloat16 and float32 x, non-empty, any even head_dim (a half
    width that is not a power of two masked), positions [S] or [B, S];
    block sizes powers of two.

    None if the kernel takes the call, else why not."""
    if np.dtype(x.dtype) not in DTYPES:
        return f"dtype {np.dtype(x.dtype)} (the kernel takes float16, bfloat16, float32)"
    if 0 in tuple(x.shape):
        return f"empty x of shape {tuple(x.shape)}"
    if blocks is not None:
        for name in ("block_rows", "block_cols"):
            size = getattr(blocks, name)
            if size is not None and not is_power_of_2(size):
                return f"{name}={size} (the kernel takes powers of two)"
    return None


def _kernel(x_ref: Any, pos_ref: Any, freq_ref: Any, out_ref: Any, *, t: Tiles,
            inverse: bool) -> None:
    """One tile: rows (tokens) r0.., columns c0.. of each half, of one head."""
    r0, c0 = program_id(0) * t.br, program_id(2) * t.bc
    in_rows, in_cols = iota(r0, t.br) < t.tokens, iota(c0, t.bc) < t.half
    ok = None
    if t.tokens % t.br:
        ok = in_rows[:, None]
    if t.half % t.bc:
        ok = in_cols[None, :] if ok is None else ok & in_cols[None, :]
    rows, first, second = ds(r0, t.br), ds(c0, t.bc), ds(c0 + t.half, t.bc)

    def read(cols: Any) -> Array:
        at = x_ref.at[rows, cols]
        return (load(at) if ok is None else load(at, mask=ok, other=0)).astype(F32)

    pos = load(pos_ref.at[rows], mask=in_rows, other=0)
    freq = load(freq_ref.at[first], mask=in_cols, other=0)
    angle = pos[:, None] * freq[None, :]
    sin = jnp.sin(angle)
    o1, o2 = rope_rotate(read(first), read(second), jnp.cos(angle), -sin if inverse else sin)
    store(out_ref.at[rows, first], o1.astype(out_ref.dtype), mask=ok)
    store(out_ref.at[rows, second], o2.astype(out_ref.dtype), mask=ok)


def rope(x: Array, positions: Array, *, theta: float, inverse: bool,
         blocks: BlockSizes | None = None, interpret: bool) -> Array:
    """rope_p's kernel (module docstring): ``x [B, S, H, D]``, ``positions [S]``
    or ``[B, S]`` (integers)."""
    b, s, h, d = x.shape
    t = tiles(x, blocks)
    pos = jnp.broadcast_to(positions, (b, s)).reshape(t.tokens).astype(F32)
    freq = jnp.asarray(rope_inv_freq(d, theta), F32)
    spec = BlockSpec((t.tokens, None, d), lambda i, j, k: (0, j, 0))
    (out,) = triton_call(
        partial(_kernel, t=t, inverse=inverse), name="rope_inverse" if inverse else "rope",
        grid=t.grid,
        in_specs=[spec, BlockSpec((t.tokens,), lambda i, j, k: (0,)),
                  BlockSpec((t.half,), lambda i, j, k: (0,))],
        out_specs=[spec], out_shape=[jax.ShapeDtypeStruct((t.tokens, h, d), x.dtype)],
        num_warps=t.num_warps, num_stages=t.num_stages,
        interpret=interpret)(x.reshape(t.tokens, h, d), pos, freq)
    return out.reshape(x.shape)
