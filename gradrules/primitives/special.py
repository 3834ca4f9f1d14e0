"""Special functions: erf, erfc, erfinv, erfcx, lgamma, digamma,
polygamma(n, x), the modified Bessel functions bessel_i0e, bessel_i1e,
bessel_i0, bessel_i1, the Bessel functions of the first kind bessel_j0,
bessel_j1, and the Hurwitz zeta(x, q).

Each op is one primitive (bessel_i1e two: its derivative ``bessel_i1e_slope``
is one of its own; erfcx two: its derivatives of every order are the
primitive ``erfcx_derivative``); the docstrings give the derivatives the JVP
rules use (``gradrules/rules/special.py``). The derivatives chain into each
other: lgamma' = digamma, digamma' = polygamma(1, .), polygamma(n)' =
polygamma(n + 1), erfcx_derivative(n)' = erfcx_derivative(n + 1), the Bessel
functions' derivatives with the Bessel functions of orders 0 and 1 (I0' =
I1, J0' = -J1, and I1', J1' with a Taylor series near 0), and zeta's
derivative in q is zeta again, so every order is made of these ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax import lax

from .._jax import Primitive
from . import _cephes
from ..core.args import int_param
from ..core.registry import OpDef, register_op
from ._elementwise import define_elementwise, elementwise_primitive
from ._fused import upcast
from .convert import promote
from .unary import horner

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "special"

# a parameter-free float-only special function: primitive, public function
# and manifest entry
_special: Callable[..., tuple[Primitive, Callable[..., Array]]] = partial(define_elementwise,
                                                                          family=FAMILY)


erf_p, erf = _special("erf", lax.erf, """The error function 2/sqrt(pi) int_0^x exp(-t**2) dt.

d/dx = 2/sqrt(pi) * exp(-x**2).""", reference=jsp.erf)
erfc_p, erfc = _special("erfc", lax.erfc, """The complementary error function 1 - erf(x),
accurate where erf(x) is close to 1.

d/dx = -2/sqrt(pi) * exp(-x**2).""", reference=jsp.erfc)
erfinv_p, erfinv = _special("erfinv", lax.erf_inv, """The inverse of erf on (-1, 1)
(+-inf at +-1).

d/dx = sqrt(pi)/2 * exp(erfinv(x)**2), written with the output.""", reference=jsp.erfinv)


def erfcx_series(n: int, terms: int) -> tuple[float, ...]:
    """Coefficients c_m, m < ``terms``, of erfcx^(n)(x) ~ x**-(n+1) sum_m
    c_m x**(-2m) for x -> inf: the n-th derivative, term by term, of the
    asymptotic series erfcx(x) ~ 1/sqrt(pi) sum_m (-1)**m (2m-1)!! / 2**m
    x**-(2m+1), so c_m = (-1)**(m+n) (2m-1)!! (2m+n)! / (2**m (2m)! sqrt(pi))."""
    return tuple(float(Fraction((-1) ** (m + n) * math.prod(range(1, 2 * m, 2))
                                * math.factorial(2 * m + n),
                                2 ** m * math.factorial(2 * m))) / math.sqrt(math.pi)
                 for m in range(terms))


# From where on erfcx^(n) takes its asymptotic series, by "float64?". Below
# the split the recurrence from exp(x**2) erfc(x) is as accurate as jax's
# erfcx and its derivative (the rounding of x**2 puts exp(x**2) off by about
# eps x**2, the recurrence's cancellation multiplies that by about
# (2 x**2)**n); from the split on the series has as many terms as put its
# first omitted one below eps relative there (``_erfcx_terms``: float32 6, 6,
# 7 for orders 1, 2, 3; float64 8, 9, 10). The splits keep exp(x**2) finite
# and erfc(x) a normal number (jax's float32 erfcx switches at 9.42, and is 0
# from about 9.3 on, where erfc(x) is subnormal and flushed to 0 on CPU).
_ERFCX_SPLIT = {False: 8.5, True: 20.0}


def _erfcx_terms(n: int, split: float, eps: float) -> int:
    """The fewest terms whose first omitted one, relative to the first, is
    below ``eps`` at x = ``split``."""
    k = 1
    while True:
        c = erfcx_series(n, k + 1)
        if abs(c[k] / c[0]) * split ** (-2 * k) < eps:
            return k
        k += 1


def _erfcx_derivative_impl(x: Array, *, n: int) -> Array:
    """erfcx^(n)(x): where x > split, r**(n+1) C(r**2), r = 1/x, with the
    coefficients of ``erfcx_series``; elsewhere the recurrence erfcx^(k+1)
    = 2 x erfcx^(k) + 2 k erfcx^(k-1) from exp(x**2) erfc(x) and
    erfcx' = 2 x erfcx - 2/sqrt(pi), at x = split where the series is taken.
    In float32 for 16-bit input. A lowering, never differentiated, so one
    where suffices. erfcx itself is not part of it: a gradient takes erfc,
    exp and the series, no more than jax.numpy's erfcx gradient."""
    xa = upcast(x)
    f64 = xa.dtype == np.float64
    split = _ERFCX_SPLIT[f64]
    eps = float(np.finfo(xa.dtype).eps)
    big = xa > split
    xs = jnp.minimum(xa, split)
    lower = jnp.exp(jnp.square(xs)) * lax.erfc(xs)
    two_x = xs * 2.0
    y = two_x * lower - 2.0 / math.sqrt(math.pi)
    for k in range(1, n):
        lower, y = y, two_x * y + lower * (2.0 * k)
    r = 1 / xa
    r2 = r * r
    power = r2 if n == 1 else r2 * r ** (n - 1)
    series = power * horner(r2, erfcx_series(n, _erfcx_terms(n, split, eps)))
    return jnp.where(big, series, y).astype(x.dtype)


erfcx_derivative_p = elementwise_primitive("erfcx_derivative", _erfcx_derivative_impl,
                                           family=FAMILY, params=("n",))


def erfcx_derivative(x: Any, n: int) -> Any:
    """erfcx^(n)(x), n >= 1: the derivatives of ``erfcx`` as a primitive of
    their own, an internal one of the op erfcx. Its JVP is order n + 1
    (``gradrules/rules/special.py``). Written as rules, 2 x erfcx -
    2/sqrt(pi) with the series differentiated by autodiff, a gradient took
    1.13x and a Hessian-vector product 1.29x jax.numpy's FLOPs."""
    return erfcx_derivative_p.bind(x, n=n)


erfcx_p, erfcx = _special("erfcx", jsp.erfcx, """\
The scaled complementary error function exp(x**2) erfc(x), finite for large
positive x where erfc underflows (it overflows to inf for x below about
-26.6 in float64).

d/dx = 2 x erfcx(x) - 2/sqrt(pi), the primitive ``erfcx_derivative`` (order
1), whose own derivative is the one of the next order: erfcx^(n+1) =
2 x erfcx^(n) + 2 n erfcx^(n-1). That recurrence cancels as x grows
(``jax.scipy.special.erfcx``'s derivative is 20x off at 1e4 in float32),
so from a split on the lowering takes the asymptotic series of erfcx^(n)
instead (``_erfcx_derivative_impl``).""", reference=jsp.erfcx, internal=(erfcx_derivative_p,))


lgamma_p, lgamma = _special("lgamma", lax.lgamma, """log|Gamma(x)|.

d/dx = digamma(x).""", reference=jsp.gammaln)
digamma_p, digamma = _special("digamma", lax.digamma, """The digamma function
psi(x) = Gamma'(x) / Gamma(x).

d/dx = polygamma(1, x).""", reference=jsp.digamma)
bessel_i0e_p, bessel_i0e = _special("bessel_i0e", lax.bessel_i0e, """The exponentially
scaled modified Bessel function of order 0: exp(-|x|) I0(x).

d/dx = bessel_i1e(x) - sign(x) * bessel_i0e(x) (0 at x == 0).""", reference=jsp.i0e)


def _bessel_i1e_slope_impl(x: Array) -> Array:
    """i0e(x) - i1e(x) (sign(x) + 1/x) where |x| > eps, its series 1/2 - |x|
    below (the next term, 15/16 x**2, is below eps**2), in float32 for
    16-bit input (the terms cancel as |x| grows, i1e' ~ -i1e / (2 |x|): in
    bfloat16 it is off by percents). The value does not cancel near 0
    (1 - |x| - (1/2 - |x|/2) - |x|/2), its derivatives do: those are the
    JVP rule's. A lowering, never differentiated, so one where suffices."""
    xa = upcast(x)
    tiny = jnp.abs(xa) <= float(np.finfo(xa.dtype).eps)
    i1e = lax.bessel_i1e(xa)
    formula = lax.bessel_i0e(xa) - i1e * (jnp.sign(xa) + 1 / xa)
    return jnp.where(tiny, 0.5 - jnp.abs(xa), formula).astype(x.dtype)


bessel_i1e_slope_p = elementwise_primitive("bessel_i1e_slope", _bessel_i1e_slope_impl,
                                           family=FAMILY)


def bessel_i1e_slope(x: Any) -> Any:
    """i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at x == 0: the
    derivative of ``bessel_i1e`` as a primitive of its own, an internal one
    of the op bessel_i1e (a gradient then takes i0e, i1e and a few
    products, as jax.numpy's; with the Taylor series near 0 it took 1.11x
    jax.numpy's FLOPs). Its JVP rule is i1e'' (``gradrules/rules/special.py``)."""
    return bessel_i1e_slope_p.bind(x)


bessel_i1e_p, bessel_i1e = _special("bessel_i1e", lax.bessel_i1e, """\
The exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x).

d/dx = bessel_i0e(x) - bessel_i1e(x) * (sign(x) + 1/x) (1/2 at x == 0), the
primitive ``bessel_i1e_slope``, whose own derivative is the closed form
i1e''(x) = (i1e(x) (1 - |x|) / x - i1e'(x) (1 + 2 |x|)) / x for |x| >
eps**(1/8) of the dtype, and its Taylor series sign(x) C(x**2) + x D(x**2)
below, where the formula cancels (exact at every order; at 0 the mean of
the one-sided limits); a double where keeps NaN and inf out of both
branches (``gradrules/rules/special.py``).""", reference=jsp.i1e,
                                    internal=(bessel_i1e_slope_p,))

bessel_i0_p, bessel_i0 = _special("bessel_i0", jsp.i0, """The modified Bessel function of the
first kind of order 0, I0(x) = sum_k (x**2/4)**k / k!**2 (exp(|x|) * bessel_i0e(x)).

d/dx = bessel_i1(x).""")
bessel_i1_p, bessel_i1 = _special("bessel_i1", jsp.i1, """The modified Bessel function of the
first kind of order 1, I1(x) = sum_k (x/2)**(2k+1) / (k! (k+1)!) (exp(|x|) * bessel_i1e(x)).

d/dx = bessel_i0(x) - bessel_i1(x) / x for |x| > eps**(1/16) of the dtype,
and its Taylor series sum_k (2k+1) (x/2)**(2k) / (2 k! (k+1)!) below (1/2 at
x == 0), exact at and around 0 in every order.""")
bessel_j0_p, bessel_j0 = _special("bessel_j0", _cephes.j0, """The Bessel function of the first
kind of order 0, J0(x) = sum_k (-1)**k (x**2/4)**k / k!**2 (scipy.special.j0;
Cephes' rational approximations, ``primitives/_cephes.py``).

d/dx = -bessel_j1(x).""")
bessel_j1_p, bessel_j1 = _special("bessel_j1", _cephes.j1, """The Bessel function of the first
kind of order 1, J1(x) = sum_k (-1)**k (x/2)**(2k+1) / (k! (k+1)!)
(scipy.special.j1; Cephes' rational approximations).

d/dx = bessel_j0(x) - bessel_j1(x) / x for |x| > eps**(1/16) of the dtype,
and its Taylor series sum_k (-1)**k (2k+1) (x/2)**(2k) / (2 k! (k+1)!) below
(1/2 at x == 0), exact at and around 0 in every order.""")


# --------------------------------------------------------------------- zeta
def _bernoulli_ratios(count: int) -> np.ndarray:
    """``B_2j / (2j)!`` for j = 1 .. count (Bernoulli numbers, exactly)."""
    b = [Fraction(1)]
    for m in range(1, 2 * count + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return np.array([float(b[2 * j] / math.factorial(2 * j)) for j in range(1, count + 1)])


def zeta_series(x: Array, q: Array) -> Array:
    """The Hurwitz zeta function by Euler-Maclaurin summation (Johansson,
    "Rigorous high-precision computation of the Hurwitz zeta function and its
    derivatives", 2015, formula (5)), with N = M = 16 (8 in float32):

        sum_{k < N} (q + k)**-x + (q + N)**(1 - x) / (x - 1)
        + (q + N)**-x (1/2 + sum_{j <= M} B_2j / (2j)! prod_{m < 2j - 1} (x + m) / (q + N))

    Smooth in x, so its derivatives in x are the same summation of the
    differentiated terms (the formula holds for the derivatives too)."""
    terms = 8 if x.dtype == np.float32 else 16
    xs, qs = x[..., None], q[..., None]
    head = jnp.sum((qs + np.arange(terms, dtype=x.dtype)) ** -xs, -1)
    a = q + terms
    ratios = jnp.cumprod((xs + np.arange(2 * terms, dtype=x.dtype)) / (a[..., None]), -1)
    tail = jnp.sum(ratios[..., ::2] * _bernoulli_ratios(terms).astype(x.dtype), -1)
    return head + a ** (1 - x) / (x - 1) + a ** -x * (0.5 + tail)


def _zeta_impl(x: Array, q: Array, *, n: int) -> Array:
    if n == 0:
        return jsp.zeta(x, q)
    dtype = x.dtype
    x, q = jnp.broadcast_arrays(x.astype(jnp.promote_types(dtype, np.float32)),
                                q.astype(jnp.promote_types(dtype, np.float32)))
    f = partial(zeta_series, q=q)
    for _ in range(n):
        f = partial(_derivative, f)
    return f(x).astype(dtype)


def _derivative(f: Callable[[Array], Array], x: Array) -> Array:
    """d f / dx of an elementwise f (a forward-mode product with ones)."""
    return jax.jvp(f, (x,), (jnp.ones_like(x),))[1]


zeta_p = elementwise_primitive("zeta", _zeta_impl, family=FAMILY, operands=("x", "q"),
                               kind="float", params=("n",))
"""``zeta[n](x, q) = d^n/dx^n zeta(x, q) = sum_{k >= 0} (-log(k + q))**n (k + q)**-x``:
the public ``zeta`` binds n = 0 (jax.scipy's zeta), its derivatives in x bind
n + 1 (the Euler-Maclaurin ``zeta_series`` differentiated n times in x)."""


def zeta(x: ArrayLike, q: ArrayLike) -> Array:
    """The Hurwitz zeta function sum_{k >= 0} (k + q)**-x, for x > 1 and
    q > 0; x and q broadcast.

    d/dx = sum_k -log(k + q) (k + q)**-x (``zeta_p`` with n = 1; the n-th
    derivative in x has (-log(k + q))**n in the sum), and
    d/dq = -x * zeta(x + 1, q); for the n-th x-derivative Z_n,
    d Z_n / dq = -n Z_{n-1}(x + 1, q) - x Z_n(x + 1, q).
    """
    x, q = promote("zeta", {"x": x, "q": q}, "float")
    return zeta_p.bind(x, q, n=0)


register_op(OpDef(name="zeta", family=FAMILY, fn=zeta, primitives=(zeta_p,),
                  reference=jsp.zeta, operands=("x", "q")))


# ---------------------------------------------------------------- polygamma
def _polygamma_impl(x: Array, *, n: int) -> Array:
    return jsp.polygamma(n, x)


polygamma_p = elementwise_primitive("polygamma", _polygamma_impl, family=FAMILY,
                                    kind="float", params=("n",))


def polygamma(n: int, x: ArrayLike) -> Array:
    """The polygamma function psi^(n)(x), the n-th derivative of digamma
    (polygamma(0, x) = digamma(x)) for a static non-negative int ``n``.

    d/dx = polygamma(n + 1, x).
    """
    n = int_param("polygamma", "argument n", n, lo=0)
    (x,) = promote("polygamma", {"x": x}, "float")
    return polygamma_p.bind(x, n=n)


def _polygamma_reference(n: int, x: ArrayLike) -> Array:
    return jsp.polygamma(n, jnp.asarray(x))


register_op(OpDef(name="polygamma", family=FAMILY, fn=polygamma, primitives=(polygamma_p,),
                  reference=_polygamma_reference, operands=("x",)))
