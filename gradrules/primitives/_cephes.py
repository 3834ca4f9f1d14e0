"""Lowerings of the Bessel functions of the first kind J0 and J1 in
``jax.numpy`` (``jax.scipy.special`` has neither in JAX 0.10 and 0.11; its
``bessel_jn`` recurrence is NaN at 0 and off by ~5e-10 at x = 30).

Cephes' j0.c and j1.c (Stephen L. Moshier's rational approximations, the
ones scipy.special.j0 / j1 evaluate): for |x| <= 5 a rational function of
z = x**2 times the factors (z - r1)(z - r2) that put the first two zeros in
place; above 5 the Hankel asymptotic form

    J_n(x) = sqrt(2 / (pi x)) (P(w) cos(x - (2n+1) pi/4) - w Q(w) sin(...)),
    w = 5 / x,

with P and Q rational functions of w**2. The small branch is written in x
itself (J0 as a function of x**2, J1 as x times one), so it is smooth through
0 and its autodiff derivatives (which the reference check compares the
rules with) are right there in every order; the large branch takes |x|
(J0 is even, J1 odd). Both branches are evaluated at a safe point where the
other one is selected (a double where). Float64 agrees with scipy to about
1e-15; float32 is evaluated in float32 and 16-bit floats in float32 too.
"""

from __future__ import annotations

import math

import numpy as np

import jax
import jax.numpy as jnp

Array = jax.Array

_SQ2OPI = math.sqrt(2.0 / math.pi)
_SPLIT = 5.0

# j0.c
_J0_R1 = 5.78318596294678452118e0      # first zero of J0, squared
_J0_R2 = 3.04712623436620863991e1      # second zero of J0, squared
_J0_RP = (-4.79443220978201773821e9, 1.95617491946556577543e12, -2.49248344360967716204e14,
          9.70862251047306323952e15)
_J0_RQ = (4.99563147152651017219e2, 1.73785401676374683123e5, 4.84409658339962045305e7,
          1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14,
          3.18121955943204943306e16, 1.71086294081043136091e18)
_J0_PP = (7.96936729297347051624e-4, 8.28352392107440799803e-2, 1.23953371646414299388e0,
          5.44725003058768775090e0, 8.74716500199817011941e0, 5.30324038235394892183e0,
          9.99999999999999997821e-1)
_J0_PQ = (9.24408810558863637013e-4, 8.56288474354474431428e-2, 1.25352743901058953537e0,
          5.47097740330417105182e0, 8.76190883237069594232e0, 5.30605288235394617618e0,
          1.00000000000000000218e0)
_J0_QP = (-1.13663838898469149931e-2, -1.28252718670509318512e0, -1.95539544257735972385e1,
          -9.32060152123768231369e1, -1.77681167980488050595e2, -1.47077505154951170175e2,
          -5.14105326766599330220e1, -6.05014350600728481186e0)
_J0_QQ = (6.43178256118178023184e1, 8.56430025976980587198e2, 3.88240183605401609683e3,
          7.24046774195652478189e3, 5.93072701187316984827e3, 2.06209331660327847417e3,
          2.42005740240291393179e2)

# j1.c
_J1_R1 = 1.46819706421238932572e1      # first zero of J1 (x > 0), squared
_J1_R2 = 4.92184563216946036703e1      # second zero of J1, squared
_J1_RP = (-8.99971225705559398224e8, 4.52228297998194034323e11, -7.27494245221818276015e13,
          3.68295732863852883286e15)
_J1_RQ = (6.20836478118054335476e2, 2.56987256757748830383e5, 8.35146791431949253037e7,
          2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14,
          8.95222336184627338078e16, 5.32278620332680085395e18)
_J1_PP = (7.62125616208173112003e-4, 7.31397056940917570436e-2, 1.12719608129684925192e0,
          5.11207951146807644818e0, 8.42404590141772420927e0, 5.21451598682361504063e0,
          1.00000000000000000254e0)
_J1_PQ = (5.71323128072548699714e-4, 6.88455908754495404082e-2, 1.10514232634061696926e0,
          5.07386386128601488557e0, 8.39985554327604159757e0, 5.20982848682361821619e0,
          9.99999999999999997461e-1)
_J1_QP = (5.10862594750176621635e-2, 4.98213872951233449420e0, 7.58238284132545283818e1,
          3.66779609360150777800e2, 7.10856304998926107277e2, 5.97489612400613639965e2,
          2.11688757100572135698e2, 2.52070205858023719784e1)
_J1_QQ = (7.42373277035675149943e1, 1.05644886038262816351e3, 4.98641058337653607651e3,
          9.56231892404756170795e3, 7.99704160447350683650e3, 2.82619278517639096600e3,
          3.36093607810698293419e2)


def _polevl(z: Array, coefficients: tuple[float, ...]) -> Array:
    """sum_k c[k] z**(n-k), highest power first (Cephes' polevl)."""
    acc = jnp.full_like(z, coefficients[0])
    for c in coefficients[1:]:
        acc = acc * z + c
    return acc


def _p1evl(z: Array, coefficients: tuple[float, ...]) -> Array:
    """``_polevl`` with a leading coefficient 1 left out of the table."""
    return _polevl(z, (1.0,) + coefficients)


def _working(x: Array) -> Array:
    """x in the dtype the approximation runs in (float32 for 16-bit floats)."""
    return x.astype(np.float32) if jnp.finfo(x.dtype).bits < 32 else x


def _asymptotic(ax: Array, shift: float, pp: tuple[float, ...], pq: tuple[float, ...],
                qp: tuple[float, ...], qq: tuple[float, ...]) -> Array:
    """sqrt(2/(pi x)) (P cos(x - shift) - w Q sin(x - shift)), w = 5/x, x > 5."""
    w = _SPLIT / ax
    z = w * w
    p = _polevl(z, pp) / _polevl(z, pq)
    q = _polevl(z, qp) / _p1evl(z, qq)
    xn = ax - shift
    return (p * jnp.cos(xn) - w * q * jnp.sin(xn)) * _SQ2OPI / jnp.sqrt(ax)


def _branches(x: Array) -> tuple[Array, Array, Array, Array]:
    """(near, xs, z, ax): |x| <= 5, x there (0 elsewhere), its square, and |x|
    where |x| > 5 (5 elsewhere, a safe point of the asymptotic form)."""
    ax = jnp.abs(x)
    near = ax <= _SPLIT
    xs = jnp.where(near, x, jnp.zeros_like(x))
    return near, xs, xs * xs, jnp.where(near, jnp.full_like(x, _SPLIT), ax)


def j0(x: Array) -> Array:
    """The Bessel function of the first kind of order 0 (Cephes j0)."""
    dtype, x = x.dtype, _working(x)
    near, _, z, ax = _branches(x)
    small = (z - _J0_R1) * (z - _J0_R2) * _polevl(z, _J0_RP) / _p1evl(z, _J0_RQ)
    large = _asymptotic(ax, math.pi / 4, _J0_PP, _J0_PQ, _J0_QP, _J0_QQ)
    return jnp.where(near, small, large).astype(dtype)


def j1(x: Array) -> Array:
    """The Bessel function of the first kind of order 1 (Cephes j1)."""
    dtype, x = x.dtype, _working(x)
    near, xs, z, ax = _branches(x)
    small = xs * (z - _J1_R1) * (z - _J1_R2) * _polevl(z, _J1_RP) / _p1evl(z, _J1_RQ)
    large = jnp.sign(x) * _asymptotic(ax, 3 * math.pi / 4, _J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    return jnp.where(near, small, large).astype(dtype)
