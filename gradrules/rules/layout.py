"""Rules of the layout family. Every primitive here is linear in its array
data: the JVP binds it on the tangents (``linear_jvp``) and each transpose is
made of layout and slicing primitives (concatenate <-> split, stack ->
select, pad -> slice, roll -> split, pad and add, tensor_unfold <->
tensor_fold, ...), so derivatives of any order are compositions of catalog
primitives. Batching rules move the batch axis to the front and bind the
primitive once."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax

from .._jax import (BatchDim, BatchResult, Cotangent, MaybeUndefined, aval_of, is_undefined_primal)
from ..core.primitive import register_rules
from ..primitives._compose import zeros
from ..primitives.arithmetic import add, subtract
from ..primitives.compare import where
from ..primitives.gather import take_transpose_p
from ..primitives.layout import (concatenate_p, flip_p, pad_p, repeat_p, roll_p, stack_p,
                                 tensor_fold_p, tensor_unfold_p, tile_p)
from ..primitives.reduction import sum_p
from ..primitives.shape import moveaxis, reshape_p
from ..primitives.slicing import select_p, slice_p, split_p
from ._common import bdim_to_front, batch_size, linear_jvp, shifted_front_batch
from ._fused import transpose_to


# ------------------------------------------------------------ shared pieces
def pad_axis(x: Any, axis: int, lo: int, hi: int) -> Any:
    """x with ``lo`` and ``hi`` zeros before and after it along ``axis``."""
    widths = tuple((lo, hi, 0) if d == axis else (0, 0, 0) for d in range(len(aval_of(x).shape)))
    return pad_p.bind(x, zeros((), aval_of(x).dtype), widths=widths, mode="constant")


# ------------------------------------------------------------- concatenate
def _concatenate_transpose(ct: Cotangent, *xs: MaybeUndefined, axis: int) -> list[Any]:
    sizes = tuple(aval_of(x).shape[axis] for x in xs)
    pieces = split_p.bind(ct, sizes=sizes, axis=axis)
    return [p if is_undefined_primal(x) else None for p, x in zip(pieces, xs)]


register_rules(concatenate_p, linear=("arrays",), jvp=partial(linear_jvp, concatenate_p),
               transpose=_concatenate_transpose,
               batch=partial(shifted_front_batch, concatenate_p, ("axis",)))


# ------------------------------------------------------------------- stack
def _stack_transpose(ct: Cotangent, *xs: MaybeUndefined, axis: int) -> list[Any]:
    """Array i gets slice i of the cotangent along the stacked axis."""
    return [select_p.bind(ct, axis=axis, index=i) if is_undefined_primal(x) else None
            for i, x in enumerate(xs)]


register_rules(stack_p, linear=("arrays",), jvp=partial(linear_jvp, stack_p),
               transpose=_stack_transpose,
               batch=partial(shifted_front_batch, stack_p, ("axis",)))


# --------------------------------------------------------------------- pad
def slice_axis(x: Any, axis: int, lo: int, hi: int) -> Any:
    """``x[..., lo:hi, ...]`` at ``axis``."""
    shape = aval_of(x).shape
    start = tuple(lo if d == axis else 0 for d in range(len(shape)))
    limit = tuple(hi if d == axis else n for d, n in enumerate(shape))
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=(1,) * len(shape))


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


def _pad_transpose(ct: Cotangent, x: MaybeUndefined, value: MaybeUndefined, *,
                   widths: tuple[tuple[int, int, int], ...], mode: str) -> list[Any]:
    shape = aval_of(x).shape
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


def _pad_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
               widths: tuple[tuple[int, int, int], ...], mode: str) -> BatchResult:
    (x, value), (dx, dv) = args, dims
    zero = zeros((), aval_of(x).dtype)
    if dv is None or mode != "constant":   # value unbatched, or unused
        if dx is None:
            return pad_p.bind(x, zero, widths=widths, mode=mode), None
        return pad_p.bind(moveaxis(x, dx, 0), value if dv is None else zero,
                          widths=((0, 0, 0),) + widths, mode=mode), 0
    unbatched = aval_of(x).shape if dx is None else tuple(np.delete(aval_of(x).shape, dx))
    size = batch_size(args, dims)
    padded = pad_p.bind(bdim_to_front(x, dx, size), zero, widths=((0, 0, 0),) + widths,
                        mode=mode)
    value = reshape_p.bind(value, new_sizes=(size,) + (1,) * len(unbatched))
    return where(padding_mask(unbatched, widths), value, padded), 0


register_rules(pad_p, linear=("x", "value"),
               jvp=partial(linear_jvp, pad_p), transpose=_pad_transpose,
               batch=_pad_batch)


# -------------------------------------------------------------------- tile
def _tile_transpose(ct: Cotangent, x: MaybeUndefined, *, reps: tuple[int, ...]) -> list[Any]:
    shape = aval_of(x).shape
    split = tuple(v for r, n in zip(reps, shape) for v in (r, n))
    ct = reshape_p.bind(ct, new_sizes=split)
    return [sum_p.bind(ct, axes=tuple(range(0, len(split), 2)), keepdims=False)]


def _tile_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                reps: tuple[int, ...]) -> BatchResult:
    return tile_p.bind(bdim_to_front(args[0], dims[0]), reps=(1,) + reps), 0


register_rules(tile_p, linear=("x",), jvp=partial(linear_jvp, tile_p), transpose=_tile_transpose,
               batch=_tile_batch)


# ------------------------------------------------------------------ repeat
def _repeat_transpose(ct: Cotangent, x: MaybeUndefined, *, repeats: int | tuple[int, ...],
                      axis: int) -> list[Any]:
    shape = aval_of(x).shape
    if isinstance(repeats, int):   # copies are adjacent: a reshape and a sum
        ct = reshape_p.bind(ct, new_sizes=shape[:axis + 1] + (repeats,) + shape[axis + 1:])
        return [sum_p.bind(ct, axes=(axis + 1,), keepdims=False)]
    # the element each copy is of, in [0, n): whole slices of ct added there
    # (take_transpose: one index per slice, never broadcast to ct's shape)
    source = np.repeat(np.arange(shape[axis], dtype=np.int32), repeats)
    return [take_transpose_p.bind(ct, source, axis=axis, batch_dims=0, size=shape[axis])]


register_rules(repeat_p, linear=("x",),
               jvp=partial(linear_jvp, repeat_p), transpose=_repeat_transpose,
               batch=partial(shifted_front_batch, repeat_p, ("axis",)))


# -------------------------------------------------------------------- flip
def _flip_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                axes: tuple[int, ...]) -> BatchResult:
    return flip_p.bind(bdim_to_front(args[0], dims[0]), axes=tuple(a + 1 for a in axes)), 0


register_rules(flip_p, linear=("x",), jvp=partial(linear_jvp, flip_p),   # its own transpose
               transpose=partial(transpose_to, flip_p, flip_p), batch=_flip_batch)


# -------------------------------------------------------------------- roll
def _unroll_axis(ct: Any, axis: int, shift: int) -> Any:
    """The roll back by ``-shift`` along ``axis`` (of size n), written as the
    transpose of the forward's two slices and concatenate: ``ct[:shift]``
    and ``ct[shift:]`` padded with zeros back into place and added,
    ``x_ct = pad(ct[shift:], (0, shift)) + pad(ct[:shift], (n - shift, 0))``.
    XLA fuses the pads and the add into one pass over the output, where a
    second slices-and-concatenate would keep a copy of the larger piece."""
    n = aval_of(ct).shape[axis]
    head, tail = split_p.bind(ct, sizes=(shift, n - shift), axis=axis)
    return add(pad_axis(tail, axis, 0, shift), pad_axis(head, axis, n - shift, 0))


def _roll_transpose(ct: Cotangent, x: MaybeUndefined, *, shifts: tuple[int, ...],
                    axes: tuple[int, ...]) -> list[Any]:
    """The roll back, by -shift (mod n) along every rolled axis, one axis
    after the other (``_unroll_axis``). Where a rolled size is symbolic
    (``jax.export``: the shift is then ``s mod n``, which split cannot size
    a piece by), the same map as a roll by ``n - shift``."""
    shape = aval_of(x).shape
    if any(jax.export.is_symbolic_dim(shape[a]) for a in axes):
        back = tuple((shape[a] - s) % shape[a] for s, a in zip(shifts, axes))
        return [roll_p.bind(ct, shifts=back, axes=axes)]
    for axis, shift in zip(axes, shifts):
        ct = _unroll_axis(ct, axis, shift)
    return [ct]


def _roll_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, shifts: tuple[int, ...],
                axes: tuple[int, ...]) -> BatchResult:
    return roll_p.bind(bdim_to_front(args[0], dims[0]), shifts=shifts,
                       axes=tuple(a + 1 for a in axes)), 0


register_rules(roll_p, linear=("x",), jvp=partial(linear_jvp, roll_p),
               transpose=_roll_transpose, batch=_roll_batch)


# ---------------------------------------------- tensor_unfold / tensor_fold
def _tensor_unfold_transpose(ct: Cotangent, x: MaybeUndefined, *, axis: int, size: int,
                             step: int) -> list[Any]:
    return [tensor_fold_p.bind(ct, axis=axis, size=size, step=step, length=aval_of(x).shape[axis])]


register_rules(tensor_unfold_p, linear=("x",), jvp=partial(linear_jvp, tensor_unfold_p),
               transpose=_tensor_unfold_transpose,
               batch=partial(shifted_front_batch, tensor_unfold_p, ("axis",)))


def _tensor_fold_transpose(ct: Cotangent, y: MaybeUndefined, *, axis: int, size: int, step: int,
                           length: int) -> list[Any]:
    return [tensor_unfold_p.bind(ct, axis=axis, size=size, step=step)]


register_rules(tensor_fold_p, linear=("y",), jvp=partial(linear_jvp, tensor_fold_p),
               transpose=_tensor_fold_transpose,
               batch=partial(shifted_front_batch, tensor_fold_p, ("axis",)))
