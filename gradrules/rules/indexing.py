"""Rules of the indexing family.

Gathers are linear in their data operand: the JVP binds the gather on the
tangent with the primal indices, and the transpose is a scatter-add
(``scatter_add``) into zeros. Scatters are linear in (x, src) jointly. Index
operands never take a tangent. Batching rules move the batch axes to the front
(broadcasting unbatched operands) and bind the primitive once, using its
``batch_dims`` param where data and indices are both batched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import is_undefined_primal, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR
from ..primitives.arithmetic import add, divide, maximum, minimum, multiply, subtract
from ..primitives.compare import eq, ge, lt, where
from ..primitives.convert import convert_element_type
from ..primitives.indexing import (c_embedding_p, embedding_p, gather_p, index_dtype,
                                   index_put_p, index_select_p, one_hot_p, position_dtype,
                                   scatter_add_p, scatter_p, scatter_reduce_p, set_value_p,
                                   slice_scatter_p, strided_positions, take_along_axis_p,
                                   take_p)
from ..primitives.layout import flip_p, slice_p
from ..primitives.shape import broadcast_in_dim_p, moveaxis, reshape_p
from ._common import (add_tangents, full, linear_jvp, linear_jvp_in, shifted_front_batch,
                      to_front, zeros)


# ------------------------------------------------------------ shared pieces
def widen(index: Any) -> Any:
    """``index`` in ``index_dtype`` (int32 where its dtype is narrower), so
    that index arithmetic cannot wrap around."""
    dtype = _jax.aval_of(index).dtype
    wide = index_dtype(dtype)
    return index if wide == dtype else convert_element_type(index, dtype=wide)


def effective_index(index: Any, n: int) -> Any:
    """The documented index rule written with catalog ops: negative indices
    count from the end, then clip into [0, n - 1] (in ``index_dtype``)."""
    index = widen(index)
    dtype = _jax.aval_of(index).dtype
    index = where(lt(index, np.zeros((), dtype)), add(index, np.asarray(n, dtype)), index)
    return minimum(maximum(index, np.zeros((), dtype)), np.asarray(max(n - 1, 0), dtype))


def scatter_back(ct: Any, index: Any, shape: tuple[int, ...], axis: int,
                 batch_dims: int) -> Any:
    """Transpose of ``gather(x, index, axis, batch_dims)`` for x of ``shape``:
    the cotangent, scatter-added into zeros (the index broadcast to the
    cotangent's shape, as ``scatter_add`` wants)."""
    ishape = tuple(np.shape(index))
    m = math.prod(ishape[batch_dims:])
    ct = reshape_p.bind(ct, new_sizes=shape[:axis] + (m,) + shape[axis + 1:])
    index = reshape_p.bind(index, new_sizes=ishape[:batch_dims] + (m,))
    index = broadcast_in_dim_p.bind(index, shape=tuple(np.shape(ct)),
                                    broadcast_dimensions=tuple(range(batch_dims)) + (axis,))
    return scatter_add_p.bind(zeros(shape, _jax.aval_of(ct).dtype), index, ct, axis=axis)


# ------------------------------------------- gather, take, index_select
def _take_transpose(ct: Any, x: Any, index: Any, *, axis: int, batch_dims: int) -> list[Any]:
    return [scatter_back(ct, index, tuple(x.aval.shape), axis, batch_dims), None]


def _take_batch(prim: Any, args: Sequence[Any], dims: Sequence[int | None], *, axis: int,
                batch_dims: int) -> tuple[Any, int]:
    (x, index), (dx, di) = args, dims
    if batch_dims == 0 and di is None:
        return prim.bind(moveaxis(x, dx, 0), index, axis=axis + 1, batch_dims=0), 0
    if batch_dims == 0 and dx is None:
        return prim.bind(x, moveaxis(index, di, 0), axis=axis, batch_dims=0), axis
    return shifted_front_batch(prim, ("axis", "batch_dims"), args, dims, axis=axis,
                               batch_dims=batch_dims)


for _p in (gather_p, take_p, index_select_p):
    register_rules(_p, jvp=partial(linear_jvp_in, _p, (0,)), transpose=_take_transpose,
                   batch=partial(_take_batch, _p))


# ------------------------------------------------------- take_along_axis
def _take_along_axis_transpose(ct: Any, x: Any, index: Any, *, axis: int) -> list[Any]:
    z = zeros(x.aval.shape, _jax.aval_of(ct).dtype)
    return [scatter_add_p.bind(z, index, ct, axis=axis), None]


register_rules(take_along_axis_p, jvp=partial(linear_jvp_in, take_along_axis_p, (0,)),
               transpose=_take_along_axis_transpose,
               batch=partial(shifted_front_batch, take_along_axis_p, ("axis",)))


# ------------------------------------------------------------ scatter_add
def _scatter_add_transpose(ct: Any, x: Any, index: Any, src: Any, *, axis: int) -> list[Any]:
    ct_x = ct if is_undefined_primal(x) else None
    ct_src = take_along_axis_p.bind(ct, index, axis=axis) if is_undefined_primal(src) else None
    return [ct_x, None, ct_src]


register_rules(scatter_add_p, jvp=partial(linear_jvp_in, scatter_add_p, (0, 2)),
               transpose=_scatter_add_transpose,
               batch=partial(shifted_front_batch, scatter_add_p, ("axis",)))


# -------------------------------------------------------------- embedding
def _embedding_transpose(ct: Any, ids: Any, weight: Any, *, padding_idx: int | None,
                         batch_dims: int) -> list[Any]:
    shape = tuple(weight.aval.shape)
    if padding_idx is not None:
        rows = effective_index(ids, shape[batch_dims])
        ct = zero_rows(ct, eq(rows, np.asarray(padding_idx, _jax.aval_of(rows).dtype)))
    return [None, scatter_back(ct, ids, shape, batch_dims, batch_dims)]


def zero_rows(ct: Any, mask: Any) -> Any:
    """``ct`` with the rows (last axis) where ``mask`` is True set to 0."""
    mask = reshape_p.bind(mask, new_sizes=tuple(np.shape(mask)) + (1,))
    return where(mask, zeros((), _jax.aval_of(ct).dtype), ct)


def table_batch(prim: Any, table: int, args: Sequence[Any], dims: Sequence[int | None],
                **params: Any) -> tuple[Any, int]:
    """Batching of a table lookup whose operand ``table`` is the table and
    the other the ids: batched ids alone keep the table as is; otherwise both
    get the batch axis in front and ``batch_dims`` grows by one."""
    ids = 1 - table
    batch_dims = params.pop("batch_dims")
    if batch_dims == 0 and dims[table] is None:
        moved = list(args)
        moved[ids] = moveaxis(args[ids], dims[ids], 0)
        return prim.bind(*moved, batch_dims=0, **params), 0
    return shifted_front_batch(prim, ("batch_dims",), args, dims, batch_dims=batch_dims,
                               **params)


register_rules(embedding_p, jvp=partial(linear_jvp_in, embedding_p, (1,)),
               transpose=_embedding_transpose, batch=partial(table_batch, embedding_p, 1))


# ------------------------------------------------------------ c_embedding
def _c_embedding_transpose(ct: Any, weight: Any, ids: Any, *, start_index: int,
                           batch_dims: int) -> list[Any]:
    shape = tuple(weight.aval.shape)
    n = shape[batch_dims]
    if n == 0:
        return [zeros(shape, _jax.aval_of(ct).dtype), None]
    ids = widen(ids)
    dtype = _jax.aval_of(ids).dtype
    local = subtract(ids, np.asarray(start_index, dtype))
    outside = where(lt(local, np.zeros((), dtype)), True, ge(local, np.asarray(n, dtype)))
    return [scatter_back(zero_rows(ct, outside), local, shape, batch_dims, batch_dims), None]


register_rules(c_embedding_p, jvp=partial(linear_jvp_in, c_embedding_p, (0,)),
               transpose=_c_embedding_transpose, batch=partial(table_batch, c_embedding_p, 0))


# ---------------------------------------------------------------- one_hot
def _one_hot_batch(args: Sequence[Any], dims: Sequence[int | None], *, num_classes: int,
                   dtype: Any, axis: int) -> tuple[Any, int]:
    x = moveaxis(args[0], dims[0], 0)
    return one_hot_p.bind(x, num_classes=num_classes, dtype=dtype, axis=axis + 1), 0


register_rules(one_hot_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR, batch=_one_hot_batch)


# -------------------------------------------------- scatter (overwrite)
def positions(shape: tuple[int, ...]) -> np.ndarray:
    """Row-major position of every entry of an index of ``shape``."""
    size = math.prod(shape)
    return np.arange(size, dtype=position_dtype(size)).reshape(shape)


def surviving_writes(index_shape: tuple[int, ...], target_shape: tuple[int, ...],
                     write: Callable[[Any, Any], Any], read: Callable[[Any], Any]) -> Any:
    """True for the entries of an index of ``index_shape`` whose write
    survives an overwriting scatter (the last one of each group of
    duplicates, in row-major order): ``write(target, pos)`` scatters every
    entry's position into a ``target_shape`` array of -1 with the same
    scatter, ``read(last)`` gathers the survivors back at the index, and an
    entry won where it reads its own position."""
    pos = positions(index_shape)
    return eq(read(write(full(target_shape, -1, pos.dtype), pos)), pos)


def _scatter_winners(index: Any, shape: tuple[int, ...], axis: int) -> Any:
    """``surviving_writes`` of ``scatter`` along ``axis`` into ``shape``."""
    return surviving_writes(
        tuple(np.shape(index)), shape,
        lambda target, pos: scatter_p.bind(target, index, pos, axis=axis),
        lambda last: take_along_axis_p.bind(last, index, axis=axis))


def _scatter_transpose(ct: Any, x: Any, index: Any, src: Any, *, axis: int) -> list[Any]:
    dtype, sshape = _jax.aval_of(ct).dtype, tuple(_jax.aval_of(src).shape)
    ct_x = ct_src = None
    if is_undefined_primal(x):
        ct_x = scatter_p.bind(ct, index, zeros(sshape, dtype), axis=axis)
    if is_undefined_primal(src):
        won = _scatter_winners(index, tuple(np.shape(ct)), axis)
        ct_src = where(won, take_along_axis_p.bind(ct, index, axis=axis), zeros((), dtype))
    return [ct_x, None, ct_src]


register_rules(scatter_p, jvp=partial(linear_jvp_in, scatter_p, (0, 2)),
               transpose=_scatter_transpose,
               batch=partial(shifted_front_batch, scatter_p, ("axis",)))


# ----------------------------------------------------------- scatter_reduce
def _as_float(mask: Any, dtype: Any) -> Any:
    return convert_element_type(mask, dtype=dtype)


def _extreme_partials(x: Any, index: Any, src: Any, out: Any, axis: int) -> tuple[Any, Any]:
    """amax / amin: every candidate equal to the result gets 1 / (number of
    such candidates) of the gradient (ties share it evenly)."""
    dtype = _jax.aval_of(out).dtype
    hit_x = _as_float(eq(x, out), dtype)
    hit_src = _as_float(eq(src, take_along_axis_p.bind(out, index, axis=axis)), dtype)
    count = scatter_add_p.bind(hit_x, index, hit_src, axis=axis)
    return (divide(hit_x, count),
            divide(hit_src, take_along_axis_p.bind(count, index, axis=axis)))


def _prod_partials(x: Any, index: Any, src: Any, out: Any, axis: int) -> tuple[Any, Any]:
    """prod: the partial of each factor is the product of the others, exact
    with zeros and to first order in every factor (so second derivatives
    are exact too): with P the product of a group's nonzero factors and n0
    the number of zero factors among the others, it is P / (the factor, 1
    if zero) when n0 = 0, that times the zero factor (0, with its tangent)
    when n0 = 1, else 0."""
    dtype = _jax.aval_of(out).dtype
    zero, one = np.zeros((), dtype), np.ones((), dtype)
    zx, zs = eq(x, zero), eq(src, zero)
    nonzero_x, nonzero_src = where(zx, one, x), where(zs, one, src)
    zero_x, zero_src = where(zx, x, zero), where(zs, src, zero)
    zx, zs = _as_float(zx, dtype), _as_float(zs, dtype)
    group = {"prod": scatter_reduce_p.bind(nonzero_x, index, nonzero_src, axis=axis,
                                           reduce="prod"),
             "zeros": scatter_add_p.bind(zx, index, zs, axis=axis),      # how many are 0
             "zero_sum": scatter_add_p.bind(zero_x, index, zero_src, axis=axis)}

    def others(factor: Any, is_zero_f: Any, zero_f: Any, g: dict[str, Any]) -> Any:
        rest = divide(g["prod"], factor)
        n0 = subtract(g["zeros"], is_zero_f)
        one_zero = multiply(rest, subtract(g["zero_sum"], zero_f))
        return where(eq(n0, zero), rest, where(eq(n0, one), one_zero, zero))

    at_src = {k: take_along_axis_p.bind(v, index, axis=axis) for k, v in group.items()}
    return (others(nonzero_x, zx, zero_x, group),
            others(nonzero_src, zs, zero_src, at_src))


def _scatter_reduce_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, axis: int,
                        reduce: str) -> tuple[Any, Any]:
    if reduce in ("sum", "mean"):
        return linear_jvp_in(scatter_reduce_p, (0, 2), primals, tangents, axis=axis,
                             reduce=reduce)
    (x, index, src), (tx, _, tsrc) = primals, tangents
    out = scatter_reduce_p.bind(x, index, src, axis=axis, reduce=reduce)
    if is_zero(tx) and is_zero(tsrc):
        return out, _jax.zero_tangent(out)
    partials = _prod_partials if reduce == "prod" else _extreme_partials
    d_x, d_src = partials(x, index, src, out, axis)
    t = _jax.zero_tangent(out)
    if not is_zero(tx):
        t = multiply(tx, d_x)
    if not is_zero(tsrc):
        z = zeros(tuple(np.shape(out)), _jax.aval_of(out).dtype)
        t = add_tangents(t, scatter_add_p.bind(z, index, multiply(tsrc, d_src), axis=axis))
    return out, t


def _scatter_reduce_transpose(ct: Any, x: Any, index: Any, src: Any, *, axis: int,
                              reduce: str) -> list[Any]:
    if reduce not in ("sum", "mean"):
        raise ValueError(f"gradrules.scatter_reduce with reduce={reduce!r} is not linear")
    if reduce == "mean":   # out = (x + scattered src) / (1 + count)
        dtype = _jax.aval_of(ct).dtype
        count = scatter_add_p.bind(full(tuple(np.shape(ct)), 1, dtype), index,
                                   full(tuple(np.shape(index)), 1, dtype), axis=axis)
        ct = divide(ct, count)
    return _scatter_add_transpose(ct, x, index, src, axis=axis)


register_rules(scatter_reduce_p, jvp=_scatter_reduce_jvp, transpose=_scatter_reduce_transpose,
               batch=partial(shifted_front_batch, scatter_reduce_p, ("axis",)))


# --------------------------------------------------------------- index_put
def _flat_index(indices: Sequence[Any], shape: tuple[int, ...]) -> Any:
    """Row-major position in ``shape`` of the (clipped) multi-index, in a
    dtype that holds every position (at least ``position_dtype(prod(shape))``)."""
    effs = [effective_index(index, n) for index, n in zip(indices, shape)]
    dtype = np.result_type(position_dtype(math.prod(shape)),
                           *(_jax.aval_of(e).dtype for e in effs))
    flat = None
    for eff, n in zip(effs, shape):
        if _jax.aval_of(eff).dtype != dtype:
            eff = convert_element_type(eff, dtype=dtype)
        flat = eff if flat is None else add(multiply(flat, np.asarray(n, dtype)), eff)
    return flat


def _index_put_transpose(ct: Any, x: Any, values: Any, *indices: Any,
                         accumulate: bool) -> list[Any]:
    dtype, shape = _jax.aval_of(ct).dtype, tuple(np.shape(ct))
    vshape = tuple(_jax.aval_of(values).shape)
    k = len(indices)
    ct_x = ct_values = None
    if is_undefined_primal(x):
        ct_x = ct if accumulate else index_put_p.bind(ct, zeros(vshape, dtype), *indices,
                                                      accumulate=False)
    if is_undefined_primal(values):
        lead, rest = shape[:k], shape[k:]
        flat = _flat_index(indices, lead)
        ct_flat = reshape_p.bind(ct, new_sizes=(math.prod(lead),) + rest)
        ct_values = gather_p.bind(ct_flat, flat, axis=0, batch_dims=0)
        if not accumulate:   # only the last of the duplicates was written
            ishape = tuple(np.shape(indices[0]))
            won = surviving_writes(
                ishape, lead,
                lambda target, pos: index_put_p.bind(target, pos, *indices, accumulate=False),
                lambda last: gather_p.bind(reshape_p.bind(last, new_sizes=(math.prod(lead),)),
                                           flat, axis=0, batch_dims=0))
            ct_values = where(reshape_p.bind(won, new_sizes=ishape + (1,) * len(rest)),
                              ct_values, zeros((), dtype))
    return [ct_x, ct_values] + [None] * k


def _index_put_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                     accumulate: bool) -> tuple[Any, int]:
    """The batch axis becomes one more indexed axis, indexed by arange(B)."""
    x, values, *indices = to_front(args, dims)
    ishape = tuple(np.shape(indices[0]))
    size = ishape[0]
    dtype = np.promote_types(position_dtype(size), index_dtype(_jax.aval_of(indices[0]).dtype))
    batch = broadcast_in_dim_p.bind(np.arange(size, dtype=dtype),
                                    shape=ishape, broadcast_dimensions=(0,))
    return index_put_p.bind(x, values, batch, *indices, accumulate=accumulate), 0


register_rules(index_put_p, jvp=partial(linear_jvp_in, index_put_p, (0, 1)),
               transpose=_index_put_transpose, batch=_index_put_batch)


# ------------------------------------------------ set_value, slice_scatter
def take_slices(ct: Any, slices: tuple[tuple[int, int, int], ...]) -> Any:
    """``ct`` at the positions of ``slices`` (a strided slice, then a flip of
    the axes walked backwards)."""
    bounds = [strided_positions(*s) for s in slices]
    out = slice_p.bind(ct, start_indices=tuple(b[0] for b in bounds),
                       limit_indices=tuple(b[1] for b in bounds),
                       strides=tuple(b[2] for b in bounds))
    rev = tuple(d for d, b in enumerate(bounds) if b[3])
    return flip_p.bind(out, axes=rev) if rev else out


def _slice_update_transpose(prim: Any, ct: Any, x: Any, value: Any, *,
                            slices: tuple[tuple[int, int, int], ...]) -> list[Any]:
    ct_x = ct_value = None
    if is_undefined_primal(x):
        vshape = tuple(_jax.aval_of(value).shape)
        ct_x = prim.bind(ct, zeros(vshape, _jax.aval_of(ct).dtype), slices=slices)
    if is_undefined_primal(value):
        ct_value = take_slices(ct, slices)
    return [ct_x, ct_value]


def _slice_update_batch(prim: Any, args: Sequence[Any], dims: Sequence[int | None], *,
                        slices: tuple[tuple[int, int, int], ...]) -> tuple[Any, int]:
    x, value = to_front(args, dims)
    return prim.bind(x, value, slices=((0, 1, np.shape(x)[0]),) + slices), 0


for _p in (set_value_p, slice_scatter_p):
    register_rules(_p, jvp=partial(linear_jvp, _p),
                   transpose=partial(_slice_update_transpose, _p),
                   batch=partial(_slice_update_batch, _p))
