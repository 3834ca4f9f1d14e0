"""The one module that imports Pallas (as ``_jax.py`` is the one that
imports JAX internals): what the kernels use, on JAX 0.10.2 and 0.11.2.

Every kernel goes through ``triton_call``, which selects Pallas's Triton
backend explicitly with its ``CompilerParams``: on JAX 0.10.x a bare
``pallas_call`` on the GPU goes to Mosaic GPU, on 0.11.2 to Triton.
Products use ``dot`` (``jnp.dot`` with float32 accumulation; ``pl.dot`` is
gone in 0.11), loads and stores the masked ``load`` / ``store`` of the
Triton backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plt

Array = jax.Array
F32 = jnp.float32
DTYPES = (np.dtype(jnp.float16), np.dtype(jnp.bfloat16), np.dtype(jnp.float32))
"""The dtypes every kernel takes (float32 accumulation for the 16-bit ones)."""
BlockSpec = pl.BlockSpec
ds = pl.ds
program_id = pl.program_id
load = plt.load
store = plt.store


# the default tile of an elementwise kernel, by itemsize: (elements, num_warps)
TILE_ELEMENTS = {2: (8192, 8), 4: (4096, 4)}


@dataclass(frozen=True)
class RowBlocks:
    """Block sizes of a row kernel (softmax, silu_gated, rope), carried by the
    ``implementation`` param: ``block_rows`` x ``block_cols`` elements per
    program (powers of two; a row wider than ``block_cols`` is looped over),
    ``num_warps`` / ``num_stages`` of the Triton launch. None takes the
    kernel module's default (by dtype and width). They never change the
    result."""

    block_rows: int | None = None
    block_cols: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def is_power_of_2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def dot(a: Array, b: Array, *, trans_b: bool = False) -> Array:
    """``a @ b`` (or ``a @ b.T``) accumulated in float32, on tensor cores for
    16-bit operands."""
    return jnp.dot(a, b.T if trans_b else b, preferred_element_type=jnp.float32)


# How many 16-bit parts ``split_dot`` cuts a float32 operand into: 3 x 8
# significant bits for bfloat16 (all of float32's 24), 2 x 11 for float16 (22)
SPLIT_PARTS = {np.dtype(jnp.bfloat16): 3, np.dtype(jnp.float16): 2}


def split_dot(a: Array, b: Array, *, trans_a: bool = False) -> Array:
    """``a @ b`` (``a^T @ b`` with ``trans_a``) for a float32 ``a`` and a 16-bit
    ``b``, at float32 precision on 16-bit tensor cores.

    ``a = sum_n 2^(-t n) a_n`` with ``t`` the significand bits of b's dtype
    and ``a_n`` the 16-bit rounding of ``2^(t n) (a - sum_{m<n} 2^(-t m) a_m)``
    (``SPLIT_PARTS[b.dtype]`` parts; the scaling keeps float16 parts out of
    the subnormals), so ``a @ b = sum_n 2^(-t n) (a_n @ b)``: each product of
    two 16-bit numbers is exact in the float32 accumulator, and the only
    roundings are the last part's (2^-24 of ``|a|`` for bfloat16, 2^-22 for
    float16) and the float32 sums. A float32 ``b``: one ``dot``. (A
    float32 dot on the GPU would be TF32, 2^-11, or the slow IEEE path.)
    """
    parts = SPLIT_PARTS.get(np.dtype(b.dtype), 1)
    if parts == 1:
        return dot(a.T if trans_a else a, b.astype(a.dtype))
    bits = jnp.finfo(b.dtype).nmant + 1
    terms, rest = [], a
    for n in range(parts):
        part = rest.astype(b.dtype)
        term = dot(part.T if trans_a else part, b)
        terms.append(term if n == 0 else term * (2.0 ** (-bits * n)))
        if n + 1 < parts:
            rest = (rest - part.astype(F32)) * (2.0 ** bits)
    total = terms[-1]                     # the smallest first
    for term in reversed(terms[:-1]):
        total = total + term
    return total


def triton_call(kernel: Callable[..., None], *, name: str, grid: tuple[int, ...],
                in_specs: Sequence[BlockSpec], out_specs: Sequence[BlockSpec],
                out_shape: Sequence[jax.ShapeDtypeStruct], num_warps: int, num_stages: int,
                interpret: bool) -> Callable[..., Any]:
    """``pallas_call`` on the Triton backend (or the Pallas interpreter),
    traced with 64-bit types off: the kernels index in int32, and Python ints
    would otherwise become int64 beside the int32 program ids. Inside
    ``shard_map`` the results vary over the manual axes the operands vary
    over (which the primitive's bind made the same for all of them)."""
    def run(*args: Any) -> Any:
        mat = getattr(jax.typeof(args[0]), "manual_axis_type", None)
        shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype, manual_axis_type=mat)
                  for s in out_shape] if mat is not None and mat.varying else list(out_shape)
        call = pl.pallas_call(
            kernel, name=name, grid=grid, in_specs=list(in_specs), out_specs=list(out_specs),
            out_shape=shapes, interpret=interpret,
            compiler_params=plt.CompilerParams(num_warps=num_warps, num_stages=num_stages))
        with jax.enable_x64(False):
            return call(*args)
    return run


# ------------------------------------------------- in-kernel pieces (int32)
def iota(start: Any, n: int) -> Array:
    """``start, start + 1, ..., start + n - 1`` (int32)."""
    return start + lax.broadcasted_iota(jnp.int32, (n,), 0)


def first(n: int) -> Any:
    """The first ``n`` entries of an axis, as an int32 slice (a Python int
    start would become int64 beside the int32 program ids in interpret mode
    under x64)."""
    return ds(jnp.int32(0), n)


def whole(ref: Any) -> Any:
    """All of a ref's last axis."""
    return first(ref.shape[-1])


def load_rows(ref: Any, r0: Any, n: int, rows: int, *index: Any) -> Array:
    """Rows ``r0 .. r0 + rows`` of a ``[n, (index,) width]`` ref (all of its
    last axis; ``index`` picks along the axes between), zeros past ``n``."""
    ok = (iota(r0, rows) < n)[:, None]
    return load(ref.at[(ds(r0, rows), *index, whole(ref))], mask=ok, other=0)


def load_row_values(ref: Any, r0: Any, n: int, rows: int, *index: Any) -> Array:
    """Entries ``r0 .. r0 + rows`` of a ``[(index,) n]`` ref (one value per
    row: a log-sum-exp, a statistic), 0 past ``n``."""
    return load(ref.at[(*index, ds(r0, rows))], mask=iota(r0, rows) < n, other=0)
