"""Semantics of logaddexp, hypot and lerp beyond the rule checker: values
against jax.numpy / torch.lerp's formula, the derivatives at the edges
(infinities, the origin, +-1e4 in float32) in several orders, broadcasting,
and the errors for bad input."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.primitives.arithmetic import hypot, lerp, logaddexp

from _helpers import mode_costs

INF = np.inf


def _grads(fn, x, y, order=1):
    """The ``order``-th derivatives d^k/dx^k and d^k/dy^k at each (x, y)."""
    out = []
    for argnum in (0, 1):
        f = fn
        for _ in range(order):
            f = jax.grad(f, argnum)
        out.append(np.asarray(jax.vmap(f)(jnp.asarray(x, jnp.float64),
                                          jnp.asarray(y, jnp.float64))))
    return out


# -------------------------------------------------------------- logaddexp
def test_logaddexp_matches_jnp_with_broadcasting():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(3,))
    np.testing.assert_allclose(logaddexp(x, y), jnp.logaddexp(x, y), rtol=1e-15)
    big = np.array([-1e4, 1e4, 700.0, -INF, -INF, INF])
    other = np.array([-1e4, 1e4, 710.0, -INF, 2.0, INF])
    np.testing.assert_array_equal(logaddexp(big, other), jnp.logaddexp(big, other))


def test_logaddexp_derivatives_at_the_edges():
    """sigmoid(x - y) and sigmoid(y - x); at (-inf, -inf) both 0 (logsumexp's
    all -inf row, where jnp gives NaN), at (+inf, +inf) a half each, every
    higher order 0 there; finite at +-1e4."""
    x = np.array([-INF, INF, -INF, 3.0, 1e4, -1e4, 1.0])
    y = np.array([-INF, INF, 2.0, -INF, -1e4, -1e4, 1.0])
    dx, dy = _grads(logaddexp, x, y)
    np.testing.assert_array_equal(dx, [0.0, 0.5, 0.0, 1.0, 1.0, 0.5, 0.5])
    np.testing.assert_array_equal(dy, [0.0, 0.5, 1.0, 0.0, 0.0, 0.5, 0.5])
    for order in (2, 3):
        d2x, d2y = _grads(logaddexp, x, y, order)
        assert np.isfinite(d2x).all() and np.isfinite(d2y).all()
        np.testing.assert_array_equal(d2x[:5], 0.0)
    # on finite points the derivatives are jnp's, in three orders
    u, v = np.array([0.3, -2.0, 5.0]), np.array([0.3, 1.0, -4.0])
    for order in (1, 2, 3):
        for got, want in zip(_grads(logaddexp, u, v, order), _grads(jnp.logaddexp, u, v, order)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_logaddexp_float32_large_values():
    x = jnp.asarray([1e4, -1e4, 3e38], jnp.float32)
    y = jnp.asarray([-1e4, -1e4, 3e38], jnp.float32)
    out = logaddexp(x, y)
    assert out.dtype == jnp.float32 and np.isfinite(np.asarray(out)[:2]).all()
    g = jax.vmap(jax.grad(jax.grad(logaddexp)))(x, y)
    assert np.isfinite(np.asarray(g)).all()


def test_logaddexp_weight_guards_the_difference_with_one_isnan():
    """The weight's guard is one isnan of x - y and two selects: the gradient
    takes at most 1.3x jax.numpy's FLOPs (1.53x with a compare of x with y,
    isinf and a third select), no more bytes, the HVP no more FLOPs; a NaN
    input still gives NaN derivatives, as in jnp."""
    x = jnp.linspace(-3.0, 3.0, 64 * 64, dtype=jnp.float32).reshape(64, 64)
    y = jnp.linspace(2.0, -1.0, 64, dtype=jnp.float32)
    (ours, got), (ref, want) = mode_costs("grad", (logaddexp, jnp.logaddexp), x, y, diff=(0, 1))
    assert ours.flops <= 1.3 * ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed
    for a, b in zip(got, want):     # y's: sums of 64 terms of either sign
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
    (ours, _), (ref, _) = mode_costs("hvp", (logaddexp, jnp.logaddexp), x, y, diff=(0, 1))
    assert ours.flops <= ref.flops
    dx, dy = _grads(logaddexp, np.array([np.nan, 1.0]), np.array([0.0, np.nan]))
    assert np.isnan(dx).all() and np.isnan(dy).all()


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_gradient_splits_ties_with_two_selects(op):
    """[x > y] + 0.5 [x == y] as two selects of constants: no more FLOPs or
    bytes than jax.numpy's gradient on either JAX version (with the
    indicator converted and added, 1.2x JAX 0.11.2's FLOPs), and ties, a
    broadcast y among them, get half the cotangent on each side."""
    x = jnp.round(jnp.linspace(-3.0, 3.0, 64 * 64, dtype=jnp.float32).reshape(64, 64))
    y = jnp.round(jnp.linspace(2.0, -1.0, 64, dtype=jnp.float32))
    fns = (getattr(gradrules, op), getattr(jnp, op))
    (ours, got), (ref, want) = mode_costs("grad", fns, x, y, diff=(0, 1))
    assert ours.flops <= ref.flops and ours.bytes_accessed <= ref.bytes_accessed
    assert np.any(np.asarray(x) == np.asarray(y))       # ties, which jnp also splits
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# ------------------------------------------------------------------ hypot
def test_hypot_matches_jnp_without_overflow():
    x = np.array([3.0, 1e300, 1e-300, 0.0, -5.0])
    y = np.array([4.0, 1e300, 1e-300, 0.0, 12.0])
    np.testing.assert_allclose(hypot(x, y), jnp.hypot(x, y), rtol=1e-15)
    np.testing.assert_allclose(hypot(np.ones((2, 1)), np.zeros(3)), np.ones((2, 3)))


def test_hypot_derivative_at_the_origin_is_zero():
    dx, dy = _grads(hypot, [0.0, 3.0, -3.0], [0.0, 4.0, 4.0])
    np.testing.assert_allclose(dx, [0.0, 0.6, -0.6])
    np.testing.assert_allclose(dy, [0.0, 0.8, 0.8])
    for order in (2, 3):
        d2x, d2y = _grads(hypot, [0.0], [0.0], order)
        np.testing.assert_array_equal(np.concatenate([d2x, d2y]), [0.0, 0.0])
    u, v = np.array([0.5, -2.0]), np.array([1.5, 0.7])
    for got, want in zip(_grads(hypot, u, v, 2), _grads(jnp.hypot, u, v, 2)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# ------------------------------------------------------------------- lerp
def test_lerp_is_torch_lerp_with_array_weight():
    rng = np.random.default_rng(1)
    x, y, w = rng.normal(size=(2, 1, 3)), rng.normal(size=(4, 1)), rng.uniform(size=(3,))
    out = lerp(x, y, w)
    assert out.shape == (2, 4, 3)
    # rtol: XLA may fuse the multiply-add
    np.testing.assert_allclose(out, x + w * (y - x), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(lerp(1.0, 3.0, 0.25), 1.5)
    assert gradrules.lerp is lerp


def test_lerp_derivatives_and_transpose():
    rng = np.random.default_rng(2)
    x, y, w = rng.normal(size=(3,)), rng.normal(size=(2, 3)), rng.uniform(size=(2, 1))
    gx, gy, gw = jax.grad(lambda *a: lerp(*a).sum(), (0, 1, 2))(x, y, w)
    np.testing.assert_allclose(gx, (1 - w).sum(0) * np.ones(3), rtol=1e-14)
    np.testing.assert_allclose(gy, np.broadcast_to(w, (2, 3)), rtol=1e-14)
    np.testing.assert_allclose(gw, (y - x).sum(1, keepdims=True), rtol=1e-14)
    # linear in (x, y) for a fixed w: linear_transpose works and sends ct (1 - w), ct w
    ct = rng.normal(size=(2, 3))
    tx, ty = jax.linear_transpose(lambda a, b: lerp(a, b, w), x, y)(ct)
    np.testing.assert_allclose(tx, (ct * (1 - w)).sum(0), rtol=1e-14)
    np.testing.assert_allclose(ty, ct * w, rtol=1e-14)
    # d2/dw dx = -1, d2/dw dy = 1 (bilinear cross terms); d2/dw2 = 0
    h = jax.hessian(lambda v: lerp(v[0], v[1], v[2]))(np.array([0.3, 2.0, 0.4]))
    np.testing.assert_allclose(h, [[0, 0, -1], [0, 0, 1], [-1, 1, 0]], atol=0)


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize("call, exc, match", [
    (lambda: logaddexp(np.ones(3), np.ones(2)), ValueError, "gradrules.logaddexp"),
    (lambda: hypot(np.ones((2, 3)), np.ones((3, 2))), ValueError, "gradrules.hypot"),
    (lambda: lerp(np.ones(3), np.ones(3), np.ones(2)), ValueError, "gradrules.lerp"),
    (lambda: lerp(np.ones(3), np.ones(3)), TypeError, "gradrules.lerp takes 3 arguments"),
    (lambda: logaddexp("a", 1.0), TypeError, "gradrules.logaddexp"),
])
def test_errors_name_the_op(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
    with pytest.raises(exc, match=match):
        jax.jit(lambda: call())()


@pytest.mark.parametrize("mode", ["grad", "hvp"])
def test_divide_grad_by_a_broadcast_divisor_keeps_no_buffer_of_the_output_size(mode):
    """The transpose (of the JVP's t_x / y + ((-t_y / y) / y) x) sums y's
    part ct x before dividing it by y and negating it: no 1 / y (nor -ct)
    broadcast to x's size is written for two loops to share, the sum does
    not wait for x's cotangent, and no more bytes or FLOPs than jax.numpy's
    gradient and HVP (a negated ct, written out for the HVP's two sums to
    read, took 1.14x its bytes)."""
    x = jnp.linspace(0.5, 2.0, 64 * 32 * 48, dtype=jnp.float32).reshape(64, 32, 48)
    y = jnp.linspace(1.0, 3.0, 32, dtype=jnp.float32)
    fns = [lambda a, b, f=f: f(a, b[:, None]) for f in (gradrules.divide, jnp.divide)]
    (ours, _), (ref, _) = mode_costs(mode, fns, x, y, diff=(0, 1))
    assert ours.temp_bytes <= ref.temp_bytes + 2**12
    assert ours.bytes_accessed <= 1.01 * ref.bytes_accessed
    assert ours.flops <= 1.01 * ref.flops
    if mode == "grad":
        # values with smooth weights: y's sums do not cancel as with the bench's cos(0, 1, 2, ...)
        w = jnp.cos(x)
        got, want = (jax.grad(lambda a, b, f=f: jnp.sum(w * f(a, b)), (0, 1))(x, y) for f in fns)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=2e-6)


def test_divide_gradient_in_y_is_finite_where_x_over_y_squared_is():
    """-x / y**2 at x = y = 1e-20 in float32 is -1e20: the transpose sums
    ct x before scaling it by 1 / y twice and negating, so nothing on the way
    overflows, jitted too (jax.numpy's x * y**-2 gives -inf there, and so
    did a division by y twice under jit, which XLA rewrites into one
    division by y * y)."""
    x = y = jnp.float32(1e-20)
    grad = jax.grad(gradrules.divide, 1)
    for fn in (grad, jax.jit(grad)):
        np.testing.assert_allclose(fn(x, y), -1e20, rtol=1e-6)


def test_lerp_hessian_vector_product_does_no_more_work_than_jnp():
    """x's cotangent is ct - ct w, sharing y's ct w (ct (1 - w) took a
    product of its own), and a subtraction's tangent is one subtract (not a
    negation and an add): the HVP takes jax.numpy's FLOPs and bytes (1.5x
    and 1.11x before)."""
    x, y, w = (jnp.linspace(a, b, 64 * 64, dtype=jnp.float32).reshape(64, 64)
               for a, b in ((-1.0, 1.0), (0.5, 2.0), (0.1, 0.9)))
    (ours, _), (ref, _) = mode_costs("hvp", (lerp, lambda a, b, c: a + c * (b - a)), x, y, w,
                                     diff=(0, 1, 2))
    assert ours.flops <= ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed


def test_pow_derivatives_need_no_select_after_the_safe_exponent():
    """d/dx = y x**(y - 1) with the exponent taken as 0 where y == 0 is
    already 0 there: no select after it. The gradient takes at most 1.45x
    jax.numpy's FLOPs (1.57x before; the two guards that keep (0, 0) finite
    in every order are what is left), the HVP no more bytes (1.16x before),
    and (0, 0) stays finite."""
    x = jnp.linspace(0.5, 2.0, 64 * 64, dtype=jnp.float32).reshape(64, 64)
    y = jnp.linspace(-2.0, 2.0, 64 * 64, dtype=jnp.float32).reshape(64, 64)
    (ours, got), (ref, want) = mode_costs("grad", (gradrules.pow, jnp.power), x, y, diff=(0, 1))
    assert ours.flops <= 1.45 * ref.flops
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-6)
    (ours, _), (ref, _) = mode_costs("hvp", (gradrules.pow, jnp.power), x, y, diff=(0, 1))
    assert ours.bytes_accessed <= ref.bytes_accessed
    hess = jax.hessian(gradrules.pow, argnums=(0, 1))(0.0, 0.0)
    assert np.all(np.isfinite(np.asarray(jax.tree_util.tree_leaves(hess))))
