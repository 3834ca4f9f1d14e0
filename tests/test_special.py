"""Semantics of the special family beyond the rule checker: values against
scipy, the derivative chains, the x == 0 limits of the Bessel derivatives
(i1e, i1, j1: every order), erfcx's derivative, zeta's unimplemented
x-derivative, and the errors for bad input."""

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.special as sp

import jax
import jax.numpy as jnp

import gradrules
from gradrules.primitives import special as s

from _helpers import mode_costs

X = np.array([0.3, 0.9, 1.7, 3.2])


def _primitives(fn, *args):
    """(name, params) of every equation of ``fn``'s jaxpr."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    return [(e.primitive.name, dict(e.params)) for e in jaxpr.jaxpr.eqns]


@pytest.mark.parametrize("name, ref, x", [
    ("erf", sp.erf, np.array([-2.5, -0.4, 0.0, 0.7, 3.0])),
    ("erfc", sp.erfc, np.array([-2.5, -0.4, 0.0, 0.7, 6.0])),
    ("erfinv", sp.erfinv, np.array([-0.99, -0.3, 0.0, 0.5, 0.9])),
    ("lgamma", sp.gammaln, np.array([-1.5, -0.3, 0.2, 1.0, 7.5])),
    ("digamma", sp.digamma, np.array([-1.5, -0.3, 0.2, 1.0, 7.5])),
    ("bessel_i0e", sp.i0e, np.array([-30.0, -1.0, 0.0, 0.5, 12.0])),
    ("bessel_i1e", sp.i1e, np.array([-30.0, -1.0, 0.0, 0.5, 12.0])),
    ("erfcx", sp.erfcx, np.array([-20.0, -2.5, -0.4, 0.0, 0.7, 6.0, 1e3, 1e8])),
    ("bessel_i0", sp.i0, np.array([-30.0, -1.0, 0.0, 1e-3, 0.5, 12.0, 700.0])),
    ("bessel_i1", sp.i1, np.array([-30.0, -1.0, 0.0, 1e-3, 0.5, 12.0, 700.0])),
])
def test_values_match_scipy(name, ref, x):
    np.testing.assert_allclose(getattr(s, name)(x), ref(x), rtol=1e-12, atol=1e-14)


def test_edges_of_the_domains():
    np.testing.assert_array_equal(s.erfinv(np.array([-1.0, 1.0])), [-np.inf, np.inf])
    np.testing.assert_array_equal(s.erf(np.array([-np.inf, np.inf])), [-1.0, 1.0])
    assert np.isinf(s.lgamma(np.array(0.0)))
    np.testing.assert_allclose(s.erfc(np.array(10.0)), sp.erfc(10.0), rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_values_and_order_zero(n):
    np.testing.assert_allclose(s.polygamma(n, X), sp.polygamma(n, X), rtol=1e-12)
    if n == 0:
        np.testing.assert_allclose(s.polygamma(0, X), s.digamma(X), rtol=1e-14)


def test_zeta_values_and_broadcasting():
    x = np.array([[1.5], [2.0], [4.0]])
    q = np.array([0.5, 1.0, 2.5])
    got = s.zeta(x, q)
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, sp.zeta(x, q), rtol=1e-12)


def test_lgamma_chains_into_digamma_and_polygamma():
    g = jax.vmap(jax.grad(s.lgamma))
    np.testing.assert_allclose(g(X), sp.digamma(X), rtol=1e-12)
    gg = jax.vmap(jax.grad(jax.grad(s.lgamma)))
    np.testing.assert_allclose(gg(X), sp.polygamma(1, X), rtol=1e-12)
    ggg = jax.jit(jax.vmap(jax.grad(jax.grad(jax.grad(s.lgamma)))))
    np.testing.assert_allclose(ggg(X), sp.polygamma(2, X), rtol=1e-10)
    names = [n for n, _ in _primitives(jax.grad(s.lgamma), 1.5)]
    assert "digamma" in names
    params = [p for n, p in _primitives(jax.grad(s.digamma), 1.5) if n == "polygamma"]
    assert params == [{"n": 1}]


@pytest.mark.parametrize("n", [0, 2])
def test_polygamma_derivative_is_next_order(n):
    g = jax.vmap(jax.grad(lambda x: s.polygamma(n, x)))
    np.testing.assert_allclose(g(X), sp.polygamma(n + 1, X), rtol=1e-10)
    params = [p for name, p in _primitives(jax.grad(lambda x: s.polygamma(n, x)), 1.5)
              if name == "polygamma"]
    assert {"n": n + 1} in params


def test_erf_erfc_erfinv_derivatives():
    x = np.array([-1.2, 0.0, 0.4, 2.0])
    d_erf = 2 / math.sqrt(math.pi) * np.exp(-x**2)
    np.testing.assert_allclose(jax.vmap(jax.grad(s.erf))(x), d_erf, rtol=1e-13)
    np.testing.assert_allclose(jax.vmap(jax.grad(s.erfc))(x), -d_erf, rtol=1e-13)
    y = np.array([-0.9, 0.0, 0.3, 0.75])
    d_erfinv = math.sqrt(math.pi) / 2 * np.exp(sp.erfinv(y) ** 2)
    np.testing.assert_allclose(jax.vmap(jax.grad(s.erfinv))(y), d_erfinv, rtol=1e-12)


def _orders(f, x):
    """f and its first three derivatives at the scalar x."""
    out = [f]
    for _ in range(3):
        out.append(jax.grad(out[-1]))
    return [float(jax.jit(g)(x)) for g in out]


def test_bessel_i1e_derivative_limit_at_zero_in_every_order():
    for x in (0.0, -0.0, 1e-310, -1e-20):
        vals = _orders(s.bessel_i1e, x)
        assert all(np.isfinite(v) for v in vals), (x, vals)
        assert vals[1] == pytest.approx(0.5, abs=1e-15)
    fwd = jax.jit(jax.jacfwd(jax.jacfwd(jax.jacfwd(s.bessel_i1e))))(jnp.zeros(()))
    assert np.isfinite(fwd)
    # away from 0 the formula i0e - i1e (sign(x) + 1/x) is used
    x = np.array([-2.0, 1e-3, 0.7, 5.0])
    want = sp.i0e(x) - sp.i1e(x) * (np.sign(x) + 1 / x)
    np.testing.assert_allclose(jax.vmap(jax.grad(s.bessel_i1e))(x), want, rtol=1e-12)


def _i1e_taylor(n):
    """Exact Taylor coefficients h_0 .. h_{n-1} of exp(-x) I1(x) at 0 (x >= 0): the
    product of exp(-x) = sum (-x)**j / j! and I1(x) = sum (x/2)**(2k+1) / (k! (k+1)!)."""
    i1 = [Fraction(0)] * n
    for k in range(n // 2):
        i1[2 * k + 1] = Fraction(1, 2 ** (2 * k + 1) * math.factorial(k) * math.factorial(k + 1))
    return [sum((Fraction((-1) ** (m - j), math.factorial(m - j)) * i1[j] for j in range(m + 1)),
                Fraction(0)) for m in range(n)]


_I1E_TAYLOR = _i1e_taylor(90)   # the 90th term at |x| = 3 is below 1e-50


def _i1e_derivative_ref(x, k):
    """The k-th derivative of i1e at the float x != 0 (|x| <= 3), summed in exact
    rational arithmetic, independent of the rule and of lax.bessel_i1e. i1e is odd."""
    u, acc, power = Fraction(abs(x)), Fraction(0), Fraction(1)
    for n in range(k, len(_I1E_TAYLOR)):
        acc += _I1E_TAYLOR[n] * math.perm(n, k) * power
        power *= u
    return float(acc) if x > 0 or k % 2 == 1 else -float(acc)


def test_i1e_reference_itself():
    x = np.array([-2.0, 1e-3, 0.5, 3.0])
    np.testing.assert_allclose([_i1e_derivative_ref(v, 0) for v in x], sp.i1e(x), rtol=1e-14)
    want = sp.i0e(x) - sp.i1e(x) * (np.sign(x) + 1 / x)
    np.testing.assert_allclose([_i1e_derivative_ref(v, 1) for v in x], want, rtol=1e-13)
    assert [float(_I1E_TAYLOR[n] * math.factorial(n)) for n in range(5)] == [0, 0.5, -1, 1.875, -3.5]


# the 1/x form of i1e' used all the way down to |x| = eps gave, for the true
# i1e''' ~ 1.875: 2.7e8 at 1e-12 and 384 at 1e-9 in float64; -589824 at 1e-6,
# -48 at 1e-4 (and 0 at 1e-9) in float32.
@pytest.mark.parametrize("dtype, points, rtol", [
    ("float64", [1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 0.011, 0.012, 0.5, 3.0, -1e-9, -1e-4, -0.7],
     1e-10),
    ("float32", [1e-9, 1e-6, 1e-4, 1e-2, 0.13, 0.14, 0.5, 3.0, -1e-4], 1e-4),
])
def test_bessel_i1e_derivatives_near_zero_match_the_series(dtype, points, rtol):
    """Orders 1, 2 and 3, reverse and forward mode, across the switch from the
    series (|x| <= eps**(1/8)) to the 1/x formula, against the exact series."""
    x = jnp.asarray(points, dtype)
    x_exact = np.asarray(x, np.float64)   # the points as rounded to dtype
    rev, fwd = s.bessel_i1e, s.bessel_i1e
    for k in (1, 2, 3):
        rev, fwd = jax.grad(rev), jax.jacfwd(fwd)
        want = np.array([_i1e_derivative_ref(v, k) for v in x_exact])
        for got in (jax.jit(jax.vmap(rev))(x), jax.jit(jax.vmap(fwd))(x)):
            assert got.dtype == x.dtype
            np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol,
                                       err_msg=f"{dtype}, order {k}")


def test_bessel_i1e_derivatives_at_zero_are_the_one_sided_limits():
    """i1e' and i1e''' are continuous at 0 (1/2, 15/8); i1e'' jumps from 1 to -1
    and gets the mean, 0, as abs'(0) = sign(0) = 0 does."""
    for dtype in ("float64", "float32"):
        for x in (0.0, -0.0):
            assert _orders(s.bessel_i1e, jnp.asarray(x, dtype)) == [0.0, 0.5, 0.0, 1.875]
        fwd = jax.jit(jax.jacfwd(jax.jacfwd(jax.jacfwd(s.bessel_i1e))))(jnp.zeros((), dtype))
        assert float(fwd) == 1.875


@pytest.mark.parametrize("mode, far, rtol, atol", [("grad", 0.0, 2e-6, 1e-7),
                                                   ("hvp", 0.5, 1e-4, 1e-6)])
@pytest.mark.parametrize("name, ref", [("bessel_i1e", jax.scipy.special.i1e),
                                       ("bessel_i1", jax.scipy.special.i1),
                                       ("bessel_i0e", jax.scipy.special.i0e)])
def test_bessel_derivatives_take_no_more_than_jnp(name, ref, mode, far, rtol, atol):
    """The gradients and HVPs take no more FLOPs, bytes and temp memory than
    jax.numpy's, with its values (the HVPs where |x| > 0.5: near 0 jax.numpy's
    1/x form cancels).

    Gradient: i1e' is a primitive of its own (``bessel_i1e_slope``), its
    lowering the formula i0e - i1e (sign + 1/x) alone (the value does not
    cancel near 0): the Taylor series a gradient evaluated with it took
    1.11x jax.numpy's FLOPs; the series is the JVP rule's, for i1e'' and up.
    HVP: the order-zero function and sign in the order-one derivatives take
    x itself, only 1/x the safe x: their derivatives reuse the output, and
    no safe x is written out (the HVPs of i1e and i1 read 1.75x jax.numpy's
    bytes, i1e's took 1.28x its FLOPs)."""
    x = jnp.linspace(-3.0, 3.0, 64 * 64, dtype=jnp.float32).reshape(64, 64)
    (ours, got), (want_costs, want) = mode_costs(mode, (getattr(s, name), ref), x)
    assert ours.flops <= want_costs.flops
    assert ours.bytes_accessed <= want_costs.bytes_accessed
    assert ours.temp_bytes <= want_costs.temp_bytes
    keep = np.abs(np.asarray(x)) > far
    np.testing.assert_allclose(np.asarray(got)[0][keep], np.asarray(want)[0][keep], rtol=rtol,
                               atol=atol)


def test_bessel_i0e_derivative():
    assert _orders(s.bessel_i0e, 0.0)[1] == 0.0
    assert all(np.isfinite(_orders(s.bessel_i0e, 0.0)))
    x = np.array([-2.0, 0.3, 4.0])
    want = sp.i1e(x) - np.sign(x) * sp.i0e(x)
    np.testing.assert_allclose(jax.vmap(jax.grad(s.bessel_i0e))(x), want, rtol=1e-12)


def test_zeta_derivative_in_q():
    x, q = np.array([1.5, 2.0, 3.5]), np.array([0.5, 1.0, 2.5])
    got = jax.vmap(jax.grad(s.zeta, argnums=1))(x, q)
    np.testing.assert_allclose(got, -x * sp.zeta(x + 1, q), rtol=1e-12)
    hess = jax.vmap(jax.grad(jax.grad(s.zeta, argnums=1), argnums=1))(x, q)
    np.testing.assert_allclose(hess, x * (x + 1) * sp.zeta(x + 2, q), rtol=1e-10)


# d^n/dx^n zeta(x, q) for n = 1, 2, 3 (mpmath.zeta(x, q, derivative=n), 15 digits)
ZETA_DX = {(2.0, 1.0): (-0.937548254315844, 1.9892802342989, -6.00014580284305),
           (3.5, 0.5): (7.66924225068965, 5.5705963104395, 3.61269181852106)}


@pytest.mark.parametrize("x, q", ZETA_DX)
def test_zeta_derivatives_in_x(x, q):
    """The x-derivatives (sum_k (-log(k + q))**n (k + q)**-x) to third order,
    in both modes, and the mixed one d2/dxdq against its formula."""
    d1 = jax.grad(s.zeta)
    d2 = jax.jacfwd(d1)
    d3 = jax.grad(jax.jacfwd(d1))
    got = [float(jax.jit(d)(x, q)) for d in (d1, d2, d3)]
    np.testing.assert_allclose(got, ZETA_DX[x, q], rtol=1e-11)
    mixed = jax.jit(jax.grad(jax.grad(s.zeta), argnums=1))(x, q)  # -Z_0(x+1) - x Z_1(x+1)
    want = -sp.zeta(x + 1, q) - x * float(jax.grad(s.zeta)(x + 1, q))
    np.testing.assert_allclose(mixed, want, rtol=1e-11)
    assert gradrules.get_op("zeta").not_implemented == ()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_dtype_is_kept(dtype):
    x = jnp.asarray(X, dtype)
    for fn in (s.erf, s.erfc, s.lgamma, s.digamma, s.bessel_i0e, s.bessel_i1e, s.erfcx,
               s.bessel_i0, s.bessel_i1, s.bessel_j0, s.bessel_j1):
        assert fn(x).dtype == x.dtype
    assert s.polygamma(2, x).dtype == x.dtype
    assert s.zeta(x + 1, x).dtype == x.dtype
    assert s.erfinv(x * 0.1).dtype == x.dtype


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "lgamma", "digamma", "bessel_i0e",
                                  "bessel_i1e", "erfcx", "bessel_i0", "bessel_i1", "bessel_j0",
                                  "bessel_j1"])
def test_integer_and_complex_input_is_rejected(name):
    fn = getattr(s, name)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x .*floating.*int32"):
        fn(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x is complex"):
        fn(np.ones(2, np.complex64))


def test_polygamma_bad_order():
    with pytest.raises(ValueError, match=r"gradrules\.polygamma: argument n must be an int >= 0, got -1"):
        s.polygamma(-1, X)
    for bad in (1.0, True, np.array(1), "1"):
        with pytest.raises(TypeError, match=r"gradrules\.polygamma: argument n "):
            s.polygamma(bad, X)
    with pytest.raises(TypeError, match=r"gradrules\.polygamma: argument x .*int32"):
        s.polygamma(1, np.arange(3, dtype=np.int32))


def test_zeta_bad_input():
    with pytest.raises(ValueError, match=r"gradrules\.zeta: .*x with shape \(2,\), q with "
                                         r"shape \(3,\)"):
        s.zeta(np.ones(2) * 2, np.ones(3))
    with pytest.raises(TypeError, match=r"gradrules\.zeta: argument q .*int32"):
        s.zeta(np.ones(2) * 2, np.ones(2, np.int32))
    with pytest.raises(TypeError, match=r"zeta\(\) missing 1 required positional argument: 'q'"):
        s.zeta(np.ones(2))


# ------------------------------------------------ erfcx, I0, I1, J0, J1
J_POINTS = np.concatenate([[0.0, -1e-300, 1e-8, -2e-3, 0.1, 4.999999, 5.0, 5.000001, -7.3],
                           np.linspace(-40.0, 40.0, 801), [123.4, -1e3, 1e4]])


@pytest.mark.parametrize("name, ref", [("bessel_j0", sp.j0), ("bessel_j1", sp.j1)])
def test_bessel_j_values_match_scipy(name, ref):
    """Cephes' approximations (as scipy's): float64 to ~1e-15, float32 to ~1e-6,
    both branches and the switch at |x| = 5; 16-bit input computed in float32."""
    fn = getattr(s, name)
    np.testing.assert_allclose(fn(J_POINTS), ref(J_POINTS), rtol=0, atol=1e-14)
    x32 = J_POINTS[np.abs(J_POINTS) <= 40].astype(np.float32)
    got = fn(x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(x32.astype(np.float64)), rtol=0, atol=2e-6)
    xb = jnp.asarray([0.5, 3.0, 9.0], jnp.bfloat16)
    np.testing.assert_allclose(np.asarray(fn(xb), np.float64),
                               ref(np.asarray(xb, np.float64)), atol=1e-2)
    assert fn(np.array(0.0)) == ref(0.0)


def _derivatives(f, x, n):
    """The n-th derivative of the scalar function f at each point of x."""
    for _ in range(n):
        f = jax.grad(f)
    return np.asarray(jax.vmap(f)(jnp.asarray(x)))


@pytest.mark.parametrize("name, order, ref", [
    ("bessel_i0", 0, sp.ivp), ("bessel_i1", 1, sp.ivp),
    ("bessel_j0", 0, sp.jvp), ("bessel_j1", 1, sp.jvp)])
def test_bessel_derivatives_match_scipy_in_every_order(name, order, ref):
    """Orders 1 to 4 against scipy's derivatives (ivp / jvp), at 0, on both
    sides of where the order-1 series takes over (|x| = 0.105), and far out."""
    x = np.array([0.0, -1e-4, 0.03, 0.1, 0.11, -0.7, 2.5, -4.9, 6.1, 14.0])
    fn = getattr(s, name)
    for n in range(1, 5):
        want = ref(order, x, n)
        np.testing.assert_allclose(_derivatives(fn, x, n), want, rtol=1e-10, atol=1e-12,
                                   err_msg=f"order {n}")


def test_bessel_order_one_derivatives_at_zero_are_the_series():
    """I1'(0) = J1'(0) = 1/2, third derivatives +-3/8 (from x/2 +- x**3/16 +
    ...): finite in every order (the 1/x formula is 0/0 there)."""
    for fn, sign in ((s.bessel_i1, 1), (s.bessel_j1, -1)):
        vals = [float(_derivatives(fn, np.zeros(1), n)[0]) for n in range(5)]
        assert vals == pytest.approx([0, 0.5, 0, sign * 3 / 8, 0], abs=1e-15)
        fwd = jax.jit(jax.jacfwd(jax.jacfwd(jax.jacfwd(fn))))(jnp.zeros(()))
        assert float(fwd) == pytest.approx(sign * 3 / 8, abs=1e-15)
    assert float(_derivatives(s.bessel_i0, np.zeros(1), 2)[0]) == 0.5
    assert float(_derivatives(s.bessel_j0, np.zeros(1), 2)[0]) == -0.5


def test_bessel_derivatives_chain_through_the_family():
    """I0' binds bessel_i1, J0' binds bessel_j1 (negated), I1' and J1' bind
    the order-0 function: the derivatives stay in the catalog."""
    assert "bessel_i1" in [n for n, _ in _primitives(jax.grad(s.bessel_i0), 1.5)]
    assert "bessel_j1" in [n for n, _ in _primitives(jax.grad(s.bessel_j0), 1.5)]
    assert "bessel_i0" in [n for n, _ in _primitives(jax.grad(s.bessel_i1), 1.5)]
    assert "bessel_j0" in [n for n, _ in _primitives(jax.grad(s.bessel_j1), 1.5)]


def test_erfcx_derivatives():
    """erfcx' = 2 x erfcx - 2/sqrt(pi) in every order (the second: 2 erfcx +
    2 x erfcx'), finite far to the right where exp(x**2) erfc(x) overflows
    (at x = 1e5 the second derivative's formula cancels, ours and this one:
    only finiteness is checked there)."""
    x = np.array([-2.0, -0.3, 0.0, 0.8, 3.0, 50.0, 1e5])
    e = sp.erfcx(x)
    d1 = 2 * x * e - 2 / math.sqrt(math.pi)
    d2 = 2 * e + 2 * x * d1
    np.testing.assert_allclose(_derivatives(s.erfcx, x, 1), d1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_derivatives(s.erfcx, x, 2)[:-1], d2[:-1], rtol=1e-9,
                               atol=1e-12)
    assert np.isfinite(_derivatives(s.erfcx, x, 3)).all()
    assert "erfcx" in [n for n, _ in _primitives(jax.grad(s.erfcx), 1.5)]


@pytest.mark.parametrize("mode, rtol", [("grad", 1e-4), ("hvp", 5e-3)])
def test_erfcx_derivatives_take_no_more_flops_than_jnp(mode, rtol):
    """erfcx's derivatives are the primitive ``erfcx_derivative``, whose
    lowering takes the recurrence from exp(x**2) erfc(x) or the asymptotic
    series, neither differentiated by autodiff (so, a gradient took 1.13x
    and a Hessian-vector product 1.29x jax.numpy's FLOPs). The values match
    float64 ones (the recurrence from scipy's erfcx): to float32 rounding
    from x = 10 on, where jax.numpy's cancel (its float32 erfcx is 0 from
    about 9.3 to 9.42), and below to the rounding of exp(x**2) in float32,
    which the recurrence amplifies by about 2 x**2 per order."""
    x = jnp.linspace(-3.0, 30.0, 64 * 64, dtype=jnp.float32).reshape(64, 64)
    (ours, got), (want_costs, _) = mode_costs(mode, (s.erfcx, jax.scipy.special.erfcx), x)
    assert ours.flops <= want_costs.flops
    assert ours.bytes_accessed <= want_costs.bytes_accessed
    assert ours.temp_bytes <= want_costs.temp_bytes
    xd = np.asarray(x, np.float64)
    d1 = 2 * xd * sp.erfcx(xd) - 2 / math.sqrt(math.pi)
    k = np.arange(x.size).reshape(x.shape)             # bench's weights and tangents
    want = np.cos(k) * (d1 if mode == "grad" else (2 * sp.erfcx(xd) + 2 * xd * d1) * np.sin(k))
    far = xd > 10
    np.testing.assert_allclose(got[0][far], want[far], rtol=2e-6)
    np.testing.assert_allclose(got[0][~far], want[~far], rtol=rtol, atol=1e-30)
