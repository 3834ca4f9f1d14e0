"""Rules of the special family: the named derivative of each op, composed into
its JVP by ``chain_rule`` (``t_out = t * d(x, out)``). The derivatives are
written with special functions again (lgamma -> digamma -> polygamma(1) ->
polygamma(2) ...), so every order stays inside the catalog."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._jax import aval_of
from ..core.numerics import acc_dtype
from ..core.primitive import register_rules
from ..primitives import special as s
from ..primitives._compose import cast
from ..primitives.arithmetic import add, divide, multiply, subtract
from ..primitives.compare import where
from ..primitives.unary import abs, exp, neg, sign, square
from ._common import elementwise_rules
from .unary import eps_root, polynomial, split_near_zero

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def in_acc_dtype(f: Any, x: Any, out: Any) -> tuple[Any, Any]:
    """``(x, f(x))`` in the accumulation dtype (float32 for 16-bit x; the
    callers cast their derivative back): ``out`` itself where x already has
    it, else f recomputed there, for derivatives that cancel (erfcx', i0e',
    i1e' subtract near-equal terms, which a bfloat16 ``out`` gets wrong by
    percents)."""
    acc = acc_dtype(aval_of(x).dtype)
    if np.dtype(aval_of(x).dtype) == np.dtype(acc):
        return x, out
    xa = cast(x, acc)
    return xa, f(xa)


def _erf_dx(x: Any, out: Any) -> Any:
    return multiply(exp(neg(square(x))), _TWO_OVER_SQRT_PI)


register_rules(s.erf_p, **elementwise_rules(s.erf_p, _erf_dx))


def _erfc_dx(x: Any, out: Any) -> Any:
    return multiply(exp(neg(square(x))), -_TWO_OVER_SQRT_PI)


register_rules(s.erfc_p, **elementwise_rules(s.erfc_p, _erfc_dx))


def _erfinv_dx(x: Any, out: Any) -> Any:
    return multiply(exp(square(out)), math.sqrt(math.pi) / 2.0)


register_rules(s.erfinv_p, **elementwise_rules(s.erfinv_p, _erfinv_dx))


def _erfcx_derivative_dx(x: Any, out: Any, *, n: int) -> Any:
    """d/dx erfcx^(n) = erfcx^(n+1): the primitive of the next order, whose
    lowering takes the asymptotic series where the recurrence cancels (a
    rule written with the outputs, erfcx'' = 2 erfcx + 2 x erfcx', would
    cancel there: about eps x**2 relative, 10% at x = 1e3 in float32)."""
    return s.erfcx_derivative(x, n + 1)


register_rules(s.erfcx_derivative_p,
               **elementwise_rules(s.erfcx_derivative_p, _erfcx_derivative_dx))


def _erfcx_dx(x: Any, out: Any) -> Any:
    return s.erfcx_derivative(x, 1)


register_rules(s.erfcx_p, **elementwise_rules(s.erfcx_p, _erfcx_dx))


def _lgamma_dx(x: Any, out: Any) -> Any:
    return s.digamma(x)


register_rules(s.lgamma_p, **elementwise_rules(s.lgamma_p, _lgamma_dx))


def _digamma_dx(x: Any, out: Any) -> Any:
    return s.polygamma_p.bind(x, n=1)


register_rules(s.digamma_p, **elementwise_rules(s.digamma_p, _digamma_dx))


def _bessel_i0e_dx(x: Any, out: Any) -> Any:
    """i1e(x) - sign(x) i0e(x), in float32 for 16-bit input (``in_acc_dtype``)."""
    xa, i0e = in_acc_dtype(s.bessel_i0e, x, out)
    return cast(subtract(s.bessel_i1e(xa), multiply(sign(xa), i0e)), aval_of(x).dtype)


register_rules(s.bessel_i0e_p, **elementwise_rules(s.bessel_i0e_p, _bessel_i0e_dx))


def _i1e_dx_taylor(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Taylor coefficients of f'(u) = sum_m m f_m u**(m-1), m = 1 .. n, where
    f(u) = sum_m f_m u**m = exp(-u) (I1'(u) - I1(u)) is the derivative of
    i1e on u >= 0, split into the even powers of u (f_1, 3 f_3, ...) and
    the odd ones (2 f_2, 4 f_4, ...). Exact rationals, from I1(u) = sum_k
    (u/2)**(2k+1) / (k! (k+1)!) and exp(-u) = sum_j (-u)**j / j!."""
    g = []                                    # I1'(u) - I1(u) = sum_m g_m u**m
    for m in range(n + 1):
        k = m // 2
        c = Fraction(1, 2 ** (2 * k + 1) * math.factorial(k) * math.factorial(k + 1))
        g.append((2 * k + 1) * c if m % 2 == 0 else -c)
    f = [sum((Fraction((-1) ** (m - j), math.factorial(m - j)) * g[j] for j in range(m + 1)),
             Fraction(0)) for m in range(n + 1)]
    df = [m * f[m] for m in range(1, n + 1)]
    return tuple(float(c) for c in df[0::2]), tuple(float(c) for c in df[1::2])


# f_0 = 1/2, f_1 = -1, f_2 = 15/16: i1e'(0) = 1/2, i1e''(0+) = -1, i1e'''(0) = 15/8.
# |f_m| <= 2**(m-1) / m!; f_1 .. f_13: for |x| <= eps**(1/8) (0.011 in float64,
# 0.14 in float32, 0.42 in float16, 0.54 in bfloat16) the first omitted term of
# i1e' and its first four derivatives are below eps / 1000.
_I1E_DX2_EVEN, _I1E_DX2_ODD = _i1e_dx_taylor(13)


def _bessel_i1e_slope_dx(x: Any, out: Any) -> Any:
    """i1e''(x) = (i1e(x) (1 - |x|) / x - i1e'(x) (1 + 2 |x|)) / x where
    |x| > t, its Taylor series below (for x > 0 from i1e = exp(-x) I1 and
    x**2 I1'' + x I1' = (x**2 + 1) I1; i1e'' is odd). Each of i1e and i1e'
    appears once: written as (q - i1e') / x - sign(x) (q + 2 i1e'), q =
    i1e / x, XLA kept i1e and q apart as loops of their own (4.75x the bytes
    of jax.numpy's Hessian-vector product, 1.05x its FLOPs).

    The formula cancels near 0 (i1e / x - i1e' ~ |x| / 2: the k-th
    derivative of i1e it gives is off by about eps / |x|**(k-1)), so where
    |x| <= t = eps**(1/8) the series of i1e''(x) = sign(x) f'(|x|) is used
    (``_i1e_dx_taylor``), written as sign(x) C(x**2) + x D(x**2) with C and D
    its even and odd coefficients. Written so, the derivatives composed
    through sign (sign' = 0) are the true ones for x != 0, and at x == 0 the
    mean of the two one-sided limits (i1e'' = 0, i1e''' = 15/8). Above t
    the formula's third derivative is off by about eps**(3/4), its second by
    eps**(7/8).

    Double where: the formula's 1/x is evaluated at 1 where |x| <= t and the
    series at 0 where |x| > t, so neither branch nor any of its derivatives
    is inf or NaN where it is not selected. In float32 for 16-bit input
    (``in_acc_dtype``)."""
    dtype = aval_of(x).dtype
    x, out = in_acc_dtype(s.bessel_i1e_slope, x, out)
    small, xs, safe = split_near_zero(x, eps_root(x, 8))
    ax = abs(x)
    formula = divide(subtract(divide(multiply(s.bessel_i1e(x), subtract(1.0, ax)), safe),
                              multiply(out, add(multiply(ax, 2.0), 1.0))), safe)
    x2 = square(xs)
    series = add(multiply(sign(xs), polynomial(x2, _I1E_DX2_EVEN)),
                 multiply(xs, polynomial(x2, _I1E_DX2_ODD)))
    return cast(where(small, series, formula), dtype)


register_rules(s.bessel_i1e_slope_p,
               **elementwise_rules(s.bessel_i1e_slope_p, _bessel_i1e_slope_dx))


def _bessel_i1e_dx(x: Any, out: Any) -> Any:
    return s.bessel_i1e_slope(x)


register_rules(s.bessel_i1e_p, **elementwise_rules(s.bessel_i1e_p, _bessel_i1e_dx))


def _bessel_i0_dx(x: Any, out: Any) -> Any:
    return s.bessel_i1(x)


register_rules(s.bessel_i0_p, **elementwise_rules(s.bessel_i0_p, _bessel_i0_dx))


def _order_one_dx_taylor(sign: int, n: int) -> tuple[float, ...]:
    """Coefficients of x**(2k), k < n, in I1'(x) (``sign`` 1) or J1'(x)
    (``sign`` -1): sign**k (2k+1) / (2**(2k+1) k! (k+1)!), from
    I1(x), J1(x) = sum_k sign**k (x/2)**(2k+1) / (k! (k+1)!)."""
    return tuple(float(Fraction(sign ** k * (2 * k + 1),
                                2 ** (2 * k + 1) * math.factorial(k) * math.factorial(k + 1)))
                 for k in range(n))


# 8 terms: below t = eps**(1/16) (0.105 in float64, 0.37 in float32, 0.74 in
# bfloat16) the first omitted term, 17 (t/2)**16 / (2 8! 9!) (4e-30 of the
# leading term in float64, 1e-16 in bfloat16), and its derivatives are far below eps.
_I1_DX = _order_one_dx_taylor(1, 8)
_J1_DX = _order_one_dx_taylor(-1, 8)


def _order_one_dx(order_zero: Any, series: tuple[float, ...], x: Any, out: Any) -> Any:
    """C1'(x) = C0(x) - C1(x) / x (C = I or J, ``order_zero`` C0's public
    function) where |x| > t = eps**(1/16), its Taylor series in x**2 below.

    C1(x) / x is smooth, but its derivatives, written by the quotient rule,
    cancel near 0 (the k-th is off by about eps / |x|**k, 2e-13 for the third
    at t in float64) and are NaN at 0; the even series is exact there in
    every order (C1'(0) = 1/2, and the third derivative of C1 at 0 is 3/8 for
    I1, -3/8 for J1). Double where: the formula's 1/x at 1 where |x| <= t,
    the series at 0 elsewhere; C0, finite with every derivative at 0, at x
    itself (C0(safe x) made the HVP materialise safe x: 1.75x the bytes of
    jax.numpy's)."""
    small, x2s, safe = split_near_zero(x, eps_root(x, 16), squared=True)
    formula = subtract(order_zero(x), divide(out, safe))
    return where(small, polynomial(x2s, series), formula)


def _bessel_i1_dx(x: Any, out: Any) -> Any:
    return _order_one_dx(s.bessel_i0, _I1_DX, x, out)


register_rules(s.bessel_i1_p, **elementwise_rules(s.bessel_i1_p, _bessel_i1_dx))


def _bessel_j0_dx(x: Any, out: Any) -> Any:
    return neg(s.bessel_j1(x))


register_rules(s.bessel_j0_p, **elementwise_rules(s.bessel_j0_p, _bessel_j0_dx))


def _bessel_j1_dx(x: Any, out: Any) -> Any:
    return _order_one_dx(s.bessel_j0, _J1_DX, x, out)


register_rules(s.bessel_j1_p, **elementwise_rules(s.bessel_j1_p, _bessel_j1_dx))


def _zeta_dx(x: Any, q: Any, out: Any, *, n: int) -> Any:
    return s.zeta_p.bind(x, q, n=n + 1)


def _zeta_dq(x: Any, q: Any, out: Any, *, n: int) -> Any:
    """``-n Z_{n-1}(x + 1, q) - x Z_n(x + 1, q)`` (Z_n = zeta[n])."""
    x1 = add(x, 1.0)
    dq = neg(multiply(x, s.zeta_p.bind(x1, q, n=n)))
    return dq if n == 0 else subtract(dq, multiply(s.zeta_p.bind(x1, q, n=n - 1), float(n)))


register_rules(s.zeta_p, **elementwise_rules(s.zeta_p, _zeta_dx, _zeta_dq))


def _polygamma_dx(x: Any, out: Any, *, n: int) -> Any:
    return s.polygamma_p.bind(x, n=n + 1)


register_rules(s.polygamma_p, **elementwise_rules(s.polygamma_p, _polygamma_dx))
