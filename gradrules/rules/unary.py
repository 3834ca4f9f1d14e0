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
    return u.horner(y, coefficients, multiply, add)


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
    return OneOver(x, 1.0 / math.log(2.0))


register_rules(u.log2_p, **elementwise_rules(u.log2_p, _log2_dx))


def _log10_dx(x: Any, out: Any) -> Any:
    return OneOver(x, 1.0 / math.log(10.0))


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
    return OneOver(u.square(out), 1.0 / 3.0)     # +inf at x == 0, as jnp.cbrt's


register_rules(u.cbrt_p, **elementwise_rules(u.cbrt_p, _cbrt_dx))


def _reciprocal_slope_dx(x: Any, out: Any) -> Any:
    """d/dx (-1 / x**2) = 2 r**3, r = 1 / x: no negation, so a
    Hessian-vector product is a division and five products per element
    (jnp.reciprocal's a division and six: 0.86x its FLOPs); r * r first, as
    the lowering, so every order is finite wherever its value is in the
    dtype."""
    r = u.reciprocal(x)
    return multiply(multiply(u.square(r), r), 2.0)


register_rules(u.reciprocal_slope_p,
               **elementwise_rules(u.reciprocal_slope_p, _reciprocal_slope_dx))


def _reciprocal_dx(x: Any, out: Any) -> Any:
    return u.reciprocal_slope(x)


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


def _sinc_slope_dx(x: Any, out: Any) -> Any:
    """sinc''(x) = -pi**2 sinc(x) - 2 q(x), q = sinc'(x) / x (x sinc(x) =
    sin(pi x) / pi differentiated twice: 2 sinc' + x sinc'' = -pi**2 x sinc).
    Below t (``sinc_slope_series``) q is the series' polynomial P(x**2),
    exact at 0 (q(0) = c_0 = -pi**2/3, so sinc''(0) = -pi**2/3) and in every
    order around it; above, (cos(pi x) - sinc(x)) / x**2. Double where: the
    quotient divides by 1 below t, the polynomial is taken at x**2 = 0 above
    it, so neither branch is inf or NaN where it is not selected, in any
    order.

    q takes sinc and cos rather than ``out / x``: a Hessian-vector product
    then evaluates sinc, a cos and P, not sinc' 's lowering (its series, and
    its sin(pi x) / (pi x), which XLA shared with sinc's in a loop of its
    own: 1.75x jnp's bytes); 0.7x jnp's FLOPs, where differentiating sinc'
    's own formula and series took 1.4x."""
    t, coefficients = u.sinc_slope_series(aval_of(x).dtype)
    small, x2s, safe = split_near_zero(x, t, squared=True)
    sinc = u.sinc(x)
    formula = divide(subtract(u.cos(multiply(x, math.pi)), sinc), u.square(safe))
    q = where(small, polynomial(x2s, coefficients), formula)
    return subtract(multiply(sinc, -math.pi ** 2), multiply(q, 2.0))


register_rules(u.sinc_slope_p, **elementwise_rules(u.sinc_slope_p, _sinc_slope_dx))


def _sinc_dx(x: Any, out: Any) -> Any:
    return u.sinc_slope(x)


register_rules(u.sinc_p, **elementwise_rules(u.sinc_p, _sinc_dx))
