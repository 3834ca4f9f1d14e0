"""Semantics of the logical family beyond the rule checker: values against
numpy at every dtype each op lists, no tangent, batching, and the errors for
bad input."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from gradrules.primitives import logical as g
from gradrules.testing.samples import opinfo

NAN, INF = np.nan, np.inf
X = np.array([0.0, -0.0, 1.5, INF, -INF, NAN, 1e308, 5e-324])


@pytest.mark.parametrize("name, want", [
    ("isfinite", [True, True, True, False, False, False, True, True]),
    ("isnan", [False, False, False, False, False, True, False, False]),
    ("isinf", [False, False, False, True, True, False, False, False]),
])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_predicates(name, want, dtype):
    with np.errstate(over="ignore"):
        x = jnp.asarray(X, dtype)
    out = getattr(g, name)(x)
    assert out.dtype == np.bool_
    # 1e308 overflows to inf and 5e-324 underflows to 0 in the narrow dtypes
    np.testing.assert_array_equal(out, getattr(np, name)(np.asarray(x, np.float64)))
    if dtype == "float64":
        np.testing.assert_array_equal(out, want)


def _operands(name, dtype, rng):
    n = 2 if name not in ("logical_not", "bitwise_not") else 1
    if dtype == "bool":
        return [rng.random((2, 3)) < 0.5 for _ in range(n)]
    info = np.iinfo(dtype)
    return [rng.integers(info.min, info.max, (2, 3), endpoint=True).astype(dtype)
            for _ in range(n)]


BOOL_OPS = ["logical_not", "logical_and", "logical_or", "logical_xor"]
BIT_OPS = ["bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor"]
NUMPY = {"logical_not": np.logical_not, "logical_and": np.logical_and,
         "logical_or": np.logical_or, "logical_xor": np.logical_xor,
         "bitwise_not": np.invert, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
         "bitwise_xor": np.bitwise_xor}


@pytest.mark.parametrize("name", BOOL_OPS + BIT_OPS)
def test_values_at_every_listed_dtype(name):
    dtypes = opinfo(name).dtypes
    assert dtypes
    rng = np.random.default_rng(0)
    for dtype in dtypes:
        args = _operands(name, dtype, rng)
        out = getattr(g, name)(*args)
        assert out.dtype == np.dtype(dtype), (name, dtype)
        np.testing.assert_array_equal(out, NUMPY[name](*args))
        got = jax.jit(jax.vmap(getattr(g, name), in_axes=(1,) * len(args)))(*args)
        np.testing.assert_array_equal(got, NUMPY[name](*[a.T for a in args]))


def test_bitwise_on_bools_is_logical():
    x, y = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(g.bitwise_and(x, y), x & y)
    np.testing.assert_array_equal(g.bitwise_xor(x, y), x ^ y)
    np.testing.assert_array_equal(g.bitwise_not(x), ~x)
    assert g.bitwise_not(np.array([0, -1, 5], np.int8)).tolist() == [-1, 0, -6]
    assert g.bitwise_not(np.array([0, 255], np.uint8)).tolist() == [255, 0]


def test_broadcasting_and_python_scalars():
    x = np.array([[True], [False]])
    y = np.array([True, False, True])
    assert g.logical_or(x, y).shape == (2, 3)
    np.testing.assert_array_equal(g.logical_and(y, True), y)
    np.testing.assert_array_equal(g.bitwise_and(np.array([6, 7], np.int8), 3), [2, 3])
    assert g.bitwise_and(np.array([6, 7], np.int8), 3).dtype == np.int8


def test_no_tangent_flows():
    """Predicates inside a differentiable function: float0 tangents, and the
    gradient of where(isfinite(x), x, 0) is the mask."""
    x = np.array([1.0, INF, NAN, -2.0])
    _, t = jax.jvp(g.isfinite, (x,), (np.ones(4),))
    assert t.dtype == jax.dtypes.float0
    from gradrules.primitives.compare import where
    grad = jax.grad(lambda v: jnp.sum(where(g.isfinite(v), v, 0.0)))(x)
    np.testing.assert_array_equal(grad, [1.0, 0.0, 0.0, 1.0])


def test_float_input_to_logical_and_bitwise_ops_is_rejected():
    f = np.ones(3)
    with pytest.raises(TypeError, match=r"gradrules\.logical_not: argument x must have bool"):
        g.logical_not(f)
    with pytest.raises(TypeError, match=r"gradrules\.logical_and: argument y must have bool"):
        g.logical_and(np.ones(3, bool), np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"gradrules\.bitwise_or: argument x must have an "
                                        r"integer or bool dtype, got float64"):
        g.bitwise_or(f, np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"gradrules\.bitwise_not: argument x .*float32"):
        g.bitwise_not(np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["isfinite", "isnan", "isinf"])
def test_predicates_take_floats_only(name):
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x must have a floating "
                                        r"dtype, got int32"):
        getattr(g, name)(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x is complex"):
        getattr(g, name)(np.ones(3, np.complex64))


@pytest.mark.parametrize("name, dtype", [("logical_xor", bool), ("bitwise_and", np.int32)])
def test_shapes_must_broadcast(name, dtype):
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: operands do not broadcast: "
                                         r"x with shape \(2, 3\), y with shape \(2,\)"):
        getattr(g, name)(np.ones((2, 3), dtype), np.ones(2, dtype))
    with pytest.raises(TypeError, match=rf"gradrules\.{name} takes 2 arguments"):
        getattr(g, name)(np.ones(2, dtype))
