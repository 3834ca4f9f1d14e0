"""Rules of the arithmetic family.

Linear pieces (add, subtract, the x-operand of divide, scale, ...) transpose
to catalog ops summed over the broadcast axes; the nonlinear ones get their
JVP from ``chain_rule`` (``elementwise_rules``) with the named partial
derivatives below.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, is_undefined_primal, is_zero)
from ..core.primitive import register_rules
from ..primitives._compose import unbroadcast
from ..primitives.activation import clamp, sigmoid
from ..primitives.arithmetic import (add, add_p, atan2_p, bias_add_p, div_scale_p, divide,
                                     divide_p, fmod_p, hypot_p, lerp_p, logaddexp_p, maximum_p,
                                     minimum_p, multiply, multiply_p, pow, pow_p, remainder_p,
                                     residual_add_p, scale_p, subtract, subtract_p)
from ..primitives.compare import eq, gt, lt, where
from ..primitives.logical import isnan
from ..primitives.reduction import sum_p
from ..primitives.rounding import floor, trunc
from ..primitives.shape import moveaxis
from ..primitives.unary import log, neg, reciprocal, square
from ._common import (add_tangents, broadcast_like, broadcasting_batch, chain_rule,
                      elementwise_rules, instantiate, linear_map_rules, unary_batch)
from ._fused import transpose_to


# add (and residual_add, subtract) ----------------------------------------------
def _sum_jvp(prim: Primitive, sign: float, primals: Sequence[Any],
             tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = t_x + sign * t_y (add, residual_add: +1; subtract: -1): one
    subtract where both tangents are there (not a negation and an add)."""
    out = prim.bind(*primals)
    tx, ty = tangents
    if sign < 0 and not is_zero(ty):
        t = neg(ty) if is_zero(tx) else subtract(tx, ty)
    else:
        t = add_tangents(tx, ty)
    return out, (_jax.zero_tangent(out) if is_zero(t) else broadcast_like(t, np.shape(out)))


def _sum_transpose(sign: float, ct: Cotangent, x: MaybeUndefined,
                   y: MaybeUndefined) -> list[Any]:
    """(ct, sign * ct), each summed down to its operand's shape."""
    ct_x = unbroadcast(ct, x.aval) if is_undefined_primal(x) else None
    ct_y = None
    if is_undefined_primal(y):
        ct_y = unbroadcast(neg(ct) if sign < 0 else ct, y.aval)
    return [ct_x, ct_y]


register_rules(add_p, linear=("x", "y"),
               jvp=partial(_sum_jvp, add_p, 1.0), transpose=partial(_sum_transpose, 1.0),
               batch=partial(broadcasting_batch, add_p))


# subtract ------------------------------------------------------------------
register_rules(subtract_p, linear=("x", "y"), jvp=partial(_sum_jvp, subtract_p, -1.0),
               transpose=partial(_sum_transpose, -1.0),
               batch=partial(broadcasting_batch, subtract_p))


# multiply ------------------------------------------------------------------
def _multiply_dx(x: Any, y: Any, out: Any) -> Any:
    return y


def _multiply_dy(x: Any, y: Any, out: Any) -> Any:
    return x


def _multiply_transpose(ct: Cotangent, x: MaybeUndefined, y: MaybeUndefined) -> list[Any]:
    """Linear in each operand separately: ct * y for x, or x * ct for y."""
    if is_undefined_primal(x):
        return [unbroadcast(multiply(ct, y), x.aval), None]
    return [None, unbroadcast(multiply(x, ct), y.aval)]


register_rules(multiply_p, linear=(("x",), ("y",)),
               jvp=chain_rule(multiply_p, _multiply_dx, _multiply_dy),
               transpose=_multiply_transpose, batch=partial(broadcasting_batch, multiply_p))


# divide --------------------------------------------------------------------
def _divide_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = t_x / y + ((-t_y r) r) x with r = 1 / y: t_x through divide
    itself (linear in its first operand); t_y negated and scaled by r twice
    at its own shape, before it broadcasts (no out kept). Transposed, x's
    cotangent is ct / y and y's the sum of ct x, scaled by r twice and
    negated after it (a negate of ct, at the output's size, was written out
    for the HVP's two sums to share: 1.14x its bytes): the two read ct
    independently (XLA runs them side by side), and no 1 / y is broadcast
    to the output's size for two loops to share (``-(t_y / y) out`` keeps
    one: 1.5x the bytes of jax.numpy's gradient). The gradient scales the
    sum by r after multiplying by x, finite wherever x / y**2 is, jitted
    too (a division by y twice, which XLA rewrites into one by ``y * y``,
    gave -inf at x = y = 1e-20 under jit); the forward-mode tangent, like
    jax.numpy's ``x * y**-2``, overflows where 1 / y**2 does (|y| < 5e-20
    in float32). r, not a division by y: XLA's CPU elementwise loops ran
    ``a * (1 / y)`` about 1.7x as fast as ``a / y``, and the HVP of an op
    whose derivative is ``OneOver`` (log, log1p, atan, ...) differentiates
    a division by x in x (log's HVP 1.00-1.04x jax.numpy's time, 1.5x
    with the divisions)."""
    x, y = primals
    tx, ty = tangents
    out = divide_p.bind(x, y)
    t: Tangent = _jax.zero_tangent(out)
    if not is_zero(tx):
        t = divide(tx, y)
    if not is_zero(ty):
        r = reciprocal(y)
        t_y = multiply(multiply(multiply(neg(ty), r), r), x)
        t = t_y if is_zero(t) else add(t, t_y)
    return out, (t if is_zero(t) else broadcast_like(t, np.shape(out)))


def _divide_transpose(ct: Cotangent, x: MaybeUndefined, y: MaybeUndefined) -> list[Any]:
    """ct / y for x, summed down to x's shape."""
    if is_undefined_primal(y):
        raise ValueError("gradrules.divide is not linear in its divisor y")
    return [unbroadcast(divide(ct, y), x.aval), None]


register_rules(divide_p, jvp=_divide_jvp, transpose=_divide_transpose,
               batch=partial(broadcasting_batch, divide_p), linear=("x",))


# pow -----------------------------------------------------------------------
def _pow_dx(x: Any, y: Any, out: Any) -> Any:
    """y * x**(y - 1), 0 where y == 0 (also at x == 0): there the exponent is
    taken as 0, and y * x**0 = 0 with no select after it; every derivative
    of that branch is finite too (the exponent's tangent is 0 there)."""
    safe_y = where(eq(y, 0.0), 1.0, y)
    return multiply(y, pow(x, subtract(safe_y, 1.0)))


def _pow_dy(x: Any, y: Any, out: Any) -> Any:
    """log(x) * x**y, 0 where x == 0."""
    x_zero = eq(x, 0.0)
    return where(x_zero, 0.0, multiply(log(where(x_zero, 1.0, x)), out))


register_rules(pow_p, **elementwise_rules(pow_p, _pow_dx, _pow_dy))


# maximum (and minimum) -------------------------------------------------------
def _tie_split(win: Any, x: Any, y: Any) -> Any:
    """[win] + 0.5 [x == y]: ties share the gradient evenly. Two selects of
    constants (jax.numpy's form), where the indicator's conversion and the
    sum counted 1.2x the FLOPs of JAX 0.11.2's gradient."""
    one, half, zero = (np.asarray(v, _jax.aval_of(x).dtype) for v in (1.0, 0.5, 0.0))
    return where(win, one, where(eq(x, y), half, zero))


def _gt_or_tie(x: Any, y: Any, out: Any) -> Any:
    """[x > y] + 0.5 [x == y]: d/dx of maximum, d/dy of minimum."""
    return _tie_split(gt(x, y), x, y)


def _lt_or_tie(x: Any, y: Any, out: Any) -> Any:
    """[x < y] + 0.5 [x == y]: d/dy of maximum, d/dx of minimum."""
    return _tie_split(lt(x, y), x, y)


register_rules(maximum_p, **elementwise_rules(maximum_p, _gt_or_tie, _lt_or_tie))


# minimum -------------------------------------------------------------------
register_rules(minimum_p, **elementwise_rules(minimum_p, _lt_or_tie, _gt_or_tie))


# remainder (and fmod) --------------------------------------------------------
def _mod_dx(x: Any, y: Any, out: Any) -> Any:
    return np.ones((), _jax.aval_of(out).dtype)


def _remainder_dy(x: Any, y: Any, out: Any) -> Any:
    return neg(floor(divide(x, y)))


register_rules(remainder_p, **elementwise_rules(remainder_p, _mod_dx, _remainder_dy))


# fmod ----------------------------------------------------------------------
def _fmod_dy(x: Any, y: Any, out: Any) -> Any:
    return neg(trunc(divide(x, y)))


register_rules(fmod_p, **elementwise_rules(fmod_p, _mod_dx, _fmod_dy))


# atan2 ---------------------------------------------------------------------
def _atan2_dx(x: Any, y: Any, out: Any) -> Any:
    return divide(y, add(square(x), square(y)))


def _atan2_dy(x: Any, y: Any, out: Any) -> Any:
    return neg(divide(x, add(square(x), square(y))))


register_rules(atan2_p, **elementwise_rules(atan2_p, _atan2_dx, _atan2_dy))


# logaddexp -------------------------------------------------------------------
def _logaddexp_weight(x: Any, y: Any) -> Any:
    """sigmoid(x - y), the weight of x. x - y is NaN only where x and y are
    the same infinity (or a NaN came in); there the weight is
    ``clamp(x + y, 0, 1/2)``: 0 at x = y = -inf, 1/2 at x = y = +inf, NaN
    for a NaN input (as jnp), every derivative 0 there; inside sigmoid
    the difference is taken as 0 there (a double where: no NaN and no
    derivative of it reaches any order). One isnan of the difference and
    two selects: a compare of x with y, isinf and a third select took 1.5x
    the FLOPs of jax.numpy's gradient."""
    d = subtract(x, y)
    nan = isnan(d)
    w = sigmoid(where(nan, 0.0, d))
    return where(nan, clamp(add(x, y), min=0.0, max=0.5), w)


def _logaddexp_dx(x: Any, y: Any, out: Any) -> Any:
    return _logaddexp_weight(x, y)


def _logaddexp_dy(x: Any, y: Any, out: Any) -> Any:
    return _logaddexp_weight(y, x)


register_rules(logaddexp_p, **elementwise_rules(logaddexp_p, _logaddexp_dx, _logaddexp_dy))


# hypot -----------------------------------------------------------------------
def _hypot_share(x: Any, out: Any) -> Any:
    """x / out, and 0 where out == 0 (double where: no 0 / 0 at any order)."""
    zero = eq(out, 0.0)
    return where(zero, 0.0, divide(where(zero, 0.0, x), where(zero, 1.0, out)))


def _hypot_dx(x: Any, y: Any, out: Any) -> Any:
    return _hypot_share(x, out)


def _hypot_dy(x: Any, y: Any, out: Any) -> Any:
    return _hypot_share(y, out)


register_rules(hypot_p, **elementwise_rules(hypot_p, _hypot_dx, _hypot_dy))


# lerp ------------------------------------------------------------------------
def _lerp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = lerp(t_x, t_y, w) + t_w (y - x): lerp itself on the tangents of
    the operands it is linear in, plus the weight's term."""
    x, y, w = primals
    tx, ty, tw = tangents
    out = lerp_p.bind(x, y, w)
    t: Tangent = _jax.zero_tangent(out)
    if not (is_zero(tx) and is_zero(ty)):
        t = lerp_p.bind(instantiate(tx, x), instantiate(ty, y), w)
    if not is_zero(tw):
        t = add_tangents(t, multiply(tw, subtract(y, x)))
    return out, (t if is_zero(t) else broadcast_like(t, np.shape(out)))


def _lerp_transpose(ct: Cotangent, x: MaybeUndefined, y: MaybeUndefined,
                    w: MaybeUndefined) -> list[Any]:
    """ct - ct w for x and ct w for y, each summed down to its shape: the
    two share the product ct w (jax.numpy's gradient of x + w (y - x) does
    the same), and their tangents along w are one product and its negation
    (ct (1 - w) took a product of its own: 1.5x the FLOPs of jax.numpy's
    Hessian-vector product)."""
    if is_undefined_primal(w):
        raise ValueError("gradrules.lerp is not linear in its weight w")
    ct_w = multiply(ct, w)
    ct_x = unbroadcast(subtract(ct, ct_w), x.aval) if is_undefined_primal(x) else None
    ct_y = unbroadcast(ct_w, y.aval) if is_undefined_primal(y) else None
    return [ct_x, ct_y, None]


register_rules(lerp_p, linear=("x", "y"), jvp=_lerp_jvp, transpose=_lerp_transpose,
               batch=partial(broadcasting_batch, lerp_p))


# residual_add --------------------------------------------------------------
register_rules(residual_add_p, linear=("a", "b"), jvp=partial(_sum_jvp, residual_add_p, 1.0),
               transpose=partial(_sum_transpose, 1.0),
               batch=partial(broadcasting_batch, residual_add_p))


# bias_add ------------------------------------------------------------------
def _bias_add_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = bias_add(t_x, t_bias), a broadcast of t_bias when t_x is zero."""
    x, b = primals
    tx, tb = tangents
    out = bias_add_p.bind(x, b)
    if is_zero(tb):
        return out, tx if not is_zero(tx) else _jax.zero_tangent(out)
    if is_zero(tx):
        return out, broadcast_like(tb, np.shape(out))
    return out, bias_add_p.bind(tx, tb)


def _bias_add_transpose(ct: Cotangent, x: MaybeUndefined, bias: MaybeUndefined) -> list[Any]:
    """ct for x; ct summed over every axis but the last for bias."""
    ct_b = None
    if is_undefined_primal(bias):
        ct_b = sum_p.bind(ct, axes=tuple(range(np.ndim(ct) - 1)), keepdims=False)
    return [ct if is_undefined_primal(x) else None, ct_b]


def _bias_add_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """A batched bias is no longer one vector: fall back to broadcasting add."""
    (x, b), (dx, db) = args, dims
    if db is None:
        return bias_add_p.bind(moveaxis(x, dx, 0), b), 0
    return broadcasting_batch(add_p, (x, b), (dx, db))


register_rules(bias_add_p, linear=("x", "bias"), jvp=_bias_add_jvp, transpose=_bias_add_transpose,
               batch=_bias_add_batch)


# scale (and div_scale) -------------------------------------------------------
# The same map again: x * s and x / s are self-adjoint.
register_rules(scale_p, linear=("x",),
               **linear_map_rules(scale_p, partial(transpose_to, scale_p, scale_p),
                                  batch=partial(unary_batch, scale_p)))


# div_scale -----------------------------------------------------------------
register_rules(div_scale_p, linear=("x",),
               **linear_map_rules(div_scale_p, partial(transpose_to, div_scale_p, div_scale_p),
                                  batch=partial(unary_batch, div_scale_p)))
