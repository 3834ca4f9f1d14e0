"""Layout: slice, row_slice, select, dynamic_slice, dynamic_update_slice,
concatenate, split, pad, tile, repeat, flip, tensor_unfold (and tensor_fold,
its transpose).

All of them are linear in their array data. Their transposes are layout
primitives too: slice <-> pad, select/row_slice -> pad, dynamic_slice <->
dynamic_update_slice, concatenate <-> split, flip -> flip, tile -> a sum over
the tiles, repeat -> a sum over the copies, tensor_unfold <-> tensor_fold.
Integer start indices (dynamic_slice) follow the jax.numpy rule: negative
ones count from the end, then the start is clipped so the slice fits. Starts
of a dtype narrower than int32 are widened to int32 first (as index arrays
are in the indexing family), so ``start + n`` cannot wrap around.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.meta import (check_dtype, int_tuple, normalize_axes, normalize_axis, op_name,
                         same_dtype)
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._elementwise import as_array, promote
from .indexing import data_arg, index_arg, vmapped, wide_index

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "layout"


# ------------------------------------------------------------------ helpers
def _aval(x: Any, shape: Sequence[int]) -> ShapedArray:
    return ShapedArray(tuple(int(d) for d in shape), x.dtype, weak_type=x.weak_type)


def _nonnegative(op: str, arg: str, vals: Sequence[int]) -> None:
    if any(v < 0 for v in vals):
        raise ValueError(f"{op_name(op)}: {arg} must not be negative, got {tuple(vals)}")


def _positive(op: str, arg: str, vals: Sequence[int]) -> None:
    if any(v < 1 for v in vals):
        raise ValueError(f"{op_name(op)}: {arg} must be positive (a step of 0 is "
                         f"not allowed), got {tuple(vals)}")


# ------------------------------------------------------------------- slice
def slice_shape(start: Sequence[int], limit: Sequence[int], strides: Sequence[int]
                ) -> tuple[int, ...]:
    return tuple(max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides))


def _slice_infer_meta(x: Any, *, start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                      strides: tuple[int, ...]) -> ShapedArray:
    check_dtype("slice", "x", x.dtype, "any")
    ok = (len(start_indices) == len(limit_indices) == len(strides) == len(x.shape)
          and all(0 <= lo <= hi <= n for lo, hi, n in zip(start_indices, limit_indices, x.shape))
          and all(s >= 1 for s in strides))
    if not ok:
        raise ValueError(f"{op_name('slice')}: start {start_indices}, limit {limit_indices} and "
                         f"strides {strides} do not slice x with shape {tuple(x.shape)}")
    return _aval(x, slice_shape(start_indices, limit_indices, strides))


slice_p = define_primitive("slice", family=FAMILY, operands=("x",),
                           params=("start_indices", "limit_indices", "strides"),
                           infer_meta=_slice_infer_meta, impl=lax.slice)


def slice(x: ArrayLike, *, start: Sequence[int], limit: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None) -> Array:
    """``x[start[0]:limit[0]:strides[0], ...]`` with static bounds
    (``lax.slice``): ``0 <= start <= limit <= shape`` and positive strides.

    Linear; the transpose pads the cotangent with zeros (``pad`` with
    interior padding ``stride - 1`` between the elements).
    """
    x = data_arg("slice", "x", x)
    nd = np.ndim(x)
    start = int_tuple("slice", "start", start, nd)
    limit = int_tuple("slice", "limit", limit, nd)
    strides = (1,) * nd if strides is None else int_tuple("slice", "strides", strides, nd)
    _positive("slice", "strides", strides)
    if not all(0 <= lo <= hi <= n for lo, hi, n in zip(start, limit, np.shape(x))):
        raise ValueError(f"{op_name('slice')}: start {start} and limit {limit} must satisfy "
                         f"0 <= start <= limit <= shape {np.shape(x)}")
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides)


# --------------------------------------------------------- select, row_slice
def _select_meta(op: str) -> Any:
    def infer_meta(x: Any, *, axis: int, index: int) -> ShapedArray:
        check_dtype(op, "x", x.dtype, "any")
        if not 0 <= axis < len(x.shape) or not 0 <= index < x.shape[axis]:
            raise ValueError(f"{op_name(op)}: index {index} along axis {axis} is out of "
                             f"range for x with shape {tuple(x.shape)}")
        return _aval(x, x.shape[:axis] + x.shape[axis + 1:])
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def _select_impl(x: Array, *, axis: int, index: int) -> Array:
    return lax.index_in_dim(x, index, axis, keepdims=False)


select_p = define_primitive("select", family=FAMILY, operands=("x",), params=("axis", "index"),
                            infer_meta=_select_meta("select"), impl=_select_impl)
row_slice_p = define_primitive("row_slice", family=FAMILY, operands=("x",),
                               params=("axis", "index"), infer_meta=_select_meta("row_slice"),
                               impl=_select_impl)


def select(x: ArrayLike, *, axis: int, index: int) -> Array:
    """``x[..., index, ...]`` at ``axis``, which is removed (aten.select.int).
    ``index`` is a static int; negative counts from the end, out of range is
    an error. Linear; the transpose pads the cotangent back with zeros."""
    x = data_arg("select", "x", x)
    axis = normalize_axis("select", axis, np.ndim(x))
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('select')}: x must have at least one axis")
    index = normalize_axis("select", index, np.shape(x)[axis], "index")
    return select_p.bind(x, axis=axis, index=index)


def row_slice(x: ArrayLike, *, rows: int, cols: int, row_index: int) -> Array:
    """Row ``row_index`` of the ``[rows, cols]`` matrix x (the trainer's
    row_slice; leading batch axes are allowed): shape ``x.shape[:-2] + (cols,)``.
    Linear; the transpose puts the cotangent back in a zero matrix (a pad)."""
    x = data_arg("row_slice", "x", x)
    rows, cols, row_index = int_tuple("row_slice", "rows, cols, row_index",
                                      (rows, cols, row_index))
    if np.ndim(x) < 2 or tuple(np.shape(x)[-2:]) != (rows, cols):
        raise ValueError(f"{op_name('row_slice')}: x with shape {np.shape(x)} is not a "
                         f"[rows={rows}, cols={cols}] matrix")
    if not 0 <= row_index < rows:
        raise ValueError(f"{op_name('row_slice')}: row_index={row_index} is out of range for "
                         f"{rows} rows")
    return row_slice_p.bind(x, axis=np.ndim(x) - 2, index=row_index)


# ------------------------------------------ dynamic_slice / dynamic_update_slice
def _check_starts(op: str, x: Any, starts: Any, batch_dims: int) -> None:
    check_dtype(op, "start_indices", starts.dtype, "int")
    want = tuple(x.shape[:batch_dims]) + (len(x.shape) - batch_dims,)
    if tuple(starts.shape) != want:
        raise ValueError(f"{op_name(op)}: start_indices must have shape {want} (one start "
                         f"per axis of x with shape {tuple(x.shape)}), got {tuple(starts.shape)}")


def _dynamic_slice_infer_meta(x: Any, starts: Any, *, slice_sizes: tuple[int, ...],
                              batch_dims: int) -> ShapedArray:
    check_dtype("dynamic_slice", "x", x.dtype, "any")
    _check_starts("dynamic_slice", x, starts, batch_dims)
    inner = x.shape[batch_dims:]
    if len(slice_sizes) != len(inner) or any(not 0 <= s <= n for s, n in zip(slice_sizes, inner)):
        raise ValueError(f"{op_name('dynamic_slice')}: slice_sizes {slice_sizes} do not fit x "
                         f"with shape {tuple(inner)}")
    return _aval(x, x.shape[:batch_dims] + slice_sizes)


def _starts_list(starts: Array, shape: Sequence[int]) -> list[Array]:
    """One start per axis, negative ones counted from the end (lax clips)."""
    starts = wide_index(starts)
    return [jnp.where(starts[i] < 0, starts[i] + n, starts[i]) for i, n in enumerate(shape)]


def _dynamic_slice_impl(x: Array, starts: Array, *, slice_sizes: tuple[int, ...],
                        batch_dims: int) -> Array:
    def one(x: Array, starts: Array) -> Array:
        return lax.dynamic_slice(x, _starts_list(starts, x.shape), slice_sizes)
    return vmapped(one, batch_dims)(x, starts)


dynamic_slice_p = define_primitive("dynamic_slice", family=FAMILY, operands=("x", "start_indices"),
                                   params=("slice_sizes", "batch_dims"),
                                   infer_meta=_dynamic_slice_infer_meta, impl=_dynamic_slice_impl)


def _dynamic_update_slice_infer_meta(x: Any, update: Any, starts: Any, *,
                                     batch_dims: int) -> ShapedArray:
    dtype = same_dtype("dynamic_update_slice", {"x": x, "update": update})
    check_dtype("dynamic_update_slice", "x", dtype, "any")
    _check_starts("dynamic_update_slice", x, starts, batch_dims)
    if (len(update.shape) != len(x.shape) or update.shape[:batch_dims] != x.shape[:batch_dims]
            or any(u > n for u, n in zip(update.shape, x.shape))):
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


def _start_indices(op: str, starts: Any, nd: int) -> Any:
    """``start_indices`` as one int array of shape ``(nd,)``: a 1-D integer
    array as is, or a sequence of ints / integer scalars, stacked."""
    if isinstance(starts, (list, tuple)):
        if len(starts) != nd:
            raise ValueError(f"{op_name(op)}: start_indices needs {nd} entries (one per axis "
                             f"of x), got {len(starts)}")
        if all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in starts):
            return np.asarray(starts, dtype=np.int32)
        from .convert import convert_element_type
        from .shape import reshape
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


def dynamic_slice(x: ArrayLike, start_indices: Any, *, slice_sizes: Sequence[int]) -> Array:
    """``lax.dynamic_slice``: the block of static shape ``slice_sizes`` that
    starts at the traced integer ``start_indices`` (a 1-D int array with one
    entry per axis, or a sequence of int scalars). A negative start counts
    from the end; then the start is clipped so the block fits.

    Linear in x; ``start_indices`` takes no tangent. The transpose is
    ``dynamic_update_slice`` of the cotangent into zeros.
    """
    x = data_arg("dynamic_slice", "x", x)
    starts = _start_indices("dynamic_slice", start_indices, np.ndim(x))
    sizes = int_tuple("dynamic_slice", "slice_sizes", slice_sizes, np.ndim(x))
    if any(not 0 <= s <= n for s, n in zip(sizes, np.shape(x))):
        raise ValueError(f"{op_name('dynamic_slice')}: slice_sizes {sizes} must lie in "
                         f"[0, shape] for x with shape {np.shape(x)}")
    return dynamic_slice_p.bind(x, starts, slice_sizes=sizes, batch_dims=0)


def dynamic_update_slice(x: ArrayLike, update: ArrayLike, start_indices: Any) -> Array:
    """``lax.dynamic_update_slice``: x with the block ``update`` written at the
    traced ``start_indices`` (same rule as ``dynamic_slice``: negative starts
    count from the end, then clip so the block fits).

    Linear in (x, update): the transpose sends the cotangent with the block
    zeroed to x and ``dynamic_slice`` of it to update.
    """
    x, update = promote("dynamic_update_slice", {"x": x, "update": update}, "any")
    starts = _start_indices("dynamic_update_slice", start_indices, np.ndim(x))
    if np.ndim(update) != np.ndim(x) or any(u > n for u, n in zip(np.shape(update),
                                                                   np.shape(x))):
        raise ValueError(f"{op_name('dynamic_update_slice')}: update with shape "
                         f"{np.shape(update)} does not fit in x with shape {np.shape(x)}")
    return dynamic_update_slice_p.bind(x, update, starts, batch_dims=0)


def _reference_dynamic_slice(x: Array, start_indices: Any, *, slice_sizes: Sequence[int]
                             ) -> Array:
    return lax.dynamic_slice(x, list(start_indices), slice_sizes)


def _reference_dynamic_update_slice(x: Array, update: Array, start_indices: Any) -> Array:
    return lax.dynamic_update_slice(x, update, list(start_indices))


# ------------------------------------------------------ concatenate / split
def _concatenate_infer_meta(*xs: Any, axis: int) -> ShapedArray:
    if not xs:
        raise ValueError(f"{op_name('concatenate')}: needs at least one array")
    dtype = same_dtype("concatenate", {f"arrays[{i}]": a for i, a in enumerate(xs)})
    check_dtype("concatenate", "arrays", dtype, "any")
    first = xs[0].shape
    for i, a in enumerate(xs):
        if len(a.shape) != len(first) or any(d != e for k, (d, e) in enumerate(zip(a.shape, first))
                                             if k != axis):
            raise ValueError(f"{op_name('concatenate')}: arrays[{i}] with shape "
                             f"{tuple(a.shape)} does not match arrays[0] with shape "
                             f"{tuple(first)} off axis {axis}")
    if not 0 <= axis < len(first):
        raise ValueError(f"{op_name('concatenate')}: axis={axis} is out of range for arrays "
                         f"of rank {len(first)}")
    shape = list(first)
    shape[axis] = builtins.sum(a.shape[axis] for a in xs)
    return ShapedArray(tuple(shape), dtype, weak_type=all(a.weak_type for a in xs))


def _concatenate_impl(*xs: Array, axis: int) -> Array:
    return lax.concatenate(xs, axis)


concatenate_p = define_primitive("concatenate", family=FAMILY, operands=("*arrays",),
                                 params=("axis",), infer_meta=_concatenate_infer_meta,
                                 impl=_concatenate_impl)


def concatenate(arrays: Sequence[ArrayLike], *, axis: int = 0) -> Array:
    """The arrays joined along ``axis`` (same dtype after promotion, same
    shape off ``axis``). Linear in all of them; the transpose splits the
    cotangent (``split``)."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ValueError(f"{op_name('concatenate')}: arrays must be a non-empty sequence")
    xs = promote("concatenate", {f"arrays[{i}]": a for i, a in enumerate(arrays)}, "any")
    nd = np.ndim(xs[0])
    if nd == 0:
        raise ValueError(f"{op_name('concatenate')}: cannot concatenate scalars")
    return concatenate_p.bind(*xs, axis=normalize_axis("concatenate", axis, nd))


def _split_infer_meta(x: Any, *, sizes: tuple[int, ...], axis: int) -> list[ShapedArray]:
    check_dtype("split", "x", x.dtype, "any")
    if not 0 <= axis < len(x.shape) or builtins.sum(sizes) != x.shape[axis] or min(
            sizes, default=0) < 0:
        raise ValueError(f"{op_name('split')}: sizes {sizes} do not add up to axis {axis} of "
                         f"x with shape {tuple(x.shape)}")
    return [_aval(x, x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


def _split_impl(x: Array, *, sizes: tuple[int, ...], axis: int) -> list[Array]:
    bounds = np.cumsum((0,) + sizes)
    return [lax.slice_in_dim(x, int(lo), int(hi), axis=axis)
            for lo, hi in zip(bounds[:-1], bounds[1:])]


split_p = define_primitive("split", family=FAMILY, operands=("x",), params=("sizes", "axis"),
                           infer_meta=_split_infer_meta, impl=_split_impl,
                           multiple_results=True)


def split(x: ArrayLike, *, indices_or_sections: int | Sequence[int], axis: int = 0
          ) -> tuple[Array, ...]:
    """``jnp.split``: ``indices_or_sections`` is a number of equal sections
    (which must divide the axis) or the increasing split points in
    ``[0, n]``. Returns a tuple. Linear; the transpose concatenates the
    cotangents (zeros for the unused pieces)."""
    x = data_arg("split", "x", x)
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('split')}: cannot split a scalar")
    axis = normalize_axis("split", axis, np.ndim(x))
    n = np.shape(x)[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
            indices_or_sections, bool):
        k = int(indices_or_sections)
        if k < 1 or n % k:
            raise ValueError(f"{op_name('split')}: {k} sections do not divide axis {axis} of "
                             f"size {n} equally")
        sizes = (n // k,) * k
    else:
        points = int_tuple("split", "indices_or_sections", indices_or_sections)
        if list(points) != sorted(points) or any(not 0 <= p <= n for p in points):
            raise ValueError(f"{op_name('split')}: split points {points} must be increasing "
                             f"and within [0, {n}]")
        sizes = tuple(int(s) for s in np.diff((0,) + points + (n,)))
    return tuple(split_p.bind(x, sizes=sizes, axis=axis))


def _reference_split(x: Array, *, indices_or_sections: Any, axis: int = 0) -> tuple[Array, ...]:
    return tuple(jnp.split(x, indices_or_sections, axis=axis))


# --------------------------------------------------------------------- pad
PAD_MODES = ("constant", "reflect", "replicate")


def _pad_infer_meta(x: Any, value: Any, *, widths: tuple[tuple[int, int, int], ...],
                    mode: str) -> ShapedArray:
    dtype = same_dtype("pad", {"x": x, "value": value})
    check_dtype("pad", "x", dtype, "any")
    if len(value.shape) != 0:
        raise ValueError(f"{op_name('pad')}: value must be a scalar, got shape "
                         f"{tuple(value.shape)}")
    if mode not in PAD_MODES:
        raise ValueError(f"{op_name('pad')}: mode must be one of {PAD_MODES}, got {mode!r}")
    if len(widths) != len(x.shape) or any(min(w) < 0 for w in widths):
        raise ValueError(f"{op_name('pad')}: pad widths {widths} do not fit x with shape "
                         f"{tuple(x.shape)}")
    _check_pad_mode(mode, widths, x.shape)
    shape = [lo + hi + n + max(n - 1, 0) * i for (lo, hi, i), n in zip(widths, x.shape)]
    return ShapedArray(tuple(shape), dtype, weak_type=x.weak_type)


def _check_pad_mode(mode: str, widths: Sequence[tuple[int, int, int]],
                    shape: Sequence[int]) -> None:
    for (lo, hi, interior), n in zip(widths, shape):
        if mode != "constant" and interior:
            raise ValueError(f"{op_name('pad')}: interior padding needs mode='constant'")
        if mode == "reflect" and max(lo, hi) > n - 1:
            raise ValueError(f"{op_name('pad')}: mode='reflect' pads an axis of size {n} by at "
                             f"most {max(n - 1, 0)} on each side, got ({lo}, {hi})")
        if mode == "replicate" and n == 0 and lo + hi:
            raise ValueError(f"{op_name('pad')}: mode='replicate' cannot pad an axis of size 0")


def _pad_impl(x: Array, value: Array, *, widths: tuple[tuple[int, int, int], ...],
              mode: str) -> Array:
    if mode == "constant":
        return lax.pad(x, value, widths)
    np_mode = {"reflect": "reflect", "replicate": "edge"}[mode]
    return jnp.pad(x, [(lo, hi) for lo, hi, _ in widths], mode=np_mode)


pad_p = define_primitive("pad", family=FAMILY, operands=("x", "value"), params=("widths", "mode"),
                         infer_meta=_pad_infer_meta, impl=_pad_impl)


def _pad_widths(pad_width: Any, nd: int) -> tuple[tuple[int, int, int], ...]:
    """numpy's pad_width: an int, (before, after), or one pair per axis."""
    w = np.asarray(pad_width, dtype=object)
    if w.ndim == 0:
        pairs = [(pad_width, pad_width)] * nd
    elif w.ndim == 1 and len(w) == 2:
        pairs = [tuple(pad_width)] * nd
    elif w.ndim == 1 and len(w) == 1:
        pairs = [(pad_width[0], pad_width[0])] * nd
    elif w.ndim == 2 and w.shape[1] == 2 and w.shape[0] == nd:
        pairs = [tuple(p) for p in pad_width]
    else:
        raise ValueError(f"{op_name('pad')}: pad_width {pad_width!r} is not an int, a "
                         f"(before, after) pair or {nd} such pairs")
    flat = int_tuple("pad", "pad_width", [v for p in pairs for v in p])
    _nonnegative("pad", "pad_width", flat)
    return tuple((flat[2 * i], flat[2 * i + 1], 0) for i in range(nd))


def pad(x: ArrayLike, pad_width: Any, *, mode: str = "constant",
        value: ArrayLike = 0.0) -> Array:
    """``jnp.pad`` with ``mode`` in ``constant`` (fill with ``value``),
    ``reflect`` (mirror without repeating the edge; at most ``n - 1`` per
    side, as torch's reflection_pad) and ``replicate`` (repeat the edge,
    numpy's ``edge``). ``pad_width`` is numpy's: an int, a ``(before,
    after)`` pair, or one pair per axis; negative widths are an error.
    ``value`` (a scalar, possibly traced) is cast to x's dtype.

    Linear in (x, value) jointly. The transpose of the constant mode slices
    the cotangent (and sends the sum of the padding to value); those of
    reflect and replicate also fold the mirrored or repeated border cotangents
    back onto the elements they copy.
    """
    x = data_arg("pad", "x", x)
    if mode not in PAD_MODES:
        raise ValueError(f"{op_name('pad')}: mode must be one of {PAD_MODES}, got {mode!r}")
    value = as_array("pad", "value", value)
    dtype = jnp.result_type(x)
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        value = np.asarray(value, dtype=dtype)
    elif jnp.result_type(value) != dtype:   # a traced value takes x's dtype, as in jnp.pad
        from .convert import convert_element_type
        value = convert_element_type(value, dtype=dtype)
    if np.ndim(value) != 0:
        raise ValueError(f"{op_name('pad')}: value must be a scalar, got shape "
                         f"{np.shape(value)}")
    widths = _pad_widths(pad_width, np.ndim(x))
    _check_pad_mode(mode, widths, np.shape(x))
    return pad_p.bind(x, value, widths=widths, mode=mode)


def _reference_pad(x: Array, pad_width: Any, *, mode: str = "constant",
                   value: Any = 0.0) -> Array:
    if mode == "constant":
        return jnp.pad(x, pad_width, mode="constant", constant_values=value)
    return jnp.pad(x, pad_width, mode={"reflect": "reflect", "replicate": "edge"}[mode])


# -------------------------------------------------------------------- tile
def _tile_infer_meta(x: Any, *, reps: tuple[int, ...]) -> ShapedArray:
    check_dtype("tile", "x", x.dtype, "any")
    if len(reps) != len(x.shape) or min(reps, default=0) < 0:
        raise ValueError(f"{op_name('tile')}: repeat_times {reps} must hold one non-negative "
                         f"count per axis of x with shape {tuple(x.shape)}")
    return _aval(x, tuple(r * n for r, n in zip(reps, x.shape)))


tile_p = define_primitive("tile", family=FAMILY, operands=("x",), params=("reps",),
                          infer_meta=_tile_infer_meta,
                          impl=lambda x, *, reps: jnp.tile(x, reps))


def tile(x: ArrayLike, *, repeat_times: int | Sequence[int]) -> Array:
    """``jnp.tile`` / Paddle's tile: x repeated ``repeat_times[i]`` times
    along axis i (missing leading counts are 1; extra ones add leading axes).

    Linear; the transpose sums the cotangent over the tiles (a reshape to
    ``(r0, n0, r1, n1, ...)`` and a sum over the r axes), so Paddle's
    tile_grad and tile_double_grad (= tile) fall out of composition.
    """
    from .shape import reshape
    x = data_arg("tile", "x", x)
    reps = int_tuple("tile", "repeat_times", repeat_times)
    _nonnegative("tile", "repeat_times", reps)
    nd = np.ndim(x)
    if len(reps) > nd:
        x = reshape(x, (1,) * (len(reps) - nd) + tuple(np.shape(x)))
    reps = (1,) * (np.ndim(x) - len(reps)) + reps
    return tile_p.bind(x, reps=reps)


# ------------------------------------------------------------------ repeat
def _repeat_infer_meta(x: Any, *, repeats: int | tuple[int, ...], axis: int) -> ShapedArray:
    check_dtype("repeat", "x", x.dtype, "any")
    if not 0 <= axis < len(x.shape):
        raise ValueError(f"{op_name('repeat')}: axis={axis} is out of range for x with shape "
                         f"{tuple(x.shape)}")
    n = x.shape[axis]
    counts = (repeats,) * n if isinstance(repeats, int) else repeats
    if len(counts) != n or min(counts, default=0) < 0:
        raise ValueError(f"{op_name('repeat')}: repeats {repeats} must be one non-negative "
                         f"count or {n} of them (axis {axis} of x with shape {tuple(x.shape)})")
    return _aval(x, x.shape[:axis] + (builtins.sum(counts),) + x.shape[axis + 1:])


def _repeat_impl(x: Array, *, repeats: int | tuple[int, ...], axis: int) -> Array:
    total = repeats * x.shape[axis] if isinstance(repeats, int) else builtins.sum(repeats)
    return jnp.repeat(x, np.asarray(repeats), axis=axis, total_repeat_length=total)


repeat_p = define_primitive("repeat", family=FAMILY, operands=("x",), params=("repeats", "axis"),
                            infer_meta=_repeat_infer_meta, impl=_repeat_impl)


def repeat(x: ArrayLike, *, repeats: int | Sequence[int], axis: int | None = None) -> Array:
    """``jnp.repeat`` (torch.repeat_interleave) with static ``repeats``: each
    element along ``axis`` repeated ``repeats`` times (one count, or one per
    element); ``axis=None`` repeats the flattened x.

    Linear; the transpose sums the cotangent over the copies of each element.
    """
    x = data_arg("repeat", "x", x)
    if axis is None:
        from .shape import reshape
        x, axis = reshape(x, (-1,)), 0
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('repeat')}: x must have at least one axis")
    axis = normalize_axis("repeat", axis, np.ndim(x))
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        reps: int | tuple[int, ...] = int(repeats)
        _nonnegative("repeat", "repeats", (reps,))
    else:
        reps = int_tuple("repeat", "repeats", repeats, np.shape(x)[axis])
        _nonnegative("repeat", "repeats", reps)
    return repeat_p.bind(x, repeats=reps, axis=axis)


def _reference_repeat(x: Array, *, repeats: Any, axis: int | None = None) -> Array:
    return jnp.repeat(x, np.asarray(repeats), axis=axis)


# -------------------------------------------------------------------- flip
def _flip_infer_meta(x: Any, *, axes: tuple[int, ...]) -> ShapedArray:
    check_dtype("flip", "x", x.dtype, "any")
    normalize_axes("flip", axes, len(x.shape))
    return _aval(x, x.shape)


flip_p = define_primitive("flip", family=FAMILY, operands=("x",), params=("axes",),
                          infer_meta=_flip_infer_meta, impl=lambda x, *, axes: lax.rev(x, axes))


def flip(x: ArrayLike, *, axis: int | Sequence[int] | None) -> Array:
    """x reversed along ``axis`` (an int, a tuple, or None for every axis).
    Linear; its transpose is itself."""
    x = data_arg("flip", "x", x)
    return flip_p.bind(x, axes=normalize_axes("flip", axis, np.ndim(x)))


# ---------------------------------------------- tensor_unfold / tensor_fold
def num_windows(n: int, size: int, step: int) -> int:
    return (n - size) // step + 1


def window_index(n_windows: int, size: int, step: int) -> np.ndarray:
    """``[w, k] -> w * step + k``: which element window w holds at position k."""
    return np.arange(n_windows)[:, None] * step + np.arange(size)[None, :]


def _check_window(op: str, n: int, axis: int, size: int, step: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise ValueError(f"{op_name(op)}: axis={axis} is out of range for rank {rank}")
    if size < 1 or step < 1:
        raise ValueError(f"{op_name(op)}: size={size} and step={step} must be positive (a "
                         "step of 0 is not allowed)")
    if size > n:
        raise ValueError(f"{op_name(op)}: size={size} is larger than axis {axis} of size {n}")


def _tensor_unfold_infer_meta(x: Any, *, axis: int, size: int, step: int) -> ShapedArray:
    check_dtype("tensor_unfold", "x", x.dtype, "any")
    _check_window("tensor_unfold", x.shape[axis] if 0 <= axis < len(x.shape) else 0, axis,
                  size, step, len(x.shape))
    shape = list(x.shape)
    shape[axis] = num_windows(x.shape[axis], size, step)
    return _aval(x, tuple(shape) + (size,))


def _tensor_unfold_impl(x: Array, *, axis: int, size: int, step: int) -> Array:
    idx = window_index(num_windows(x.shape[axis], size, step), size, step)
    return jnp.moveaxis(jnp.take(x, idx, axis=axis), axis + 1, -1)


tensor_unfold_p = define_primitive("tensor_unfold", family=FAMILY, operands=("x",),
                                   params=("axis", "size", "step"),
                                   infer_meta=_tensor_unfold_infer_meta, impl=_tensor_unfold_impl)


def tensor_unfold(x: ArrayLike, *, axis: int, size: int, step: int) -> Array:
    """Paddle's tensor_unfold (torch.Tensor.unfold): the windows of ``size``
    elements every ``step`` along ``axis``, which becomes the window axis
    (``(n - size) // step + 1`` windows), with a new last axis of ``size``:
    ``out[..., w, ..., k] = x[..., w * step + k, ...]``.

    Linear; the transpose is ``tensor_fold``, which adds the overlaps back.
    """
    x = data_arg("tensor_unfold", "x", x)
    axis = normalize_axis("tensor_unfold", axis, np.ndim(x))
    size, step = int_tuple("tensor_unfold", "size, step", (size, step))
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('tensor_unfold')}: x must have at least one axis")
    _check_window("tensor_unfold", np.shape(x)[axis], axis, size, step, np.ndim(x))
    return tensor_unfold_p.bind(x, axis=axis, size=size, step=step)


def _tensor_fold_infer_meta(y: Any, *, axis: int, size: int, step: int,
                            length: int) -> ShapedArray:
    check_dtype("tensor_fold", "y", y.dtype, "any")
    _check_window("tensor_fold", length, axis, size, step, len(y.shape) - 1)
    if y.shape[-1] != size or y.shape[axis] != num_windows(length, size, step):
        raise ValueError(f"{op_name('tensor_fold')}: y with shape {tuple(y.shape)} does not "
                         f"hold the windows (size={size}, step={step}) of an axis of length "
                         f"{length} at axis {axis}")
    shape = list(y.shape[:-1])
    shape[axis] = length
    return _aval(y, shape)


def _tensor_fold_impl(y: Array, *, axis: int, size: int, step: int, length: int) -> Array:
    idx = window_index(y.shape[axis], size, step)
    shape = y.shape[:axis] + (length,) + y.shape[axis + 1:-1]
    where = (builtins.slice(None),) * axis + (idx,)
    return jnp.zeros(shape, y.dtype).at[where].add(jnp.moveaxis(y, -1, axis + 1))


tensor_fold_p = define_primitive("tensor_fold", family=FAMILY, operands=("y",),
                                 params=("axis", "size", "step", "length"),
                                 infer_meta=_tensor_fold_infer_meta, impl=_tensor_fold_impl)


def tensor_fold(y: ArrayLike, *, axis: int, size: int, step: int, length: int) -> Array:
    """The transpose of ``tensor_unfold``: windows ``y[..., w, ..., k]`` added
    back at ``w * step + k`` along ``axis`` of an array with ``length``
    elements there (overlaps add, uncovered elements are 0). Linear; its
    transpose is ``tensor_unfold``."""
    y = data_arg("tensor_fold", "x", y)
    if np.ndim(y) < 2:
        raise ValueError(f"{op_name('tensor_fold')}: y must have a window axis and a last "
                         f"axis of window elements, got shape {np.shape(y)}")
    axis = normalize_axis("tensor_fold", axis, np.ndim(y) - 1)
    size, step, length = int_tuple("tensor_fold", "size, step, length", (size, step, length))
    return tensor_fold_p.bind(y, axis=axis, size=size, step=step, length=length)


def _reference_tensor_unfold(x: Array, *, axis: int, size: int, step: int) -> Array:
    axis = axis % x.ndim
    n = num_windows(x.shape[axis], size, step)
    windows = [lax.slice_in_dim(x, w * step, w * step + size, axis=axis) for w in range(n)]
    return jnp.moveaxis(jnp.stack(windows, axis=axis), axis + 1, -1)


def _reference_tensor_fold(y: Array, *, axis: int, size: int, step: int, length: int) -> Array:
    axis = axis % (y.ndim - 1)
    shape = y.shape[:axis] + (length,) + y.shape[axis + 1:-1]
    return jax.linear_transpose(
        lambda x: _reference_tensor_unfold(x, axis=axis, size=size, step=step),
        jnp.zeros(shape, y.dtype))(y)[0]


_LIN = (("x",),)
register_op(OpDef("slice", FAMILY, slice, (slice_p,),
                  lambda x, *, start, limit, strides=None: lax.slice(x, start, limit, strides),
                  ("x",), linear=_LIN))
register_op(OpDef("row_slice", FAMILY, row_slice, (row_slice_p,),
                  lambda x, *, rows, cols, row_index: x[..., row_index, :], ("x",), linear=_LIN))
register_op(OpDef("select", FAMILY, select, (select_p,),
                  lambda x, *, axis, index: jnp.take(x, index, axis=axis), ("x",), linear=_LIN))
register_op(OpDef("dynamic_slice", FAMILY, dynamic_slice, (dynamic_slice_p,),
                  _reference_dynamic_slice, ("x", "start_indices"), linear=_LIN,
                  nondiff=("start_indices",)))
register_op(OpDef("dynamic_update_slice", FAMILY, dynamic_update_slice,
                  (dynamic_update_slice_p,), _reference_dynamic_update_slice,
                  ("x", "update", "start_indices"), linear=(("x", "update"),),
                  nondiff=("start_indices",)))
register_op(OpDef("concatenate", FAMILY, concatenate, (concatenate_p,),
                  lambda arrays, *, axis=0: jnp.concatenate(arrays, axis=axis), ("*arrays",),
                  linear=(("arrays",),)))
register_op(OpDef("split", FAMILY, split, (split_p,), _reference_split, ("x",), linear=_LIN))
register_op(OpDef("pad", FAMILY, pad, (pad_p,), _reference_pad, ("x",), linear=_LIN))
register_op(OpDef("tile", FAMILY, tile, (tile_p,),
                  lambda x, *, repeat_times: jnp.tile(x, repeat_times), ("x",), linear=_LIN,
                  order=3))
register_op(OpDef("repeat", FAMILY, repeat, (repeat_p,), _reference_repeat, ("x",),
                  linear=_LIN))
register_op(OpDef("flip", FAMILY, flip, (flip_p,), lambda x, *, axis: jnp.flip(x, axis),
                  ("x",), linear=_LIN))
register_op(OpDef("tensor_unfold", FAMILY, tensor_unfold, (tensor_unfold_p,),
                  _reference_tensor_unfold, ("x",), linear=_LIN))
register_op(OpDef("tensor_fold", FAMILY, tensor_fold, (tensor_fold_p,), _reference_tensor_fold,
                  ("y",), linear=(("y",),)))
