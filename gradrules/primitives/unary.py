"""Elementwise unary math: abs, neg, sign, exponentials and logarithms,
powers and roots, trigonometric and hyperbolic functions and their inverses,
and the normalised sinc.

Each op is one primitive (reciprocal and sinc two: their derivatives
``reciprocal_slope`` and ``sinc_slope`` are ones of their own); the docstring
gives the derivative its JVP rule uses (see ``gradrules/rules/unary.py``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import Primitive
from ._elementwise import define_elementwise, elementwise_primitive
from ._fused import upcast

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "unary"

_unary: Callable[..., tuple[Primitive, Callable[..., Array]]] = partial(define_elementwise,
                                                                        family=FAMILY)


abs_p, abs = _unary("abs", jnp.abs, "|x|. d/dx = sign(x), with abs'(0) = 0 (as the core IR).",
                    kind="numeric")
neg_p, neg = _unary("neg", jnp.negative, "-x. Linear; its transpose is itself.",
                    kind="numeric", linear=(("x",),))
sign_p, sign = _unary("sign", jnp.sign, "sign(x) in {-1, 0, 1}. Derivative 0 everywhere.",
                      kind="numeric")
exp_p, exp = _unary("exp", jnp.exp, "e**x. d/dx = exp(x).")


def _exp2_impl(x: Array) -> Array:
    """jnp.exp2 in float32 for 16-bit input (cast at the end): XLA's bfloat16
    exp2 is off by 5% at x = 20 (995328 for 2**20, which bfloat16 holds)."""
    return jnp.exp2(upcast(x)).astype(x.dtype)


exp2_p, exp2 = _unary("exp2", _exp2_impl, """2**x, in float32 for 16-bit input (``jnp.exp2`` of bfloat16 20 is
995328, not 2**20).

d/dx = log(2) * 2**x.""", reference=jnp.exp2)
expm1_p, expm1 = _unary("expm1", jnp.expm1, """e**x - 1, accurate near 0.

d/dx = exp(x) (not expm1(x) + 1, JAX's ``jnp.expm1`` derivative, which is 0
where expm1 rounds to -1: x < -17 in float32).""")
log_p, log = _unary("log", jnp.log, "natural log. d/dx = 1 / x.")
log2_p, log2 = _unary("log2", jnp.log2, "log base 2. d/dx = 1 / (x log 2).")
log10_p, log10 = _unary("log10", jnp.log10, "log base 10. d/dx = 1 / (x log 10).")
log1p_p, log1p = _unary("log1p", jnp.log1p, "log(1 + x), accurate near 0. d/dx = 1 / (1 + x).")
sqrt_p, sqrt = _unary("sqrt", jnp.sqrt, "x**0.5. d/dx = 0.5 / sqrt(x).")


def _rsqrt_reference(x: ArrayLike) -> Array:
    return 1 / jnp.sqrt(x)


rsqrt_p, rsqrt = _unary("rsqrt", lax.rsqrt, "x**-0.5. d/dx = -0.5 * rsqrt(x) / x.",
                        reference=_rsqrt_reference)

cbrt_p, cbrt = _unary("cbrt", jnp.cbrt, """The real cube root x**(1/3), negative for x < 0.

d/dx = 1 / (3 cbrt(x)**2), written with the output; +inf at x == 0 (the
tangent is vertical there), as jnp.cbrt's.""")

def _reciprocal_slope_impl(x: Array) -> Array:
    """-(r * r), r = 1 / x: finite wherever -1 / x**2 is in the dtype, where
    -1 / (x * x) is -inf once x * x underflows (at |x| = 1e-19 in float32,
    where -1 / x**2 = -1e38; so is jnp.reciprocal's gradient). A lowering,
    never differentiated."""
    r = 1 / x
    return -(r * r)


reciprocal_slope_p = elementwise_primitive("reciprocal_slope", _reciprocal_slope_impl,
                                           family=FAMILY)


def reciprocal_slope(x: Any) -> Any:
    """-1 / x**2: the derivative of ``reciprocal`` as a primitive of its own,
    an internal one of the op reciprocal. Its JVP is t 2 r**3, r = 1 / x,
    written with ``reciprocal`` (``gradrules/rules/unary.py``). As a
    composite, -(r * r), its JVP held two negations (of -(r * r) and of
    reciprocal's own -r**2 tangent) that XLA, cancelling only adjacent ones,
    kept: 1.14x the FLOPs of jnp.reciprocal's Hessian-vector product."""
    return reciprocal_slope_p.bind(x)


reciprocal_p, reciprocal = _unary("reciprocal", jnp.reciprocal, """\
1 / x.

d/dx = -1 / x**2, the primitive ``reciprocal_slope``, whose own derivative
is 2 / x**3 (``gradrules/rules/unary.py``): a Hessian-vector product is one
division and products, no more than jnp.reciprocal's.""", internal=(reciprocal_slope_p,))

square_p, square = _unary("square", jnp.square, "x**2. d/dx = 2 x.", kind="numeric")
sin_p, sin = _unary("sin", jnp.sin, "sin x. d/dx = cos x.")
cos_p, cos = _unary("cos", jnp.cos, "cos x. d/dx = -sin x.")
tan_p, tan = _unary("tan", jnp.tan, "tan x. d/dx = 1 + tan(x)**2.")
asin_p, asin = _unary("asin", jnp.arcsin, "arcsin x on [-1, 1]. d/dx = 1 / sqrt(1 - x**2).")
acos_p, acos = _unary("acos", jnp.arccos, "arccos x on [-1, 1]. d/dx = -1 / sqrt(1 - x**2).")
atan_p, atan = _unary("atan", jnp.arctan, "arctan x. d/dx = 1 / (1 + x**2).")
sinh_p, sinh = _unary("sinh", jnp.sinh, "sinh x. d/dx = cosh x.")
cosh_p, cosh = _unary("cosh", jnp.cosh, "cosh x. d/dx = sinh x.")
tanh_p, tanh = _unary("tanh", jnp.tanh, "tanh x. d/dx = 1 - tanh(x)**2.")
asinh_p, asinh = _unary("asinh", jnp.arcsinh, "arcsinh x. d/dx = 1 / sqrt(x**2 + 1).")
acosh_p, acosh = _unary("acosh", jnp.arccosh, "arccosh x for x >= 1. d/dx = 1 / sqrt(x**2 - 1).")
atanh_p, atanh = _unary("atanh", jnp.arctanh, "arctanh x on (-1, 1). d/dx = 1 / (1 - x**2).")


def _sinc_impl(x: Array) -> Array:
    """sin(pi x) / (pi x), 1 at x == 0: jnp.sinc's value without its
    Maclaurin branch (which only serves jnp's own derivatives; gradrules'
    are the rules')."""
    pi_x = x * jnp.pi
    return jnp.where(x == 0, 1, jnp.sin(pi_x) / pi_x)


# sinc'(x) = x * sum_j c_j x**(2j), c_j = (-1)**(j+1) (2j+2) pi**(2j+2) / (2j+3)!
# (from sinc(x) = sum_k (-1)**k (pi x)**(2k) / (2k+1)!).
_SINC_SLOPE_SERIES = tuple((-1) ** (j + 1) * (2 * j + 2) * math.pi ** (2 * j + 2)
                           / math.factorial(2 * j + 3) for j in range(12))


def sinc_slope_series(dtype: Any) -> tuple[float, tuple[float, ...]]:
    """``(t, c)``: below |x| = t = eps**(1/16) of ``dtype`` (0.37 in float32,
    0.105 in float64, 0.74 in bfloat16) sinc'(x) is its Taylor series x
    P(x**2), P(y) = sum_j c[j] y**j, with the terms up to the first whose
    relative size |c_n / c_0| t**(2n) is below eps (5 in float32, 6 in
    float64, 4 in bfloat16): the omitted rest is below eps there. Above t,
    sinc'(x) and sinc'(x) / x are (cos(pi x) - sinc(x)) / x**k (k = 1, 2),
    which cancel near 0: by about eps / (3.3 x**2) in relative value (2 eps
    at t in float32), and the k-th derivative of the second by about eps /
    |x|**(k+2) (2e-12 for sinc's fourth at t in float64), where the series'
    are exact. Shared by ``sinc_slope``'s lowering and its JVP rule."""
    eps = float(np.finfo(dtype).eps)
    t = eps ** (1.0 / 16)
    c = _SINC_SLOPE_SERIES
    n = next(n for n in range(1, len(c)) if math.fabs(c[n] / c[0]) * t ** (2 * n) < eps)
    return t, c[:n]


def horner(y: Any, coefficients: tuple[float, ...],
           multiply: Callable[[Any, Any], Any] = operator.mul,
           add: Callable[[Any, Any], Any] = operator.add) -> Any:
    """sum_k coefficients[k] * y**k by Horner's rule, with ``multiply`` and
    ``add`` (jnp's operators in a lowering; gradrules ops in a rule,
    ``rules.unary.polynomial``)."""
    acc = multiply(y, coefficients[-1])
    for c in coefficients[-2:0:-1]:
        acc = multiply(add(acc, c), y)
    return add(acc, coefficients[0])


def _sinc_slope_impl(x: Array) -> Array:
    """(cos(pi x) - sin(pi x) / (pi x)) / x above t, x * P(x**2) below
    (``sinc_slope_series``). sin and cos share one argument and the formula
    takes sin(pi x) / (pi x) itself rather than sinc's output: the gradient
    needs no forward pass. A lowering, never differentiated (the JVP is the
    closed form of the rules), so one where suffices: the formula's 0 / 0 at
    x == 0 and the series' overflow at large x are not selected."""
    t, coefficients = sinc_slope_series(x.dtype)
    x2 = x * x
    pi_x = x * jnp.pi
    formula = (jnp.cos(pi_x) - jnp.sin(pi_x) / pi_x) / x
    return jnp.where(x2 <= t * t, x * horner(x2, coefficients), formula)


sinc_slope_p = elementwise_primitive("sinc_slope", _sinc_slope_impl, family=FAMILY)


def sinc_slope(x: Any) -> Any:
    """sinc'(x) = (cos(pi x) - sinc(x)) / x, 0 at x == 0: the derivative of
    ``sinc`` as a primitive of its own (``sinc_slope_series`` near 0), an
    internal one of the op sinc. Its JVP is t sinc''(x) = t (-pi**2 sinc(x)
    - 2 sinc'(x) / x), from differentiating x sinc(x) = sin(pi x) / pi
    twice (``gradrules/rules/unary.py``)."""
    return sinc_slope_p.bind(x)


sinc_p, sinc = _unary("sinc", _sinc_impl, """\
The normalised sinc sin(pi x) / (pi x), 1 at x == 0 (jnp.sinc).

d/dx = sinc'(x) = (cos(pi x) - sinc(x)) / x, the primitive ``sinc_slope``
(its Taylor series near 0), whose own derivative is the closed form
sinc''(x) = -pi**2 sinc(x) - 2 sinc'(x) / x (``gradrules/rules/unary.py``):
every order is finite and exact at and around x == 0 (sinc'(0) = 0,
sinc''(0) = -pi**2/3), and a Hessian-vector product is sinc, a cos, a short
polynomial and a few products.""", reference=jnp.sinc, internal=(sinc_slope_p,))
