"""conv: conv2d against lax.conv_general_dilated (values and derivatives to
float64 precision), NHWC against NCHW, conv_transpose2d as the adjoint of
conv2d, batching into groups, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from gradrules.primitives.conv import conv1d, conv2d, conv3d, conv_transpose2d

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


CASES = [
    ((1, 4, 7, 6), (4, 2, 3, 3), {"stride": 2, "padding": 1, "groups": 2}),
    ((2, 3, 5, 5), (3, 1, 3, 2), {"padding": "SAME", "dilation": 2, "groups": 3}),
    ((1, 2, 6, 5), (3, 2, 2, 3), {"stride": (3, 2), "padding": ((2, 0), (1, 1))}),
    ((1, 2, 5, 4), (2, 2, 5, 4), {"padding": "VALID"}),
]


def _lax_conv(x, w, stride=1, padding=0, dilation=1, groups=1):
    s = (stride,) * 2 if isinstance(stride, int) else stride
    r = (dilation,) * 2 if isinstance(dilation, int) else dilation
    if isinstance(padding, int):
        padding = ((padding, padding),) * 2
    return lax.conv_general_dilated(x, w, s, padding, rhs_dilation=r, feature_group_count=groups,
                                    precision=lax.Precision.HIGHEST)


@pytest.mark.parametrize("xs, ws, kw", CASES)
def test_conv2d_matches_lax_with_derivatives(xs, ws, kw) -> None:
    x, w = _r(*xs), _r(*ws)
    np.testing.assert_allclose(conv2d(x, w, **kw), _lax_conv(x, w, **kw), rtol=1e-12, atol=1e-12)

    def loss(f):
        return lambda a, b: jnp.sum(jnp.sin(f(a, b, **kw)))

    g = jax.jit(jax.grad(loss(conv2d), argnums=(0, 1)))(x, w)
    want = jax.jit(jax.grad(loss(_lax_conv), argnums=(0, 1)))(x, w)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    t = (_r(*xs), _r(*ws))

    def hvp_of(f):
        return jax.jit(lambda *p: jax.jvp(jax.grad(loss(f), argnums=(0, 1)), p, t)[1])(x, w)

    hvp = hvp_of(conv2d)
    want = hvp_of(_lax_conv)
    for a, b in zip(hvp, want):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


def test_nhwc_matches_nchw() -> None:
    x, w, b = _r(2, 3, 5, 4), _r(6, 1, 3, 3), _r(6)
    nchw = conv2d(x, w, b, stride=2, padding=1, groups=3)
    nhwc = conv2d(np.transpose(x, (0, 2, 3, 1)), w, b, stride=2, padding=1, groups=3,
                  data_format="NHWC")
    np.testing.assert_allclose(np.transpose(nhwc, (0, 3, 1, 2)), nchw, rtol=1e-12, atol=1e-12)


def test_same_padding_keeps_ceil_size() -> None:
    out = conv2d(_r(1, 1, 7, 6), _r(1, 1, 4, 3), stride=2, padding="same")
    assert out.shape == (1, 1, 4, 3)


@pytest.mark.parametrize("kw", [
    {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
    {"stride": (2, 3), "padding": (0, 1), "dilation": 2},
    {},
])
def test_conv_transpose2d_is_the_adjoint_of_conv2d(kw) -> None:
    """<conv2d(z, w), x> == <z, conv_transpose2d(x, w)>, z of the output size."""
    groups = kw.get("groups", 1)
    x, w = _r(1, 4, 3, 4), _r(4, 6 // groups, 3, 2)
    y = conv_transpose2d(x, w, **kw)
    z = _r(*y.shape)
    conv_kw = {k: v for k, v in kw.items() if k != "output_padding"}
    lhs = jnp.vdot(conv2d(z, w, **conv_kw), x)
    rhs = jnp.vdot(z, y)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


def test_conv_transpose2d_output_size() -> None:
    y = conv_transpose2d(_r(1, 2, 3, 3), _r(2, 5, 3, 3), stride=2, padding=1, output_padding=1)
    assert y.shape == (1, 5, 6, 6)   # (3 - 1) * 2 - 2 + 3 + 1


def test_vmap_over_kernels_with_groups() -> None:
    x, ws = _r(1, 4, 5, 5), _r(3, 4, 2, 3, 3)
    got = jax.vmap(lambda w: conv2d(x, w, groups=2, stride=2))(ws)
    want = np.stack([_lax_conv(x, w, stride=2, groups=2) for w in ws])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


BAD = [
    ((1, 3, 5, 5), (4, 1, 3, 3), {"groups": 2}, r"gradrules.conv2d: .*\(1, 3, 5, 5\).*groups=2"),
    ((1, 4, 5, 5), (3, 2, 3, 3), {"groups": 2}, "divisible by groups"),
    ((1, 2, 3, 3), (1, 2, 5, 5), {}, r"kernel \(5, 5\).*larger than the padded input"),
    ((1, 2, 4, 4), (1, 2, 3, 3), {"dilation": 2},
     "larger than the padded input"),
    ((1, 2, 5, 5), (1, 2, 3, 3), {"data_format": "NCWH"}, "data_format must be one of"),
    ((1, 2, 5, 5), (1, 2, 3, 3), {"padding": "FULL"}, "padding must be 'SAME', 'VALID'"),
    ((2, 5, 5), (1, 2, 3, 3), {}, "x must be a 4-D"),
]


@pytest.mark.parametrize("xs, ws, kw, match", BAD)
def test_conv2d_bad_input(xs, ws, kw, match) -> None:
    with pytest.raises(ValueError, match=match):
        jax.eval_shape(lambda x, w: conv2d(x, w, **kw), np.zeros(xs), np.zeros(ws))


def test_conv2d_bad_params_and_bias() -> None:
    x, w = np.zeros((1, 2, 5, 5)), np.zeros((3, 2, 3, 3))
    with pytest.raises(ValueError, match="stride must be >= 1"):
        conv2d(x, w, stride=0)
    with pytest.raises(TypeError, match="dilation must be an int or a pair"):
        conv2d(x, w, dilation=(1, 2, 3))
    with pytest.raises(ValueError, match=r"b must have shape \(3,\)"):
        conv2d(x, w, np.zeros(2))
    with pytest.raises(ValueError, match="groups must be an int >= 1"):
        conv2d(x, w, groups=0)


def test_conv_transpose2d_bad_input() -> None:
    with pytest.raises(ValueError, match=r"gradrules.conv_transpose2d: x .* 3 channels"):
        conv_transpose2d(np.zeros((1, 3, 4, 4)), np.zeros((2, 2, 3, 3)))
    with pytest.raises(ValueError, match="output_padding"):
        conv_transpose2d(np.zeros((1, 2, 4, 4)), np.zeros((2, 2, 3, 3)), stride=2,
                         output_padding=2)


ND_CASES = [
    (conv1d, "NCW", (2, 4, 7), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    (conv1d, "NCW", (1, 3, 6), (2, 3, 2), {"dilation": 2, "padding": ((2, 0),)}),
    (conv3d, "NCDHW", (1, 2, 4, 3, 5), (4, 1, 2, 2, 3),
     {"stride": (1, 2, 2), "padding": "SAME", "dilation": (2, 1, 1), "groups": 2}),
]


@pytest.mark.parametrize("fn, fmt, xs, ws, kw", ND_CASES)
def test_conv1d_conv3d_match_lax_with_gradients(fn, fmt, xs, ws, kw) -> None:
    nd = len(xs) - 2
    x, w, b = _r(*xs), _r(*ws), _r(ws[0])

    def ref(a, k, bias):
        s, r = kw.get("stride", 1), kw.get("dilation", 1)
        s, r = ((s,) * nd if isinstance(s, int) else s), ((r,) * nd if isinstance(r, int) else r)
        p = kw.get("padding", 0)
        p = ((p, p),) * nd if isinstance(p, int) else p
        out = lax.conv_general_dilated(a, k, s, p, rhs_dilation=r,
                                       dimension_numbers=(fmt, "OI" + fmt[2:], fmt),
                                       feature_group_count=kw.get("groups", 1),
                                       precision=lax.Precision.HIGHEST)
        return out + bias.reshape((-1,) + (1,) * nd)

    np.testing.assert_allclose(fn(x, w, b, **kw), ref(x, w, b), rtol=1e-12, atol=1e-12)
    g = jax.jit(jax.grad(lambda *a: jnp.sum(jnp.sin(fn(*a, **kw))), argnums=(0, 1, 2)))(x, w, b)
    want = jax.jit(jax.grad(lambda *a: jnp.sum(jnp.sin(ref(*a))), argnums=(0, 1, 2)))(x, w, b)
    for a, c in zip(g, want):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    # channels last: the same values, moved
    last = fmt[0] + fmt[2:] + "C"
    perm = tuple(fmt.index(a) for a in last)
    np.testing.assert_allclose(fn(np.transpose(x, perm), w, b, data_format=last, **kw),
                               np.transpose(ref(x, w, b), perm), rtol=1e-12, atol=1e-12)


def test_conv1d_conv3d_bad_input() -> None:
    with pytest.raises(ValueError, match=r"gradrules.conv1d: x must be a 3-D NCW input"):
        conv1d(np.zeros((1, 2, 5, 5)), np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="data_format must be one of"):
        conv1d(np.zeros((1, 2, 5)), np.zeros((1, 2, 3)), data_format="NCHW")
    with pytest.raises(TypeError, match="gradrules.conv3d: stride must be an int or a triple"):
        conv3d(np.zeros((1, 2, 4, 4, 4)), np.zeros((1, 2, 2, 2, 2)), stride=(1, 2))
    with pytest.raises(ValueError, match=r"gradrules.conv3d: kernel \(2, 2, 5\).*larger"):
        jax.jit(conv3d)(np.zeros((1, 2, 4, 4, 4)), np.zeros((1, 2, 2, 2, 5)))
    with pytest.raises(ValueError, match="divisible by groups"):
        conv3d(np.zeros((1, 3, 4, 4, 4)), np.zeros((2, 1, 2, 2, 2)), groups=3)


@pytest.mark.parametrize("fn, x_shape, w_shape", [
    (conv2d, "n, 2, 5, 5", (3, 2, 3, 3)),
    (conv_transpose2d, "n, 2, 4, 4", (2, 3, 3, 3)),
])
def test_export_grads_with_a_symbolic_batch_of_images(fn, x_shape, w_shape) -> None:
    """The checker's ``export`` property vmaps the kernels too, which lax's
    own convolution cannot export (a symbolic feature-group count), so conv
    is checked here the way a model exports it: a symbolic batch of images,
    one kernel; the exported grads equal the direct ones at two batch sizes."""
    def loss(x, w):
        return jnp.sum(fn(x, w, padding=1) ** 2)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1)))
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(x_shape), np.float32)
    exported = jax.export.export(grads)(spec, jax.ShapeDtypeStruct(w_shape, np.float32))
    rng = np.random.default_rng(0)
    w = rng.normal(size=w_shape).astype(np.float32)
    for n in (1, 3):
        x = rng.normal(size=(n,) + spec.shape[1:]).astype(np.float32)
        for got, want in zip(exported.call(x, w), grads(x, w)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
