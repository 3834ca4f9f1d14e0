"""resample: torch's upsampling rules (nearest, bilinear, align_corners both
ways), the transposes as exact adjoints, pixel shuffles and patch tokens,
and bad input (grid_sample: tests/test_grid.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives.resample import (patchify, pixel_shuffle, pixel_unshuffle,
                                           unpatchify, upsample2d)

RNG = np.random.default_rng(0)
X22 = np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 1, 2, 2)


def test_bilinear_half_pixel_centres() -> None:
    out = upsample2d(X22, scale_factor=2, method="bilinear")
    want = [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5],
            [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]]   # torch's values
    np.testing.assert_allclose(out[0, 0], want, rtol=1e-12)


def test_bilinear_align_corners() -> None:
    out = upsample2d(X22, size=3, method="bilinear", align_corners=True)
    np.testing.assert_allclose(out[0, 0], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]], rtol=1e-12)
    one = upsample2d(X22, size=(1, 3), method="bilinear", align_corners=True)
    np.testing.assert_allclose(one[0, 0], [[1, 1.5, 2]], rtol=1e-12)


def test_nearest() -> None:
    np.testing.assert_array_equal(upsample2d(X22, scale_factor=2)[0, 0],
                                  np.repeat(np.repeat(X22[0, 0], 2, 0), 2, 1))
    np.testing.assert_array_equal(upsample2d(X22, size=(3, 3))[0, 0],
                                  [[1, 1, 2], [1, 1, 2], [3, 3, 4]])
    # downsampling by 2: every other pixel
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(upsample2d(x, scale_factor=0.5)[0, 0], [[0, 2], [8, 10]])


@pytest.mark.parametrize("kw", [
    {"size": (5, 7), "method": "bilinear"},
    {"size": (5, 7), "method": "bilinear", "align_corners": True},
    {"scale_factor": 3},
    {"size": (2, 1), "method": "bilinear"},
])
def test_upsample_transpose_is_the_exact_adjoint(kw) -> None:
    x = RNG.standard_normal((2, 3, 3, 4))
    y = upsample2d(x, **kw)
    ct = RNG.standard_normal(y.shape)
    (g,) = jax.linear_transpose(lambda a: upsample2d(a, **kw), x)(ct)
    np.testing.assert_allclose(jnp.vdot(y, ct), jnp.vdot(x, g), rtol=1e-12)
    # and it is what reverse mode uses
    np.testing.assert_allclose(jax.vjp(lambda a: upsample2d(a, **kw), x)[1](ct)[0], g,
                               rtol=1e-12)


def test_pixel_shuffle_layout_and_inverse() -> None:
    x = np.arange(8.0).reshape(1, 8, 1, 1)
    out = pixel_shuffle(x, upscale_factor=2)
    np.testing.assert_array_equal(out[0], [[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    y = RNG.standard_normal((2, 18, 2, 3))
    np.testing.assert_array_equal(
        pixel_unshuffle(pixel_shuffle(y, upscale_factor=3), downscale_factor=3), y)


def test_unpatchify_layout_and_inverse() -> None:
    tokens = np.arange(2 * 3 * 2 * 2 * 1, dtype=np.float64).reshape(1, 6, 4)
    img = unpatchify(tokens, grid_h=2, grid_w=3, patch_size=2, channels=1)
    assert img.shape == (1, 1, 4, 6)
    # token gy * grid_w + gx is the patch at (gy, gx), laid out [p, p, C]
    np.testing.assert_array_equal(img[0, 0, 2:4, 4:6], tokens[0, 5].reshape(2, 2))
    np.testing.assert_array_equal(
        patchify(img, grid_h=2, grid_w=3, patch_size=2, channels=1), tokens)


BAD = [
    (upsample2d, {"size": 4, "scale_factor": 2}, (1, 1, 2, 2), ValueError,
     "exactly one of size and scale_factor"),
    (upsample2d, {}, (1, 1, 2, 2), ValueError, "exactly one of size and scale_factor"),
    (upsample2d, {"size": 4, "method": "bicubic"}, (1, 1, 2, 2), ValueError, "method must be"),
    (upsample2d, {"size": 4, "align_corners": True}, (1, 1, 2, 2), ValueError,
     "align_corners=True needs method='bilinear'"),
    (upsample2d, {"scale_factor": 0.1}, (1, 1, 2, 2), ValueError, "leaves no output"),
    (upsample2d, {"size": 4}, (2, 2), ValueError, r"gradrules.upsample2d: x must be a 4-D"),
    (pixel_shuffle, {"upscale_factor": 2}, (1, 6, 2, 2), ValueError,
     r"gradrules.pixel_shuffle: channels 6 .* divisible by upscale_factor\*\*2 = 4"),
    (pixel_unshuffle, {"downscale_factor": 2}, (1, 1, 3, 4), ValueError,
     "divisible by downscale_factor=2"),
    (pixel_shuffle, {"upscale_factor": 0}, (1, 4, 2, 2), ValueError,
     "gradrules.pixel_shuffle: upscale_factor must be an int >= 1"),
    (unpatchify, {"grid_h": 2, "grid_w": 2, "patch_size": 2, "channels": 3}, (1, 4, 10),
     ValueError, r"gradrules.unpatchify: tokens must be .*\[..., 4, 12\]"),
]


@pytest.mark.parametrize("fn, kw, shape, exc, match", BAD)
def test_bad_input(fn, kw, shape, exc, match) -> None:
    with pytest.raises(exc, match=match):
        jax.eval_shape(lambda x: fn(x, **kw), np.zeros(shape))
