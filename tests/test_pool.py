"""pool: window semantics (padding in the divisor, floor sizes, adaptive
windows), max_pool2d's indices and ties (the gradient goes to the first
maximum only), forward and reverse mode agree, bad input, and the 1-D maps
of the separable ops with what they compile to."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.bench import compiled_costs
from gradrules.core.registry import get_op
from gradrules.primitives._separable import Dilated, Repeat, Taps, Window
from gradrules.primitives.pool import (adaptive_avg_pool2d, avg_pool2d, avg_pool3d, max_pool2d,
                                      max_pool3d)
from gradrules.primitives.resample import upsample2d

RNG = np.random.default_rng(0)


def test_avg_pool2d_counts_padding_in_the_divisor() -> None:
    x = np.ones((1, 1, 3, 3))
    out = avg_pool2d(x, kernel_size=3, stride=2, padding=1)
    # corner windows see 4 of 9 ones, as torch's count_include_pad=True
    np.testing.assert_allclose(out[0, 0], [[4 / 9, 4 / 9], [4 / 9, 4 / 9]], rtol=1e-12)


def test_avg_pool2d_floor_output_and_adjoint() -> None:
    x = RNG.standard_normal((2, 3, 8, 5))
    out = avg_pool2d(x, kernel_size=(3, 2), stride=2)
    assert out.shape == (2, 3, 3, 2)
    np.testing.assert_allclose(out[1, 2, 1, 0], x[1, 2, 2:5, 0:2].mean(), rtol=1e-12)
    # the transpose spreads each cotangent evenly; rows/cols left over get 0
    (g,) = jax.linear_transpose(lambda a: avg_pool2d(a, kernel_size=(3, 2), stride=2), x)(
        np.ones(out.shape))
    assert g[0, 0, 7].sum() == 0 and g[0, 0, :, 4].sum() == 0
    np.testing.assert_allclose(g[0, 0, 2, 0], 2 / 6, rtol=1e-12)   # rows 0-2 and 2-4 overlap


def test_adaptive_avg_pool2d_windows() -> None:
    x = RNG.standard_normal((1, 2, 5, 4))
    out = adaptive_avg_pool2d(x, output_size=(3, 4))
    np.testing.assert_allclose(out[0, 1, 1], x[0, 1, 1:4].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(adaptive_avg_pool2d(x, output_size=(None, 1))[..., 0],
                               x.mean(axis=3), rtol=1e-12)
    np.testing.assert_allclose(adaptive_avg_pool2d(x, output_size=(5, 4)), x, rtol=1e-12)


def test_max_pool2d_values_and_indices() -> None:
    x = np.arange(25.0).reshape(1, 1, 5, 5)
    values, indices = max_pool2d(x, kernel_size=3, stride=2, padding=1)
    np.testing.assert_array_equal(values[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])
    np.testing.assert_array_equal(indices[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])
    assert indices.dtype == jnp.int32


def test_max_pool2d_padding_never_wins() -> None:
    x = -np.ones((1, 1, 2, 2)) * np.arange(1, 5).reshape(1, 1, 2, 2)
    values, indices = max_pool2d(x, kernel_size=2, stride=1, padding=1)
    assert np.all(np.isfinite(values)) and np.all(values < 0)
    assert indices.min() >= 0


def test_max_pool2d_ties_route_the_gradient_to_the_first_maximum() -> None:
    x = np.ones((1, 1, 2, 4))
    g = jax.grad(lambda a: jnp.sum(max_pool2d(a, kernel_size=2)[0]))(x)
    np.testing.assert_array_equal(g[0, 0], [[1, 0, 1, 0], [0, 0, 0, 0]])
    t = jax.jvp(lambda a: max_pool2d(a, kernel_size=2)[0], (x,),
                (np.arange(8.0).reshape(x.shape),))[1]
    np.testing.assert_array_equal(t[0, 0], [[0, 2]])


def test_max_pool2d_overlapping_windows_accumulate() -> None:
    x = np.zeros((1, 1, 3, 3))
    x[0, 0, 1, 1] = 5.0
    g = jax.grad(lambda a: jnp.sum(max_pool2d(a, kernel_size=2, stride=1)[0]))(x)
    assert g[0, 0, 1, 1] == 4.0 and g.sum() == 4.0


def test_max_pool2d_forward_and_reverse_agree() -> None:
    x = RNG.standard_normal((2, 2, 5, 6))

    def f(a):
        return max_pool2d(a, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))[0]

    np.testing.assert_allclose(jax.jit(jax.jacfwd(f))(x), jax.jit(jax.jacrev(f))(x), rtol=1e-12,
                               atol=0)


def test_max_pool2d_is_one_primitive_whose_tangent_is_take_along_axis() -> None:
    # the tangent map is the catalog's take_along_axis (transpose: scatter_add);
    # no gather / scatter primitive of the pool family's own
    from gradrules import _jax
    from gradrules.primitives.pool import max_pool2d_p

    assert get_op("max_pool2d").primitives == (max_pool2d_p,)
    x = RNG.standard_normal((2, 1, 4, 5))

    def f(a):
        return jnp.sum(max_pool2d(a, kernel_size=2, stride=(2, 1), padding=(1, 0))[0] ** 2)

    def names(fn):
        return {p.name for p, _ in _jax.jaxpr_primitives(jax.make_jaxpr(fn)(x))}

    assert "scatter_add" in names(jax.grad(f))
    assert "take_along_axis" in names(jax.jacfwd(f))
    assert not any(n.startswith("window_") for n in names(jax.hessian(f)))
    # vmap of the gradient: one batched gather, the same values as a loop
    xs = RNG.standard_normal((3, 2, 1, 4, 5))
    grad = jax.jit(jax.grad(f))
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(xs),
                               np.stack([grad(a) for a in xs]), rtol=1e-12)


def test_pool3d_values_indices_and_gradients() -> None:
    x = RNG.standard_normal((2, 3, 4, 5, 3))
    kw = dict(kernel_size=(2, 3, 2), stride=(2, 1, 1), padding=(1, 1, 0))
    values, indices = max_pool3d(x, **kw)
    assert values.shape == (2, 3, 3, 5, 2) and indices.dtype == jnp.int32
    # torch's indices: the flat position (d H + h) W + w in the input volume
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, indices.reshape(2, 3, -1), 2),
                                  values.reshape(2, 3, -1))
    # window (1, 2, 0) of example 0, channel 1 covers d 1..2, h 1..3, w 0..1
    window = x[0, 1, 1:3, 1:4, 0:2]
    assert values[0, 1, 1, 2, 0] == window.max()
    d, h, w = np.unravel_index(window.argmax(), window.shape)
    assert indices[0, 1, 1, 2, 0] == ((d + 1) * 5 + h + 1) * 3 + w
    # the gradient goes to the argmax: lax.reduce_window's own
    win = (1, 1) + kw["kernel_size"]
    pads = ((0, 0), (0, 0)) + tuple((p, p) for p in kw["padding"])

    def ref_max(a):
        return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, win, (1, 1, 2, 1, 1), pads)

    g = jax.grad(lambda a: jnp.sum(jnp.sin(max_pool3d(a, **kw)[0])))(x)
    np.testing.assert_allclose(g, jax.grad(lambda a: jnp.sum(jnp.sin(ref_max(a))))(x),
                               rtol=1e-12)
    # average: zero padding counted in the divisor; the transpose is the adjoint
    avg = avg_pool3d(x, **kw)
    ref = jax.lax.reduce_window(x, 0.0, jax.lax.add, win, (1, 1, 2, 1, 1), pads) / 12
    np.testing.assert_allclose(avg, ref, rtol=1e-12)
    y = RNG.standard_normal(avg.shape)
    (t,) = jax.linear_transpose(lambda a: avg_pool3d(a, **kw), x)(y)
    np.testing.assert_allclose(np.vdot(t, x), np.vdot(y, avg), rtol=1e-12)


BAD = [
    (avg_pool2d, {"kernel_size": 4}, (1, 1, 3, 3), ValueError,
     r"gradrules.avg_pool2d: kernel_size \(4, 4\) is larger than the padded input"),
    (avg_pool2d, {"kernel_size": 2, "padding": 2}, (1, 1, 5, 5), ValueError,
     "at most half of kernel_size"),
    (max_pool2d, {"kernel_size": (2, 6)}, (1, 1, 5, 5), ValueError,
     r"gradrules.max_pool2d: kernel_size \(2, 6\) is larger"),
    (max_pool2d, {"kernel_size": 2, "stride": 0}, (1, 1, 5, 5), ValueError, "stride must be >= 1"),
    (max_pool2d, {"kernel_size": 2.0}, (1, 1, 5, 5), TypeError, "kernel_size must be an int"),
    (avg_pool2d, {"kernel_size": 2}, (5, 5), ValueError, r"x must be a 4-D .* shape \(5, 5\)"),
    (max_pool3d, {"kernel_size": 2}, (1, 1, 5, 5), ValueError,
     r"gradrules.max_pool3d: x must be a 5-D \[N, C, D, H, W\]"),
    (avg_pool3d, {"kernel_size": (2, 2)}, (1, 1, 3, 3, 3), TypeError,
     "kernel_size must be an int or a triple"),
    (avg_pool3d, {"kernel_size": (2, 2, 4)}, (1, 1, 3, 3, 3), ValueError,
     r"gradrules.avg_pool3d: kernel_size \(2, 2, 4\) is larger"),
    (adaptive_avg_pool2d, {"output_size": 0}, (1, 1, 5, 5), ValueError,
     "output_size must be >= 1"),
    (adaptive_avg_pool2d, {"output_size": (1, 2, 3)}, (1, 1, 5, 5), ValueError,
     "output_size must be an int or a pair"),
]


@pytest.mark.parametrize("fn, kw, shape, exc, match", BAD)
def test_bad_input(fn, kw, shape, exc, match) -> None:
    with pytest.raises(exc, match=match):
        jax.eval_shape(lambda x: fn(x, **kw), np.zeros(shape))


# ------------------------------------------ the separable maps and their cost
@pytest.mark.parametrize("axis_map", [
    Window(9, 5, 3, 2, 1, 1 / 3), Window(10, 3, 3, 3, 0, 1.0), Dilated(5, 9, 3, 2, 1, 1 / 3),
    Repeat(4, 3, 1.0), Taps.of(np.array([[0.5, 0.5, 0.0], [0.0, 0.25, 0.75]]))],
    ids=lambda m: type(m).__name__)
def test_axis_maps_apply_their_matrix_and_transpose_to_its_transpose(axis_map) -> None:
    """Each 1-D map of the separable pooling / resampling ops, applied along
    an inner axis, equals its dense matrix; its transpose is the matrix's."""
    m = axis_map.matrix()
    x = RNG.standard_normal((2, m.shape[1], 3))
    np.testing.assert_allclose(axis_map.apply(jnp.asarray(x), 1),
                               np.einsum("ih,nhc->nic", m, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(axis_map.transpose().matrix(), m.T, rtol=1e-12)


def _window_reference(x, op, init, k, s, p):
    return jax.lax.reduce_window(x, init, op, (1, 1, k, k), (1, 1, s, s),
                                 ((0, 0), (0, 0), (p, p), (p, p)))


def test_pooling_costs_what_one_reduce_window_costs() -> None:
    """max_pool2d's values alone and avg_pool2d compile to the work of one
    reduce-window (no window gather, no dense matrices, no temp buffer), and
    avg_pool2d's gradient to the work of lax's own transpose."""
    x = jnp.asarray(RNG.standard_normal((2, 8, 28, 28)), jnp.float32)
    kw = dict(kernel_size=3, stride=2, padding=1)
    pairs = [(lambda a: max_pool2d(a, **kw)[0],
              lambda a: _window_reference(a, jax.lax.max, -jnp.inf, 3, 2, 1)),
             (lambda a: avg_pool2d(a, **kw),
              lambda a: _window_reference(a, jax.lax.add, 0.0, 3, 2, 1) / 9),
             (jax.grad(lambda a: jnp.sum(jnp.sin(avg_pool2d(a, **kw)))),
              jax.grad(lambda a: jnp.sum(jnp.sin(_window_reference(a, jax.lax.add, 0.0, 3, 2,
                                                                   1) / 9))))]
    for ours, ref in pairs:
        c, r = compiled_costs(ours, x), compiled_costs(ref, x)
        assert c.flops <= 1.1 * r.flops and c.bytes_accessed <= 1.1 * r.bytes_accessed
        assert c.temp_bytes <= r.temp_bytes + 2**16


@pytest.mark.parametrize("fn, shape, kw", [
    (max_pool3d, (1, 4, 12, 12, 12), dict(kernel_size=2, stride=1, padding=1)),
    (max_pool3d, (1, 4, 12, 12, 12), dict(kernel_size=3, stride=2, padding=1)),
    (max_pool3d, (1, 4, 12, 12, 12), dict(kernel_size=(1, 2, 3), stride=(1, 2, 1))),
    (max_pool2d, (2, 8, 28, 28), dict(kernel_size=2, stride=2)),
])
def test_max_pool_indices_read_x_in_place(fn, shape, kw) -> None:
    """Values and indices together cost no more than the reference (a
    reduce-window and an argmax over the gathered windows): the indices
    compare strided slices of x itself, not of a padded copy, and the flat
    positions are iota arithmetic, not constant tables (1.5-1.8x the bytes
    and a temp buffer of x's size before)."""
    ref = get_op(fn.__name__).reference
    x = jnp.asarray(RNG.standard_normal(shape), jnp.float32)
    c = compiled_costs(lambda a: fn(a, **kw), x)
    r = compiled_costs(lambda a: ref(a, **kw), x)
    assert c.bytes_accessed <= 1.1 * r.bytes_accessed and c.flops <= r.flops
    assert c.temp_bytes <= r.temp_bytes + 2**16


@pytest.mark.parametrize("fill", [-np.inf, np.nan])
def test_max_pool_indices_at_infinite_and_nan_windows(fill) -> None:
    """Windows of -inf give the first position inside x (padding never wins,
    as in torch; the reference's argmax over windows padded with -inf would
    pick the padding, -1: it is given a finite tie instead), and windows
    with a NaN the first NaN, as argmax takes it."""
    x = RNG.standard_normal((1, 2, 4, 5, 3))
    x[0, 0] = -np.inf
    x[0, 1, 1:3, 2:4, 1] = fill
    for fn, a, kw in [(max_pool3d, x, dict(kernel_size=2, stride=1, padding=1)),
                      (max_pool3d, x, dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=1)),
                      (max_pool2d, x[:, :, 1], dict(kernel_size=3, stride=2, padding=1))]:
        values, indices = fn(a, **kw)
        ref = get_op(fn.__name__).reference
        np.testing.assert_array_equal(values, ref(a, **kw)[0])
        tied = np.where(np.isneginf(a), -1e30, a)
        np.testing.assert_array_equal(indices, ref(tied, **kw)[1])
        assert indices.min() >= 0


def test_nearest_upsampling_is_a_broadcast() -> None:
    """upsample2d nearest by 2 does no arithmetic, and its gradient is a
    block sum: no more work than the reference's (jnp.repeat)."""
    x = jnp.asarray(RNG.standard_normal((2, 4, 14, 14)), jnp.float32)
    w = jnp.asarray(RNG.standard_normal((2, 4, 28, 28)), jnp.float32)
    fwd = compiled_costs(lambda a: upsample2d(a, scale_factor=2), x)
    assert fwd.flops == 0 and fwd.temp_bytes == 0
    grad = compiled_costs(jax.grad(lambda a, v: jnp.sum(v * upsample2d(a, scale_factor=2))),
                          x, w)
    ref = compiled_costs(jax.grad(lambda a, v: jnp.sum(
        v * jnp.repeat(jnp.repeat(a, 2, axis=2), 2, axis=3))), x, w)
    assert grad.flops <= 1.1 * ref.flops and grad.bytes_accessed <= 1.1 * ref.bytes_accessed
    assert grad.temp_bytes <= ref.temp_bytes + 2**16
