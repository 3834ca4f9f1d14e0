"""Shape: the -1 of reshape, transposes of broadcasts, batching, and bad
input naming the op and the argument."""

import jax
import numpy as np
import pytest

from gradrules.primitives import reduction as red
from gradrules.primitives import shape as sh

X = np.arange(6.0).reshape(2, 3)


def test_reshape_infers_one_minus_one() -> None:
    assert sh.reshape(X, (3, -1)).shape == (3, 2)
    assert sh.reshape(np.ones((0, 4)), (-1, 2)).shape == (0, 2)


def test_broadcast_transposes_sum_the_copies() -> None:
    g = jax.grad(lambda x: red.sum(sh.broadcast_to(x, (4, 2, 3)) * np.arange(24.0).reshape(
        4, 2, 3)))(np.ones((2, 1)))
    np.testing.assert_array_equal(g, np.arange(24.0).reshape(4, 2, 3).sum((0, 2))[:, None])
    g = jax.grad(lambda x: red.sum(sh.broadcast_in_dim(x, (3, 2), (0,))))(np.ones(3))
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])


def test_moveaxis_and_unsqueeze() -> None:
    np.testing.assert_array_equal(sh.moveaxis(np.ones((2, 3, 4)), 0, -1).shape, (3, 4, 2))
    assert sh.unsqueeze is sh.expand_dims and sh.permute is sh.transpose
    assert sh.expand_dims(X, axis=(0, -1)).shape == (1, 2, 3, 1)
    assert sh.squeeze(np.ones((1, 2, 1))).shape == (2,)


@pytest.mark.parametrize("source, destination", [
    (0, -1), (-1, 0), ((0, 1), (2, 0)), ((2, 0), (0, 1)), ((), ()), ([3, 1], [0, 3])])
def test_moveaxis_is_jax_numpys_and_one_transpose(source, destination) -> None:
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    want = jax.numpy.moveaxis(x, source, destination)
    np.testing.assert_array_equal(sh.moveaxis(x, source, destination), want)
    fn = lambda v: sh.moveaxis(v, source, destination)  # noqa: E731
    names = [e.primitive.name for e in jax.make_jaxpr(fn)(x).jaxpr.eqns]
    assert names == ([] if source == () else ["transpose"])
    (g,) = jax.linear_transpose(fn, x)(want)
    np.testing.assert_array_equal(g, x)


@pytest.mark.parametrize("op,fn,msg", [
    ("reshape", lambda: sh.reshape(X, (4, 2)), r"cannot reshape x with shape \(2, 3\)"),
    ("reshape", lambda: sh.reshape(X, (-1, -1)), r"invalid shape \(-1, -1\)"),
    ("reshape", lambda: sh.reshape(X, (-2, -3)), r"invalid shape \(-2, -3\)"),
    ("transpose", lambda: sh.transpose(X, (0, 0)), r"axes \(0, 0\) is not a permutation"),
    ("transpose", lambda: sh.transpose(X, (0, 2)), "axes=2 is out of range"),
    ("broadcast_to", lambda: sh.broadcast_to(X, (3, 3)),
     r"cannot broadcast x with shape \(2, 3\) to \(3, 3\)"),
    ("broadcast_to", lambda: sh.broadcast_to(np.ones(1), (-1,)),
     r"cannot broadcast x with shape \(1,\) to \(-1,\)"),
    ("broadcast_to", lambda: sh.broadcast_to(X, (3,)),
     r"cannot broadcast x with shape \(2, 3\) to \(3,\)"),
    ("broadcast_in_dim", lambda: sh.broadcast_in_dim(X, (2, 3), (1, 0)),
     r"cannot broadcast x with shape \(2, 3\) to \(2, 3\) with broadcast_dimensions"),
    ("expand_dims", lambda: sh.expand_dims(X, axis=3), "axis=3 is out of range"),
    ("squeeze", lambda: sh.squeeze(X, axis=0), r"axis \[0\] of x with shape \(2, 3\) does not "
                                               "have size 1"),
    ("moveaxis", lambda: sh.moveaxis(X, 2, 0), "source=2 is out of range"),
    ("moveaxis", lambda: sh.moveaxis(X, (0, -2), (0, 1)),
     r"repeated axis in source=\(0, -2\) for x with shape \(2, 3\)"),
    ("moveaxis", lambda: sh.moveaxis(X, (0, 1), (1, 1)), r"repeated axis in destination"),
    ("moveaxis", lambda: sh.moveaxis(X, (0, 1), 1),
     r"source=\(0, 1\) and destination=1 must name as many axes"),
    ("moveaxis", lambda: sh.moveaxis(np.float64(1.0), 0, 0), "x must have at least one axis"),
])
def test_bad_input_is_a_value_error_naming_the_op(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("reshape", lambda: sh.reshape(X, (2.0, 3)), r"shape must hold ints, got \(2.0, 3\)"),
    ("reshape", lambda: sh.reshape(X.astype(np.complex64), (6,)), "argument x is complex"),
    ("transpose", lambda: sh.transpose(X, (0.0, 1)), "axes must be an int"),
    ("squeeze", lambda: sh.squeeze(np.ones((1, 2)), axis=0.0), "axis must be None, an int or"),
    ("expand_dims", lambda: sh.expand_dims(X, axis="0"), "axis must hold ints, got '0'"),
    ("moveaxis", lambda: sh.moveaxis(X, 0.0, 1), "source must hold ints"),
])
def test_bad_types_are_a_type_error_naming_the_op(op, fn, msg) -> None:
    with pytest.raises(TypeError, match=rf"gradrules.{op}: {msg}"):
        fn()
