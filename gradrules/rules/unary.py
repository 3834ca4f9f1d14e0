"""Rules of the unary math family: the named derivative of each op, composed
into its JVP by ``chain_rule`` (``t_out = t * d(x, out)``). neg is linear;
sign has a zero derivative."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ..core.primitive import register_rules
from ..core.registry import ZERO_DERIVATIVE
from ..primitives import unary as u
from ..primitives.arithmetic import add, divide, multiply, subtract
from ._common import elementwise_rules, linear_map_rules, marker_rules, unary_batch
from ._fused import transpose_to


def _abs_dx(x: Any, out: Any) -> Any:
    return u.sign(x)                                  # abs'(0) = sign(0) = 0


register_rules(u.abs_p, **elementwise_rules(u.abs_p, _abs_dx))


# neg is its own transpose.
register_rules(u.neg_p, linear=("x",),
               **linear_map_rules(u.neg_p, partial(transpose_to, u.neg_p, u.neg_p),
                                  batch=partial(unary_batch, u.neg_p)))


register_rules(u.sign_p, **marker_rules(u.sign_p, ZERO_DERIVATIVE))


def _exp_dx(x: Any, out: Any) -> Any:
    return out


register_rules(u.exp_p, **elementwise_rules(u.exp_p, _exp_dx))


def _exp2_dx(x: Any, out: Any) -> Any:
    return multiply(out, math.log(2.0))


register_rules(u.exp2_p, **elementwise_rules(u.exp2_p, _exp2_dx))


def _expm1_dx(x: Any, out: Any) -> Any:
    return add(out, 1.0)


register_rules(u.expm1_p, **elementwise_rules(u.expm1_p, _expm1_dx))


def _log_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(x)


register_rules(u.log_p, **elementwise_rules(u.log_p, _log_dx))


def _log2_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(multiply(x, math.log(2.0)))


register_rules(u.log2_p, **elementwise_rules(u.log2_p, _log2_dx))


def _log10_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(multiply(x, math.log(10.0)))


register_rules(u.log10_p, **elementwise_rules(u.log10_p, _log10_dx))


def _log1p_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(add(x, 1.0))


register_rules(u.log1p_p, **elementwise_rules(u.log1p_p, _log1p_dx))


def _sqrt_dx(x: Any, out: Any) -> Any:
    return divide(0.5, out)


register_rules(u.sqrt_p, **elementwise_rules(u.sqrt_p, _sqrt_dx))


def _rsqrt_dx(x: Any, out: Any) -> Any:
    return multiply(divide(out, x), -0.5)


register_rules(u.rsqrt_p, **elementwise_rules(u.rsqrt_p, _rsqrt_dx))


def _reciprocal_dx(x: Any, out: Any) -> Any:
    return u.neg(u.square(out))


register_rules(u.reciprocal_p, **elementwise_rules(u.reciprocal_p, _reciprocal_dx))


def _square_dx(x: Any, out: Any) -> Any:
    return multiply(x, 2)


register_rules(u.square_p, **elementwise_rules(u.square_p, _square_dx))


def _sin_dx(x: Any, out: Any) -> Any:
    return u.cos(x)


register_rules(u.sin_p, **elementwise_rules(u.sin_p, _sin_dx))


def _cos_dx(x: Any, out: Any) -> Any:
    return u.neg(u.sin(x))


register_rules(u.cos_p, **elementwise_rules(u.cos_p, _cos_dx))


def _tan_dx(x: Any, out: Any) -> Any:
    return add(u.square(out), 1.0)


register_rules(u.tan_p, **elementwise_rules(u.tan_p, _tan_dx))


def _asin_dx(x: Any, out: Any) -> Any:
    return u.rsqrt(subtract(1.0, u.square(x)))


register_rules(u.asin_p, **elementwise_rules(u.asin_p, _asin_dx))


def _acos_dx(x: Any, out: Any) -> Any:
    return u.neg(u.rsqrt(subtract(1.0, u.square(x))))


register_rules(u.acos_p, **elementwise_rules(u.acos_p, _acos_dx))


def _atan_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(add(u.square(x), 1.0))


register_rules(u.atan_p, **elementwise_rules(u.atan_p, _atan_dx))


def _sinh_dx(x: Any, out: Any) -> Any:
    return u.cosh(x)


register_rules(u.sinh_p, **elementwise_rules(u.sinh_p, _sinh_dx))


def _cosh_dx(x: Any, out: Any) -> Any:
    return u.sinh(x)


register_rules(u.cosh_p, **elementwise_rules(u.cosh_p, _cosh_dx))


def _tanh_dx(x: Any, out: Any) -> Any:
    return subtract(1.0, u.square(out))


register_rules(u.tanh_p, **elementwise_rules(u.tanh_p, _tanh_dx))


def _asinh_dx(x: Any, out: Any) -> Any:
    return u.rsqrt(add(u.square(x), 1.0))


register_rules(u.asinh_p, **elementwise_rules(u.asinh_p, _asinh_dx))


def _acosh_dx(x: Any, out: Any) -> Any:
    return u.rsqrt(subtract(u.square(x), 1.0))


register_rules(u.acosh_p, **elementwise_rules(u.acosh_p, _acosh_dx))


def _atanh_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(subtract(1.0, u.square(x)))


register_rules(u.atanh_p, **elementwise_rules(u.atanh_p, _atanh_dx))
