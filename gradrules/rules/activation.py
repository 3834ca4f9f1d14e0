"""Rules of the activation family: the named derivative of each op, composed
into its JVP by ``chain_rule`` (``t_out = t * d(x, out, **params)``).

The derivatives at the kinks are those the docstrings of
``gradrules/primitives/activation.py`` state (relu'(0) = 0, clamp passes the
gradient at its bounds, hardtanh does not, ...). The smooth ones are written
so that every order stays finite at large |x|: sigmoid(-x) instead of
1 - sigmoid(x), and a double where for gelu beyond the |x| where its
derivative saturates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._jax import aval_of
from ..core.primitive import register_rules
from ..primitives import activation as a
from ..primitives._compose import indicator
from ..primitives.arithmetic import add, multiply
from ..primitives.compare import ge, gt, le, lt, where
from ..primitives.logical import logical_and
from ..primitives.special import erfc
from ..primitives.unary import abs, exp, neg, square
from ._common import elementwise_rules


def _sigmoid_dx(x: Any, out: Any) -> Any:
    return multiply(out, a.sigmoid(neg(x)))


register_rules(a.sigmoid_p, **elementwise_rules(a.sigmoid_p, _sigmoid_dx))


def _log_sigmoid_dx(x: Any, out: Any) -> Any:
    return a.sigmoid(neg(x))


register_rules(a.log_sigmoid_p, **elementwise_rules(a.log_sigmoid_p, _log_sigmoid_dx))


def _relu_dx(x: Any, out: Any) -> Any:
    return indicator(gt(x, 0), x)                     # relu'(0) = 0


register_rules(a.relu_p, **elementwise_rules(a.relu_p, _relu_dx))


def _leaky_relu_dx(x: Any, out: Any, *, negative_slope: float) -> Any:
    dtype = aval_of(x).dtype                          # slope at 0: negative_slope
    return where(gt(x, 0.0), np.ones((), dtype), np.asarray(negative_slope, dtype))


register_rules(a.leaky_relu_p, **elementwise_rules(a.leaky_relu_p, _leaky_relu_dx))


def _hardtanh_dx(x: Any, out: Any, *, min_val: float, max_val: float) -> Any:
    return indicator(logical_and(gt(x, min_val), lt(x, max_val)), x)    # 0 at the bounds


register_rules(a.hardtanh_p, **elementwise_rules(a.hardtanh_p, _hardtanh_dx))


def _hardswish_dx(x: Any, out: Any) -> Any:
    inside = add(multiply(x, 1.0 / 3.0), 0.5)        # (2 x + 3) / 6
    return where(le(x, -3.0), 0.0, where(ge(x, 3.0), 1.0, inside))


register_rules(a.hardswish_p, **elementwise_rules(a.hardswish_p, _hardswish_dx))


def _silu_dx(x: Any, out: Any) -> Any:
    return a.silu_slope(x, a.sigmoid(x))


register_rules(a.silu_p, **elementwise_rules(a.silu_p, _silu_dx))


# gelu ----------------------------------------------------------------------
_GELU_A = 0.044715
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
# |x| beyond which gelu' is exactly 0 or 1 in float64 (Phi(-40) and
# sigmoid(-2 u(25)) are below the smallest subnormal)
_GELU_EXACT_LIMIT = 40.0
_GELU_TANH_LIMIT = 25.0


def _gelu_exact_formula(x: Any) -> Any:
    """Phi(x) + x phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 (accurate for x << 0)."""
    cdf = multiply(erfc(multiply(x, -math.sqrt(0.5))), 0.5)
    pdf = multiply(exp(multiply(square(x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    return add(cdf, multiply(x, pdf))


def _gelu_tanh_formula(x: Any) -> Any:
    """s(2u) + 2 x s(2u) s(-2u) u'(x), u = c (x + a x**3), s = sigmoid: the
    same as (1 + tanh u) / 2 + x / 2 (1 - tanh(u)**2) u'(x), without the
    cancellation of 1 + tanh(u) for x << 0."""
    x2 = square(x)
    two_u = multiply(multiply(x, add(multiply(x2, _GELU_A), 1.0)), 2.0 * _SQRT_2_OVER_PI)
    cdf = a.sigmoid(two_u)
    du = multiply(add(multiply(x2, 3.0 * _GELU_A), 1.0), 2.0 * _SQRT_2_OVER_PI)
    return add(cdf, multiply(multiply(x, cdf), multiply(a.sigmoid(neg(two_u)), du)))


def _saturated(x: Any, limit: float, formula: Callable[[Any], Any]) -> Any:
    """``formula(x)`` for |x| <= limit and its limit [x > 0] beyond.

    Double where: beyond the limit the formula runs on a safe x = 0, so the
    overflow of its polynomial factors (x**2 in float16, ...) never meets an
    exp or a sigmoid that has underflowed to 0 (no inf * 0 = NaN in any
    order); the outer where picks the limit, whose derivatives are 0."""
    big = gt(abs(x), limit)
    return where(big, indicator(gt(x, 0.0), x), formula(where(big, 0.0, x)))


def _gelu_dx(x: Any, out: Any, *, approximate: bool) -> Any:
    if approximate:
        return _saturated(x, _GELU_TANH_LIMIT, _gelu_tanh_formula)
    return _saturated(x, _GELU_EXACT_LIMIT, _gelu_exact_formula)


register_rules(a.gelu_p, **elementwise_rules(a.gelu_p, _gelu_dx))


def _softplus_dx(x: Any, out: Any, *, beta: float, threshold: float) -> Any:
    bx = multiply(x, beta)                            # 1 where out = x
    return where(gt(bx, threshold), 1.0, a.sigmoid(bx))


register_rules(a.softplus_p, **elementwise_rules(a.softplus_p, _softplus_dx))


def _clamp_dx(x: Any, out: Any, *, min: float | None, max: float | None) -> Any:  # noqa: A002
    """1 where min <= x <= max (bounds included), 0 elsewhere."""
    masks = []
    if min is not None:
        masks.append(ge(x, min))
    if max is not None:
        masks.append(le(x, max))
    return indicator(masks[0] if len(masks) == 1 else logical_and(*masks), x)


register_rules(a.clamp_p, **elementwise_rules(a.clamp_p, _clamp_dx))
