"""Slicing: slice, row_slice, select, dynamic_slice, dynamic_update_slice,
split.

All of them are linear in their array data. Their transposes are made of
slicing and layout primitives: slice -> pad (interior padding for strides),
select/row_slice -> pad, dynamic_slice <-> dynamic_update_slice, split ->
concatenate. Integer start indices (dynamic_slice) follow the jax.numpy
rule: negative ones count from the end, then the start is clipped so the
slice fits. Starts of a dtype narrower than int32 are widened to int32 first
(as index arrays are in the gather family), so ``start + n`` cannot wrap
around.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import int_param, int_tuple
from ..core.dims import Size, definitely_equal, definitely_in, definitely_le, strided_count
from ..core.meta import check_dtype, normalize_axis, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import convert_element_type, data_arg, index_arg, promote
from .gather import vmapped, wide_index
from .layout import concatenate, shaped_like
from .shape import reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "slicing"


# ------------------------------------------------------------------- slice
def _positive(op: str, arg: str, vals: Sequence[int]) -> None:
    if any(v < 1 for v in vals):
        raise ValueError(f"{op_name(op)}: {arg} must be positive (a step of 0 is "
                         f"not allowed), got {tuple(vals)}")


def slice_shape(start: Sequence[Size], limit: Sequence[Size], strides: Sequence[int]
                ) -> tuple[Size, ...]:
    """The shape of ``x[start:limit:strides]``: ``ceil((limit - start) /
    stride)`` per axis (``strided_count``; sizes may be symbolic)."""
    return tuple(strided_count(hi - lo, s) for lo, hi, s in zip(start, limit, strides))


def slice_fits(start: Sequence[Size], limit: Sequence[Size], shape: Sequence[Size]) -> bool:
    """``0 <= start <= limit <= shape`` on every axis, for every value of the
    symbolic sizes among them."""
    return all(definitely_in(0, lo, hi) and definitely_le(hi, n)
               for lo, hi, n in zip(start, limit, shape))


def _slice_infer_meta(x: Any, *, start_indices: tuple[Size, ...],
                      limit_indices: tuple[Size, ...], strides: tuple[int, ...]) -> ShapedArray:
    check_dtype("slice", "x", x.dtype, "any")
    ok = (len(start_indices) == len(limit_indices) == len(strides) == len(x.shape)
          and slice_fits(start_indices, limit_indices, x.shape) and all(s >= 1 for s in strides))
    if not ok:
        raise ValueError(f"{op_name('slice')}: start {start_indices}, limit {limit_indices} and "
                         f"strides {strides} do not slice x with shape {tuple(x.shape)}")
    return shaped_like(x, slice_shape(start_indices, limit_indices, strides))


slice_p = define_primitive("slice", family=FAMILY, operands=("x",),
                           params=("start_indices", "limit_indices", "strides"),
                           infer_meta=_slice_infer_meta, impl=lax.slice)


def slice(x: ArrayLike, *, start: Sequence[Size], limit: Sequence[Size],  # noqa: A001
          strides: Sequence[int] | None = None) -> Array:
    """``x[start[0]:limit[0]:strides[0], ...]`` with static bounds
    (``lax.slice``): ``0 <= start <= limit <= shape`` and positive strides.
    Under ``jax.export`` a bound may be symbolic (``x.shape[0]``,
    ``x.shape[0] - 2``) where those inequalities hold for every value of the
    symbolic sizes.

    Linear; the transpose pads the cotangent with zeros (``pad`` with
    interior padding ``stride - 1`` between the elements).
    """
    x = data_arg("slice", "x", x)
    nd = np.ndim(x)
    start = int_tuple("slice", "start", start, nd, symbolic=True)
    limit = int_tuple("slice", "limit", limit, nd, symbolic=True)
    strides = (1,) * nd if strides is None else int_tuple("slice", "strides", strides, nd)
    _positive("slice", "strides", strides)
    if not slice_fits(start, limit, np.shape(x)):
        raise ValueError(f"{op_name('slice')}: start {start} and limit {limit} must satisfy "
                         f"0 <= start <= limit <= shape {np.shape(x)}")
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides)


def _reference_slice(x: Array, *, start: Sequence[int], limit: Sequence[int],
                     strides: Sequence[int] | None = None) -> Array:
    return lax.slice(x, start, limit, strides)


register_op(OpDef(name="slice", family=FAMILY, fn=slice, primitives=(slice_p,),
                  reference=_reference_slice, operands=("x",), linear=(("x",),)))


# --------------------------------------------------------- row_slice, select
def _select_infer_meta(op: str, x: Any, *, axis: int, index: Size) -> ShapedArray:
    check_dtype(op, "x", x.dtype, "any")
    if not 0 <= axis < len(x.shape) or not definitely_in(0, index, x.shape[axis] - 1):
        raise ValueError(f"{op_name(op)}: index {index} along axis {axis} is out of "
                         f"range for x with shape {tuple(x.shape)}")
    return shaped_like(x, x.shape[:axis] + x.shape[axis + 1:])


def _select_impl(x: Array, *, axis: int, index: Size) -> Array:
    return lax.index_in_dim(x, index, axis, keepdims=False)


row_slice_p = define_primitive("row_slice", family=FAMILY, operands=("x",),
                               params=("axis", "index"),
                               infer_meta=partial(_select_infer_meta, "row_slice"),
                               impl=_select_impl)


def row_slice(x: ArrayLike, *, rows: Size, cols: Size, row_index: int) -> Array:
    """Row ``row_index`` of the ``[rows, cols]`` matrix x (the trainer's
    row_slice; leading batch axes are allowed): shape ``x.shape[:-2] + (cols,)``.
    Linear; the transpose puts the cotangent back in a zero matrix (a pad)."""
    x = data_arg("row_slice", "x", x)
    rows, cols = int_tuple("row_slice", "rows, cols", (rows, cols), symbolic=True)
    row_index = int_param("row_slice", "row_index", row_index)
    if np.ndim(x) < 2 or tuple(np.shape(x)[-2:]) != (rows, cols):
        raise ValueError(f"{op_name('row_slice')}: x with shape {np.shape(x)} is not a "
                         f"[rows={rows}, cols={cols}] matrix")
    if not definitely_in(0, row_index, rows - 1):
        raise ValueError(f"{op_name('row_slice')}: row_index={row_index} is out of range for "
                         f"{rows} rows")
    return row_slice_p.bind(x, axis=np.ndim(x) - 2, index=row_index)


def _reference_row_slice(x: Array, *, rows: Size, cols: Size, row_index: int) -> Array:
    return x[..., row_index, :]


register_op(OpDef(name="row_slice", family=FAMILY, fn=row_slice, primitives=(row_slice_p,),
                  reference=_reference_row_slice, operands=("x",), linear=(("x",),)))


select_p = define_primitive("select", family=FAMILY, operands=("x",), params=("axis", "index"),
                            infer_meta=partial(_select_infer_meta, "select"), impl=_select_impl)


def select(x: ArrayLike, *, axis: int, index: int) -> Array:
    """``x[..., index, ...]`` at ``axis``, which is removed (aten.select.int).
    ``index`` is a static int; negative counts from the end, out of range is
    an error. Linear; the transpose pads the cotangent back with zeros."""
    x = data_arg("select", "x", x)
    axis = normalize_axis("select", axis, np.ndim(x))
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('select')}: x must have at least one axis")
    n = np.shape(x)[axis]
    given = int_param("select", "index", index)
    index = given + n if given < 0 else given       # n - 1 for -1, symbolic n too
    if not definitely_in(0, index, n - 1):
        raise ValueError(f"{op_name('select')}: index={given} is out of range for axis {axis} "
                         f"of x with shape {np.shape(x)}")
    return select_p.bind(x, axis=axis, index=index)


def _reference_select(x: Array, *, axis: int, index: int) -> Array:
    return jnp.take(x, index, axis=axis)


register_op(OpDef(name="select", family=FAMILY, fn=select, primitives=(select_p,),
                  reference=_reference_select, operands=("x",), linear=(("x",),)))


# ------------------------------------------ dynamic_slice / dynamic_update_slice
def _check_starts(op: str, x: Any, starts: Any, batch_dims: int) -> None:
    check_dtype(op, "start_indices", starts.dtype, "int")
    want = tuple(x.shape[:batch_dims]) + (len(x.shape) - batch_dims,)
    if tuple(starts.shape) != want:
        raise ValueError(f"{op_name(op)}: start_indices must have shape {want} (one start "
                         f"per axis of x with shape {tuple(x.shape)}), got {tuple(starts.shape)}")


def _sizes_fit(sizes: Sequence[Size], shape: Sequence[Size]) -> bool:
    """``0 <= sizes <= shape`` on every axis, for every value of the
    symbolic sizes among them: a block of ``sizes`` fits in ``shape``."""
    return all(definitely_in(0, s, n) for s, n in zip(sizes, shape))


def _dynamic_slice_infer_meta(x: Any, starts: Any, *, slice_sizes: tuple[Size, ...],
                              batch_dims: int) -> ShapedArray:
    check_dtype("dynamic_slice", "x", x.dtype, "any")
    _check_starts("dynamic_slice", x, starts, batch_dims)
    inner = x.shape[batch_dims:]
    if len(slice_sizes) != len(inner) or not _sizes_fit(slice_sizes, inner):
        raise ValueError(f"{op_name('dynamic_slice')}: slice_sizes {slice_sizes} do not fit x "
                         f"with shape {tuple(inner)}")
    return shaped_like(x, x.shape[:batch_dims] + slice_sizes)


def _starts_list(starts: Array, shape: Sequence[int]) -> list[Array]:
    """One start per axis, in the index dtype wide enough for ``start + n``:
    lax counts a negative one from the end (``allow_negative_indices``), then
    clips."""
    starts = wide_index(starts)
    return [starts[i] for i in range(len(shape))]


def _dynamic_slice_impl(x: Array, starts: Array, *, slice_sizes: tuple[Size, ...],
                        batch_dims: int) -> Array:
    def one(x: Array, starts: Array) -> Array:
        return lax.dynamic_slice(x, _starts_list(starts, x.shape), slice_sizes)
    return vmapped(one, batch_dims)(x, starts)


dynamic_slice_p = define_primitive("dynamic_slice", family=FAMILY, operands=("x", "start_indices"),
                                   params=("slice_sizes", "batch_dims"),
                                   infer_meta=_dynamic_slice_infer_meta, impl=_dynamic_slice_impl)


def _start_indices(op: str, starts: Any, nd: int) -> Any:
    """``start_indices`` as one int array of shape ``(nd,)``: a 1-D integer
    array as is, or a sequence of ints / integer scalars, stacked."""
    if isinstance(starts, (list, tuple)):
        if len(starts) != nd:
            raise ValueError(f"{op_name(op)}: start_indices needs {nd} entries (one per axis "
                             f"of x), got {len(starts)}")
        if all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in starts):
            return np.asarray(starts, dtype=np.int32)
        vals = [index_arg(op, "start_indices", s) for s in starts]
        if any(np.ndim(v) != 0 for v in vals):
            raise ValueError(f"{op_name(op)}: start_indices must hold scalars")
        dtype = jnp.result_type(*vals)
        return concatenate([reshape(v if jnp.result_type(v) == dtype else
                                    convert_element_type(v, dtype=dtype), (1,)) for v in vals])
    starts = index_arg(op, "start_indices", starts)
    if np.shape(starts) != (nd,):
        raise ValueError(f"{op_name(op)}: start_indices must have shape ({nd},), got "
                         f"{np.shape(starts)}")
    return starts


def dynamic_slice(x: ArrayLike, start_indices: Any, *, slice_sizes: Sequence[Size]) -> Array:
    """``lax.dynamic_slice``: the block of static shape ``slice_sizes`` that
    starts at the traced integer ``start_indices`` (a 1-D int array with one
    entry per axis, or a sequence of int scalars). A negative start counts
    from the end; then the start is clipped so the block fits. A size may be
    symbolic (``jax.export``) where it provably fits.

    Linear in x; ``start_indices`` takes no tangent. The transpose is
    ``dynamic_update_slice`` of the cotangent into zeros.
    """
    x = data_arg("dynamic_slice", "x", x)
    starts = _start_indices("dynamic_slice", start_indices, np.ndim(x))
    sizes = int_tuple("dynamic_slice", "slice_sizes", slice_sizes, np.ndim(x), symbolic=True)
    if not _sizes_fit(sizes, np.shape(x)):
        raise ValueError(f"{op_name('dynamic_slice')}: slice_sizes {sizes} must lie in "
                         f"[0, shape] for x with shape {np.shape(x)}")
    return dynamic_slice_p.bind(x, starts, slice_sizes=sizes, batch_dims=0)


def _reference_dynamic_slice(x: Array, start_indices: Any, *, slice_sizes: Sequence[Size]
                             ) -> Array:
    return lax.dynamic_slice(x, list(start_indices), slice_sizes)


register_op(OpDef(name="dynamic_slice", family=FAMILY, fn=dynamic_slice,
                  primitives=(dynamic_slice_p,), reference=_reference_dynamic_slice,
                  operands=("x", "start_indices"), linear=(("x",),),
                  nondiff=("start_indices",)))


def _dynamic_update_slice_infer_meta(x: Any, update: Any, starts: Any, *,
                                     batch_dims: int) -> ShapedArray:
    dtype = same_dtype("dynamic_update_slice", {"x": x, "update": update})
    check_dtype("dynamic_update_slice", "x", dtype, "any")
    _check_starts("dynamic_update_slice", x, starts, batch_dims)
    if (len(update.shape) != len(x.shape) or update.shape[:batch_dims] != x.shape[:batch_dims]
            or not _sizes_fit(update.shape, x.shape)):
        raise ValueError(f"{op_name('dynamic_update_slice')}: update with shape "
                         f"{tuple(update.shape)} does not fit in x with shape {tuple(x.shape)}")
    return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type)


def _dynamic_update_slice_impl(x: Array, update: Array, starts: Array, *,
                               batch_dims: int) -> Array:
    def one(x: Array, update: Array, starts: Array) -> Array:
        return lax.dynamic_update_slice(x, update, _starts_list(starts, x.shape))
    return vmapped(one, batch_dims)(x, update, starts)


dynamic_update_slice_p = define_primitive(
    "dynamic_update_slice", family=FAMILY, operands=("x", "update", "start_indices"),
    params=("batch_dims",), infer_meta=_dynamic_update_slice_infer_meta,
    impl=_dynamic_update_slice_impl)


def dynamic_update_slice(x: ArrayLike, update: ArrayLike, start_indices: Any) -> Array:
    """``lax.dynamic_update_slice``: x with the block ``update`` written at the
    traced ``start_indices`` (same rule as ``dynamic_slice``: negative starts
    count from the end, then clip so the block fits).

    Linear in (x, update): the transpose sends the cotangent with the block
    zeroed to x and ``dynamic_slice`` of it to update.
    """
    x, update = promote("dynamic_update_slice", {"x": x, "update": update}, "any")
    starts = _start_indices("dynamic_update_slice", start_indices, np.ndim(x))
    if np.ndim(update) != np.ndim(x) or not _sizes_fit(np.shape(update), np.shape(x)):
        raise ValueError(f"{op_name('dynamic_update_slice')}: update with shape "
                         f"{np.shape(update)} does not fit in x with shape {np.shape(x)}")
    return dynamic_update_slice_p.bind(x, update, starts, batch_dims=0)


def _reference_dynamic_update_slice(x: Array, update: Array, start_indices: Any) -> Array:
    return lax.dynamic_update_slice(x, update, list(start_indices))


register_op(OpDef(name="dynamic_update_slice", family=FAMILY, fn=dynamic_update_slice,
                  primitives=(dynamic_update_slice_p,),
                  reference=_reference_dynamic_update_slice,
                  operands=("x", "update", "start_indices"),
                  linear=(("x", "update"),), nondiff=("start_indices",)))


# ------------------------------------------------------------------- split
def _split_infer_meta(x: Any, *, sizes: tuple[Size, ...], axis: int) -> list[ShapedArray]:
    check_dtype("split", "x", x.dtype, "any")
    if (not 0 <= axis < len(x.shape) or not definitely_equal(builtins.sum(sizes), x.shape[axis])
            or not all(definitely_le(0, s) for s in sizes)):
        raise ValueError(f"{op_name('split')}: sizes {sizes} do not add up to axis {axis} of "
                         f"x with shape {tuple(x.shape)}")
    return [shaped_like(x, x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


def _split_impl(x: Array, *, sizes: tuple[Size, ...], axis: int) -> list[Array]:
    bounds = tuple(itertools.accumulate(sizes, initial=0))
    return [lax.slice_in_dim(x, lo, hi, axis=axis) for lo, hi in zip(bounds, bounds[1:])]


split_p = define_primitive("split", family=FAMILY, operands=("x",), params=("sizes", "axis"),
                           infer_meta=_split_infer_meta, impl=_split_impl,
                           multiple_results=True)


def split(x: ArrayLike, *, indices_or_sections: int | Sequence[Size], axis: int = 0
          ) -> tuple[Array, ...]:
    """``jnp.split``: ``indices_or_sections`` is a number of equal sections
    (which must divide the axis) or the increasing split points in
    ``[0, n]``; piece i has ``points[i] - points[i - 1]`` entries (with
    ``points[-1] = 0`` and ``n`` appended). Under ``jax.export`` the axis and
    the points may be symbolic where the sections provably divide it or the
    points provably increase. Returns a tuple. Linear; the transpose
    concatenates the cotangents (zeros for the unused pieces)."""
    x = data_arg("split", "x", x)
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('split')}: cannot split a scalar")
    axis = normalize_axis("split", axis, np.ndim(x))
    n = np.shape(x)[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
            indices_or_sections, bool):
        k = int_param("split", "indices_or_sections", indices_or_sections, lo=1)
        if not definitely_equal(n % k, 0):
            raise ValueError(f"{op_name('split')}: indices_or_sections={k} sections do not "
                             f"divide axis {axis} of x with shape {np.shape(x)} equally")
        sizes = (n // k,) * k
    else:
        points = int_tuple("split", "indices_or_sections", indices_or_sections, symbolic=True)
        bounds = (0,) + points + (n,)
        sizes = tuple(hi - lo for lo, hi in zip(bounds, bounds[1:]))
        if not all(definitely_le(0, s) for s in sizes):
            raise ValueError(f"{op_name('split')}: split points indices_or_sections="
                             f"{points} must be increasing and within [0, {n}] (axis {axis} "
                             f"of x with shape {np.shape(x)})")
    return tuple(split_p.bind(x, sizes=sizes, axis=axis))


def _reference_split(x: Array, *, indices_or_sections: Any, axis: int = 0) -> tuple[Array, ...]:
    return tuple(jnp.split(x, indices_or_sections, axis=axis))


register_op(OpDef(name="split", family=FAMILY, fn=split, primitives=(split_p,),
                  reference=_reference_split, operands=("x",), linear=(("x",),)))
