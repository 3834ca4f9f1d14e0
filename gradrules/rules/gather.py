"""Rules of the gather family.

Gathers are linear in their data operand (``linear=("x",)``, ``("weight",)``):
the JVP binds the gather on the tangent with the primal indices
(``linear_jvp``), and the transpose adds the cotangent's slices into zeros at
the indices (``take_transpose``, whole slices along the gathered axis, whose
own transpose is the gather; ``scatter_add`` for take_along_axis, whose index
picks single elements). Index operands never take a tangent. Batching rules
move the batch axes to the front (broadcasting unbatched operands) and bind
the primitive once, using its ``batch_dims`` param where data and indices are
both batched.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import (Array, BatchDim, BatchResult, Cotangent, MaybeUndefined, Primitive,
                    aval_of)
from ..core.args import index_dtype
from ..core.dims import Size, is_constant, max_dim
from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR, PRIMITIVES
from ..primitives._compose import zeros
from ..primitives.arithmetic import add, maximum, minimum, subtract
from ..primitives.compare import eq, ge, lt, where
from ..primitives.convert import convert_element_type
from ..primitives.creation import arange_p
from ..primitives.gather import (c_embedding_p, embedding_p, gather_p, index_select_p,
                                 one_hot_p, take_along_axis_p, take_p, take_transpose_p)
from ..primitives.scatter import scatter_add_p
from ..primitives.shape import moveaxis, reshape_p
from ._common import linear_jvp, shifted_front_batch


# ------------------------------------------------------------ shared pieces
def widen(index: Any) -> Any:
    """``index`` in ``index_dtype`` (int32 where its dtype is narrower), so
    that index arithmetic cannot wrap around."""
    dtype = aval_of(index).dtype
    wide = index_dtype(dtype)
    return index if wide == dtype else convert_element_type(index, dtype=wide)


def size_value(d: Size, dtype: Any) -> Any:
    """The size ``d`` as a 0-d array of ``dtype``: a numpy scalar where it
    is an int; where it is symbolic (``jax.export``), the one entry of
    ``arange(d, d + 1)``, which reads the size from the actual shapes when
    the exported program runs (a size is not an array operand)."""
    if is_constant(d):
        return np.asarray(d, dtype)
    return reshape_p.bind(arange_p.bind(start=d, stop=d + 1, step=1, dtype=np.dtype(dtype)),
                          new_sizes=())


def effective_index(index: Any, n: Size) -> Any:
    """The documented index rule written with catalog ops: negative indices
    count from the end, then clip into [0, n - 1] (in ``index_dtype``; n
    may be symbolic)."""
    index = widen(index)
    dtype = aval_of(index).dtype
    zero = np.zeros((), dtype)
    index = where(lt(index, zero), add(index, size_value(n, dtype)), index)
    return minimum(maximum(index, zero), size_value(max_dim(n - 1, 0), dtype))


def scatter_back(ct: Any, index: Any, shape: tuple[int, ...], axis: int,
                 batch_dims: int) -> Any:
    """Transpose of ``gather(x, index, axis, batch_dims)`` for x of ``shape``:
    the cotangent's slices added into zeros at ``index`` (``take_transpose``,
    which clips the index by the same rule as the gather), whole slices at a
    time along ``axis``, the batch axes mapped over."""
    return take_transpose_p.bind(ct, index, axis=axis, batch_dims=batch_dims,
                                 size=shape[axis])


# ------------------------------------------- gather, take, index_select
def _take_transpose(ct: Cotangent, x: MaybeUndefined, index: Array, *, axis: int,
                    batch_dims: int) -> list[Any]:
    return [scatter_back(ct, index, tuple(aval_of(x).shape), axis, batch_dims), None]


def _take_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim], *, axis: int,
                batch_dims: int, **params: Any) -> BatchResult:
    """Data batched alone: one more leading axis before ``axis``; index
    batched alone: a gather takes one more index axis (take_transpose, whose
    src has no such axis, broadcasts it); both: one more batch axis."""
    (x, index), (dx, di) = args, dims
    if batch_dims == 0 and di is None:
        return prim.bind(moveaxis(x, dx, 0), index, axis=axis + 1, batch_dims=0, **params), 0
    if batch_dims == 0 and dx is None and prim is not take_transpose_p:
        return prim.bind(x, moveaxis(index, di, 0), axis=axis, batch_dims=0, **params), axis
    return shifted_front_batch(prim, ("axis", "batch_dims"), args, dims, axis=axis,
                               batch_dims=batch_dims, **params)


def _take_transpose_transpose(ct: Cotangent, src: MaybeUndefined, index: Array, *, axis: int,
                              batch_dims: int, size: int) -> list[Any]:
    return [gather_p.bind(ct, index, axis=axis, batch_dims=batch_dims), None]


register_rules(take_transpose_p, linear=("src",), jvp=partial(linear_jvp, take_transpose_p),
               transpose=_take_transpose_transpose, batch=partial(_take_batch, take_transpose_p))
register_rules(gather_p, linear=("x",), jvp=partial(linear_jvp, gather_p),
               transpose=_take_transpose, batch=partial(_take_batch, gather_p))
register_rules(take_p, linear=("x",), jvp=partial(linear_jvp, take_p),
               transpose=_take_transpose, batch=partial(_take_batch, take_p))
register_rules(index_select_p, linear=("x",), jvp=partial(linear_jvp, index_select_p),
               transpose=_take_transpose, batch=partial(_take_batch, index_select_p))


# ------------------------------------------------------- take_along_axis
def _take_along_axis_transpose(ct: Cotangent, x: MaybeUndefined, index: Array, *,
                               axis: int, in_range: bool) -> list[Any]:
    z = zeros(aval_of(x).shape, aval_of(ct).dtype)
    return [scatter_add_p.bind(z, index, ct, axis=axis, in_range=in_range), None]


register_rules(take_along_axis_p, linear=("x",), jvp=partial(linear_jvp, take_along_axis_p),
               transpose=_take_along_axis_transpose,
               batch=partial(shifted_front_batch, take_along_axis_p, ("axis",)))


# ------------------------------------------- embedding, c_embedding (lookups)
def zero_rows(ct: Any, mask: Any) -> Any:
    """``ct`` with the rows (last axis) where ``mask`` is True set to 0."""
    mask = reshape_p.bind(mask, new_sizes=tuple(np.shape(mask)) + (1,))
    return where(mask, zeros((), aval_of(ct).dtype), ct)


def table_batch(prim: Primitive, table: str, args: Sequence[Any], dims: Sequence[BatchDim],
                **params: Any) -> BatchResult:
    """Batching of a table lookup whose operand named ``table`` is the table
    and the other the ids: batched ids alone keep the table as is; otherwise
    both get the batch axis in front and ``batch_dims`` grows by one."""
    (t,) = PRIMITIVES[prim].positions((table,))
    ids = 1 - t
    batch_dims = params.pop("batch_dims")
    if batch_dims == 0 and dims[t] is None:
        moved = list(args)
        moved[ids] = moveaxis(args[ids], dims[ids], 0)
        return prim.bind(*moved, batch_dims=0, **params), 0
    return shifted_front_batch(prim, ("batch_dims",), args, dims, batch_dims=batch_dims,
                               **params)


def _embedding_transpose(ct: Cotangent, ids: Array, weight: MaybeUndefined, *,
                         padding_idx: int | None, batch_dims: int) -> list[Any]:
    shape = tuple(aval_of(weight).shape)
    if padding_idx is not None:
        rows = effective_index(ids, shape[batch_dims])
        ct = zero_rows(ct, eq(rows, size_value(padding_idx, aval_of(rows).dtype)))
    return [None, scatter_back(ct, ids, shape, batch_dims, batch_dims)]


register_rules(embedding_p, linear=("weight",), jvp=partial(linear_jvp, embedding_p),
               transpose=_embedding_transpose,
               batch=partial(table_batch, embedding_p, "weight"))


def _c_embedding_transpose(ct: Cotangent, weight: MaybeUndefined, ids: Array, *,
                           start_index: int, batch_dims: int) -> list[Any]:
    shape = tuple(aval_of(weight).shape)
    n = shape[batch_dims]
    if n == 0:
        return [zeros(shape, aval_of(ct).dtype), None]
    ids = widen(ids)
    dtype = aval_of(ids).dtype
    local = subtract(ids, np.asarray(start_index, dtype))
    outside = where(lt(local, np.zeros((), dtype)), True, ge(local, size_value(n, dtype)))
    return [scatter_back(zero_rows(ct, outside), local, shape, batch_dims, batch_dims), None]


register_rules(c_embedding_p, linear=("weight",), jvp=partial(linear_jvp, c_embedding_p),
               transpose=_c_embedding_transpose,
               batch=partial(table_batch, c_embedding_p, "weight"))


# ---------------------------------------------------------------- one_hot
def _one_hot_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, num_classes: int,
                   dtype: Any, axis: int) -> BatchResult:
    x = moveaxis(args[0], dims[0], 0)
    return one_hot_p.bind(x, num_classes=num_classes, dtype=dtype, axis=axis + 1), 0


register_rules(one_hot_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR, batch=_one_hot_batch)
