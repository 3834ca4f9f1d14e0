"""Semantics of the unary ops added beside the checker's table: cbrt (values
of both signs, the vertical tangent at 0) and sinc (values against numpy,
derivatives of every order exact at and around 0, where the closed form
(cos(pi x) - sinc(x)) / x is 0/0 and cancels), and their bad input."""

import math
import re

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.primitives import unary as u

from _helpers import mode_costs


def _derivatives(f, x, n):
    """The n-th derivative of the scalar function f at each point of x."""
    for _ in range(n):
        f = jax.grad(f)
    return np.asarray(jax.jit(jax.vmap(f))(jnp.asarray(x)))


def _sinc_derivative(x, k, terms=60):
    """The k-th derivative of sinc at the float x (|x| <= 3) from its Taylor
    series sum_n (-1)**n (pi x)**(2n) / (2n+1)!, independent of the rule."""
    total = 0.0
    for n in range(terms):
        p = 2 * n
        if p >= k:
            total += ((-1) ** n * math.pi ** p / math.factorial(p + 1)
                      * math.perm(p, k) * x ** (p - k))
    return total


def test_cbrt_values_and_derivatives():
    x = np.array([-27.0, -2.0, -1e-6, 0.0, 0.5, 8.0, 1e9])
    np.testing.assert_allclose(u.cbrt(x), np.cbrt(x), rtol=1e-15)
    y = np.array([-8.0, -0.3, 0.7, 27.0])
    d1 = np.cbrt(y) ** -2 / 3
    np.testing.assert_allclose(_derivatives(u.cbrt, y, 1), d1, rtol=1e-14)
    np.testing.assert_allclose(_derivatives(u.cbrt, y, 2), -2 / 9 * np.cbrt(y) ** -5,
                               rtol=1e-13)
    # the tangent is vertical at 0: +inf, as jnp.cbrt's derivative
    assert float(jax.grad(u.cbrt)(0.0)) == float(jax.grad(jnp.cbrt)(0.0)) == np.inf
    assert gradrules.cbrt is u.cbrt


def test_rsqrt_hessian_vector_product_is_one_loop_like_jnp():
    """rsqrt's Hessian-vector product reads its operands and writes its
    result once, as jnp's of 1 / sqrt(x) does (d/dx = -0.5 rsqrt(x) / x:
    with rsqrt(x) / x shared by the JVP's terms, XLA computed it in a loop
    of its own, 1.75x the bytes and 6x the time on the CPU); and its value
    is 0.75 x**-2.5."""
    x = jnp.linspace(0.5, 4.0, 4096).reshape(64, 64)

    def hvp(f):
        grad = jax.grad(lambda y, w: jnp.sum(w * f(y)))
        return lambda v, w, t: jax.jvp(lambda y: grad(y, w), (v,), (t,))[1]

    def bytes_accessed(f):
        cost = jax.jit(hvp(f)).lower(x, x, x).compile().cost_analysis()
        return (cost[0] if isinstance(cost, (list, tuple)) else cost)["bytes accessed"]
    assert bytes_accessed(u.rsqrt) <= bytes_accessed(lambda y: 1 / jnp.sqrt(y))
    np.testing.assert_allclose(hvp(u.rsqrt)(x, jnp.ones_like(x), jnp.ones_like(x)),
                               0.75 * np.asarray(x) ** -2.5, rtol=1e-6)


def test_sinc_values_match_numpy():
    x = np.array([0.0, -1e-300, 1e-9, -0.3, 0.5, 1.0, -2.0, 7.25, 1e6 + 0.5])
    np.testing.assert_allclose(u.sinc(x), np.sinc(x), rtol=1e-12, atol=1e-16)
    assert float(u.sinc(np.array(0.0))) == 1.0
    assert u.sinc(jnp.ones(2, jnp.bfloat16)).dtype == jnp.bfloat16


def test_sinc_derivatives_in_every_order_at_and_around_zero():
    """Orders 1 to 4, exact to ~1e-13 at 0, on both sides of where the Taylor
    series of the derivative takes over (|x| = 0.105), and further out; jnp's
    own sinc loses 1e-6 at the fourth order at x = 1e-3 and is not the yardstick."""
    x = np.array([0.0, -1e-3, 0.05, 0.104, 0.106, -0.4, 1.3, 2.5])
    for k in range(1, 5):
        want = np.array([_sinc_derivative(v, k) for v in x])
        np.testing.assert_allclose(_derivatives(u.sinc, x, k), want, rtol=1e-11,
                                   atol=2e-12 * 10 ** k, err_msg=f"order {k}")
    at_zero = [float(_derivatives(u.sinc, np.zeros(1), k)[0]) for k in range(5)]
    assert at_zero == pytest.approx([1.0, 0.0, -math.pi ** 2 / 3, 0.0, math.pi ** 4 / 5],
                                    abs=1e-12)
    fwd = jax.jit(jax.jacfwd(jax.jacfwd(u.sinc)))(jnp.zeros(()))
    assert float(fwd) == pytest.approx(-math.pi ** 2 / 3, abs=1e-13)


def test_sinc_derivative_in_float32_at_zero():
    x = jnp.asarray([0.0, 1e-8, -1e-4, 0.2, 0.5, 1.0, -3.0], jnp.float32)
    got = jax.jit(jax.vmap(jax.grad(jax.grad(u.sinc))))(x)
    assert got.dtype == jnp.float32
    want = [_sinc_derivative(float(v), 2) for v in x]
    np.testing.assert_allclose(got, want, rtol=2e-5)


@pytest.mark.parametrize("name", ["cbrt", "sinc"])
def test_bad_input(name):
    fn = getattr(u, name)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x .*floating.*int32"):
        fn(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x must be an array"):
        fn("1.0")


@pytest.mark.parametrize("name, ref", [
    ("log", jnp.log), ("log2", jnp.log2), ("log10", jnp.log10), ("log1p", jnp.log1p),
    ("atan", jnp.arctan), ("atanh", jnp.arctanh), ("cbrt", jnp.cbrt)])
def test_a_derivative_one_over_something_divides_the_tangent_once(name, ref):
    """A partial derivative 1 / den (``OneOver``) is applied as t / den: the
    gradient takes no more FLOPs than jax.numpy's (t * (1 / den) took a
    reciprocal and a product), and the same values."""
    x = jnp.linspace(0.1, 0.9, 4096, dtype=jnp.float32)
    (ours, got), (plain, want) = mode_costs("grad", (getattr(gradrules, name), ref), x)
    assert ours.flops <= plain.flops
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6)


def _divisions_of_other_than_one(hlo: str) -> list[str]:
    """The divide instructions of an optimised HLO text whose numerator is
    not the constant 1 (nor a broadcast of it)."""
    defs = dict(re.findall(r"(%[\w.-]+) = \S+ (.*)", hlo))

    def is_one(name: str) -> bool:
        line = defs.get(name, "")
        if line.startswith("broadcast("):
            return is_one(re.match(r"broadcast\((%[\w.-]+)", line).group(1))
        return line.startswith("constant(1)")
    return [d for d in re.findall(r"divide\((%[\w.-]+), %[\w.-]+\)", hlo) if not is_one(d)]


@pytest.mark.parametrize("name, ref", [("log", jnp.log), ("log2", jnp.log2), ("log10", jnp.log10),
                                       ("log1p", jnp.log1p), ("atan", jnp.arctan)])
def test_one_over_hvp_scales_by_a_reciprocal(name, ref):
    """The HVP of an op whose derivative is ``OneOver(den)`` differentiates
    a division by den in den: ``((-t r) r) ct`` with r = 1 / den, a
    division of 1 and products, as jax.numpy's ``den**-2`` (XLA's CPU loops
    ran ``a / b`` 1.7x slower than ``a * (1 / b)``: log's HVP took 1.3-1.7x
    jax.numpy's time), with jax.numpy's FLOPs (log2's and log10's constant
    a ``scale`` of ``OneOver``, not a factor of den: 1.17x) and values."""
    x = jnp.linspace(0.1, 0.9, 4096, dtype=jnp.float32)
    (ours, got), (plain, want) = mode_costs("hvp", (getattr(gradrules, name), ref), x)
    assert _divisions_of_other_than_one(ours.compiled.as_text()) == []
    assert ours.flops <= plain.flops
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6)


@pytest.mark.parametrize("name, ref, mode, lo, hi, rtol, atol", [
    ("sinc", jnp.sinc, "grad", -3.0, 3.0, 1e-5, 1e-6),
    ("sinc", jnp.sinc, "hvp", -3.0, 3.0, 1e-5, 1e-6),
    ("reciprocal", jnp.reciprocal, "hvp", 0.5, 4.0, 1e-6, 0.0)])
def test_a_derivative_as_a_primitive_takes_no_more_flops_than_jnp(name, ref, mode, lo, hi,
                                                                    rtol, atol):
    """An op whose derivative is a primitive of its own takes no more FLOPs
    and bytes than jax.numpy's in the gradient and the Hessian-vector
    product, and the same values away from 0 (where jnp's sinc formula
    cancels; all of reciprocal's x, from 0.5 on).

    sinc' (``sinc_slope``): its lowering the formula (cos(pi x) - sin(pi x)
    / (pi x)) / x above t and the series below, with only the terms the
    dtype needs (5 in float32, where 9 took 1.9x jax.numpy's FLOPs); its JVP
    the closed form sinc'' = -pi**2 sinc - 2 sinc' / x (differentiating
    sinc' 's formula and series took 1.38x the FLOPs of jnp.sinc's HVP).
    reciprocal' (``reciprocal_slope``, -(r * r) with r = 1 / x): its JVP t 2
    r**3, without a negation (as -(r * r) in gradrules ops, the JVP held two
    negations that XLA kept: 1.14x the FLOPs of jnp.reciprocal's HVP)."""
    x = jnp.linspace(lo, hi, 64 * 64, dtype=jnp.float32).reshape(64, 64)
    (ours, got), (want_costs, want) = mode_costs(mode, (getattr(u, name), ref), x)
    assert ours.flops <= want_costs.flops
    assert ours.bytes_accessed <= want_costs.bytes_accessed
    away = np.abs(np.asarray(x)) >= 0.5
    np.testing.assert_allclose(np.asarray(got[0])[away], np.asarray(want[0])[away], rtol=rtol,
                               atol=atol)


def test_reciprocal_derivatives_in_float32_over_its_range():
    """The k-th derivative (-1)**k k! / x**(k+1), k = 1..3, in float32 from
    |x| = 1e-30 to 1e30, both signs: inf where it overflows, 0 where it
    underflows, and exact between (at 1e-19, -1 / (x * x) would be -inf
    where -1 / x**2 = -1e38)."""
    x = np.array([1e-30, 1e-19, 3e-13, 1e-10, 0.5, 3.0, 1e7, 1e9, 1e30], np.float32)
    x = np.concatenate([x, -x])
    f = u.reciprocal
    for k in (1, 2, 3):
        f = jax.grad(f)
        got = np.asarray(jax.jit(jax.vmap(f))(x))
        with np.errstate(over="ignore"):
            want = ((-1) ** k * math.factorial(k) / x.astype(np.float64) ** (k + 1)
                    ).astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-6)
