"""Rules of the layout family. Every primitive here is linear in its array
data: the JVP binds it on the tangents (``linear_jvp`` / ``linear_jvp_in``)
and each transpose is made of layout primitives (slice <-> pad,
concatenate <-> split, tensor_unfold <-> tensor_fold, ...), so derivatives of
any order are compositions of catalog primitives. Batching rules move the
batch axis to the front and bind the primitive once."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import aval_of, is_undefined_primal
from ..core.primitive import register_rules
from ..primitives.arithmetic import add, subtract
from ..primitives.compare import where
from ..primitives.indexing import scatter_add_p
from ..primitives.layout import (concatenate_p, dynamic_slice_p, dynamic_update_slice_p, flip_p,
                                 pad_p, repeat_p, row_slice_p, select_p, slice_p, split_p,
                                 tensor_fold_p, tensor_unfold_p, tile_p)
from ..primitives.reduction import sum_p
from ..primitives.shape import broadcast_in_dim_p, expand_dims_p, moveaxis, reshape_p
from ._common import (bdim_to_front, batch_size, linear_jvp, linear_jvp_in,
                      shifted_front_batch, zeros)


# ------------------------------------------------------------ shared pieces
def _dtype(x: Any) -> Any:
    return aval_of(x).dtype


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(aval_of(x).shape)


def slice_axis(x: Any, axis: int, lo: int, hi: int) -> Any:
    """``x[..., lo:hi, ...]`` at ``axis``."""
    shape = _shape(x)
    start = tuple(lo if d == axis else 0 for d in range(len(shape)))
    limit = tuple(hi if d == axis else n for d, n in enumerate(shape))
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=(1,) * len(shape))


def pad_axis(x: Any, axis: int, lo: int, hi: int) -> Any:
    """x with ``lo`` and ``hi`` zeros before and after it along ``axis``."""
    widths = tuple((lo, hi, 0) if d == axis else (0, 0, 0) for d in range(len(_shape(x))))
    return pad_p.bind(x, zeros((), _dtype(x)), widths=widths, mode="constant")


# ------------------------------------------------------------------- slice
def _slice_transpose(ct: Any, x: Any, *, start_indices: tuple[int, ...],
                     limit_indices: tuple[int, ...], strides: tuple[int, ...]) -> list[Any]:
    widths = []
    for lo, m, s, n in zip(start_indices, _shape(ct), strides, x.aval.shape):
        real_limit = lo + (m - 1) * s + 1 if m else lo
        widths.append((lo, n - real_limit, s - 1))
    return [pad_p.bind(ct, zeros((), _dtype(ct)), widths=tuple(widths), mode="constant")]


def _slice_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                 start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                 strides: tuple[int, ...]) -> tuple[Any, int]:
    x = bdim_to_front(args[0], dims[0])
    return slice_p.bind(x, start_indices=(0,) + start_indices,
                        limit_indices=(_shape(x)[0],) + limit_indices,
                        strides=(1,) + strides), 0


register_rules(slice_p, jvp=partial(linear_jvp, slice_p), transpose=_slice_transpose,
               batch=_slice_batch)


# --------------------------------------------------------- select, row_slice
def _select_transpose(ct: Any, x: Any, *, axis: int, index: int) -> list[Any]:
    ct = expand_dims_p.bind(ct, axes=(axis,))
    return [pad_axis(ct, axis, index, x.aval.shape[axis] - 1 - index)]


for _p in (select_p, row_slice_p):
    register_rules(_p, jvp=partial(linear_jvp, _p), transpose=_select_transpose,
                   batch=partial(shifted_front_batch, _p, ("axis",)))


# ------------------------------------------ dynamic_slice / dynamic_update_slice
def _dynamic_slice_transpose(ct: Any, x: Any, starts: Any, *, slice_sizes: tuple[int, ...],
                             batch_dims: int) -> list[Any]:
    z = zeros(x.aval.shape, _dtype(ct))
    return [dynamic_update_slice_p.bind(z, ct, starts, batch_dims=batch_dims), None]


register_rules(dynamic_slice_p, jvp=partial(linear_jvp_in, dynamic_slice_p, (0,)),
               transpose=_dynamic_slice_transpose,
               batch=partial(shifted_front_batch, dynamic_slice_p, ("batch_dims",)))


def _dynamic_update_slice_transpose(ct: Any, x: Any, update: Any, starts: Any, *,
                                    batch_dims: int) -> list[Any]:
    ushape = _shape(update)
    ct_x = ct_u = None
    if is_undefined_primal(x):
        ct_x = dynamic_update_slice_p.bind(ct, zeros(ushape, _dtype(ct)), starts,
                                           batch_dims=batch_dims)
    if is_undefined_primal(update):
        ct_u = dynamic_slice_p.bind(ct, starts, slice_sizes=ushape[batch_dims:],
                                    batch_dims=batch_dims)
    return [ct_x, ct_u, None]


register_rules(dynamic_update_slice_p,
               jvp=partial(linear_jvp_in, dynamic_update_slice_p, (0, 1)),
               transpose=_dynamic_update_slice_transpose,
               batch=partial(shifted_front_batch, dynamic_update_slice_p, ("batch_dims",)))


# ------------------------------------------------------ concatenate / split
def _concatenate_transpose(ct: Any, *xs: Any, axis: int) -> list[Any]:
    sizes = tuple(_shape(x)[axis] for x in xs)
    pieces = split_p.bind(ct, sizes=sizes, axis=axis)
    return [p if is_undefined_primal(x) else None for p, x in zip(pieces, xs)]


register_rules(concatenate_p, jvp=partial(linear_jvp, concatenate_p),
               transpose=_concatenate_transpose,
               batch=partial(shifted_front_batch, concatenate_p, ("axis",)))


def _split_transpose(cts: Sequence[Any], x: Any, *, sizes: tuple[int, ...],
                     axis: int) -> list[Any]:
    return [concatenate_p.bind(*cts, axis=axis)]


register_rules(split_p, jvp=partial(linear_jvp, split_p), transpose=_split_transpose,
               batch=partial(shifted_front_batch, split_p, ("axis",)))


# --------------------------------------------------------------------- pad
def _fold_border(ct: Any, axis: int, lo: int, hi: int, n: int, mode: str) -> Any:
    """Transpose of a reflect / replicate pad of one axis of size ``n``: the
    cotangent of the copies goes back onto the elements they copy."""
    if not lo and not hi:
        return ct
    out = slice_axis(ct, axis, lo, lo + n)
    if lo:
        left = slice_axis(ct, axis, 0, lo)
        if mode == "reflect":   # position j holds x[lo - j]
            left = pad_axis(flip_p.bind(left, axes=(axis,)), axis, 1, n - 1 - lo)
        else:                   # every position holds x[0]
            left = pad_axis(sum_p.bind(left, axes=(axis,), keepdims=True), axis, 0, n - 1)
        out = add(out, left)
    if hi:
        right = slice_axis(ct, axis, lo + n, lo + n + hi)
        if mode == "reflect":   # position lo + n + j holds x[n - 2 - j]
            right = pad_axis(flip_p.bind(right, axes=(axis,)), axis, n - 1 - hi, 1)
        else:                   # every position holds x[n - 1]
            right = pad_axis(sum_p.bind(right, axes=(axis,), keepdims=True), axis, n - 1, 0)
        out = add(out, right)
    return out


def _pad_transpose(ct: Any, x: Any, value: Any, *, widths: tuple[tuple[int, int, int], ...],
                   mode: str) -> list[Any]:
    shape = _shape(x)
    if mode != "constant":
        for axis in reversed(range(len(shape))):
            lo, hi, _ = widths[axis]
            ct = _fold_border(ct, axis, lo, hi, shape[axis], mode)
        return [ct if is_undefined_primal(x) else None, None]
    start = tuple(lo for lo, _, _ in widths)
    limit = tuple(lo + (n - 1) * (i + 1) + 1 if n else lo for (lo, _, i), n in zip(widths, shape))
    inner = slice_p.bind(ct, start_indices=start, limit_indices=limit,
                         strides=tuple(i + 1 for _, _, i in widths))
    ct_value = None
    if is_undefined_primal(value):
        everything = tuple(range(len(shape)))
        ct_value = subtract(sum_p.bind(ct, axes=everything, keepdims=False),
                            sum_p.bind(inner, axes=everything, keepdims=False))
    return [inner if is_undefined_primal(x) else None, ct_value]


def padding_mask(shape: Sequence[int], widths: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """True where ``pad`` (constant mode) writes the padding value."""
    out_shape = [lo + hi + n + max(n - 1, 0) * i for (lo, hi, i), n in zip(widths, shape)]
    mask = np.ones(out_shape, bool)
    mask[tuple(slice(lo, lo + (n - 1) * (i + 1) + 1 if n else lo, i + 1)
               for (lo, _, i), n in zip(widths, shape))] = False
    return mask


def _pad_batch(args: Sequence[Any], dims: Sequence[int | None], *,
               widths: tuple[tuple[int, int, int], ...], mode: str) -> tuple[Any, int | None]:
    (x, value), (dx, dv) = args, dims
    zero = zeros((), _dtype(x))
    if dv is None or mode != "constant":   # value unbatched, or unused
        if dx is None:
            return pad_p.bind(x, zero, widths=widths, mode=mode), None
        return pad_p.bind(moveaxis(x, dx, 0), value if dv is None else zero,
                          widths=((0, 0, 0),) + widths, mode=mode), 0
    unbatched = _shape(x) if dx is None else tuple(np.delete(_shape(x), dx))
    size = batch_size(args, dims)
    padded = pad_p.bind(bdim_to_front(x, dx, size), zero, widths=((0, 0, 0),) + widths,
                        mode=mode)
    value = reshape_p.bind(value, new_sizes=(size,) + (1,) * len(unbatched))
    return where(padding_mask(unbatched, widths), value, padded), 0


register_rules(pad_p, jvp=partial(linear_jvp, pad_p), transpose=_pad_transpose,
               batch=_pad_batch)


# -------------------------------------------------------------------- tile
def _tile_transpose(ct: Any, x: Any, *, reps: tuple[int, ...]) -> list[Any]:
    shape = x.aval.shape
    split = tuple(v for r, n in zip(reps, shape) for v in (r, n))
    ct = reshape_p.bind(ct, new_sizes=split)
    return [sum_p.bind(ct, axes=tuple(range(0, len(split), 2)), keepdims=False)]


def _tile_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                reps: tuple[int, ...]) -> tuple[Any, int]:
    return tile_p.bind(bdim_to_front(args[0], dims[0]), reps=(1,) + reps), 0


register_rules(tile_p, jvp=partial(linear_jvp, tile_p), transpose=_tile_transpose,
               batch=_tile_batch)


# ------------------------------------------------------------------ repeat
def _repeat_transpose(ct: Any, x: Any, *, repeats: int | tuple[int, ...],
                      axis: int) -> list[Any]:
    shape = tuple(x.aval.shape)
    if isinstance(repeats, int):   # copies are adjacent: a reshape and a sum
        ct = reshape_p.bind(ct, new_sizes=shape[:axis + 1] + (repeats,) + shape[axis + 1:])
        return [sum_p.bind(ct, axes=(axis + 1,), keepdims=False)]
    source = np.repeat(np.arange(shape[axis]), repeats)   # element each copy is of
    index = broadcast_in_dim_p.bind(source, shape=_shape(ct), broadcast_dimensions=(axis,))
    return [scatter_add_p.bind(zeros(shape, _dtype(ct)), index, ct, axis=axis)]


register_rules(repeat_p, jvp=partial(linear_jvp, repeat_p), transpose=_repeat_transpose,
               batch=partial(shifted_front_batch, repeat_p, ("axis",)))


# -------------------------------------------------------------------- flip
def _flip_transpose(ct: Any, x: Any, *, axes: tuple[int, ...]) -> list[Any]:
    return [flip_p.bind(ct, axes=axes)]


def _flip_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                axes: tuple[int, ...]) -> tuple[Any, int]:
    return flip_p.bind(bdim_to_front(args[0], dims[0]), axes=tuple(a + 1 for a in axes)), 0


register_rules(flip_p, jvp=partial(linear_jvp, flip_p), transpose=_flip_transpose,
               batch=_flip_batch)


# ---------------------------------------------- tensor_unfold / tensor_fold
def _tensor_unfold_transpose(ct: Any, x: Any, *, axis: int, size: int, step: int) -> list[Any]:
    return [tensor_fold_p.bind(ct, axis=axis, size=size, step=step,
                               length=x.aval.shape[axis])]


def _tensor_fold_transpose(ct: Any, y: Any, *, axis: int, size: int, step: int,
                           length: int) -> list[Any]:
    return [tensor_unfold_p.bind(ct, axis=axis, size=size, step=step)]


register_rules(tensor_unfold_p, jvp=partial(linear_jvp, tensor_unfold_p),
               transpose=_tensor_unfold_transpose,
               batch=partial(shifted_front_batch, tensor_unfold_p, ("axis",)))
register_rules(tensor_fold_p, jvp=partial(linear_jvp, tensor_fold_p),
               transpose=_tensor_fold_transpose,
               batch=partial(shifted_front_batch, tensor_fold_p, ("axis",)))
