"""Rules of the special family: the named derivative of each op, composed into
its JVP by ``chain_rule`` (``t_out = t * d(x, out)``). The derivatives are
written with special functions again (lgamma -> digamma -> polygamma(1) ->
polygamma(2) ...), so every order stays inside the catalog."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import jax.numpy as jnp

from .._jax import aval_of
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives import special as s
from ..primitives.arithmetic import add, divide, multiply, subtract
from ..primitives.compare import le, where
from ..primitives.unary import abs, exp, neg, sign, square
from ._common import broadcasting_batch, chain_rule, unary_batch

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_dx(x: Any, out: Any) -> Any:
    return multiply(exp(neg(square(x))), _TWO_OVER_SQRT_PI)


def _erfc_dx(x: Any, out: Any) -> Any:
    return multiply(exp(neg(square(x))), -_TWO_OVER_SQRT_PI)


def _erfinv_dx(x: Any, out: Any) -> Any:
    return multiply(exp(square(out)), math.sqrt(math.pi) / 2.0)


def _lgamma_dx(x: Any, out: Any) -> Any:
    return s.digamma(x)


def _digamma_dx(x: Any, out: Any) -> Any:
    return s.polygamma_p.bind(x, n=1)


def _polygamma_dx(x: Any, out: Any, *, n: int) -> Any:
    return s.polygamma_p.bind(x, n=n + 1)


def _bessel_i0e_dx(x: Any, out: Any) -> Any:
    return subtract(s.bessel_i1e(x), multiply(sign(x), out))


def _bessel_i1e_dx(x: Any, out: Any) -> Any:
    """i0e(x) - i1e(x) (sign(x) + 1/x), and its limit 1/2 where |x| <= eps.

    Double where: the formula is evaluated at a safe x (1 where |x| <= eps),
    so neither it nor any of its derivatives is inf or NaN there; the outer
    where then picks the constant 1/2 (whose derivatives are 0)."""
    tiny = le(abs(x), float(jnp.finfo(aval_of(x).dtype).eps))
    safe = where(tiny, 1.0, x)
    formula = subtract(s.bessel_i0e(safe), add(multiply(sign(safe), out), divide(out, safe)))
    return where(tiny, 0.5, formula)


def _zeta_dx(x: Any, q: Any, out: Any) -> Any:
    raise NotImplementedError(
        "gradrules.zeta: the derivative with respect to x (the exponent) is not "
        "implemented; only q may be differentiated (d/dq = -x * zeta(x + 1, q))")


def _zeta_dq(x: Any, q: Any, out: Any) -> Any:
    return neg(multiply(x, s.zeta(add(x, 1.0), q)))


_PARTIALS = {
    s.erf_p: _erf_dx, s.erfc_p: _erfc_dx, s.erfinv_p: _erfinv_dx, s.lgamma_p: _lgamma_dx,
    s.digamma_p: _digamma_dx, s.polygamma_p: _polygamma_dx,
    s.bessel_i0e_p: _bessel_i0e_dx, s.bessel_i1e_p: _bessel_i1e_dx,
}
for _p, _d in _PARTIALS.items():
    register_rules(_p, jvp=chain_rule(_p, _d), transpose=NOT_LINEAR,
                   batch=partial(unary_batch, _p))

register_rules(s.zeta_p, jvp=chain_rule(s.zeta_p, _zeta_dx, _zeta_dq), transpose=NOT_LINEAR,
               batch=partial(broadcasting_batch, s.zeta_p))
