"""Semantics of the activation family beyond the rule checker: the
derivatives at the kinks, the torch semantics of softplus and clamp,
stability at large |x| in every order, and the errors for bad input."""

import math

import numpy as np
import pytest
import scipy.special as sp

import jax
import jax.numpy as jnp

from gradrules.primitives import activation as a

from _helpers import mode_costs


def _d(fn, x, order=1, **kw):
    """The ``order``-th derivative of the scalar function at each point of x."""
    f = lambda v: fn(v, **kw)  # noqa: E731
    for _ in range(order):
        f = jax.grad(f)
    return np.asarray(jax.jit(jax.vmap(f))(jnp.asarray(x, jnp.float64)))


# ------------------------------------------------------------------ kinks
def test_relu_kink_and_integers():
    np.testing.assert_array_equal(_d(a.relu, [-1.0, 0.0, -0.0, 2.0]), [0.0, 0.0, 0.0, 1.0])
    x = np.array([-3, 0, 4], np.int8)
    out = a.relu(x)
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [0, 0, 4])


def test_leaky_relu_slope_at_zero():
    np.testing.assert_allclose(_d(a.leaky_relu, [-1.0, 0.0, 2.0]), [0.01, 0.01, 1.0])
    np.testing.assert_allclose(_d(a.leaky_relu, [-1.0, 0.0, 2.0], negative_slope=0.3),
                               [0.3, 0.3, 1.0])
    np.testing.assert_allclose(a.leaky_relu(np.array([-2.0, 3.0]), negative_slope=0.3),
                               [-0.6, 3.0])


def test_hardtanh_bounds_get_no_gradient():
    x = [-1.5, -1.0, 0.2, 1.0, 1.5]
    np.testing.assert_array_equal(_d(a.hardtanh, x), [0.0, 0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(a.hardtanh(np.array(x)), [-1.0, -1.0, 0.2, 1.0, 1.0])
    np.testing.assert_array_equal(_d(a.hardtanh, [-0.5, 0.0, 2.0], min_val=-0.5, max_val=2.0),
                                  [0.0, 1.0, 0.0])


def test_clamp_bounds_pass_the_gradient():
    x = [-1.0, -0.5, 0.1, 0.5, 1.0]
    np.testing.assert_array_equal(_d(a.clamp, x, min=-0.5, max=0.5), [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(_d(a.clamp, x, min=0.1), [0.0, 0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(_d(a.clamp, x, max=0.1), [1.0, 1.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(a.clamp(np.array(x), min=-0.5, max=0.5),
                                  [-0.5, -0.5, 0.1, 0.5, 0.5])


def test_clamp_min_above_max_gives_max():
    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(a.clamp(x, min=1.0, max=0.0), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_d(a.clamp, x, min=1.0, max=0.0), [0.0, 0.0, 0.0])


def test_clamp_integers():
    x = np.array([-5, 0, 7, 200], np.int32)
    out = a.clamp(x, min=-1, max=6.0)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [-1, 0, 6, 6])
    u = np.array([0, 5, 255], np.uint8)   # bounds outside uint8 do not wrap around
    np.testing.assert_array_equal(a.clamp(u, min=-1, max=300), u)
    np.testing.assert_array_equal(a.clamp(u, min=3), [3, 5, 255])


def test_hardswish_kinks_follow_paddle():
    x = [-4.0, -3.0, 0.0, 1.5, 3.0, 4.0]
    np.testing.assert_allclose(_d(a.hardswish, x), [0.0, 0.0, 0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(_d(a.hardswish, x, order=2), [0, 0, 1 / 3, 1 / 3, 0, 0])
    np.testing.assert_allclose(a.hardswish(np.array(x)), [0.0, 0.0, 0.0, 1.125, 3.0, 4.0])


# ---------------------------------------------------------- torch semantics
def test_softplus_threshold_and_beta():
    x = np.array([-3.0, 0.5, 10.0, 25.0])
    np.testing.assert_allclose(a.softplus(x), np.where(x > 20, x, np.log1p(np.exp(x))),
                               rtol=1e-14)
    got = a.softplus(x, beta=2.0, threshold=3.0)
    want = np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(_d(a.softplus, x, beta=2.0, threshold=3.0),
                               np.where(2 * x > 3, 1.0, sp.expit(2 * x)), rtol=1e-14)
    np.testing.assert_array_equal(_d(a.softplus, [25.0, 30.0], order=2), [0.0, 0.0])


def test_gelu_forms():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.0])
    phi = 0.5 * sp.erfc(-x / math.sqrt(2))
    np.testing.assert_allclose(a.gelu(x), x * phi, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(_d(a.gelu, x), phi + x * np.exp(-x**2 / 2) / math.sqrt(2 * math.pi),
                               rtol=1e-13)
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    np.testing.assert_allclose(a.gelu(x, approximate=True), x * sp.expit(2 * u), rtol=1e-14)
    np.testing.assert_allclose(a.gelu(x, approximate=True), 0.5 * x * (1 + np.tanh(u)),
                               rtol=1e-13)
    du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x**2)
    want = 0.5 * (1 + np.tanh(u)) + 0.5 * x * (1 - np.tanh(u) ** 2) * du
    np.testing.assert_allclose(_d(a.gelu, x, approximate=True), want, rtol=1e-13)


def test_smooth_derivatives():
    x = np.array([-3.0, -0.2, 0.0, 1.1, 4.0])
    s = sp.expit(x)
    np.testing.assert_allclose(_d(a.sigmoid, x), s * (1 - s), rtol=1e-13)
    np.testing.assert_allclose(_d(a.log_sigmoid, x), 1 - s, rtol=1e-13)
    np.testing.assert_allclose(_d(a.silu, x), s * (1 + x * (1 - s)), rtol=1e-13)


# ------------------------------------------------------- large |x|, all orders
LARGE = np.array([-1e4, -800.0, -60.0, 60.0, 800.0, 1e4])
SMOOTH = [("sigmoid", {}), ("log_sigmoid", {}), ("silu", {}), ("softplus", {}),
          ("softplus", {"beta": 3.0, "threshold": 50.0}), ("gelu", {}),
          ("gelu", {"approximate": True})]


@pytest.mark.parametrize("name, kw", SMOOTH)
def test_finite_at_large_abs_x_in_every_order(name, kw):
    fn = getattr(a, name)
    for order in range(4):
        d = _d(fn, LARGE, order, **kw) if order else np.asarray(fn(LARGE, **kw))
        assert np.isfinite(d).all(), (order, d)
    for dtype in ("float32", "float16", "bfloat16"):
        x = jnp.asarray(np.array([-6e4, -300.0, 300.0, 6e4]), dtype)
        assert bool(jnp.isfinite(fn(x, **kw)).all()), dtype
        g = jax.jit(jax.vmap(jax.grad(jax.grad(lambda v: fn(v, **kw)))))(x)
        assert bool(jnp.isfinite(g).all()), (dtype, g)


@pytest.mark.parametrize("x", [10.0, 15.0, 20.0])
def test_silu_derivatives_keep_float32_precision_at_large_x(x):
    """silu' = s (1 + x sigmoid(-x)): no cancellation of 1 - s, so the float32
    second derivative stays near the float64 one (1 - s gave 1e-2 at x = 15)."""
    d1, d2 = (jax.jit(jax.grad(a.silu)), jax.jit(jax.grad(jax.grad(a.silu))))
    with jax.enable_x64(True):
        w1 = jax.jit(jax.grad(jax.nn.silu))(np.float64(x))
        w2 = jax.jit(jax.grad(jax.grad(jax.nn.silu)))(np.float64(x))
    np.testing.assert_allclose(d1(np.float32(x)), w1, rtol=1e-6)
    np.testing.assert_allclose(d2(np.float32(x)), w2, rtol=1e-4)


def test_large_abs_x_values_do_not_overflow():
    np.testing.assert_array_equal(a.sigmoid(np.array([-1e4, 1e4])), [0.0, 1.0])
    np.testing.assert_allclose(a.log_sigmoid(np.array([-1e4, -800.0, 800.0])),
                               [-1e4, -800.0, 0.0])
    np.testing.assert_allclose(a.log_sigmoid(np.array(40.0)), -math.exp(-40.0), rtol=1e-12)
    np.testing.assert_allclose(a.softplus(np.array([-800.0, 800.0]), beta=1.0,
                                          threshold=1e9), [0.0, 800.0])
    np.testing.assert_allclose(_d(a.sigmoid, [-800.0, 40.0]), [0.0, math.exp(-40.0)],
                               rtol=1e-12)
    np.testing.assert_array_equal(_d(a.gelu, [-1e4, 1e4], approximate=True), [0.0, 1.0])
    np.testing.assert_array_equal(_d(a.gelu, [-1e4, 1e4], 2, approximate=True), [0.0, 0.0])


def test_hardswish_at_the_float32_maximum():
    """x * relu6(x + 3) / 6 would overflow to inf in x * 6; the op gives x."""
    for dtype in (jnp.float32, jnp.bfloat16):
        big = jnp.asarray([-3e38, 3e38], dtype)
        np.testing.assert_array_equal(a.hardswish(big), jax.nn.hard_swish(big))
        assert np.isfinite(np.asarray(a.hardswish(big), np.float32)[1])


# --------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", ["sigmoid", "log_sigmoid", "hardswish", "silu", "gelu",
                                  "softplus", "leaky_relu", "hardtanh"])
def test_float_only_ops_reject_integers(name):
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x .*floating.*int32"):
        getattr(a, name)(np.arange(3, dtype=np.int32))


@pytest.mark.parametrize("name", ["relu", "clamp"])
def test_bool_and_complex_are_rejected(name):
    kw = {"min": 0.0} if name == "clamp" else {}
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x .*bool"):
        getattr(a, name)(np.array([True, False]), **kw)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x is complex"):
        getattr(a, name)(np.ones(2, np.complex64), **kw)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda x: a.leaky_relu(x, negative_slope="0.1"), TypeError, r"leaky_relu: negative_slope"),
    (lambda x: a.leaky_relu(x, negative_slope=float("nan")), ValueError, r"leaky_relu: negative"),
    (lambda x: a.hardtanh(x, min_val=1.0, max_val=-1.0), ValueError,
     r"hardtanh: min_val=1.0 is greater than max_val=-1.0"),
    (lambda x: a.hardtanh(x, min_val=None), TypeError, r"hardtanh: min_val"),
    (lambda x: a.gelu(x, approximate="tanh"), TypeError, r"gelu: approximate must be a bool"),
    (lambda x: a.softplus(x, beta=0.0), ValueError, r"softplus: beta must be > 0"),
    (lambda x: a.softplus(x, beta=-1.0), ValueError, r"softplus: beta must be > 0"),
    (lambda x: a.softplus(x, threshold=float("nan")), ValueError, r"softplus: threshold"),
    (lambda x: a.softplus(x, beta=True), TypeError, r"softplus: beta"),
    (lambda x: a.clamp(x), ValueError, r"clamp: at least one of min and max"),
    (lambda x: a.clamp(x, min="0"), TypeError, r"clamp: min must be a Python number"),
    (lambda x: a.clamp(x, max=np.ones(2)), TypeError, r"clamp: max must be a Python number"),
    (lambda x: a.clamp(x.astype(np.int32), min=0.5), TypeError,
     r"clamp: min=0.5 is not an integer, but x has the integer dtype int32"),
])
def test_bad_params(call, exc, msg):
    with pytest.raises(exc, match=r"gradrules\." + msg):
        call(np.array([0.5, -1.0]))


def test_params_are_static_in_the_jaxpr():
    jaxpr = jax.make_jaxpr(lambda x: a.softplus(x, beta=2, threshold=5))(1.0)
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.params == {"beta": 2.0, "threshold": 5.0}
    jaxpr = jax.make_jaxpr(lambda x: a.clamp(x, max=3))(np.int32(1))
    assert jaxpr.jaxpr.eqns[0].params == {"min": None, "max": 3}


# ------------------------------------------------ elu, selu, celu, mish
_EDGE = [-1e4, -30.0, -1.0, -0.0, 0.0, 0.5, 30.0, 1e4]


@pytest.mark.parametrize("name, alpha", [("elu", 1.0), ("elu", 0.5), ("celu", 1.0),
                                         ("celu", 2.0), ("selu", None)])
def test_exponential_units_match_jax_nn_in_three_orders(name, alpha):
    """Values and first to third derivatives against jax.nn's own, away from 0
    and at +-1e4 (all finite)."""
    kw = {} if alpha is None else {"alpha": alpha}
    ref = (lambda v: getattr(jax.nn, name)(v, alpha)) if alpha is not None else jax.nn.selu
    x = np.array([-1e4, -30.0, -1.0, -0.3, 0.4, 2.0, 30.0, 1e4])
    np.testing.assert_allclose(getattr(a, name)(x, **kw), ref(x), rtol=1e-14)
    for order in (1, 2, 3):
        got = _d(getattr(a, name), x, order, **kw)
        assert np.isfinite(got).all()
        # atol: jax.nn differentiates expm1 as expm1(x) + 1, which rounds exp(-30)
        np.testing.assert_allclose(got, _d(ref, x, order), rtol=1e-12, atol=1e-15)


def test_elu_derivative_at_zero_is_the_left_branch():
    """jax.nn.elu's convention: elu'(0) = alpha (the x <= 0 branch), and so
    the second derivative; selu scales it; celu is continuous there."""
    np.testing.assert_allclose(_d(a.elu, [0.0], alpha=0.5), [0.5])
    np.testing.assert_allclose(_d(a.elu, [0.0], 2, alpha=0.5), [0.5])
    np.testing.assert_allclose(_d(a.elu, [0.0]), _d(jax.nn.elu, [0.0]))
    np.testing.assert_allclose(_d(a.selu, [0.0]), [a.SELU_SCALE * a.SELU_ALPHA])
    np.testing.assert_allclose(_d(a.selu, [0.0]), _d(jax.nn.selu, [0.0]))
    np.testing.assert_allclose(_d(a.celu, [0.0, 1e-9, -1e-9], alpha=2.0), [1.0, 1.0, 1.0],
                               rtol=1e-8)
    np.testing.assert_allclose(_d(a.celu, [0.0], 2, alpha=2.0), [0.5])


def test_selu_uses_jax_nn_constants():
    x = np.array([-2.0, 1.5])
    expect = 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x))
    np.testing.assert_allclose(a.selu(x), expect, rtol=1e-15)


def test_mish_matches_jax_nn_and_stays_finite_at_large_x():
    x = np.array(_EDGE)
    np.testing.assert_allclose(a.mish(x), jax.nn.mish(x), rtol=1e-14, atol=1e-300)
    for order in (1, 2, 3):
        got = _d(a.mish, x, order)
        assert np.isfinite(got).all(), (order, got)
        keep = np.abs(x) < 100      # jax.nn.mish's own derivatives are NaN at +-1e4
        np.testing.assert_allclose(got[keep], _d(jax.nn.mish, x[keep], order), rtol=1e-10,
                                   atol=1e-14)
    np.testing.assert_allclose(_d(a.mish, [-1e4, 1e4]), [0.0, 1.0], atol=0)


@pytest.mark.parametrize("name", ["mish", "celu", "elu", "selu"])
def test_float32_large_x_every_order_finite(name):
    x = jnp.asarray([-1e4, -80.0, 80.0, 1e4], jnp.float32)
    f = getattr(a, name)
    assert np.isfinite(np.asarray(f(x))).all()
    g = f
    for _ in range(3):
        g = jax.grad(g)
        assert np.isfinite(np.asarray(jax.vmap(g)(x))).all()


def test_swish_is_silu():
    """An alias: the same function, primitive and manifest entry."""
    import gradrules
    assert gradrules.swish is gradrules.silu is a.silu
    assert gradrules.get_op("swish") is gradrules.get_op("silu")
    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(gradrules.swish(x), jax.nn.swish(x), rtol=1e-14)


@pytest.mark.parametrize("call, match", [
    (lambda: a.elu(np.ones(2), alpha="1"), "gradrules.elu: alpha must be a Python number"),
    (lambda: a.celu(np.ones(2), alpha=0.0), "gradrules.celu: alpha must be > 0"),
    (lambda: a.celu(np.ones(2), alpha=-1.0), "gradrules.celu: alpha must be > 0"),
    (lambda: a.elu(np.ones(2), alpha=np.inf), "gradrules.elu: alpha must be finite"),
    (lambda: a.mish(np.array([1, 2])), "gradrules.mish"),
    (lambda: a.selu("x"), "gradrules.selu"),
])
def test_exponential_unit_errors(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()
    with pytest.raises((TypeError, ValueError), match=match):
        jax.jit(lambda: call())()


# ------------------------------------------------------------------- clip
def test_clip_number_bounds_are_one_clamp():
    import gradrules
    x = np.array([-2.0, -0.5, 0.5, 2.0])
    jaxpr = str(jax.make_jaxpr(lambda v: a.clip(v, -1.0, 1.0))(x))
    assert "clamp[" in jaxpr and "where" not in jaxpr
    np.testing.assert_array_equal(a.clip(x, -1.0, 1.0), jnp.clip(x, -1.0, 1.0))
    np.testing.assert_array_equal(a.clip(x, max=0.0), jnp.clip(x, max=0.0))
    np.testing.assert_array_equal(a.clip(x, min=np.float32(0.0)), jnp.clip(x, min=0.0))
    ints_ = np.array([-3, 0, 5], np.int32)
    assert a.clip(ints_, 0, 2).dtype == np.int32
    np.testing.assert_array_equal(a.clip(ints_, 0, 2), [0, 0, 2])
    assert gradrules.clip is a.clip


def test_clip_array_bounds_broadcast_like_jnp():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (2, 3))
    lo, hi = np.array([-1.0, -0.5, 0.0]), np.array([[0.5], [1.5]])
    np.testing.assert_array_equal(a.clip(x, lo, hi), jnp.clip(x, lo, hi))
    np.testing.assert_array_equal(a.clip(x, lo), jnp.clip(x, lo))
    np.testing.assert_array_equal(a.clip(x, max=hi), jnp.clip(x, max=hi))
    np.testing.assert_array_equal(a.clip(0.3, lo, hi), jnp.clip(0.3, lo, hi))
    # min > max: max everywhere, as jnp.clip
    np.testing.assert_array_equal(a.clip(x, np.full(3, 1.0), np.full(3, -1.0)),
                                  np.full((2, 3), -1.0))


def test_clip_array_bounds_compile_to_jnp_clips_max_and_min():
    """Array bounds bind clip_below and clip_above (max(x, min), min(y, max)):
    the forward is jax.numpy's HLO, one max and one min per element (a
    compare and a where per bound took twice its FLOPs)."""
    x = jnp.linspace(-2.0, 2.0, 64 * 48, dtype=jnp.float32).reshape(64, 48)
    lo, hi = jnp.linspace(-1.0, 0.0, 48), jnp.linspace(0.5, 1.5, 64)[:, None]
    jaxpr = str(jax.make_jaxpr(a.clip)(x, lo, hi))
    assert "clip_below" in jaxpr and "clip_above" in jaxpr and "where" not in jaxpr
    (ours, got), (ref, want) = mode_costs("forward", (a.clip, jnp.clip), x, lo, hi)
    assert ours.flops <= ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed
    np.testing.assert_array_equal(got, want)


def test_clip_derivative_is_clamps_at_the_bounds():
    """Both paths pass the gradient to x at a bound (clamp's rule); an array
    bound takes it where x is outside."""
    x = np.array([-1.0, -0.5, 0.1, 0.5, 1.0])
    np.testing.assert_array_equal(_d(a.clip, x, min=-0.5, max=0.5), [0.0, 1.0, 1.0, 1.0, 0.0])
    lo, hi = np.full(5, -0.5), np.full(5, 0.5)
    gx, glo, ghi = jax.grad(lambda *v: a.clip(*v).sum(), (0, 1, 2))(x, lo, hi)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(glo, [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [0.0, 0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("call, exc, match", [
    (lambda: a.clip(np.ones(3)), ValueError, "at least one of min and max"),
    (lambda: a.clip(np.ones(3), np.zeros(2)), ValueError, "gradrules.clip"),
    (lambda: a.clip(np.ones(3), "0"), TypeError, "gradrules.clip: argument min"),
    (lambda: a.clip(np.ones(3, np.int32), 0.5), TypeError, "not an integer"),
])
def test_clip_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("fn", [a.sigmoid, a.silu, a.gelu, lambda v: a.gelu(v, approximate=True)],
                         ids=["sigmoid", "silu", "gelu", "gelu_tanh"])
def test_derivatives_compile_to_one_exp_per_element(fn):
    """sigmoid(x) and sigmoid(-x) come from one exp (``sigmoid_and_slope``),
    and exact gelu's phi shares erfc's exp: the compiled gradient and
    Hessian-vector product hold one exp each and no separate pass."""
    x = jnp.linspace(-6.0, 6.0, 64, dtype=jnp.float32)
    grad = jax.grad(lambda v: jnp.sum(fn(v)))
    hvp = lambda v: jax.jvp(grad, (v,), (jnp.ones_like(v),))[1]  # noqa: E731
    for f in (grad, hvp):
        hlo = jax.jit(f).lower(x).compile().as_text()
        assert hlo.count(" exponential(") == 1, hlo
        assert hlo.count(" fusion(") <= 1, hlo


def test_sigmoid_gradient_costs_what_jax_nns_does():
    """A gradient takes only sigmoid's slope, the primitive ``sigmoid_slope``
    (``e / (1 + e)**2``, one division), not ``sigmoid_and_slope``'s ``b s``,
    one FLOP more alone: no more FLOPs or bytes than jax.nn.sigmoid's ``s (1 - s)``,
    the same values, and the slope at full precision far out (where
    ``s (1 - s)`` is 0)."""
    x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 96)) * 8, jnp.float32)
    (ours, got), (ref, want) = mode_costs("grad", [a.sigmoid, jax.nn.sigmoid], x)
    assert ours.flops <= ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=1e-7)
    far = jax.grad(lambda v: jnp.sum(a.sigmoid(v)))(jnp.float32([-30.0, 30.0]))
    np.testing.assert_allclose(far, [math.exp(-30.0)] * 2, rtol=1e-6)


@pytest.mark.parametrize("mode, fn, ref", [
    ("hvp", a.sigmoid, jax.nn.sigmoid),
    ("grad", a.silu, jax.nn.silu),
], ids=["sigmoid-hvp", "silu-grad"])
def test_sigmoid_and_slope_costs_what_jax_nns_s_and_one_minus_s_do(mode, fn, ref):
    """``sigmoid_and_slope`` takes s from jax.nn.sigmoid's own ``1 / (1 +
    exp(-x))`` and s' as ``b s`` with ``b = e s`` (e capped), so the
    derivatives that need both cost no more FLOPs or bytes than jax.nn's
    ``s`` and ``s (1 - s)``, with the same values."""
    x = jnp.asarray(np.random.default_rng(1).standard_normal((64, 96)) * 8, jnp.float32)
    (ours, got), (theirs, want) = mode_costs(mode, [fn, ref], x)
    assert ours.flops <= theirs.flops
    assert ours.bytes_accessed <= theirs.bytes_accessed
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_sigmoid_and_slope_keep_their_precision_far_out():
    """s and s' = sigmoid(x) sigmoid(-x) to float32 precision wherever they
    are normal numbers, on either side (no ``1 - s``: jax.nn's slope is 0
    from x = 17), a true 0 where exp(-x) overflows (no inf * 0), and
    computed in float32 for float16 input (whose exp(-x) overflows from
    x = -11)."""
    x = np.array([-86.0, -50.0, -30.0, -1.0, 0.0, 2.0, 30.0, 80.0])
    s, slope = (np.asarray(v, np.float64) for v in jax.jit(a.sigmoid_and_slope)(
        jnp.asarray(x, jnp.float32)))
    e = np.exp(-np.abs(x))
    np.testing.assert_allclose(s, sp.expit(x), rtol=2e-7)
    np.testing.assert_allclose(slope, e / (1 + e) ** 2, rtol=2e-6)
    for far in (-100.0, -np.inf, np.inf):
        assert [float(v) for v in a.sigmoid_and_slope(jnp.float32(far))] == [
            float(far > 0), 0.0]
    s16, slope16 = a.sigmoid_and_slope(jnp.asarray([-12.0, 12.0], jnp.float16))
    assert s16.dtype == slope16.dtype == jnp.float16
    np.testing.assert_allclose(np.float64(s16), sp.expit([-12.0, 12.0]), rtol=1e-3)
    e12 = math.exp(-12.0)
    np.testing.assert_allclose(np.float64(slope16), [e12 / (1 + e12) ** 2] * 2, rtol=1e-3)
