"""Rules of the unary math family: the named derivative of each op, composed
into its JVP by ``chain_rule`` (``t_out = t * d(x, out)``). neg is linear."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, ZERO_DERIVATIVE
from ..primitives import unary as u
from ..primitives.arithmetic import add, divide, multiply, subtract
from ._common import linear_jvp, register_elementwise_rules, unary_batch


def _abs_dx(x: Any, out: Any) -> Any:
    return u.sign(x)                                  # abs'(0) = sign(0) = 0


def _exp_dx(x: Any, out: Any) -> Any:
    return out


def _exp2_dx(x: Any, out: Any) -> Any:
    return multiply(out, math.log(2.0))


def _expm1_dx(x: Any, out: Any) -> Any:
    return add(out, 1.0)


def _log_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(x)


def _log2_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(multiply(x, math.log(2.0)))


def _log10_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(multiply(x, math.log(10.0)))


def _log1p_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(add(x, 1.0))


def _sqrt_dx(x: Any, out: Any) -> Any:
    return divide(0.5, out)


def _rsqrt_dx(x: Any, out: Any) -> Any:
    return multiply(divide(out, x), -0.5)


def _reciprocal_dx(x: Any, out: Any) -> Any:
    return u.neg(u.square(out))


def _square_dx(x: Any, out: Any) -> Any:
    return multiply(x, 2)


def _sin_dx(x: Any, out: Any) -> Any:
    return u.cos(x)


def _cos_dx(x: Any, out: Any) -> Any:
    return u.neg(u.sin(x))


def _tan_dx(x: Any, out: Any) -> Any:
    return add(u.square(out), 1.0)


def _asin_dx(x: Any, out: Any) -> Any:
    return u.rsqrt(subtract(1.0, u.square(x)))


def _acos_dx(x: Any, out: Any) -> Any:
    return u.neg(u.rsqrt(subtract(1.0, u.square(x))))


def _atan_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(add(u.square(x), 1.0))


def _sinh_dx(x: Any, out: Any) -> Any:
    return u.cosh(x)


def _cosh_dx(x: Any, out: Any) -> Any:
    return u.sinh(x)


def _tanh_dx(x: Any, out: Any) -> Any:
    return subtract(1.0, u.square(out))


def _asinh_dx(x: Any, out: Any) -> Any:
    return u.rsqrt(add(u.square(x), 1.0))


def _acosh_dx(x: Any, out: Any) -> Any:
    return u.rsqrt(subtract(u.square(x), 1.0))


def _atanh_dx(x: Any, out: Any) -> Any:
    return u.reciprocal(subtract(1.0, u.square(x)))


_PARTIALS = {
    u.abs_p: _abs_dx, u.exp_p: _exp_dx, u.exp2_p: _exp2_dx, u.expm1_p: _expm1_dx,
    u.log_p: _log_dx, u.log2_p: _log2_dx, u.log10_p: _log10_dx, u.log1p_p: _log1p_dx,
    u.sqrt_p: _sqrt_dx, u.rsqrt_p: _rsqrt_dx, u.reciprocal_p: _reciprocal_dx,
    u.square_p: _square_dx, u.sin_p: _sin_dx, u.cos_p: _cos_dx, u.tan_p: _tan_dx,
    u.asin_p: _asin_dx, u.acos_p: _acos_dx, u.atan_p: _atan_dx, u.sinh_p: _sinh_dx,
    u.cosh_p: _cosh_dx, u.tanh_p: _tanh_dx, u.asinh_p: _asinh_dx, u.acosh_p: _acosh_dx,
    u.atanh_p: _atanh_dx,
}
register_elementwise_rules(_PARTIALS)


def _neg_transpose(ct: Any, x: Any) -> list[Any]:
    return [u.neg(ct)]


register_rules(u.neg_p, jvp=partial(linear_jvp, u.neg_p), transpose=_neg_transpose,
               batch=partial(unary_batch, u.neg_p))
register_rules(u.sign_p, jvp=ZERO_DERIVATIVE, transpose=NOT_LINEAR,
               batch=partial(unary_batch, u.sign_p))
