"""The creation family: arange, full, full_like, zeros and ones against
jax.numpy (values, dtypes, weak types), traces that stay in the catalog,
full's linearity in its fill value (gradient, transpose, vmap), and the
errors for bad input."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules as gr
from gradrules.primitives import creation as c


def _names(fn, *args):
    return [e.primitive.name for e in jax.make_jaxpr(fn)(*args).jaxpr.eqns]


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((0,), {}), ((-3,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((9, 2, -3), {}),
    ((0.5, 2.0, 0.25), {}), ((1.0, 0.0, -0.3), {}), ((3,), {"dtype": jnp.float32}),
    ((0, 1, 0.1), {}), ((7, -2, -3), {"dtype": jnp.int8}), ((2.5,), {}),
    ((5,), {"dtype": jnp.bfloat16}), ((np.int32(4),), {}), ((1, 4), {"step": 2}),
])
def test_arange_matches_jnp(args, kwargs):
    got = c.arange(*args, **kwargs)
    want = jnp.arange(*args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-15, atol=1e-15)


def test_arange_is_one_primitive_without_operands():
    assert _names(lambda: c.arange(1, 7, 2)) == ["arange"]
    eqn = jax.make_jaxpr(lambda: c.arange(0.0, 1.0, 0.25))().jaxpr.eqns[0]
    assert not eqn.invars
    assert eqn.params == {"start": 0.0, "stop": 1.0, "step": 0.25, "dtype": np.dtype("float64")}
    np.testing.assert_array_equal(jax.jit(lambda: c.arange(4))(), [0, 1, 2, 3])
    # inside vmap and grad it is a constant of the traced function
    out = jax.vmap(lambda x: x + c.arange(3.0))(jnp.ones((2, 3)))
    np.testing.assert_array_equal(out, [[1, 2, 3], [1, 2, 3]])
    g = jax.grad(lambda x: (x * c.arange(3.0)).sum())(jnp.ones(3))
    np.testing.assert_array_equal(g, [0, 1, 2])
    assert gr.arange is c.arange


@pytest.mark.parametrize("shape, fill, kwargs", [
    ((2, 3), 1.5, {}), ((2, 3), 2, {}), (3, np.float32(1.0), {}), ((), 7.0, {}),
    ((2, 3), np.arange(3.0), {}), ((2, 1, 3), np.ones((1, 3)), {}), ((0, 2), 1.0, {}),
    ((2,), 1.7, {"dtype": jnp.int32}), ((2, 2), True, {}), ((3,), 1, {"dtype": "float32"}),
])
def test_full_matches_jnp(shape, fill, kwargs):
    got = c.full(shape, fill, **kwargs)
    want = jnp.full(shape, fill, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_array_equal(got, want)


def test_full_like_zeros_ones_match_jnp():
    x32 = jnp.ones((2, 3), jnp.float32)
    for got, want in [
            (c.full_like(x32, 2.5), jnp.full_like(x32, 2.5)),
            (c.full_like(x32, np.arange(3.0)), jnp.full_like(x32, np.arange(3.0))),
            (c.full_like(x32, 2, dtype=jnp.int32), jnp.full_like(x32, 2, dtype=jnp.int32)),
            (c.full_like(x32, 2.0, shape=(4,)), jnp.full_like(x32, 2.0, shape=(4,))),
            (c.zeros((2, 3)), jnp.zeros((2, 3))),
            (c.zeros(4, dtype=jnp.int8), jnp.zeros(4, jnp.int8)),
            (c.ones(()), jnp.ones(())), (c.ones((0, 2), dtype=bool), jnp.ones((0, 2), bool))]:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert _names(lambda: c.zeros((2, 3))) == ["full"]
    assert _names(lambda x: c.full_like(x, 1.0), x32) == ["full"]
    assert gr.full is c.full and gr.zeros is c.zeros and gr.ones is c.ones


def test_full_is_linear_in_the_fill_value():
    """The gradient sums the copies (back to the fill value's shape and
    dtype); second derivatives are zero; an integer result has no tangent."""
    fill = jnp.asarray([1.0, 2.0, 3.0])
    g = jax.grad(lambda v: (c.full((4, 3), v) * jnp.arange(12.0).reshape(4, 3)).sum())(fill)
    np.testing.assert_array_equal(g, [18, 22, 26])
    g32 = jax.grad(lambda v: c.full((2, 2), v, dtype=jnp.float64).sum())(jnp.float32(1.0))
    assert g32.dtype == jnp.float32 and float(g32) == 4.0
    h = jax.hessian(lambda v: c.full((2, 3), v).sum())(fill)
    np.testing.assert_array_equal(h, np.zeros((3, 3)))
    transposed = jax.linear_transpose(lambda v: c.full((2, 3), v), fill)(jnp.ones((2, 3)))
    np.testing.assert_array_equal(transposed[0], [2, 2, 2])
    _, t = jax.jvp(lambda v: c.full((2,), v, dtype=jnp.int32), (1.5,), (1.0,))
    assert t.dtype == jax.dtypes.float0
    gl = jax.grad(lambda v: c.full_like(jnp.ones((2, 3)), v).sum())(2.0)
    assert float(gl) == 6.0
    assert gr.get_op("full_like").nondiff == ("x",)


@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_full_vmap_over_the_fill_value(in_axes):
    fill = np.arange(6.0).reshape(2, 3) if in_axes == 0 else np.arange(6.0).reshape(3, 2)
    f = lambda v: c.full((4, 3), v)  # noqa: E731
    got = jax.vmap(f, in_axes=in_axes)(fill)
    want = np.stack([f(np.take(fill, b, axis=in_axes)) for b in range(2)])
    np.testing.assert_array_equal(got, want)
    scalar = jax.vmap(lambda v: c.full((2,), v))(np.arange(3.0))
    np.testing.assert_array_equal(scalar, [[0, 0], [1, 1], [2, 2]])


def test_bad_input():
    with pytest.raises(ValueError, match=r"gradrules\.arange: step must not be 0"):
        c.arange(0, 3, 0)
    with pytest.raises(TypeError, match=r"gradrules\.arange: dtype 'float33' is not a dtype"):
        c.arange(3, dtype="float33")
    with pytest.raises(TypeError, match=r"gradrules\.arange: argument dtype must have an "
                                        r"integer or floating dtype, got bool"):
        c.arange(3, dtype=bool)
    with pytest.raises(TypeError, match=r"gradrules\.arange: start must be a static Python "
                                        r"number"):   # arange(n): the stop, given as start
        jax.jit(lambda n: c.arange(n))(3)
    with pytest.raises(TypeError, match=r"gradrules\.arange: start must be a Python int or "
                                        r"float, got '1'"):
        c.arange("1", 3)
    with pytest.raises(ValueError, match=r"gradrules\.arange: stop must be finite"):
        c.arange(0.0, float("inf"))
    with pytest.raises(TypeError, match=r"gradrules\.arange: start, stop and step must be "
                                        r"ints for the integer dtype int32"):
        c.arange(0.5, 3, dtype=jnp.int32)
    for fn, args in ((c.full, ((2, 3), 1.0)), (c.zeros, ((2, 3),)), (c.ones, ((2, 3),))):
        name = fn.__name__
        with pytest.raises(TypeError, match=rf"gradrules\.{name}: dtype 'float33' is not a dtype"):
            fn(*args, dtype="float33")
        with pytest.raises(TypeError, match=rf"gradrules\.{name}: shape must be an int or a "
                                            r"tuple of non-negative ints, got \(2, -1\)"):
            fn((2, -1), *args[1:])
        with pytest.raises(TypeError, match=rf"gradrules\.{name}: shape must be"):
            fn((2.0, 3), *args[1:])
    with pytest.raises(ValueError, match=r"gradrules\.full: fill_value with shape \(2,\) does "
                                         r"not broadcast to shape \(2, 3\)"):
        c.full((2, 3), np.ones(2))
    with pytest.raises(ValueError, match=r"gradrules\.full: fill_value with shape \(1, 2, 3\)"):
        c.full((2, 3), np.ones((1, 2, 3)))
    with pytest.raises(TypeError, match=r"gradrules\.full: argument fill_value must be an "
                                        r"array or a scalar, got str"):
        c.full((2,), "a")
    with pytest.raises(TypeError, match=r"gradrules\.full_like: dtype 'float33' is not a dtype"):
        c.full_like(np.ones(2), 1.0, dtype="float33")
    with pytest.raises(ValueError, match=r"gradrules\.full_like: fill_value with shape \(3,\) "
                                         r"does not broadcast to the shape \(2,\) of x"):
        c.full_like(np.ones(2), np.ones(3))
