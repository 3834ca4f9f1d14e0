"""Sorting and selection: sort, argsort, topk, argmax, argmin, nonzero.

Index outputs have the default integer dtype of jax.numpy (int64 with x64
enabled, else int32), carried as the ``index_dtype`` param. Ties are broken
by position: the sorts are stable (equal elements keep their order, also when
``descending``), topk takes the lower index first and argmax / argmin return
the first occurrence.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import Primitive, ShapedArray
from ..core.args import int_param, int_tuple
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import data_arg
from .gather import IN_RANGE
from .reduction import reduced_shape, reduction_args, reduction_meta
from .scan import axis_args, check_axis_meta

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "sort"


def default_index_dtype() -> np.dtype:
    """jax.numpy's default integer dtype (int64 under x64, else int32)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.int64))


def _axis_meta(op: str, x: Any, axis: int, length: int | None = None
               ) -> tuple[tuple[int, ...], Any]:
    check_dtype(op, "x", x.dtype, "numeric")
    check_axis_meta(op, x.shape, axis)
    shape = tuple(x.shape)
    if length is not None:
        shape = shape[:axis] + (length,) + shape[axis + 1:]
    return shape, x.weak_type


# ------------------------------------------------------------------- sort
def _sort_infer_meta(x: Any, *, axis: int, descending: bool, index_dtype: np.dtype
                     ) -> tuple[ShapedArray, ShapedArray]:
    shape, weak = _axis_meta("sort", x, axis)
    return ShapedArray(shape, x.dtype, weak_type=weak), ShapedArray(shape, index_dtype)


def _sort_impl(x: Array, *, axis: int, descending: bool, index_dtype: np.dtype
               ) -> list[Array]:
    """One stable key-value sort of (x, iota): the sorted keys are the
    values. Descending: x and iota reversed, sorted, reversed back, so equal
    elements keep their order (as jnp.argsort)."""
    iota = lax.broadcasted_iota(index_dtype, x.shape, axis, out_sharding=jax.typeof(x).sharding)
    if descending:
        x, iota = lax.rev(x, (axis,)), lax.rev(iota, (axis,))
    values, idx = lax.sort_key_val(x, iota, dimension=axis, is_stable=True)
    if descending:
        values, idx = lax.rev(values, (axis,)), lax.rev(idx, (axis,))
    return [values, idx]


def _argsort_impl(x: Array, **params: Any) -> Array:
    return _sort_impl(x, **params)[1]


_SORT_PARAMS = ("axis", "descending", "index_dtype")
sort_p = define_primitive("sort", family=FAMILY, operands=("x",), params=_SORT_PARAMS,
                          infer_meta=_sort_infer_meta, impl=_sort_impl, multiple_results=True)


def _sort_args(op: str, x: Any, axis: Any, descending: Any) -> tuple[Any, dict]:
    x, axis = axis_args(op, x, axis, "numeric", descending=descending)
    return x, {"axis": axis, "descending": descending, "index_dtype": default_index_dtype()}


def sort(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> tuple[Array, Array]:
    """``(values, indices)`` (``jnp.sort`` returns the values alone; torch's
    sort both): x sorted along ``axis`` (ascending, or
    descending) and the positions the values come from, so that
    ``values = take_along_axis(x, indices, axis)``. Stable: equal elements
    keep their order. NaNs sort last.

    The tangent of the values is the tangent of x gathered with the indices
    (``take_along_axis``), so a gradient goes to the element each value was
    selected from, ties included; the indices take none.
    """
    x, params = _sort_args("sort", x, axis, descending)
    values, indices = sort_p.bind(x, **params)
    return values, indices


def _sort_reference(x: ArrayLike, *, axis: int = -1, descending: bool = False
                    ) -> tuple[Array, Array]:
    return (jnp.sort(x, axis=axis, stable=True, descending=descending),
            jnp.argsort(x, axis=axis, stable=True, descending=descending))


register_op(OpDef(name="sort", family=FAMILY, fn=sort, primitives=(sort_p,),
                  reference=_sort_reference, operands=("x",)))


# ---------------------------------------------------------------- argsort
def _argsort_infer_meta(x: Any, *, axis: int, descending: bool, index_dtype: np.dtype
                        ) -> ShapedArray:
    shape, _ = _axis_meta("argsort", x, axis)
    return ShapedArray(shape, index_dtype)


argsort_p = define_primitive("argsort", family=FAMILY, operands=("x",), params=_SORT_PARAMS,
                             infer_meta=_argsort_infer_meta, impl=_argsort_impl)


def argsort(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> Array:
    """The indices that sort x along ``axis`` (stable), the second output of
    ``sort``. Not differentiable (integer output)."""
    x, params = _sort_args("argsort", x, axis, descending)
    return argsort_p.bind(x, **params)


def _argsort_reference(x: ArrayLike, *, axis: int = -1, descending: bool = False) -> Array:
    return jnp.argsort(x, axis=axis, stable=True, descending=descending)


register_op(OpDef(name="argsort", family=FAMILY, fn=argsort, primitives=(argsort_p,),
                  reference=_argsort_reference, operands=("x",)))


# ------------------------------------------------------------------- topk
def _topk_infer_meta(x: Any, *, k: int, axis: int, largest: bool, index_dtype: np.dtype
                     ) -> tuple[ShapedArray, ShapedArray]:
    shape, weak = _axis_meta("topk", x, axis, k)
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"{op_name('topk')}: k={k} is out of range for axis {axis} of x "
                         f"with shape {tuple(x.shape)}")
    return ShapedArray(shape, x.dtype, weak_type=weak), ShapedArray(shape, index_dtype)


def _ascending_key(x: Array) -> Array:
    """A key whose descending order is x's ascending order as the stable
    sort takes it: ``~x`` for integers (exact, no overflow at the minimum);
    for floats ``0 - x``, which makes both zeros +0 (they tie, as in the
    sort; ``-x`` would keep them apart: ``lax.top_k`` orders floats by their
    bits, -0 < +0 and -NaN < -inf), with every NaN the least key, -NaN
    (NaNs sort last)."""
    if jnp.issubdtype(x.dtype, jnp.integer):
        return lax.bitwise_not(x)
    return jnp.where(jnp.isnan(x), jnp.asarray(-jnp.nan, x.dtype), 0 - x)


def _topk_impl(x: Array, *, k: int, axis: int, largest: bool, index_dtype: np.dtype
               ) -> list[Array]:
    """``lax.top_k`` along ``axis``: largest, its pair (the values never
    gathered again); smallest, the top k of ``_ascending_key(x)`` (not a full
    sort: 75x faster at [646, 1615], k = 3) and x gathered at those
    indices, in ``[0, n)`` by construction (``IN_RANGE``: no clamp)."""
    if largest:
        values, idx = lax.top_k(x, k, axis=axis)
        return [values, idx.astype(index_dtype)]
    _, idx = lax.top_k(_ascending_key(x), k, axis=axis)
    return [jnp.take_along_axis(x, idx, axis=axis, **IN_RANGE), idx.astype(index_dtype)]


topk_p = define_primitive("topk", family=FAMILY, operands=("x",),
                          params=("k", "axis", "largest", "index_dtype"),
                          infer_meta=_topk_infer_meta, impl=_topk_impl, multiple_results=True)


def topk(x: ArrayLike, *, k: int, axis: int = -1, largest: bool = True
         ) -> tuple[Array, Array]:
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest)
    elements along ``axis``, sorted, ties taking the lower index first;
    ``0 <= k <= x.shape[axis]`` (``lax.top_k``'s pair, on any axis).

    The tangent of the values is the tangent of x gathered with the indices
    (``take_along_axis``): the gradient goes to the selected elements only.
    """
    x, axis = axis_args("topk", x, axis, "numeric", largest=largest)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{op_name('topk')}: k must be an int, got {k!r}")
    n = np.shape(x)[axis]
    if not 0 <= k <= n:
        raise ValueError(f"{op_name('topk')}: k={k} must be in [0, {n}], the size of axis "
                         f"{axis} of x with shape {np.shape(x)}")
    values, indices = topk_p.bind(x, k=int(k), axis=axis, largest=largest,
                                  index_dtype=default_index_dtype())
    return values, indices


def _topk_reference(x: ArrayLike, *, k: int, axis: int = -1, largest: bool = True
                    ) -> tuple[Array, Array]:
    xt = jnp.moveaxis(jnp.asarray(x), axis, -1)
    values, idx = lax.top_k(xt if largest else -xt, k)
    values = values if largest else -values
    idx = idx.astype(default_index_dtype())   # lax.top_k's are int32 (module docstring)
    return jnp.moveaxis(values, -1, axis), jnp.moveaxis(idx, -1, axis)


register_op(OpDef(name="topk", family=FAMILY, fn=topk, primitives=(topk_p,),
                  reference=_topk_reference, operands=("x",)))


# ------------------------------------------------------------ argmax / argmin
def _arg_extremum_impl(fn: Any, x: Array, *, axes: tuple[int, ...], keepdims: bool,
                       index_dtype: np.dtype) -> Array:
    """``fn`` (jnp.argmax or jnp.argmin) over the reduced axes, moved last and
    merged: the flat (row-major) index over them."""
    kept = [i for i in range(x.ndim) if i not in axes]
    merged = math.prod(x.shape[i] for i in axes)    # not -1: a kept axis may be empty
    xt = jnp.transpose(x, kept + list(axes)).reshape([x.shape[i] for i in kept] + [merged])
    idx = fn(xt, axis=-1).astype(index_dtype)
    return idx.reshape(reduced_shape(x.shape, axes, keepdims))


def _arg_extremum(prim: Primitive, x: Any, axis: Any, keepdims: bool) -> Array:
    op = prim.name
    if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
        raise TypeError(f"{op_name(op)}: axis must be None or an int, got {axis!r}")
    x, params = reduction_args(op, x, axis, keepdims, "numeric")
    return prim.bind(x, **params, index_dtype=default_index_dtype())


def _arg_reference(fn: Any, x: ArrayLike, *, axis: int | None = None, keepdims: bool = False
                   ) -> Array:
    """The reference: ``fn`` (jnp.argmax or jnp.argmin) itself."""
    return fn(x, axis=axis, keepdims=keepdims)


def _arg_extremum_primitive(name: str, fn: Any) -> Primitive:
    """The primitive of argmax / argmin (``fn``): a reduction over ``axes``
    to ``index_dtype``, with no identity (a size-0 axis is an error)."""
    return define_primitive(
        name, family=FAMILY, operands=("x",), params=("axes", "keepdims", "index_dtype"),
        infer_meta=reduction_meta(name, "numeric", dtype_param="index_dtype", nonempty=True),
        impl=partial(_arg_extremum_impl, fn))


argmax_p = _arg_extremum_primitive("argmax", jnp.argmax)


def argmax(x: ArrayLike, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Index of the maximum along ``axis`` (of the flattened array when
    ``axis`` is None), the first one among ties. Not differentiable."""
    return _arg_extremum(argmax_p, x, axis, keepdims)


register_op(OpDef(name="argmax", family=FAMILY, fn=argmax, primitives=(argmax_p,),
                  reference=partial(_arg_reference, jnp.argmax), operands=("x",)))


argmin_p = _arg_extremum_primitive("argmin", jnp.argmin)


def argmin(x: ArrayLike, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Index of the minimum along ``axis`` (of the flattened array when
    ``axis`` is None), the first one among ties. Not differentiable."""
    return _arg_extremum(argmin_p, x, axis, keepdims)


register_op(OpDef(name="argmin", family=FAMILY, fn=argmin, primitives=(argmin_p,),
                  reference=partial(_arg_reference, jnp.argmin), operands=("x",)))


# ---------------------------------------------------------------- nonzero
def _nonzero_infer_meta(x: Any, *, size: int, fill_value: tuple[int, ...], batch_dims: int,
                        index_dtype: np.dtype) -> list[ShapedArray]:
    """One ``index_dtype[*B, size]`` per axis of x after its ``batch_dims``
    leading axes B (each slice x[b] has its own indices)."""
    check_dtype("nonzero", "x", x.dtype, "any")
    ndim = len(x.shape) - batch_dims
    if ndim < 1:
        raise ValueError(f"{op_name('nonzero')}: x must have at least one axis, got shape "
                         f"{tuple(x.shape)}")
    if len(fill_value) != ndim:
        raise ValueError(f"{op_name('nonzero')}: fill_value {fill_value} must have one entry "
                         f"per axis of x with shape {tuple(x.shape[batch_dims:])}")
    shape = tuple(x.shape[:batch_dims]) + (size,)
    return [ShapedArray(shape, index_dtype) for _ in range(ndim)]


def _nonzero_one(x: Array, *, size: int, fill_value: tuple[int, ...], index_dtype: np.dtype
                 ) -> list[Array]:
    return [i.astype(index_dtype) for i in jnp.nonzero(x, size=size, fill_value=fill_value)]


def _nonzero_impl(x: Array, *, size: int, fill_value: tuple[int, ...], batch_dims: int,
                  index_dtype: np.dtype) -> list[Array]:
    """jnp.nonzero, mapped over the ``batch_dims`` leading axes."""
    fn: Any = partial(_nonzero_one, size=size, fill_value=fill_value, index_dtype=index_dtype)
    for _ in range(batch_dims):
        fn = jax.vmap(fn)
    return list(fn(x))


nonzero_p = define_primitive("nonzero", family=FAMILY, operands=("x",),
                             params=("size", "fill_value", "batch_dims", "index_dtype"),
                             infer_meta=_nonzero_infer_meta, impl=_nonzero_impl,
                             multiple_results=True)


def nonzero(x: ArrayLike, *, size: int | None = None, fill_value: int | tuple[int, ...] = 0
            ) -> tuple[Array, ...]:
    """The indices of the nonzero (True) entries of x, one array per axis, in
    row-major order, as ``jnp.nonzero(x, size=size, fill_value=fill_value)``:
    ``size`` (a static int, required: the output shape cannot depend on the
    values) indices per axis, the first ``size`` of them when there are more,
    padded with ``fill_value`` (an int, or one per axis) when there are
    fewer. x has at least one axis. Not differentiable (integer outputs).

    The primitive's ``batch_dims`` param (0 here) counts leading axes of x
    over which it maps, each slice with its own indices: that is how vmap
    binds it once.
    """
    op = "nonzero"
    x = data_arg(op, "x", x)
    ndim = np.ndim(x)
    if ndim == 0:
        raise ValueError(f"{op_name(op)}: x must have at least one axis (as jnp.nonzero), "
                         "got a scalar")
    if size is None:
        raise TypeError(f"{op_name(op)}: size is required: a static int, the number of "
                        "indices per axis (the output shape cannot depend on the values)")
    size = int_param(op, "size", size, lo=0)
    fill = ((int_param(op, "fill_value", fill_value),) * ndim
            if isinstance(fill_value, (int, np.integer))
            else int_tuple(op, "fill_value", fill_value, ndim))
    out = nonzero_p.bind(x, size=size, fill_value=fill, batch_dims=0,
                         index_dtype=default_index_dtype())
    return tuple(out)


def _nonzero_reference(x: ArrayLike, *, size: int, fill_value: Any = 0) -> tuple[Array, ...]:
    return jnp.nonzero(x, size=size, fill_value=fill_value)


register_op(OpDef(name="nonzero", family=FAMILY, fn=nonzero, primitives=(nonzero_p,),
                  reference=_nonzero_reference, operands=("x",)))
