"""Rules of the unary math family: the named derivative of each op, composed
into its JVP by ``chain_rule`` (``t_out = t * d(x, out)``). neg is linear;
sign has a zero derivative.

``polynomial`` and ``split_near_zero`` are the pieces of a derivative whose
closed form divides by x (sinc here; bessel_i1e, bessel_i1 and bessel_j1 in
``rules/special.py``): the formula away from 0 and a Taylor series near it,
selected by a double where, so that every order of derivative stays finite
and exact at and around 0."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from .._jax import aval_of
from ..core.primitive import register_rules
from ..core.registry import ZERO_DERIVATIVE
from ..primitives import unary as u
from ..primitives.arithmetic import add, divide, multiply, subtract
from ..primitives.compare import le, where
from ._common import OneOver, elementwise_rules, linear_map_rules, marker_rules, unary_batch
from ._fused import transpose_to


def polynomial(y: Any, coefficients: tuple[float, ...]) -> Any:
    """sum_k coefficients[k] * y**k by Horner's rule, in gradrules ops."""
    acc = multiply(y, coefficients[-1])
    for c in coefficients[-2:0:-1]:
        acc = multiply(add(acc, c), y)
    return add(acc, coefficients[0])


def eps_root(x: Any, n: int) -> float:
    """eps**(1/n) of x's dtype: where a series near 0 takes over from a formula."""
    return float(np.finfo(aval_of(x).dtype).eps) ** (1.0 / n)


def split_near_zero(x: Any, t: float, *, squared: bool = False) -> tuple[Any, Any, Any]:
    """``(small, xs, safe)``: the mask |x| <= t, x where small (0 elsewhere)
    and x where not small (1 elsewhere). ``where(small, series(xs),
    formula(safe))`` is the double where: each branch is evaluated at a
    point where it and all its derivatives are finite, so no inf or NaN
    leaks from the branch that is not selected, in any order. With
    ``squared``, for a series in x**2: the mask is x**2 <= t**2 and ``xs``
    is x**2 where small (0 elsewhere), the one square serving both."""
    if squared:
        x2 = u.square(x)
        small = le(x2, t * t)
        return small, where(small, x2, 0.0), where(small, 1.0, x)
    small = le(u.abs(x), t)
    return small, where(small, x, 0.0), where(small, 1.0, x)


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
    return u.exp(x)                                   # out + 1 is 0 where out rounds to -1


register_rules(u.expm1_p, **elementwise_rules(u.expm1_p, _expm1_dx))


def _log_dx(x: Any, out: Any) -> Any:
    return OneOver(x)


register_rules(u.log_p, **elementwise_rules(u.log_p, _log_dx))


def _log2_dx(x: Any, out: Any) -> Any:
    return OneOver(multiply(x, math.log(2.0)))


register_rules(u.log2_p, **elementwise_rules(u.log2_p, _log2_dx))


def _log10_dx(x: Any, out: Any) -> Any:
    return OneOver(multiply(x, math.log(10.0)))


register_rules(u.log10_p, **elementwise_rules(u.log10_p, _log10_dx))


def _log1p_dx(x: Any, out: Any) -> Any:
    return OneOver(add(x, 1.0))


register_rules(u.log1p_p, **elementwise_rules(u.log1p_p, _log1p_dx))


def _sqrt_dx(x: Any, out: Any) -> Any:
    return divide(0.5, out)


register_rules(u.sqrt_p, **elementwise_rules(u.sqrt_p, _sqrt_dx))


def _rsqrt_dx(x: Any, out: Any) -> Any:
    # -0.5 out / x with the constant taken first: what the JVP's terms share
    # is then the product, which XLA copies into each loop, not the division
    # (XLA kept rsqrt(x) / x apart as a loop of its own: 6x the time of jnp's
    # Hessian-vector product on the CPU). -0.5 out**3 would add a product to
    # every second derivative through rsqrt (asin, acos, asinh, acosh).
    return divide(multiply(out, -0.5), x)


register_rules(u.rsqrt_p, **elementwise_rules(u.rsqrt_p, _rsqrt_dx))


def _cbrt_dx(x: Any, out: Any) -> Any:
    return OneOver(multiply(u.square(out), 3.0))     # +inf at x == 0, as jnp.cbrt's


register_rules(u.cbrt_p, **elementwise_rules(u.cbrt_p, _cbrt_dx))


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
    return OneOver(add(u.square(x), 1.0))


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
    return OneOver(subtract(1.0, u.square(x)))


register_rules(u.atanh_p, **elementwise_rules(u.atanh_p, _atanh_dx))


# sinc'(x) = x * sum_j c_j x**(2j), c_j = (-1)**(j+1) (2j+2) pi**(2j+2) / (2j+3)!
# (from sinc(x) = sum_k (-1)**k (pi x)**(2k) / (2k+1)!).
_SINC_DX = tuple((-1) ** (j + 1) * (2 * j + 2) * math.pi ** (2 * j + 2) / math.factorial(2 * j + 3)
                 for j in range(12))


def sinc_dx_terms(t: float, eps: float) -> int:
    """How many terms of sinc' 's series are used below t: up to the first
    whose relative size |c_n / c_0| t**(2n) is below eps (5 in float32 at
    t = 0.37, 6 in float64 at t = 0.105, 4 in bfloat16 at t = 0.74): the
    omitted rest is below eps there, and the series no longer than needed."""
    return next(n for n in range(1, len(_SINC_DX))
                if abs(_SINC_DX[n] / _SINC_DX[0]) * t ** (2 * n) < eps)


def _sinc_dx(x: Any, out: Any) -> Any:
    """(cos(pi x) - sin(pi x) / (pi x)) / x where |x| > t = eps**(1/16), its
    Taylor series x * P(x**2) below (``sinc_dx_terms`` terms). The formula
    cancels near 0 (its k-th derivative is off by about eps / |x|**(k+1),
    2e-12 for the third at t in float64); the series is exact there, at 0
    too, in every order. Double where: the formula is evaluated at x = 1
    below t, the series at x**2 = 0 above it (x * P(0) is finite for any x),
    so neither branch is inf or NaN where it is not selected, in any order.

    sin and cos share one argument, and the formula takes sin(pi x) / (pi x)
    at its safe x rather than ``out``: the gradient needs no forward pass
    (19 FLOPs an element where jnp.sinc's takes 18; 9 series terms and
    ``out`` took 34)."""
    t = eps_root(x, 16)
    small, x2s, safe = split_near_zero(x, t, squared=True)
    y = multiply(safe, math.pi)
    formula = divide(subtract(u.cos(y), divide(u.sin(y), y)), safe)
    series = multiply(x, polynomial(x2s, _SINC_DX[:sinc_dx_terms(t, eps_root(x, 1))]))
    return where(small, series, formula)


register_rules(u.sinc_p, **elementwise_rules(u.sinc_p, _sinc_dx))
