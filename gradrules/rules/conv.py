"""Rules of the conv family: those of XLA's general convolution (as JAX's
own), written with gradrules primitives.

Bilinear: the JVP binds the convolution once per nonzero tangent. The
transpose for the input is a convolution of the cotangent with the flipped
kernel (window strides and input dilation swapped, in/out features swapped
per group); for the kernel, a convolution of the input with the cotangent
(feature groups become batch groups and back). Batching folds the batch axis
into the batch or feature dimension of the operands (no loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import BatchDim, BatchResult, Cotangent, MaybeUndefined, is_undefined_primal
from ..core.primitive import register_rules
from ..primitives._compose import zeros
from ..primitives.conv import conv_shape, convolution_p, dilate
from ..primitives.layout import flip_p
from ._common import multilinear_jvp, reshape_axis_into, reshape_axis_out_of


def _swap01(spec: tuple[int, ...]) -> tuple[int, ...]:
    return (spec[1], spec[0]) + tuple(spec[2:])


# transposes ------------------------------------------------------------------
def _lhs_padding(in_shape: Any, window: Any, strides: Any, out_shape: Any, padding: Any,
                 lhs_dilation: Any, rhs_dilation: Any) -> tuple[tuple[int, int], ...]:
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                            lhs_dilation, rhs_dilation):
        before = dilate(k, rd) - lo - 1
        after = dilate(n, ld) + dilate(k, rd) - 1 - dilate(o, s) - before
        pads.append((int(before), int(after)))
    return tuple(pads)


def _rhs_padding(in_shape: Any, window: Any, strides: Any, out_shape: Any, padding: Any,
                 lhs_dilation: Any, rhs_dilation: Any) -> tuple[tuple[int, int], ...]:
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                            lhs_dilation, rhs_dilation):
        hi = dilate(o, s) - dilate(n, ld) + dilate(k, rd) - lo - 1
        pads.append((int(lo), int(hi)))
    return tuple(pads)


def _transpose_lhs(ct: Any, lhs_shape: tuple[int, ...], rhs: Any, *, window_strides: Any,
                   padding: Any, lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
                   feature_group_count: int, batch_group_count: int) -> Any:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = np.shape(rhs)
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:
        rhs = reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    dn = type(dimension_numbers)(out_spec, _swap01(rhs_spec), lhs_spec)
    pads = _lhs_padding([lhs_shape[i] for i in lhs_spec[2:]],
                        [rhs_shape[i] for i in rhs_spec[2:]], window_strides,
                        [np.shape(ct)[i] for i in out_spec[2:]], padding, lhs_dilation,
                        rhs_dilation)
    out = convolution_p.bind(ct, flip_p.bind(rhs, axes=tuple(rhs_spec[2:])),
                             window_strides=lhs_dilation, padding=pads,
                             lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
                             dimension_numbers=dn, feature_group_count=groups,
                             batch_group_count=1)
    if batch_group_count > 1:
        out = reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _transpose_rhs(ct: Any, lhs: Any, rhs_shape: tuple[int, ...], *, window_strides: Any,
                   padding: Any, lhs_dilation: Any, rhs_dilation: Any, dimension_numbers: Any,
                   feature_group_count: int, batch_group_count: int, dtype: Any) -> Any:
    if np.size(ct) == 0:
        return zeros(rhs_shape, dtype)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dn = type(dimension_numbers)(_swap01(lhs_spec), _swap01(out_spec), _swap01(rhs_spec))
    pads = _rhs_padding([np.shape(lhs)[i] for i in lhs_spec[2:]],
                        [rhs_shape[i] for i in rhs_spec[2:]], window_strides,
                        [np.shape(ct)[i] for i in out_spec[2:]], padding, lhs_dilation,
                        rhs_dilation)
    return convolution_p.bind(lhs, ct, window_strides=rhs_dilation, padding=pads,
                              lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
                              dimension_numbers=dn, feature_group_count=batch_group_count,
                              batch_group_count=feature_group_count)


def _convolution_transpose(ct: Cotangent, lhs: MaybeUndefined, rhs: MaybeUndefined,
                           **params: Any) -> list[Any]:
    if is_undefined_primal(lhs):
        if is_undefined_primal(rhs):
            raise ValueError("gradrules.convolution is linear in lhs and in rhs, not jointly")
        return [_transpose_lhs(ct, tuple(lhs.aval.shape), rhs, **params), None]
    return [None, _transpose_rhs(ct, lhs, tuple(rhs.aval.shape), dtype=rhs.aval.dtype,
                                 **params)]


# batching --------------------------------------------------------------------
def _convolution_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, dimension_numbers: Any,
                       feature_group_count: int, batch_group_count: int,
                       **params: Any) -> BatchResult:
    """JAX's rule: a batched input folds the batch axis into its batch
    dimension (or, with a batched kernel, into its features as extra groups);
    a batched kernel folds it into its output features."""
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fgc, bgc = feature_group_count, batch_group_count

    def conv(a: Any, b: Any, f: int, g: int) -> Any:
        return convolution_p.bind(a, b, dimension_numbers=dimension_numbers,
                                  feature_group_count=f, batch_group_count=g, **params)

    size = np.shape(lhs)[ld] if ld is not None else np.shape(rhs)[rd]
    if size == 0:
        lhs0 = np.delete(np.shape(lhs), ld) if ld is not None else np.shape(lhs)
        rhs0 = np.delete(np.shape(rhs), rd) if rd is not None else np.shape(rhs)
        shape = conv_shape("convolution", tuple(lhs0), tuple(rhs0),
                           dimension_numbers=dimension_numbers, feature_group_count=fgc,
                           batch_group_count=bgc, **params)
        return zeros((0,) + shape, np.result_type(lhs)), 0
    if ld is not None and rd is not None:
        if bgc > 1:
            new_lhs = reshape_axis_into(ld, lhs_spec[0], lhs)
            bgc *= size
        else:
            new_lhs = reshape_axis_into(ld, lhs_spec[1], lhs)
            fgc *= size
        out = conv(new_lhs, reshape_axis_into(rd, rhs_spec[0], rhs), fgc, bgc)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if ld is not None:
        if bgc == 1:
            out = conv(reshape_axis_into(ld, lhs_spec[0], lhs), rhs, fgc, bgc)
            return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
        new_lhs = reshape_axis_out_of(lhs_spec[0] + int(ld <= lhs_spec[0]), bgc, lhs)
        new_lhs = reshape_axis_into(ld + int(lhs_spec[0] < ld), lhs_spec[0] + 1, new_lhs)
        new_lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = conv(new_lhs, rhs, fgc, bgc)
        return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    if fgc == 1 and bgc == 1:
        out = conv(lhs, reshape_axis_into(rd, rhs_spec[0], rhs), fgc, bgc)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    groups = max(fgc, bgc)
    new_rhs = reshape_axis_out_of(rhs_spec[0] + int(rd <= rhs_spec[0]), groups, rhs)
    new_rhs = reshape_axis_into(rd + int(rhs_spec[0] < rd), rhs_spec[0] + 1, new_rhs)
    new_rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = conv(lhs, new_rhs, fgc, bgc)
    out = reshape_axis_out_of(out_spec[1], groups, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    return reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


register_rules(convolution_p, linear=(("lhs",), ("rhs",)),
               jvp=partial(multilinear_jvp, convolution_p),
               transpose=_convolution_transpose, batch=_convolution_batch)
