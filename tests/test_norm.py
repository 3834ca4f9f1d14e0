"""layer_norm, rms_norm, group_norm and batch_norm: zero input at the default
eps in every mode, batch_norm's running statistics and its double grad against
jax.numpy, weight_offset, float32 accumulation and bad input (the fused
primitives each transform binds, and kernels: tests/test_fused.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives.arithmetic import multiply
from gradrules.primitives.norm import (_batch_norm_reference, batch_norm, group_norm,
                                       layer_norm, rms_norm)
from gradrules.primitives.reduction import sum as gr_sum

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 2, 4))
W4, B4 = rng.normal(size=(4,)), rng.normal(size=(4,))
RM, RV = rng.normal(size=(2,)), rng.uniform(0.5, 2.0, (2,))
W2, B2 = rng.normal(size=(2,)), rng.normal(size=(2,))

NORMS = {
    "rms_norm": lambda x: rms_norm(x, W4),
    "layer_norm": lambda x: layer_norm(x, W4, B4),
    "group_norm": lambda x: group_norm(x, W2, B2, num_groups=1),
    "batch_norm": lambda x: batch_norm(x, RM, RV, W2, B2, training=True)[0],
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_zero_input_is_finite_in_every_mode(name) -> None:
    fn = NORMS[name]
    zero = np.zeros((3, 2, 4))
    w = rng.normal(size=zero.shape)
    loss = lambda x: gr_sum(multiply(fn(x), w))  # noqa: E731
    outs = [fn(zero), jax.grad(loss)(zero), jax.jit(jax.jacfwd(fn))(zero),
            jax.jit(jax.hessian(loss))(zero), jax.jit(jax.grad(loss))(zero)]
    for o in outs:
        assert np.isfinite(o).all(), name
    np.testing.assert_allclose(jax.jvp(fn, (zero,), (w,))[1],
                               jax.jvp(jax.jit(fn), (zero,), (w,))[1], rtol=1e-12)


def test_rms_norm_at_zero_has_the_slope_of_eps() -> None:
    """d rms_norm(x) / dx at x = 0 is gamma * eps**-0.5 on the diagonal."""
    jac = jax.jacfwd(lambda x: rms_norm(x, W4, eps=1e-6))(np.zeros(4))
    np.testing.assert_allclose(jac, np.diag(W4) * 1e3, rtol=1e-9)


def test_weight_offset_shifts_gamma() -> None:
    np.testing.assert_allclose(rms_norm(X, W4, weight_offset=1.0), rms_norm(X, W4 + 1.0),
                               rtol=1e-14)
    np.testing.assert_allclose(rms_norm(X), rms_norm(X, np.ones(4)), rtol=1e-14)
    g = jax.grad(lambda w: gr_sum(rms_norm(X, w, weight_offset=1.0)))(W4)
    np.testing.assert_allclose(g, jax.grad(lambda w: gr_sum(rms_norm(X, w + 1.0)))(W4),
                               rtol=1e-12)


def test_batch_norm_running_statistics() -> None:
    """Paddle's momentum convention, biased batch variance, inference with the
    running statistics, and no gradient into the running statistics."""
    x = rng.normal(size=(5, 2, 3))
    out, new_mean, new_var = batch_norm(x, RM, RV, training=True, momentum=0.8)
    mean, var = x.mean((0, 2)), x.var((0, 2))
    np.testing.assert_allclose(new_mean, 0.8 * RM + 0.2 * mean, rtol=1e-12)
    np.testing.assert_allclose(new_var, 0.8 * RV + 0.2 * var, rtol=1e-12)
    np.testing.assert_allclose(out, (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5),
                               rtol=1e-10)
    out, m, v = batch_norm(x, RM, RV, W2, B2, training=False)
    np.testing.assert_array_equal(m, RM)
    np.testing.assert_array_equal(v, RV)
    np.testing.assert_allclose(out, (x - RM[:, None]) / np.sqrt(RV[:, None] + 1e-5)
                               * W2[:, None] + B2[:, None], rtol=1e-12)
    for training in (True, False):
        f = lambda rm, rv: gr_sum(multiply(batch_norm(x, rm, rv, training=training)[0], x))  # noqa: E731,B023
        g_mean, g_var = jax.grad(f, (0, 1))(RM, RV)
        np.testing.assert_array_equal(g_mean, 0.0)
        np.testing.assert_array_equal(g_var, 0.0)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_batch_norm_double_grad_against_jax_numpy(data_format) -> None:
    """Paddle's batch_norm_grad -> batch_norm_double_grad: the derivatives of
    the gradient in x, weight and bias, and the third derivative along a
    direction, agree with jax.numpy's."""
    x, c = rng.normal(size=(3, 2, 2)), 2        # 2 channels in either layout
    w_out = rng.normal(size=x.shape)
    kw = {"training": True, "momentum": 0.9, "data_format": data_format}

    def ours(x, w, b):
        return gr_sum(multiply(batch_norm(x, RM[:c], RV[:c], w, b, **kw)[0], w_out))

    def ref(x, w, b):
        return jnp.sum(_batch_norm_reference(x, RM[:c], RV[:c], w, b, **kw)[0] * w_out)

    args = (x, W2, B2)
    grad = lambda f: jax.grad(f, (0, 1, 2))  # noqa: E731
    for make in (grad, lambda f: jax.jacfwd(grad(f), (0, 1, 2)),
                 lambda f: jax.jacrev(grad(f), (0, 1, 2))):
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9,
                                                                       atol=1e-11),
                               jax.jit(make(ours))(*args), jax.jit(make(ref))(*args))
    t = tuple(rng.normal(size=np.shape(a)) for a in args)

    def third(f):
        h = lambda *a: jax.jvp(lambda *b: jax.jvp(f, b, t)[1], a, t)[1]  # noqa: E731
        return jax.jit(lambda *a: jax.jvp(h, a, t)[1])(*args)
    np.testing.assert_allclose(third(ours), third(ref), rtol=1e-8, atol=1e-10)


def test_group_norm_groups() -> None:
    x = rng.normal(size=(2, 6, 3))
    out = group_norm(x, num_groups=3)
    xg = x.reshape(2, 3, 6)
    want = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(out, want.reshape(x.shape), rtol=1e-10)


@pytest.mark.parametrize("fn", [rms_norm, layer_norm])
def test_bfloat16_accumulates_in_float32(fn) -> None:
    x = jnp.asarray(rng.normal(size=(4, 2048)) * 3 + 5, jnp.bfloat16)
    y = fn(x)
    assert y.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.float32(y), np.float32(fn(x.astype(jnp.float32))
                                                            .astype(jnp.bfloat16)))
    g = jax.grad(lambda v: gr_sum(fn(v)).astype(jnp.float32))(x)
    assert g.dtype == jnp.bfloat16 and np.isfinite(np.float32(g)).all()


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("name, call", [
    ("rms_norm", lambda eps: rms_norm(X, eps=eps)),
    ("layer_norm", lambda eps: layer_norm(X, eps=eps)),
    ("group_norm", lambda eps: group_norm(X, num_groups=1, eps=eps)),
    ("batch_norm", lambda eps: batch_norm(X, RM, RV, training=True, eps=eps)),
])
def test_eps_must_be_positive(name, call) -> None:
    for eps in (0.0, -1e-5):
        with pytest.raises(ValueError, match=rf"gradrules\.{name}: eps must be > 0, got"):
            call(eps)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: eps must be a Python number"):
        call("small")


def test_bad_shapes_and_params() -> None:
    with pytest.raises(ValueError, match=r"gradrules\.rms_norm: gamma must have shape \(4,\) "
                                         r"\(x.shape\[-1\]\), got \(3,\)"):
        rms_norm(X, np.ones(3))
    with pytest.raises(ValueError, match=r"gradrules\.layer_norm: bias must have shape \(4,\)"):
        layer_norm(X, W4, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"gradrules\.group_norm: num_groups=3 must divide the "
                                         "2 channels"):
        group_norm(X, num_groups=3)
    with pytest.raises(ValueError, match=r"gradrules\.group_norm: weight must have shape \(2,\)"):
        group_norm(X, np.ones(4), num_groups=1)
    with pytest.raises(ValueError, match=r"gradrules\.batch_norm: running_var must have shape "
                                         r"\(2,\)"):
        batch_norm(X, RM, np.ones(4), training=True)
    with pytest.raises(ValueError, match=r"gradrules\.batch_norm: running_mean must have shape "
                                         r"\(4,\)"):
        batch_norm(X, RM, RV, training=True, data_format="NHWC")
    with pytest.raises(ValueError, match=r"gradrules\.batch_norm: data_format must be one of"):
        batch_norm(X, RM, RV, training=True, data_format="NCW")
    with pytest.raises(TypeError, match=r"gradrules\.batch_norm: training must be a bool"):
        batch_norm(X, RM, RV, training="yes")
    with pytest.raises(ValueError, match=r"gradrules\.batch_norm: momentum must lie in"):
        batch_norm(X, RM, RV, training=True, momentum=1.5)
    with pytest.raises(TypeError, match=r"gradrules\.layer_norm: argument x must have a "
                                        "floating dtype"):
        layer_norm(np.arange(4))
    with pytest.raises(ValueError, match=r"gradrules\.rms_norm: x must have at least one axis"):
        rms_norm(np.float64(1.0))


def test_layer_norm_gradient_reads_no_more_than_jax_numpy() -> None:
    """The backward writes out no full-size ``xhat`` shared by dx and dweight
    (it read 1.18x jax.numpy's bytes at [8192, 1024]): bytes accessed and
    FLOPs within 1.1x of the jax.numpy gradient's in XLA's analyses, at the
    bench's size (compiled only, never run)."""
    from gradrules.bench import compiled_costs
    x, w = jax.ShapeDtypeStruct((8192, 1024), jnp.float32), jax.ShapeDtypeStruct((1024,),
                                                                                jnp.float32)

    def grad_of(f):
        return lambda x, w, g: jax.grad(lambda x, w: jnp.sum(g * f(x, w)), (0, 1))(x, w)

    def plain(x, w):
        return (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5) * w
    c, r = (compiled_costs(grad_of(f), x, w, x) for f in (lambda x, w: layer_norm(x, w), plain))
    assert c.bytes_accessed <= 1.1 * r.bytes_accessed
    assert c.flops <= 1.1 * r.flops
