"""Rules of the scatter family.

Scatters are linear in (x, src) jointly (``linear=("x", "src")``, by name:
``("x", "values")`` for index_put, ``("x", "value")`` for set_value): the JVP
binds the scatter on the tangents with the primal indices (``linear_jvp``).
The transposes gather the cotangent back at the indices (``take_along_axis``,
``gather``, a strided slice); where a scatter overwrites, only the surviving
write of each group of duplicates receives it. scatter_reduce is linear only
for sum and mean; its other reductions have JVPs of their own. Index operands
never take a tangent. Batching rules move the batch axes to the front and
bind the primitive once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (Array, BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined,
                    Primitive, Tangent, aval_of, is_undefined_primal, is_zero)
from ..core.args import index_dtype
from ..core.dims import Size, is_constant
from ..core.primitive import register_rules
from ..primitives._compose import full, zeros
from ..primitives.arithmetic import add, divide, multiply, subtract
from ..primitives.compare import eq, where
from ..primitives.convert import convert_element_type
from ..primitives.creation import iota
from ..primitives.gather import gather_p, take_along_axis_p
from ..primitives.layout import flip_p
from ..primitives.scatter import (LINEAR_REDUCE, index_put_p, position_dtype, scatter_add_p,
                                  scatter_p, scatter_reduce_p, set_value_p, slice_scatter_p)
from ..primitives.shape import broadcast_in_dim_p, reshape_p
from ..primitives.slicing import slice_p
from ._common import add_tangents, linear_jvp, shifted_front_batch, to_front
from .gather import effective_index, size_value


# ------------------------------------------------------------ scatter_add
def take_at(v: Any, index: Any, axis: int) -> Any:
    """``take_along_axis(v, index, axis)`` at a user's index (wrapped and
    clipped: ``in_range=False``)."""
    return take_along_axis_p.bind(v, index, axis=axis, in_range=False)


def add_at(x: Any, index: Any, src: Any, axis: int) -> Any:
    """``scatter_add(x, index, src, axis)`` at a user's index (wrapped and
    clipped: ``in_range=False``)."""
    return scatter_add_p.bind(x, index, src, axis=axis, in_range=False)


def _scatter_add_transpose(ct: Cotangent, x: MaybeUndefined, index: Array,
                           src: MaybeUndefined, *, axis: int, in_range: bool) -> list[Any]:
    ct_x = ct if is_undefined_primal(x) else None
    ct_src = None
    if is_undefined_primal(src):
        ct_src = take_along_axis_p.bind(ct, index, axis=axis, in_range=in_range)
    return [ct_x, None, ct_src]


register_rules(scatter_add_p, linear=("x", "src"), jvp=partial(linear_jvp, scatter_add_p),
               transpose=_scatter_add_transpose,
               batch=partial(shifted_front_batch, scatter_add_p, ("axis",)))


# -------------------------------------------------- scatter (overwrite)
def positions(shape: tuple[Size, ...]) -> Any:
    """Row-major position of every entry of an index of ``shape``, in
    ``position_dtype``: a numpy constant, or an ``iota`` where a size is
    symbolic."""
    size = math.prod(shape)
    dtype = position_dtype(size)
    if is_constant(size):
        return np.arange(size, dtype=dtype).reshape(shape)
    return reshape_p.bind(iota(dtype, size), new_sizes=tuple(shape))


def surviving_writes(index_shape: tuple[Size, ...], target_shape: tuple[Size, ...],
                     write: Callable[[Any, Any], Any], read: Callable[[Any], Any]) -> Any:
    """True for the entries of an index of ``index_shape`` whose write
    survives an overwriting scatter (the last one of each group of
    duplicates, in row-major order): ``write(target, pos)`` scatters every
    entry's position into a ``target_shape`` array of -1 with the same
    scatter, ``read(last)`` gathers the survivors back at the index, and an
    entry won where it reads its own position."""
    pos = positions(index_shape)
    return eq(read(write(full(target_shape, -1, aval_of(pos).dtype), pos)), pos)


def _scatter_winners(index: Any, shape: tuple[int, ...], axis: int) -> Any:
    """``surviving_writes`` of ``scatter`` along ``axis`` into ``shape``."""
    return surviving_writes(
        tuple(np.shape(index)), shape,
        lambda target, pos: scatter_p.bind(target, index, pos, axis=axis),
        lambda last: take_at(last, index, axis))


def _scatter_transpose(ct: Cotangent, x: MaybeUndefined, index: Array, src: MaybeUndefined,
                       *, axis: int) -> list[Any]:
    dtype, sshape = aval_of(ct).dtype, tuple(aval_of(src).shape)
    ct_x = ct_src = None
    if is_undefined_primal(x):
        ct_x = scatter_p.bind(ct, index, zeros(sshape, dtype), axis=axis)
    if is_undefined_primal(src):
        won = _scatter_winners(index, tuple(np.shape(ct)), axis)
        ct_src = where(won, take_at(ct, index, axis), zeros((), dtype))
    return [ct_x, None, ct_src]


register_rules(scatter_p, linear=("x", "src"), jvp=partial(linear_jvp, scatter_p),
               transpose=_scatter_transpose,
               batch=partial(shifted_front_batch, scatter_p, ("axis",)))


# ----------------------------------------------------------- scatter_reduce
def _as_float(mask: Any, dtype: Any) -> Any:
    return convert_element_type(mask, dtype=dtype)


def _extreme_partials(x: Any, index: Any, src: Any, out: Any, axis: int) -> tuple[Any, Any]:
    """amax / amin: every candidate equal to the result gets 1 / (number of
    such candidates) of the gradient (ties share it evenly)."""
    dtype = aval_of(out).dtype
    hit_x = _as_float(eq(x, out), dtype)
    hit_src = _as_float(eq(src, take_at(out, index, axis)), dtype)
    count = add_at(hit_x, index, hit_src, axis)
    return (divide(hit_x, count),
            divide(hit_src, take_at(count, index, axis)))


def _prod_partials(x: Any, index: Any, src: Any, out: Any, axis: int) -> tuple[Any, Any]:
    """prod: the partial of each factor is the product of the others, exact
    with zeros and to first order in every factor (so second derivatives
    are exact too): with P the product of a group's nonzero factors and n0
    the number of zero factors among the others, it is P / (the factor, 1
    if zero) when n0 = 0, that times the zero factor (0, with its tangent)
    when n0 = 1, else 0."""
    dtype = aval_of(out).dtype
    zero, one = np.zeros((), dtype), np.ones((), dtype)
    zx, zs = eq(x, zero), eq(src, zero)
    nonzero_x, nonzero_src = where(zx, one, x), where(zs, one, src)
    zero_x, zero_src = where(zx, x, zero), where(zs, src, zero)
    zx, zs = _as_float(zx, dtype), _as_float(zs, dtype)
    group = {"prod": scatter_reduce_p.bind(nonzero_x, index, nonzero_src, axis=axis,
                                           reduce="prod"),
             "zeros": add_at(zx, index, zs, axis),      # how many are 0
             "zero_sum": add_at(zero_x, index, zero_src, axis)}

    def others(factor: Any, is_zero_f: Any, zero_f: Any, g: dict[str, Any]) -> Any:
        rest = divide(g["prod"], factor)
        n0 = subtract(g["zeros"], is_zero_f)
        one_zero = multiply(rest, subtract(g["zero_sum"], zero_f))
        return where(eq(n0, zero), rest, where(eq(n0, one), one_zero, zero))

    at_src = {k: take_at(v, index, axis) for k, v in group.items()}
    return (others(nonzero_x, zx, zero_x, group),
            others(nonzero_src, zs, zero_src, at_src))


def _scatter_reduce_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axis: int,
                        reduce: str) -> JvpResult:
    """sum and mean: linear in (x, src), ``linear_jvp``; prod, amax, amin:
    ``t = t_x * d_x + scatter_add(0, index, t_src * d_src)`` with the partials
    ``d_x``, ``d_src`` of ``_prod_partials`` / ``_extreme_partials``."""
    if reduce in LINEAR_REDUCE:
        return linear_jvp(scatter_reduce_p, primals, tangents, axis=axis, reduce=reduce)
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
        z = zeros(tuple(np.shape(out)), aval_of(out).dtype)
        t = add_tangents(t, add_at(z, index, multiply(tsrc, d_src), axis))
    return out, t


def _scatter_reduce_transpose(ct: Cotangent, x: MaybeUndefined, index: Array,
                              src: MaybeUndefined, *, axis: int, reduce: str) -> list[Any]:
    if reduce not in LINEAR_REDUCE:
        raise ValueError(f"gradrules.scatter_reduce with reduce={reduce!r} is not linear")
    if reduce == "mean":   # out = (x + scattered src) / (1 + count)
        dtype = aval_of(ct).dtype
        count = add_at(full(tuple(np.shape(ct)), 1, dtype), index,
                       full(tuple(np.shape(index)), 1, dtype), axis)
        ct = divide(ct, count)
    return _scatter_add_transpose(ct, x, index, src, axis=axis, in_range=False)


register_rules(scatter_reduce_p, linear=("x", "src"), jvp=_scatter_reduce_jvp,
               transpose=_scatter_reduce_transpose,
               batch=partial(shifted_front_batch, scatter_reduce_p, ("axis",)))


# --------------------------------------------------------------- index_put
def _flat_index(indices: Sequence[Any], shape: tuple[Size, ...]) -> Any:
    """Row-major position in ``shape`` of the (clipped) multi-index, in a
    dtype that holds every position (at least ``position_dtype(prod(shape))``;
    sizes may be symbolic)."""
    effs = [effective_index(index, n) for index, n in zip(indices, shape)]
    dtype = np.result_type(position_dtype(math.prod(shape)),
                           *(aval_of(e).dtype for e in effs))
    flat = None
    for eff, n in zip(effs, shape):
        if aval_of(eff).dtype != dtype:
            eff = convert_element_type(eff, dtype=dtype)
        flat = eff if flat is None else add(multiply(flat, size_value(n, dtype)), eff)
    return flat


def _index_put_transpose(ct: Cotangent, x: MaybeUndefined, values: MaybeUndefined,
                         *indices: Array, accumulate: bool) -> list[Any]:
    dtype, shape = aval_of(ct).dtype, tuple(np.shape(ct))
    vshape = tuple(aval_of(values).shape)
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


def _index_put_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                     accumulate: bool) -> BatchResult:
    """The batch axis becomes one more indexed axis, indexed by arange(B)."""
    x, values, *indices = to_front(args, dims)
    ishape = tuple(np.shape(indices[0]))
    size = ishape[0]
    dtype = np.promote_types(position_dtype(size), index_dtype(aval_of(indices[0]).dtype))
    batch = broadcast_in_dim_p.bind(iota(dtype, size),
                                    shape=ishape, broadcast_dimensions=(0,))
    return index_put_p.bind(x, values, batch, *indices, accumulate=accumulate), 0


register_rules(index_put_p, linear=("x", "values"), jvp=partial(linear_jvp, index_put_p),
               transpose=_index_put_transpose, batch=_index_put_batch)


# ------------------------------------------------ set_value, slice_scatter
def take_slices(ct: Any, slices: tuple[tuple[Size, Size, int], ...]) -> Any:
    """``ct`` at the positions of ``slices`` (``(start, stop, step)`` per
    axis): one strided slice, taken on the reversed axis (a flip first)
    where the step is negative, from ``n - 1 - start`` to ``n - 1 - stop``;
    its size is then ``slice_count``'s very expression, symbolic sizes
    included."""
    rev = tuple(d for d, (_, _, step) in enumerate(slices) if step < 0)
    bounds = [(lo, hi, step) if step > 0 else (n - 1 - lo, n - 1 - hi, -step)
              for (lo, hi, step), n in zip(slices, aval_of(ct).shape)]
    ct = flip_p.bind(ct, axes=rev) if rev else ct
    return slice_p.bind(ct, start_indices=tuple(b[0] for b in bounds),
                        limit_indices=tuple(b[1] for b in bounds),
                        strides=tuple(b[2] for b in bounds))


def _slice_update_transpose(prim: Primitive, ct: Cotangent, x: MaybeUndefined,
                            value: MaybeUndefined, *,
                            slices: tuple[tuple[Size, Size, int], ...]) -> list[Any]:
    ct_x = ct_value = None
    if is_undefined_primal(x):
        vshape = tuple(aval_of(value).shape)
        ct_x = prim.bind(ct, zeros(vshape, aval_of(ct).dtype), slices=slices)
    if is_undefined_primal(value):
        ct_value = take_slices(ct, slices)
    return [ct_x, ct_value]


def _slice_update_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim], *,
                        slices: tuple[tuple[Size, Size, int], ...]) -> BatchResult:
    x, value = to_front(args, dims)
    return prim.bind(x, value, slices=((0, np.shape(x)[0], 1),) + slices), 0


register_rules(set_value_p, linear=("x", "value"), jvp=partial(linear_jvp, set_value_p),
               transpose=partial(_slice_update_transpose, set_value_p),
               batch=partial(_slice_update_batch, set_value_p))
register_rules(slice_scatter_p, linear=("x", "value"),
               jvp=partial(linear_jvp, slice_scatter_p),
               transpose=partial(_slice_update_transpose, slice_scatter_p),
               batch=partial(_slice_update_batch, slice_scatter_p))
