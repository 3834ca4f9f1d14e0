"""Rules of the scan family: cumsum (linear; its transpose is the reversed
cumsum), cumprod (exact derivatives through linear_recurrence), cummax
(tangent gathered at the running argmax), logcumsumexp (a running
softmax-weighted sum, as a linear_recurrence) and linear_recurrence (linear in
b; its two directions transpose to each other)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_undefined_primal, is_zero)
from ..core.numerics import acc_dtype
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import cast
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.compare import eq, where
from ..primitives.unary import exp
from ..primitives.gather import take_along_axis_p
from ..primitives.scan import (cummax_p, cumprod_p, cumsum_p, linear_recurrence_p,
                               logcumsumexp_p)
from ..primitives.shape import broadcast_in_dim_p
from ._common import add_tangents, linear_jvp, shifted_front_batch
from .reduction import finite_max


def axis_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim], *, axis: int,
               **params: Any) -> BatchResult:
    """Batching of a primitive that acts along ``axis`` and keeps the other
    axes in place (scans, sort, topk): the batch axis stays where it is and
    ``axis`` moves past it. Several operands are brought to a common front
    batch axis first (an unbatched one is broadcast)."""
    if len(args) == 1:   # the batch axis stays, axis moves past it
        (x,), (d,) = args, dims
        out = prim.bind(x, axis=axis + (d <= axis), **params)
        return out, ((d,) * len(out) if prim.multiple_results else d)
    return shifted_front_batch(prim, ("axis",), args, dims, axis=axis, **params)


# cumsum ----------------------------------------------------------------------
def _cumsum_transpose(ct: Cotangent, x: MaybeUndefined, *, axis: int, reverse: bool
                      ) -> list[Any]:
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


register_rules(cumsum_p, linear=("x",),
               jvp=partial(linear_jvp, cumsum_p), transpose=_cumsum_transpose,
               batch=partial(axis_batch, cumsum_p))


# cumprod ---------------------------------------------------------------------
def _cumprod_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axis: int,
                 reverse: bool, exclusive: bool) -> JvpResult:
    """E = exclusive product, dE = linear_recurrence(x, t * E); the inclusive
    product x * E has the tangent t * E + x * dE."""
    (x,), (t,) = primals, tangents
    out = cumprod_p.bind(x, axis=axis, reverse=reverse, exclusive=exclusive)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    excl = out if exclusive else cumprod_p.bind(x, axis=axis, reverse=reverse, exclusive=True)
    t_excl = linear_recurrence_p.bind(x, multiply(t, excl), axis=axis, reverse=reverse)
    if exclusive:
        return out, t_excl
    return out, add(multiply(t, excl), multiply(x, t_excl))


register_rules(cumprod_p, jvp=_cumprod_jvp, transpose=NOT_LINEAR,
               batch=partial(axis_batch, cumprod_p))


# cummax ----------------------------------------------------------------------
def running_argmax(x: Any, out: Any, axis: int, reverse: bool) -> Any:
    """Index of the running maximum ``out`` of ``x`` along ``axis``: the last
    position, in scan order, holding the value out_i (an int32 array).

    Up to i the positions with x_k == out_k are where the running maximum was
    set or tied; the latest of them holds out_i, so a cummax over their scan
    positions finds it.
    """
    shape = tuple(np.shape(x))
    n = shape[axis]
    order = np.arange(n, dtype=np.int32)
    key = broadcast_in_dim_p.bind(order[::-1].copy() if reverse else order, shape=shape,
                                  broadcast_dimensions=(axis,))
    hit = where(eq(x, out), key, np.zeros((), np.int32))
    last = cummax_p.bind(hit, axis=axis, reverse=reverse)
    return subtract(np.asarray(n - 1, np.int32), last) if reverse else last


def _cummax_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axis: int,
                reverse: bool) -> JvpResult:
    """t_out = take_along_axis(t, running_argmax): linear in t. The index is
    in ``[0, n)`` by construction (``in_range``: neither the gather nor its
    transpose wraps or clips it): a running max of scan positions in
    ``[0, n)``, 0 where x_k != out_k (a NaN too), and for ``reverse``
    ``n - 1`` minus one."""
    (x,), (t,) = primals, tangents
    out = cummax_p.bind(x, axis=axis, reverse=reverse)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    index = running_argmax(x, out, axis, reverse)
    return out, take_along_axis_p.bind(t, index, axis=axis, in_range=True)


register_rules(cummax_p, jvp=_cummax_jvp, transpose=NOT_LINEAR,
               batch=partial(axis_batch, cummax_p))


# logcumsumexp ----------------------------------------------------------------
def _logcumsumexp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axis: int,
                      reverse: bool) -> JvpResult:
    """t_out_i = sum_{j <= i} exp(x_j - out_i) t_j as ``u_i = (1 - w_i) u_{i-1}
    + w_i t_i``, w = exp(x - out) in [0, 1]: the exclusive linear_recurrence s
    with coefficients a = 1 - w, then u = a s + w t.

    w is taken as ``exp(z - logcumsumexp(z))`` with ``z = x - m``, m the
    maximum along the axis (``finite_max``), in float32 for 16-bit input:
    shift-invariant, so m's derivatives cancel, and free of the rounding of
    a large out (a float32 row of 3e38, or a bfloat16 row of 1e4, whose out
    rounds back to x and gave w = 1). 0 where every entry so far is -inf (a
    double where, so no -inf - -inf at any order)."""
    (x,), (t,) = primals, tangents
    out = logcumsumexp_p.bind(x, axis=axis, reverse=reverse)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    dtype = aval_of(x).dtype
    acc = acc_dtype(dtype)
    z = subtract(cast(x, acc), finite_max(cast(x, acc), (axis,)))
    out_z = logcumsumexp_p.bind(z, axis=axis, reverse=reverse)
    dead = eq(out_z, -np.inf)
    w = where(dead, 0.0, exp(subtract(where(dead, 0.0, z), where(dead, 0.0, out_z))))
    a = subtract(1.0, w)
    wt = multiply(w, cast(t, acc))
    s = linear_recurrence_p.bind(a, wt, axis=axis, reverse=reverse)
    return out, cast(add(multiply(a, s), wt), dtype)


register_rules(logcumsumexp_p, jvp=_logcumsumexp_jvp, transpose=NOT_LINEAR,
               batch=partial(axis_batch, logcumsumexp_p))


# linear_recurrence -----------------------------------------------------------
def _linear_recurrence_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, axis: int,
                           reverse: bool) -> JvpResult:
    """ds = linear_recurrence(a, t_b + t_a * s): linear in (t_a, t_b)."""
    (a, b), (ta, tb) = primals, tangents
    out = linear_recurrence_p.bind(a, b, axis=axis, reverse=reverse)
    rhs = add_tangents(tb, multiply(ta, out) if not is_zero(ta) else ta)
    if is_zero(rhs):
        return out, _jax.zero_tangent(out)
    return out, linear_recurrence_p.bind(a, rhs, axis=axis, reverse=reverse)


def _linear_recurrence_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined, *,
                                 axis: int, reverse: bool) -> list[Any]:
    if is_undefined_primal(a):
        raise ValueError("gradrules.linear_recurrence is not linear in its coefficients a")
    return [None, linear_recurrence_p.bind(a, ct, axis=axis, reverse=not reverse)]


register_rules(linear_recurrence_p, linear=("b",), jvp=_linear_recurrence_jvp,
               transpose=_linear_recurrence_transpose,
               batch=partial(axis_batch, linear_recurrence_p))
