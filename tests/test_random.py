"""dropout and the samplers: jax.random's values, the same mask in the
forward pass, the JVP and the transpose, vmap over keys and over data, zero
derivatives, typed keys, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.core.registry import ZERO_DERIVATIVE, get_op
from gradrules.primitives.arithmetic import multiply
from gradrules.primitives.random import dropout, exponential, normal, uniform
from gradrules.primitives.reduction import sum as gr_sum

KEY = jax.random.PRNGKey(3)
X = jnp.asarray(np.random.default_rng(0).normal(size=(4, 5)))


def test_dropout_mask_is_jax_random_bernoulli() -> None:
    keep = jax.random.bernoulli(KEY, 0.7, X.shape)
    np.testing.assert_allclose(dropout(KEY, X, rate=0.3), jnp.where(keep, X / 0.7, 0.0),
                               rtol=1e-15)
    np.testing.assert_array_equal(dropout(KEY, X, rate=0.0), X)
    np.testing.assert_array_equal(dropout(KEY, X, rate=1.0), 0.0)
    np.testing.assert_array_equal(dropout(jax.random.key(3), X, rate=0.3),
                                  dropout(KEY, X, rate=0.3))


def test_jvp_and_transpose_reuse_the_mask() -> None:
    keep = jax.random.bernoulli(KEY, 0.5, X.shape)
    w = jnp.arange(20.0).reshape(4, 5)
    grad = jax.grad(lambda x: gr_sum(multiply(dropout(KEY, x, rate=0.5), w)))(X)
    np.testing.assert_array_equal(grad, jnp.where(keep, w * 2.0, 0.0))
    _, t = jax.jvp(lambda x: dropout(KEY, x, rate=0.5), (X,), (w,))
    np.testing.assert_array_equal(t, jnp.where(keep, w * 2.0, 0.0))
    (ct,) = jax.linear_transpose(lambda x: dropout(KEY, x, rate=0.5), X)(w)
    np.testing.assert_array_equal(ct, t)
    np.testing.assert_array_equal(jax.jit(lambda x: dropout(KEY, x, rate=0.5))(X),
                                  dropout(KEY, X, rate=0.5))


def test_vmap_over_keys_and_over_data() -> None:
    keys = jax.random.split(KEY, 3)
    xs = jnp.stack([X, X + 1, X - 1])
    per_key = jax.vmap(lambda k, x: dropout(k, x, rate=0.5))(keys, xs)
    for i in range(3):
        np.testing.assert_array_equal(per_key[i], dropout(keys[i], xs[i], rate=0.5))
    shared = jax.vmap(lambda x: dropout(KEY, x, rate=0.5))(xs)
    np.testing.assert_array_equal(shared[1] == 0, shared[0] == 0)
    draws = jax.vmap(lambda k: normal(k, (2,)))(keys)
    for i in range(3):
        np.testing.assert_array_equal(draws[i], jax.random.normal(keys[i], (2,), jnp.float32))


@pytest.mark.parametrize("fn, ref", [
    (lambda k: uniform(k, (3, 2), minval=-1.0, maxval=2.0),
     lambda k: jax.random.uniform(k, (3, 2), jnp.float32, -1.0, 2.0)),
    (lambda k: normal(k, (3, 2), mean=1.0, std=2.0),
     lambda k: jax.random.normal(k, (3, 2), jnp.float32) * 2.0 + 1.0),
    (lambda k: exponential(k, (3, 2), lam=4.0, dtype=jnp.float64),
     lambda k: jax.random.exponential(k, (3, 2), jnp.float64) / 4.0),
])
def test_samplers_are_jax_random_with_zero_derivative(fn, ref) -> None:
    np.testing.assert_allclose(fn(KEY), ref(KEY), rtol=1e-6)
    np.testing.assert_array_equal(jax.jit(fn)(KEY), fn(KEY))
    t = np.zeros(KEY.shape, jax.dtypes.float0)
    _, tangent = jax.jvp(fn, (KEY,), (t,))
    np.testing.assert_array_equal(tangent, 0.0)
    out, pullback = jax.vjp(fn, KEY)
    (key_ct,) = pullback(jnp.ones_like(out))
    assert key_ct.dtype == jax.dtypes.float0 and key_ct.shape == KEY.shape


@pytest.mark.parametrize("op, sampler, param", [
    ("uniform", lambda v: uniform(KEY, (3,), minval=v, maxval=5.0), "minval"),
    ("uniform", lambda v: uniform(KEY, (3,), minval=-1.0, maxval=v), "maxval"),
    ("normal", lambda v: normal(KEY, (3,), mean=v), "mean"),
    ("normal", lambda v: normal(KEY, (3,), std=v), "std"),
    ("exponential", lambda v: exponential(KEY, (3,), lam=v), "lam"),
])
def test_sampler_takes_no_derivative(op, sampler, param) -> None:
    """The registry marks the key nondifferentiable and every primitive's JVP a
    zero derivative; the distribution parameters are static (Python numbers),
    so differentiating with respect to one is an error, not a silent zero."""
    assert get_op(op).nondiff == ("key",) and not get_op(op).linear
    assert all(info.rule_status("jvp") == ZERO_DERIVATIVE for info in get_op(op).primitive_infos)
    with pytest.raises(TypeError, match=rf"gradrules\.{op}: {param} must be a Python number"):
        jax.grad(lambda v: gr_sum(sampler(v)))(2.0)


@pytest.mark.parametrize("rate", [0.0, 0.3, 0.5, 1.0])
def test_dropout_jacobian_is_mask_over_keep_probability(rate) -> None:
    keep = jax.random.bernoulli(KEY, 1.0 - rate, X.shape)
    diag = jnp.where(keep, 1.0 / (1.0 - rate) if rate < 1.0 else 0.0, 0.0)
    want = jnp.diag(diag.ravel()).reshape(X.shape + X.shape)
    f = lambda x: dropout(KEY, x, rate=rate)  # noqa: E731
    np.testing.assert_allclose(jax.jacfwd(f)(X), want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(jax.jacrev(f)(X), want, rtol=1e-15, atol=0)
    assert get_op("dropout").nondiff == ("key",) and get_op("dropout").linear == (("x",),)


def test_bad_input() -> None:
    with pytest.raises(TypeError, match=r"gradrules\.dropout: key must be one threefry key "
                                        r"\(uint32\[2\]"):
        dropout(jnp.zeros(2), X, rate=0.5)
    with pytest.raises(TypeError, match=r"gradrules\.uniform: key must be one threefry key"):
        uniform(jax.random.split(KEY, 2), (2,))
    with pytest.raises(ValueError, match=r"gradrules\.dropout: rate must lie in \[0.0, 1.0\]"):
        dropout(KEY, X, rate=1.5)
    with pytest.raises(TypeError, match=r"gradrules\.dropout: argument x must have a floating "
                                        "dtype"):
        dropout(KEY, jnp.arange(3), rate=0.5)
    with pytest.raises(TypeError, match=r"gradrules\.normal: shape must be an int or a "
                                        "tuple of non-negative ints"):
        normal(KEY, (2, -1))
    with pytest.raises(TypeError, match=r"gradrules\.uniform: argument dtype must have a "
                                        "floating dtype"):
        uniform(KEY, (2,), dtype=jnp.int32)
    with pytest.raises(ValueError, match=r"gradrules\.uniform: minval=1.0 must be < maxval=1.0"):
        uniform(KEY, (2,), minval=1.0, maxval=1.0)
    with pytest.raises(ValueError, match=r"gradrules\.normal: std must lie in"):
        normal(KEY, (2,), std=-1.0)
    with pytest.raises(ValueError, match=r"gradrules\.exponential: lam must be > 0"):
        exponential(KEY, (2,), lam=0.0)
