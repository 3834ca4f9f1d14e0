"""Rules of the reduction family.

sum and mean are linear (their transposes broadcast the cotangent back);
prod's JVP multiplies the tangent by the product of the others (in blocks of
4, exact with zeros); max and min share the tangent evenly among ties; var,
std and var_mean differentiate through the centered input; logsumexp through
the softmax normalised by the maximum (in float32 for 16-bit input), guarded
for all -inf slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_zero)
from ..core.numerics import acc_dtype
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import cast, full, indicator
from ..primitives.arithmetic import div_scale_p, divide, multiply, subtract
from ..primitives.compare import eq, gt, lt, where
from ..primitives.layout import pad, stack
from ..primitives.logical import isnan, logical_and
from ..primitives.reduction import (logsumexp_p, max_p, mean_p, min_p, prod_p,
                                    reduced_size, std_p, sum_p, var_mean_p, var_p)
from ..primitives.shape import broadcast_to_p, expand_dims_p, reshape_p, transpose_p
from ..primitives.slicing import select_p, slice_p
from ..primitives.rounding import floor
from ..primitives.unary import exp
from ._common import linear_jvp


def restore_reduced(ct: Any, shape: tuple[int, ...], axes: tuple[int, ...],
                    keepdims: bool) -> Any:
    """Broadcast a reduced array back to the operand's ``shape``."""
    if not keepdims and axes:
        ct = expand_dims_p.bind(ct, axes=axes)
    return broadcast_to_p.bind(ct, shape=tuple(shape)) if np.shape(ct) != tuple(shape) else ct


def reduction_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim], *,
                    axes: tuple[int, ...], keepdims: bool, **params: Any) -> BatchResult:
    """Batching of any ``axes``/``keepdims`` reduction: shift the axes around
    the batch axis, which stays where it is."""
    (x,), (d,) = args, dims
    new_axes = tuple(a if a < d else a + 1 for a in axes)
    out = prim.bind(x, axes=new_axes, keepdims=keepdims, **params)
    out_d = d if keepdims else d - sum(a < d for a in axes)
    return out, ((out_d,) * len(out) if prim.multiple_results else out_d)


def _reduce(prim: Primitive, v: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    return prim.bind(v, axes=axes, keepdims=keepdims)


# sum -------------------------------------------------------------------------
def _sum_transpose(ct: Cotangent, x: MaybeUndefined, *, axes: tuple[int, ...],
                   keepdims: bool) -> list[Any]:
    return [restore_reduced(ct, tuple(x.aval.shape), axes, keepdims)]


register_rules(sum_p, linear=("x",), jvp=partial(linear_jvp, sum_p), transpose=_sum_transpose,
               batch=partial(reduction_batch, sum_p))


# mean ------------------------------------------------------------------------
def _mean_transpose(ct: Cotangent, x: MaybeUndefined, *, axes: tuple[int, ...],
                    keepdims: bool) -> list[Any]:
    """ct / n broadcast back (a size-0 x takes an empty cotangent)."""
    shape = tuple(x.aval.shape)
    out = restore_reduced(ct, shape, axes, keepdims)
    n = reduced_size(shape, axes)
    return [div_scale_p.bind(out, scale=float(n)) if n > 1 else out]


register_rules(mean_p, linear=("x",), jvp=partial(linear_jvp, mean_p), transpose=_mean_transpose,
               batch=partial(reduction_batch, mean_p))


# prod ----------------------------------------------------------------------
def _flatten_reduced(v: Any, axes: tuple[int, ...]) -> Any:
    """``v`` with the reduced axes moved last and merged into one."""
    shape = np.shape(v)
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = tuple(kept) + tuple(axes)
    if perm != tuple(range(len(shape))):
        v = transpose_p.bind(v, permutation=perm)
    return reshape_p.bind(v, new_sizes=tuple(shape[i] for i in kept)
                          + (reduced_size(shape, axes),))


OTHERS_BLOCK = 4
"""The block length of ``product_of_others``."""


def product_of_others(v: Any) -> Any:
    """``out_i = prod_{j != i} v_j`` along the last axis, with no division
    (exact where v has zeros, at every derivative order).

    In blocks of 4 (the axis padded with ones): with a block's entries
    (a, b, c, d), ``ab = a b`` and ``cd = c d``, the others of a, b, c and d
    within the block are (b cd, a cd, ab d, ab c), each times the product of
    the other blocks: the same function of the block products ``ab cd``
    (recursively, on an axis 4 times shorter). About three products per
    entry and log_4(n) passes, with no intermediate of the full size (a
    prefix times suffix product holds both). Written in gradrules ops, so its
    derivatives are those of the products."""
    shape = tuple(np.shape(v))
    lead, n = shape[:-1], shape[-1]
    if n <= 1:
        return full(shape, 1, aval_of(v).dtype)
    m = -(-n // OTHERS_BLOCK)
    padded = pad(v, [(0, 0)] * len(lead) + [(0, m * OTHERS_BLOCK - n)], value=1)
    blocks = reshape_p.bind(padded, new_sizes=lead + (m, OTHERS_BLOCK))
    a, b, c, d = (select_p.bind(blocks, axis=len(lead) + 1, index=j)
                  for j in range(OTHERS_BLOCK))
    ab, cd = multiply(a, b), multiply(c, d)
    within = [multiply(b, cd), multiply(a, cd), multiply(ab, d), multiply(ab, c)]
    if m > 1:
        outside = product_of_others(multiply(ab, cd))
        within = [multiply(outside, w) for w in within]
    out = reshape_p.bind(stack(within, axis=-1), new_sizes=lead + (m * OTHERS_BLOCK,))
    if m * OTHERS_BLOCK == n:
        return out
    return slice_p.bind(out, start_indices=(0,) * len(shape), limit_indices=shape,
                        strides=(1,) * len(shape))


def zero_among_others(v: Any) -> Any:
    """True where another entry of v along the last axis is 0 and none is
    NaN (a NaN given stays NaN): the entry's own zero indicator (0 or 1) is
    below the count of zeros, and the count of NaNs is 0."""
    zero, nan = (cast(c, np.int32) for c in (eq(v, 0.0), isnan(v)))
    last = (np.ndim(v) - 1,)
    return logical_and(lt(zero, sum_p.bind(zero, axes=last, keepdims=True)),
                       eq(sum_p.bind(nan, axes=last, keepdims=True), 0))


def _prod_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axes: tuple[int, ...],
              keepdims: bool) -> JvpResult:
    """t_out = sum_i t_i prod_{j != i} x_j, the product of the others
    (``product_of_others``) over the reduced elements flattened into one
    axis: no division, exact with zeros at every order. Where another entry
    is 0 and the products overflowed to inf (a slice holding 3e38, -3e38 and
    0), the product of the others is 0, not inf * 0 = NaN (a where on the
    NaN alone, so the derivatives at finite zeros keep the product's); a NaN
    in the slice keeps its NaN."""
    (x,), (t,) = primals, tangents
    out = prod_p.bind(x, axes=axes, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    flat = _flatten_reduced(x, axes)
    last = np.ndim(flat) - 1
    others = product_of_others(flat)
    others = where(logical_and(isnan(others), zero_among_others(flat)), 0.0, others)
    t_out = sum_p.bind(multiply(_flatten_reduced(t, axes), others), axes=(last,),
                       keepdims=False)
    return out, reshape_p.bind(t_out, new_sizes=tuple(aval_of(out).shape))


register_rules(prod_p, jvp=_prod_jvp, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, prod_p))


# max / min -----------------------------------------------------------------
def _extremum_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Tangent], *,
                  axes: tuple[int, ...], keepdims: bool) -> JvpResult:
    """t_out = sum(t * at) / sum(at), at = [x == out]: ties share evenly."""
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axes=axes, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    at = eq(x, restore_reduced(out, np.shape(x), axes, keepdims))
    at = indicator(at, t)
    return out, divide(_reduce(sum_p, multiply(t, at), axes, keepdims),
                       _reduce(sum_p, at, axes, keepdims))


register_rules(max_p, jvp=partial(_extremum_jvp, max_p), transpose=NOT_LINEAR,
               batch=partial(reduction_batch, max_p))
register_rules(min_p, jvp=partial(_extremum_jvp, min_p), transpose=NOT_LINEAR,
               batch=partial(reduction_batch, min_p))


# var / std / var_mean ------------------------------------------------------
def _var_tangent(x: Any, t: Any, axes: tuple[int, ...], correction: float,
                 keepdims: bool) -> Any:
    """d var = 2 / (n - correction) * sum((x - mean) * t) (inf for n <= correction,
    as jax.numpy's normalizer max(n - correction, 0)), in float32 for 16-bit
    input. The mean is var_mean's, which is exact for a constant slice and
    cannot overflow (mean(x) of a float32 slice of 3e38 is inf, which made
    the derivative of its variance 0 infinite)."""
    dtype = aval_of(x).dtype
    acc = acc_dtype(dtype)
    x, t = cast(x, acc), cast(t, acc)
    m = var_mean_p.bind(x, axes=axes, correction=0.0, keepdims=True)[1]
    s = _reduce(sum_p, multiply(subtract(x, m), t), axes, keepdims)
    denom = max(reduced_size(np.shape(x), axes) - correction, 0.0)
    return cast(multiply(s, 2.0 / denom if denom else np.inf), dtype)


def _var_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axes: tuple[int, ...],
             correction: float, keepdims: bool) -> JvpResult:
    (x,), (t,) = primals, tangents
    out = var_p.bind(x, axes=axes, correction=correction, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    return out, _var_tangent(x, t, axes, correction, keepdims)


register_rules(var_p, jvp=_var_jvp, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, var_p))


def _std_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axes: tuple[int, ...],
             correction: float, keepdims: bool) -> JvpResult:
    """d std = d var / (2 std), and 0 where std == 0: the division is by a
    safe denominator and the result masked, so no order of derivative sees
    0 / 0."""
    (x,), (t,) = primals, tangents
    out = std_p.bind(x, axes=axes, correction=correction, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    flat = eq(out, 0.0)
    safe = where(flat, 1.0, out)
    t_out = divide(_var_tangent(x, t, axes, correction, keepdims), multiply(safe, 2.0))
    return out, where(flat, 0.0, t_out)


register_rules(std_p, jvp=_std_jvp, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, std_p))


def _var_mean_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                  axes: tuple[int, ...], correction: float, keepdims: bool) -> JvpResult:
    (x,), (t,) = primals, tangents
    out = var_mean_p.bind(x, axes=axes, correction=correction, keepdims=keepdims)
    if is_zero(t):
        return out, [_jax.zero_tangent(o) for o in out]
    return out, [_var_tangent(x, t, axes, correction, keepdims),
                 _reduce(mean_p, t, axes, keepdims)]


register_rules(var_mean_p, jvp=_var_mean_jvp, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, var_mean_p))


# logsumexp -----------------------------------------------------------------
def finite_max(x: Any, axes: tuple[int, ...]) -> Any:
    """The maximum of x over ``axes`` (kept), 0 where every entry is -inf or
    the axes are empty (max has no identity): a shift ``x - m`` that is <= 0
    and never -inf - -inf, in gradrules ops (``_fused.max_shift`` in
    jax.numpy)."""
    shape = np.shape(x)
    if reduced_size(shape, axes) == 0:
        return full(tuple(1 if i in axes else d for i, d in enumerate(shape)), 0,
                    aval_of(x).dtype)
    m = max_p.bind(x, axes=axes, keepdims=True)
    return where(eq(m, -np.inf), 0.0, m)


def detached_shift(x: Any, axes: tuple[int, ...]) -> Any:
    """``floor(finite_max(x, axes))`` (kept): a shift s with ``s <= m < s +
    1`` (``s = m`` once ``|m| >= 2**23`` in float32), m the finite maximum, so
    that ``exp(x - s) < e`` cannot overflow and sums to at least 1 (0 where
    every entry is -inf), and ``x - s`` is exact near the maximum (Sterbenz).
    A shift cancels out of ``exp(x - s) / sum exp(x - s)``; floor's
    derivative is a symbolic zero, so higher orders never differentiate the
    maximum (max's tie-splitting) only to cancel it."""
    return floor(finite_max(x, axes))


def _logsumexp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                   axes: tuple[int, ...], keepdims: bool) -> JvpResult:
    """t_out = sum(t e) / sum(e) over ``axes``, e = exp(x - s) with s the
    ``detached_shift`` (the softmax's weights, normalised by the maximum, so
    no rounded log-sum-exp enters: a row of 3e38, a bf16 row of -1e4), in
    float32 for 16-bit input; 0 where every entry is -inf (e = 0). The
    division comes after the sum, once per output, so the gradient is
    ``(ct / sum(e)) e``, as jax.nn.logsumexp's."""
    (x,), (t,) = primals, tangents
    out = logsumexp_p.bind(x, axes=axes, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    dtype = aval_of(x).dtype
    acc = acc_dtype(dtype)
    xa = cast(x, acc)
    e = exp(subtract(xa, detached_shift(xa, axes)))
    total = _reduce(sum_p, e, axes, keepdims)
    dot = _reduce(sum_p, multiply(cast(t, acc), e), axes, keepdims)
    return out, cast(divide(dot, where(gt(total, 0.0), total, 1.0)), dtype)


register_rules(logsumexp_p, jvp=_logsumexp_jvp, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, logsumexp_p))
