"""Layout: concatenate, stack, pad, tile, repeat, flip, roll, tensor_unfold
(and tensor_fold, its transpose).

All of them are linear in their array data. Their transposes are made of
layout and slicing primitives: concatenate <-> split, stack -> select, pad
-> slice (reflect and replicate also fold the border copies back), flip ->
flip, roll -> the roll back by -shift (the cotangent's two pieces padded back
into place and added), tile -> a sum over the tiles, repeat -> a sum over
the copies, tensor_unfold <-> tensor_fold.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec

from .. import _jax
from .._jax import ShapedArray
from ..core.args import as_array, choice_param, int_param, int_tuple
from ..core.dims import definitely_le, max_dim
from ..core.meta import check_dtype, normalize_axes, normalize_axis, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import convert_element_type, data_arg, promote
from ._windows import tensor_fold_impl, window_index
from .shape import reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "layout"


# ------------------------------------------------------------------ helpers
def shaped_like(x: Any, shape: Sequence[int]) -> ShapedArray:
    """The aval of ``shape`` with x's dtype and weak type."""
    return ShapedArray(tuple(shape), x.dtype, weak_type=x.weak_type)


def _nonnegative(op: str, arg: str, vals: Sequence[int]) -> None:
    if any(v < 0 for v in vals):
        raise ValueError(f"{op_name(op)}: {arg} must not be negative, got {tuple(vals)}")


# ------------------------------------------------------------- concatenate
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


def _reference_concatenate(arrays: Sequence[Array], *, axis: int = 0) -> Array:
    return jnp.concatenate(arrays, axis=axis)


register_op(OpDef(name="concatenate", family=FAMILY, fn=concatenate,
                  primitives=(concatenate_p,), reference=_reference_concatenate,
                  operands=("*arrays",), linear=(("arrays",),)))


# ------------------------------------------------------------------- stack
def _stack_infer_meta(*xs: Any, axis: int) -> ShapedArray:
    if not xs:
        raise ValueError(f"{op_name('stack')}: needs at least one array")
    dtype = same_dtype("stack", {f"arrays[{i}]": a for i, a in enumerate(xs)})
    check_dtype("stack", "arrays", dtype, "any")
    first = tuple(xs[0].shape)
    for i, a in enumerate(xs):
        if tuple(a.shape) != first:
            raise ValueError(f"{op_name('stack')}: arrays[{i}] with shape {tuple(a.shape)} "
                             f"differs from arrays[0] with shape {first}; stack needs arrays "
                             "of one shape")
    if not 0 <= axis <= len(first):
        raise ValueError(f"{op_name('stack')}: axis={axis} is out of range for the result of "
                         f"rank {len(first) + 1}")
    return ShapedArray(first[:axis] + (len(xs),) + first[axis:], dtype,
                       weak_type=all(a.weak_type for a in xs))


def _stack_impl(*xs: Array, axis: int) -> Array:
    return jnp.stack(xs, axis=axis)


stack_p = define_primitive("stack", family=FAMILY, operands=("*arrays",), params=("axis",),
                           infer_meta=_stack_infer_meta, impl=_stack_impl)


def stack(arrays: Sequence[ArrayLike], axis: int = 0) -> Array:
    """``jnp.stack``: arrays of one shape (after dtype promotion) joined
    along a new axis ``axis`` of the result (``-1``: a new last axis).
    Linear in all of them; the transpose gives array i the slice i of the
    cotangent along that axis (``select``)."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError(f"{op_name('stack')}: arrays must be a non-empty list or tuple of "
                        f"arrays, got {type(arrays).__name__}")
    xs = promote("stack", {f"arrays[{i}]": a for i, a in enumerate(arrays)}, "any")
    for i, a in enumerate(xs):
        if np.shape(a) != np.shape(xs[0]):
            raise ValueError(f"{op_name('stack')}: arrays[{i}] with shape {np.shape(a)} "
                             f"differs from arrays[0] with shape {np.shape(xs[0])}; stack "
                             "needs arrays of one shape")
    return stack_p.bind(*xs, axis=normalize_axis("stack", axis, np.ndim(xs[0]) + 1))


def _reference_stack(arrays: Sequence[Array], axis: int = 0) -> Array:
    return jnp.stack(arrays, axis=axis)


register_op(OpDef(name="stack", family=FAMILY, fn=stack, primitives=(stack_p,),
                  reference=_reference_stack, operands=("*arrays",), linear=(("arrays",),)))


# --------------------------------------------------------------------- pad
PAD_MODES = ("constant", "reflect", "replicate")


def _pad_infer_meta(x: Any, value: Any, *, widths: tuple[tuple[int, int, int], ...],
                    mode: str) -> ShapedArray:
    dtype = same_dtype("pad", {"x": x, "value": value})
    check_dtype("pad", "x", dtype, "any")
    if len(value.shape) != 0:
        raise ValueError(f"{op_name('pad')}: value must be a scalar, got shape "
                         f"{tuple(value.shape)}")
    choice_param("pad", "mode", mode, PAD_MODES)
    if len(widths) != len(x.shape) or not all(definitely_le(0, v) for w in widths for v in w):
        raise ValueError(f"{op_name('pad')}: pad widths {widths} do not fit x with shape "
                         f"{tuple(x.shape)}")
    _check_pad_mode(mode, widths, x.shape)
    shape = [lo + hi + n + max_dim(n - 1, 0) * i for (lo, hi, i), n in zip(widths, x.shape)]
    return ShapedArray(tuple(shape), dtype, weak_type=x.weak_type)


def _check_pad_mode(mode: str, widths: Sequence[tuple[int, int, int]],
                    shape: Sequence[int]) -> None:
    for (lo, hi, interior), n in zip(widths, shape):
        if mode != "constant" and interior:
            raise ValueError(f"{op_name('pad')}: interior padding needs mode='constant'")
        most = max_dim(n - 1, 0)                  # (0, 0) pads even size 0
        if mode == "reflect" and not (definitely_le(lo, most) and definitely_le(hi, most)):
            raise ValueError(f"{op_name('pad')}: mode='reflect' pads an axis of size {n} by at "
                             f"most {most} on each side, got ({lo}, {hi})")
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
    choice_param("pad", "mode", mode, PAD_MODES)
    value = as_array("pad", "value", value)
    check_dtype("pad", "value", jnp.result_type(value), "any")
    dtype = jnp.result_type(x)
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        value = np.asarray(value, dtype=dtype)
    elif jnp.result_type(value) != dtype:   # a traced value takes x's dtype, as in jnp.pad
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


register_op(OpDef(name="pad", family=FAMILY, fn=pad, primitives=(pad_p,),
                  reference=_reference_pad, operands=("x",), linear=(("x",),)))


# -------------------------------------------------------------------- tile
def _tile_infer_meta(x: Any, *, reps: tuple[int, ...]) -> ShapedArray:
    check_dtype("tile", "x", x.dtype, "any")
    if len(reps) != len(x.shape) or min(reps, default=0) < 0:
        raise ValueError(f"{op_name('tile')}: repeat_times {reps} must hold one non-negative "
                         f"count per axis of x with shape {tuple(x.shape)}")
    return shaped_like(x, tuple(r * n for r, n in zip(reps, x.shape)))


def _tile_impl(x: Array, *, reps: tuple[int, ...]) -> Array:
    return jnp.tile(x, reps)


tile_p = define_primitive("tile", family=FAMILY, operands=("x",), params=("reps",),
                          infer_meta=_tile_infer_meta, impl=_tile_impl)


def tile(x: ArrayLike, *, repeat_times: int | Sequence[int]) -> Array:
    """``jnp.tile`` / Paddle's tile: x repeated ``repeat_times[i]`` times
    along axis i (missing leading counts are 1; extra ones add leading axes).

    Linear; the transpose sums the cotangent over the tiles (a reshape to
    ``(r0, n0, r1, n1, ...)`` and a sum over the r axes), so Paddle's
    tile_grad and tile_double_grad (= tile) fall out of composition.
    """
    x = data_arg("tile", "x", x)
    reps = int_tuple("tile", "repeat_times", repeat_times)
    _nonnegative("tile", "repeat_times", reps)
    nd = np.ndim(x)
    if len(reps) > nd:
        x = reshape(x, (1,) * (len(reps) - nd) + tuple(np.shape(x)))
    reps = (1,) * (np.ndim(x) - len(reps)) + reps
    return tile_p.bind(x, reps=reps)


def _reference_tile(x: Array, *, repeat_times: int | Sequence[int]) -> Array:
    return jnp.tile(x, repeat_times)


register_op(OpDef(name="tile", family=FAMILY, fn=tile, primitives=(tile_p,),
                  reference=_reference_tile, operands=("x",), linear=(("x",),), order=3))


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
    return shaped_like(x, x.shape[:axis] + (builtins.sum(counts),) + x.shape[axis + 1:])


def _repeat_impl(x: Array, *, repeats: int | tuple[int, ...], axis: int) -> Array:
    """One count: a broadcast and a reshape (jnp.repeat's path for a Python
    int); a count per element: the gather of jnp.repeat's general path."""
    if isinstance(repeats, int):
        return jnp.repeat(x, repeats, axis=axis)
    return jnp.repeat(x, np.asarray(repeats), axis=axis,
                      total_repeat_length=builtins.sum(repeats))


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


register_op(OpDef(name="repeat", family=FAMILY, fn=repeat, primitives=(repeat_p,),
                  reference=_reference_repeat, operands=("x",), linear=(("x",),)))


# -------------------------------------------------------------------- flip
def _flip_infer_meta(x: Any, *, axes: tuple[int, ...]) -> ShapedArray:
    check_dtype("flip", "x", x.dtype, "any")
    normalize_axes("flip", axes, len(x.shape))
    return shaped_like(x, x.shape)


def _flip_impl(x: Array, *, axes: tuple[int, ...]) -> Array:
    return lax.rev(x, axes)


flip_p = define_primitive("flip", family=FAMILY, operands=("x",), params=("axes",),
                          infer_meta=_flip_infer_meta, impl=_flip_impl)


def flip(x: ArrayLike, *, axis: int | Sequence[int] | None) -> Array:
    """x reversed along ``axis`` (an int, a tuple, or None for every axis).
    Linear; its transpose is itself."""
    x = data_arg("flip", "x", x)
    return flip_p.bind(x, axes=normalize_axes("flip", axis, np.ndim(x)))


def _reference_flip(x: Array, *, axis: int | Sequence[int] | None) -> Array:
    return jnp.flip(x, axis)


register_op(OpDef(name="flip", family=FAMILY, fn=flip, primitives=(flip_p,),
                  reference=_reference_flip, operands=("x",), linear=(("x",),)))


# -------------------------------------------------------------------- roll
def _roll_infer_meta(x: Any, *, shifts: tuple[int, ...], axes: tuple[int, ...]) -> ShapedArray:
    check_dtype("roll", "x", x.dtype, "any")
    if (len(shifts) != len(axes) or list(axes) != sorted(set(axes))
            or not all(0 <= a < len(x.shape) and 0 <= s < max(x.shape[a], 1)
                       for s, a in zip(shifts, axes))):
        raise ValueError(f"{op_name('roll')}: shifts {shifts} along axes {axes} do not fit x "
                         f"with shape {tuple(x.shape)}")
    return shaped_like(x, x.shape)


def _roll_impl(x: Array, *, shifts: tuple[int, ...], axes: tuple[int, ...]) -> Array:
    return jnp.roll(x, shifts, axes) if axes else x   # static shifts: slices and a concatenate


roll_p = define_primitive("roll", family=FAMILY, operands=("x",), params=("shifts", "axes"),
                          infer_meta=_roll_infer_meta, impl=_roll_impl)


def roll(x: ArrayLike, shift: int | Sequence[int], axis: int | Sequence[int] | None = None
         ) -> Array:
    """``jnp.roll`` with static shifts: ``out[..., (i + shift) % n, ...] =
    x[..., i, ...]`` along ``axis``; ``shift`` and ``axis`` may be tuples
    (broadcast against each other, shifts of one axis adding up), and
    ``axis=None`` rolls the flattened x. Linear; the transpose is the roll by
    ``-shift``, as the pieces of the cotangent padded back into place and
    added (jnp.roll's transpose)."""
    x = data_arg("roll", "x", x)
    if isinstance(shift, (np.ndarray, jax.Array)) or hasattr(shift, "aval"):
        try:   # a concrete array of ints is static; a traced shift is not supported
            shift = np.asarray(shift).tolist()
        except TypeError:
            raise TypeError(f"{op_name('roll')}: shift must be a static int or tuple of ints, "
                            "got a traced array") from None
    shifts = int_tuple("roll", "shift", shift)
    shape = np.shape(x)
    y = reshape(x, (-1,)) if axis is None else x
    axes = (0,) if axis is None else int_tuple("roll", "axis", axis)
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ValueError(f"{op_name('roll')}: shift {shift!r} and axis {axis!r} do not "
                         "broadcast against each other")
    n = builtins.max(len(shifts), len(axes))
    total: dict[int, int] = {}
    for s, a in zip(shifts * (n if len(shifts) == 1 else 1), axes * (n if len(axes) == 1 else 1)):
        a = normalize_axis("roll", a, np.ndim(y))
        total[a] = total.get(a, 0) + s
    kept = {a: s % np.shape(y)[a] for a, s in sorted(total.items()) if np.shape(y)[a]}
    out = roll_p.bind(y, shifts=tuple(v for v in kept.values() if v),
                      axes=tuple(a for a, v in kept.items() if v))
    return reshape(out, shape) if axis is None else out


def _reference_roll(x: Array, shift: Any, axis: Any = None) -> Array:
    return jnp.roll(x, shift, axis)


register_op(OpDef(name="roll", family=FAMILY, fn=roll, primitives=(roll_p,),
                  reference=_reference_roll, operands=("x",), linear=(("x",),)))


# ---------------------------------------------- tensor_unfold / tensor_fold
def num_windows(n: int, size: int, step: int) -> int:
    return (n - size) // step + 1


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
    return shaped_like(x, tuple(shape) + (size,))


def _tensor_unfold_impl(x: Array, *, axis: int, size: int, step: int) -> Array:
    """The windows gathered along ``axis`` (``window_index``), their elements
    moved last. Where x's type shards ``axis`` (Explicit mesh axes), the
    gather's sharding is given as the windows' in the jax.numpy composition
    (stacked slices of x): the window axis replicated, the elements sharded
    as ``axis`` was (replicated where ``size`` does not split over those
    mesh axes)."""
    idx = window_index(num_windows(x.shape[axis], size, step), size, step)
    spec = _jax.spec_of(x)
    out = None
    if spec[axis] is not None:
        names = (spec[axis],) if isinstance(spec[axis], str) else tuple(spec[axis])
        split = size % math.prod(_jax.mesh_of(x).shape[a] for a in names) == 0
        out = PartitionSpec(*spec[:axis], None, spec[axis] if split else None, *spec[axis + 1:])
    windows = x.at[(builtins.slice(None),) * axis + (idx,)].get(out_sharding=out)
    return jnp.moveaxis(windows, axis + 1, -1)


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


def _reference_tensor_unfold(x: Array, *, axis: int, size: int, step: int) -> Array:
    axis = axis % x.ndim
    n = num_windows(x.shape[axis], size, step)
    windows = [lax.slice_in_dim(x, w * step, w * step + size, axis=axis) for w in range(n)]
    return jnp.moveaxis(jnp.stack(windows, axis=axis), axis + 1, -1)


register_op(OpDef(name="tensor_unfold", family=FAMILY, fn=tensor_unfold,
                  primitives=(tensor_unfold_p,), reference=_reference_tensor_unfold,
                  operands=("x",), linear=(("x",),)))


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
    return shaped_like(y, shape)


tensor_fold_p = define_primitive("tensor_fold", family=FAMILY, operands=("y",),
                                 params=("axis", "size", "step", "length"),
                                 infer_meta=_tensor_fold_infer_meta, impl=tensor_fold_impl)


def tensor_fold(y: ArrayLike, *, axis: int, size: int, step: int, length: int) -> Array:
    """The transpose of ``tensor_unfold``: windows ``y[..., w, ..., k]`` added
    back at ``w * step + k`` along ``axis`` of an array with ``length``
    elements there (overlaps add, uncovered elements are 0). Linear; its
    transpose is ``tensor_unfold``."""
    y = data_arg("tensor_fold", "y", y)
    if np.ndim(y) < 2:
        raise ValueError(f"{op_name('tensor_fold')}: y must have a window axis and a last "
                         f"axis of window elements, got shape {np.shape(y)}")
    axis = normalize_axis("tensor_fold", axis, np.ndim(y) - 1)
    size, step = int_tuple("tensor_fold", "size, step", (size, step))
    length = int_param("tensor_fold", "length", length, lo=0)
    return tensor_fold_p.bind(y, axis=axis, size=size, step=step, length=length)


def _reference_tensor_fold(y: Array, *, axis: int, size: int, step: int, length: int) -> Array:
    axis = axis % (y.ndim - 1)
    shape = y.shape[:axis] + (length,) + y.shape[axis + 1:-1]
    return jax.linear_transpose(
        lambda x: _reference_tensor_unfold(x, axis=axis, size=size, step=step),
        jnp.zeros(shape, y.dtype))(y)[0]


register_op(OpDef(name="tensor_fold", family=FAMILY, fn=tensor_fold,
                  primitives=(tensor_fold_p,), reference=_reference_tensor_fold,
                  operands=("y",), linear=(("y",),)))
