"""Elementwise unary math: abs, neg, sign, exponentials and logarithms,
powers and roots, trigonometric and hyperbolic functions and their inverses,
and the normalised sinc.

Each op is one primitive; the docstring gives the derivative its JVP rule
uses (see ``gradrules/rules/unary.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import Primitive
from ._elementwise import define_elementwise
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

reciprocal_p, reciprocal = _unary("reciprocal", jnp.reciprocal, "1 / x. d/dx = -1 / x**2.")
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


sinc_p, sinc = _unary("sinc", _sinc_impl, """The normalised sinc sin(pi x) / (pi x), 1 at x == 0
(jnp.sinc).

d/dx = (cos(pi x) - sinc(x)) / x for |x| > eps**(1/16) of the dtype, and its
Taylor series x * sum_j c_j x**(2j) below (``gradrules/rules/unary.py``):
finite and exact at x == 0 in every order (sinc'(0) = 0, sinc''(0) = -pi**2/3).""",
                      reference=jnp.sinc)
