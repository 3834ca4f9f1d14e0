"""as_strided beyond the rule checker: numpy's strided views as the oracle
(overlapping windows, offsets, a transposed view), the transpose adding
overlaps, vmap, and the errors for views outside x."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules as gr


def _numpy_view(x, size, stride, offset=0):
    flat = np.ascontiguousarray(x).ravel()
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], size, [s * item for s in stride])


@pytest.mark.parametrize("shape, size, stride, offset", [
    ((6,), (4, 3), (1, 1), 0),
    ((3, 4), (4, 3), (1, 4), 0),
    ((2, 3, 4), (2, 2, 3), (12, 1, 2), 1),
    ((5,), (2, 2), (0, 2), 1),
])
def test_values_match_numpy_views(shape, size, stride, offset):
    x = np.random.default_rng(0).normal(size=shape)
    want = _numpy_view(x, size, stride, offset)
    np.testing.assert_array_equal(gr.as_strided(x, size, stride, offset), want)
    np.testing.assert_array_equal(
        jax.jit(lambda x: gr.as_strided(x, size, stride, offset))(x), want)


def test_transpose_adds_overlapping_reads():
    """Each storage element's gradient counts how many view elements read it."""
    x = np.arange(6.0)
    g = jax.grad(lambda x: gr.as_strided(x, (4, 3), (1, 1)).sum())(x)
    np.testing.assert_array_equal(g, [1, 2, 3, 3, 2, 1])
    g = jax.grad(lambda x: gr.as_strided(x, (2, 2), (0, 1), 2).sum())(x)
    np.testing.assert_array_equal(g, [0, 0, 2, 2, 0, 0])


def test_vmap_views_each_example_storage():
    x = np.random.default_rng(1).normal(size=(3, 2, 4))
    got = jax.vmap(lambda e: gr.as_strided(e, (3, 2), (2, 3)), in_axes=1)(x)
    want = np.stack([_numpy_view(x[:, i], (3, 2), (2, 3)) for i in range(2)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("size, stride, offset, error, words", [
    ((3, 3), (1, 1), 4, ValueError, "reach past the 6 elements"),
    ((7,), (1,), 0, ValueError, "reach past"),
    ((2, 2), (1,), 0, ValueError, "same length"),
    ((2, 2), (1, -1), 0, ValueError, "non-negative"),
    ((2, 2.0), (1, 1), 0, TypeError, "size must hold ints"),
])
def test_views_outside_x_are_rejected(size, stride, offset, error, words):
    x = jnp.arange(6.0)
    for fn in (gr.as_strided, jax.jit(gr.as_strided, static_argnums=(1, 2, 3))):
        with pytest.raises(error, match="as_strided") as info:
            fn(x, size, stride, offset)
        assert words in str(info.value)
