"""Scans: values along every axis, cumsum's transpose, exact cumprod
derivatives at zeros, cummax's routing of ties, the linear_recurrence helper,
and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules._jax import iter_eqns
from gradrules.primitives import scan as sc
from gradrules.primitives.reduction import sum as gr_sum

X = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("reverse", [False, True])
def test_values_along_every_axis(axis, reverse) -> None:
    def ref(fn, x):
        y = np.flip(x, axis) if reverse else x
        y = fn(y, axis=axis)
        return np.flip(y, axis) if reverse else y
    np.testing.assert_allclose(sc.cumsum(X, axis=axis, reverse=reverse), ref(np.cumsum, X),
                               rtol=1e-12)
    np.testing.assert_allclose(sc.cumprod(X, axis=axis, reverse=reverse), ref(np.cumprod, X),
                               rtol=1e-12)
    np.testing.assert_array_equal(sc.cummax(X, axis=axis, reverse=reverse),
                                  ref(np.maximum.accumulate, X))


def test_exclusive_cumprod() -> None:
    x = np.array([[2.0, 3.0, 0.0, 5.0]])
    np.testing.assert_array_equal(sc.cumprod(x, axis=1, exclusive=True), [[1, 2, 6, 0]])
    np.testing.assert_array_equal(sc.cumprod(x, axis=1, exclusive=True, reverse=True),
                                  [[0, 0, 5, 1]])


def test_cumsum_transpose_is_the_reversed_cumsum() -> None:
    x = np.arange(4.0)
    for reverse in (False, True):
        (ct,) = jax.linear_transpose(lambda v: sc.cumsum(v, axis=0, reverse=reverse), x)(x)
        np.testing.assert_allclose(ct, sc.cumsum(x, axis=0, reverse=not reverse))
    jaxpr = jax.make_jaxpr(jax.grad(lambda v: gr_sum(sc.cumsum(v, axis=0) ** 2)))(x)
    scans = [e.params["reverse"] for e in iter_eqns(jaxpr) if e.primitive.name == "cumsum"]
    assert scans == [False, True], scans


def test_integer_scans() -> None:
    x = np.array([3, -1, 4, 1, -5], np.int32)
    assert sc.cumsum(x, axis=0).dtype == np.int32
    np.testing.assert_array_equal(sc.cumprod(x, axis=0), np.cumprod(x))
    np.testing.assert_array_equal(sc.cummax(x, axis=0), [3, 3, 4, 4, 4])


def test_blocked_scans_over_several_levels() -> None:
    """cumprod, cummax and linear_recurrence lower to ``blocked_scan``
    (cummax's compiled program has no reduce-window, where lax.cummax's CPU
    lowering is one): along a middle axis of 70 (14 blocks of 5, whose
    totals are padded to 16: 4 blocks of 4) and of 9 (3 blocks of 3),
    forward and reversed, inclusive and exclusive, they match numpy's
    cumprod and maximum.accumulate, and the recurrence taken step by step."""
    rng = np.random.default_rng(2)
    x = rng.uniform(0.8, 1.25, (2, 70, 3)) * rng.choice([-1.0, 1.0], (2, 70, 3))
    b = rng.standard_normal((2, 70, 3))
    np.testing.assert_array_equal(sc.cummax(x, axis=1), np.maximum.accumulate(x, 1))
    np.testing.assert_array_equal(sc.cummax(x, axis=1, reverse=True),
                                  np.maximum.accumulate(x[:, ::-1], 1)[:, ::-1])
    assert "reduce-window" not in jax.jit(lambda v: sc.cummax(v, axis=1)).lower(x).compile(
    ).as_text()
    np.testing.assert_array_equal(sc.cummax(x[:, :9], axis=1), np.maximum.accumulate(x[:, :9], 1))
    np.testing.assert_allclose(sc.cumprod(x[:, :9], axis=1, reverse=True),
                               np.cumprod(x[:, 8::-1], 1)[:, ::-1], rtol=1e-12)
    incl = np.cumprod(x, 1)
    np.testing.assert_allclose(sc.cumprod(x, axis=1), incl, rtol=1e-12)
    np.testing.assert_allclose(sc.cumprod(x[:, ::-1], axis=-2, reverse=True, exclusive=True),
                               np.concatenate([incl[:, -2::-1], np.ones((2, 1, 3))], 1),
                               rtol=1e-12)
    s = np.zeros_like(b)
    for i in range(68, -1, -1):               # s_i = a_{i+1} s_{i+1} + b_{i+1}
        s[:, i] = x[:, i + 1] * s[:, i + 1] + b[:, i + 1]
    np.testing.assert_allclose(sc.linear_recurrence(x, b, axis=1, reverse=True), s,
                               rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ cumprod
def test_cumprod_gradient_with_zeros_is_exact() -> None:
    x = np.array([2.0, 0.0, 3.0, 0.0, 4.0])
    jac = jax.jit(jax.jacrev(lambda v: sc.cumprod(v, axis=0)))(x)
    want = np.array([[1, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 6, 0, 0, 0],
                     [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]], float)
    np.testing.assert_array_equal(jac, want)
    np.testing.assert_array_equal(jax.jit(jax.jacfwd(lambda v: sc.cumprod(v, axis=0)))(x), want)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumprod_hessian_and_third_derivative_at_zeros(reverse, exclusive) -> None:
    x = np.array([1.5, 0.0, -2.0, 0.5, 0.0, 3.0])
    w = np.arange(1.0, 7.0)

    def ours(v):
        return gr_sum(sc.cumprod(v, axis=0, reverse=reverse, exclusive=exclusive) * w)

    def ref(v):
        return jnp.sum(sc._cumprod_reference(v, axis=0, reverse=reverse,
                                             exclusive=exclusive) * w)
    for order in (jax.hessian, lambda f: jax.jacfwd(jax.hessian(f))):
        got, want = jax.jit(order(ours))(x), jax.jit(order(ref))(x)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        assert np.abs(got).max() > 0


# ------------------------------------------------------------------- cummax
def test_cummax_routes_the_gradient_to_the_latest_tie() -> None:
    x = np.array([1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.0])
    jac = jax.jit(jax.jacfwd(lambda v: sc.cummax(v, axis=0)))(x)
    np.testing.assert_array_equal(jac.argmax(1), [0, 1, 2, 2, 4, 5, 5])
    np.testing.assert_array_equal(jac.sum(1), 1.0)
    np.testing.assert_array_equal(jax.jit(jax.jacrev(lambda v: sc.cummax(v, axis=0)))(x), jac)
    # reverse: the latest in scan order is the smallest index
    jac = jax.jit(jax.jacfwd(lambda v: sc.cummax(v, axis=0, reverse=True)))(x)
    np.testing.assert_array_equal(jac.argmax(1), [4, 4, 4, 4, 4, 5, 6])


def test_cummax_along_a_middle_axis() -> None:
    x = np.array([[[1.0, 4.0], [2.0, 0.0], [2.0, 5.0]]])
    g = jax.grad(lambda v: gr_sum(sc.cummax(v, axis=-2)))(x)
    np.testing.assert_array_equal(g, [[[1, 2], [1, 0], [1, 1]]])


def test_cummax_gradient_neither_wraps_nor_clips_its_index() -> None:
    """The running argmax lies in [0, n) by construction: cummax's JVP binds
    take_along_axis with ``in_range=True`` (shown in the jaxpr), so the
    compiled gradient has no clamp and no more FLOPs than jax.numpy's, and
    lax.cummax's gradient values, reverse too."""
    from gradrules.bench import compiled_costs
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.standard_normal((32, 200)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((32, 200)), jnp.float32)
    assert "in_range=True" in str(jax.make_jaxpr(
        lambda v: jax.jvp(lambda y: sc.cummax(y, axis=1), (v,), (v,)))(x))
    for reverse in (False, True):
        grads = [jax.grad(lambda v, u, f=f: jnp.sum(u * f(v, axis=1, reverse=reverse)))
                 for f in (sc.cummax, jax.lax.cummax)]
        costs = [compiled_costs(g, x, w) for g in grads]
        assert " clamp(" not in costs[0].compiled.as_text()
        assert costs[0].flops <= costs[1].flops
        # the copies of a maximum summed in another order
        np.testing.assert_allclose(grads[0](x, w), grads[1](x, w), rtol=1e-5, atol=1e-5)


# -------------------------------------------------------- linear_recurrence
@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence_semantics_and_transpose(reverse) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (2, 5)), rng.uniform(-1, 1, (2, 5))
    want = np.zeros_like(b)
    for r in range(2):
        for i in range(5):
            js = range(i + 1, 5) if reverse else range(i)
            want[r, i] = sum(b[r, j] * np.prod(a[r, min(i, j) + 1:max(i, j)]) for j in js)
    np.testing.assert_allclose(sc.linear_recurrence(a, b, axis=1, reverse=reverse), want,
                               rtol=1e-12, atol=1e-15)
    (ct,) = jax.linear_transpose(lambda v: sc.linear_recurrence(a, v, axis=1, reverse=reverse),
                                 b)(b)
    np.testing.assert_allclose(ct, sc.linear_recurrence(a, b, axis=1, reverse=not reverse))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax"])
def test_bad_input(name) -> None:
    fn = getattr(sc, name)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: axis=2 is out of range for an "
                                         r"array of rank 2"):
        fn(jnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: axis=-3 is out of range"):
        fn(jnp.ones((2, 3)), axis=-3)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: axis must be an int, got 0.0"):
        fn(jnp.ones((2, 3)), axis=0.0)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: axis must be an int, "
                                        r"got \(0, 1\)"):
        fn(jnp.ones((2, 3)), axis=(0, 1))
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: axis must be an int, got None"):
        fn(jnp.ones((2, 3)), axis=None)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: x must have at least one axis"):
        fn(jnp.float32(1.0), axis=0)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: reverse must be a bool"):
        fn(jnp.ones(3), axis=0, reverse="yes")
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x is complex"):
        fn(jnp.ones(3, jnp.complex64), axis=0)


def test_bad_recurrence_input() -> None:
    with pytest.raises(ValueError, match=r"gradrules\.linear_recurrence: a and b must have "
                                         r"one shape, got a with shape \(2, 3\) and b with "
                                         r"shape \(3,\)"):
        sc.linear_recurrence(jnp.ones((2, 3)), jnp.ones(3), axis=0)
    with pytest.raises(TypeError, match=r"gradrules\.linear_recurrence: argument a must have "
                                        r"a floating dtype, got int32"):
        sc.linear_recurrence(jnp.ones(3, jnp.int32), jnp.ones(3, jnp.int32), axis=0)
    with pytest.raises(TypeError, match=r"gradrules\.cumprod: exclusive must be a bool"):
        sc.cumprod(jnp.ones(3), axis=0, exclusive=None)


# ------------------------------------------------------------ logcumsumexp
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("reverse", [False, True])
def test_logcumsumexp_values_and_derivatives(axis, reverse) -> None:
    """Against lax.cumlogsumexp: values, the Jacobian both ways, the Hessian of
    one entry (the recurrence's coefficients depend on x too)."""
    x = np.random.default_rng(3).normal(size=(4, 3)) * 3

    def ours(v):
        return sc.logcumsumexp(v, axis=axis, reverse=reverse)

    def ref(v):
        return jax.lax.cumlogsumexp(v, axis % 2, reverse)
    # jitted: one compile per transform instead of one per primitive
    np.testing.assert_allclose(ours(x), ref(x), rtol=1e-13)
    jac_ref = jax.jit(jax.jacfwd(ref))(x)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(ours))(x), jac_ref, atol=1e-13)
    np.testing.assert_allclose(jax.jit(jax.jacrev(ours))(x), jac_ref, atol=1e-13)
    np.testing.assert_allclose(jax.jit(jax.hessian(lambda v: ours(v)[2, 1]))(x),
                               jax.jit(jax.hessian(lambda v: ref(v)[2, 1]))(x), atol=1e-12)


def test_logcumsumexp_with_minus_inf_and_huge_entries() -> None:
    """Leading -inf: the output is -inf and its weights 0 (lax.cumlogsumexp's
    derivative is NaN there); a -inf later gets weight 0; +-1e4 in float32
    give finite values and derivatives of every order tried."""
    x = np.array([-np.inf, -np.inf, 0.0, -np.inf, 1.0])
    out = sc.logcumsumexp(x, axis=0)
    np.testing.assert_allclose(out, [-np.inf, -np.inf, 0.0, 0.0, np.log1p(np.e)])
    jac = np.asarray(jax.jacfwd(lambda v: sc.logcumsumexp(v, axis=0))(x))
    assert np.isfinite(jac).all()
    np.testing.assert_array_equal(jac[:2], 0.0)
    np.testing.assert_allclose(jac[3], [0, 0, 1, 0, 0])
    s = 1 / (1 + np.e)
    np.testing.assert_allclose(jac[4], [0, 0, s, 0, 1 - s], rtol=1e-14)
    np.testing.assert_allclose(jax.jacrev(lambda v: sc.logcumsumexp(v, axis=0))(x), jac)
    big = jnp.asarray([-1e4, 3.0, 1e4, -2.0, 1e4], jnp.float32)
    f = lambda v: gr_sum(sc.logcumsumexp(v, axis=0))  # noqa: E731
    assert np.isfinite(np.asarray(sc.logcumsumexp(big, axis=0))).all()
    for g in (jax.grad(f), jax.jacfwd(jax.grad(f)), jax.hessian(jax.grad(lambda v: f(v)))):
        assert np.isfinite(np.asarray(jax.jit(g)(big))).all()
    # out_4 = 1e4 + log 2 is rounded to float32's spacing at 1e4 (1e-3)
    np.testing.assert_allclose(jax.grad(f)(big), [1, 1, 2.5, 0, 0.5], atol=2e-3)


def test_logcumsumexp_jvp_is_a_linear_recurrence_and_transposes() -> None:
    """The tangent map binds linear_recurrence (no exp of x - a shift that
    could overflow); vmap of the gradient over any axis matches a loop."""
    x = np.random.default_rng(4).normal(size=(3, 5))
    jaxpr = jax.make_jaxpr(lambda v, t: jax.jvp(
        lambda u: sc.logcumsumexp(u, axis=1), (v,), (t,)))(x, x)
    names = {e.primitive.name for e in iter_eqns(jaxpr.jaxpr)}
    assert "linear_recurrence" in names and "cumsum" not in names
    grad = jax.grad(lambda v: gr_sum(sc.logcumsumexp(v, axis=0) ** 2))
    g = jax.jit(jax.vmap(grad, in_axes=1, out_axes=1))(x)
    loop = np.stack([jax.jit(grad)(x[:, j]) for j in range(5)], 1)
    np.testing.assert_allclose(g, loop, rtol=1e-13)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sc.logcumsumexp(np.ones(3, np.int32), axis=0), TypeError, "logcumsumexp"),
    (lambda: sc.logcumsumexp(np.ones((2, 3)), axis=2), ValueError, "logcumsumexp"),
    (lambda: sc.logcumsumexp(np.float64(1.0), axis=0), ValueError, "logcumsumexp"),
    (lambda: sc.logcumsumexp(np.ones(3), axis=0, reverse=1), TypeError, "reverse"),
])
def test_logcumsumexp_errors(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_scans_keep_an_explicit_batch_sharding() -> None:
    """The exclusive shift (a pad, not a concatenation with an unsharded
    edge) keeps the sharding of x: forward and gradient on a one-device mesh
    with an Explicit ``data`` axis."""
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((1,), ("data",), axis_types=(AxisType.Explicit,))
    x = np.random.default_rng(5).uniform(0.5, 1.5, (4, 3))
    with jax.set_mesh(mesh):
        xs = jax.device_put(x, NamedSharding(mesh, P("data")))
        for fn in (lambda v: sc.linear_recurrence(v, v, axis=1),
                   jax.grad(lambda v: gr_sum(sc.cumprod(v, axis=1))),
                   jax.grad(lambda v: gr_sum(sc.logcumsumexp(v, axis=1, reverse=True)))):
            out = jax.jit(fn)(xs)
            assert jax.typeof(out).sharding.spec == P("data", None)
            np.testing.assert_allclose(out, jax.jit(fn)(x), rtol=1e-12)
