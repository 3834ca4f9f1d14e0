"""unfold / fold: torch's layout (checked against a numpy loop and against
lax.conv_general_dilated_patches), fold as the exact adjoint of unfold, the
cost of a strided-slice im2col (no gathers, no dense matrices), bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives.im2col import fold, unfold

RNG = np.random.default_rng(0)


def _unfold_loop(x, k, d, p, s):
    """torch's definition: column (c kh + i) kw + j, block bh ow + bw."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for a in range(oh):
                    for b in range(ow):
                        out[:, (ch * k[0] + i) * k[1] + j, a * ow + b] = \
                            xp[:, ch, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out


CASES = [dict(kernel_size=(2, 3), stride=(2, 1), padding=1),
         dict(kernel_size=2, dilation=(2, 1), stride=(1, 3))]


def _pairs(kw):
    return [kw[key] if isinstance(kw.get(key, 1 if key != "padding" else 0), tuple)
            else (kw.get(key, 1 if key != "padding" else 0),) * 2
            for key in ("kernel_size", "dilation", "padding", "stride")]


@pytest.mark.parametrize("kw", CASES)
def test_unfold_matches_torchs_layout(kw) -> None:
    x = RNG.standard_normal((2, 3, 5, 6))
    np.testing.assert_allclose(unfold(x, **kw), _unfold_loop(x, *_pairs(kw)), rtol=1e-12)
    # unbatched [C, H, W]
    np.testing.assert_allclose(unfold(x[0], **kw), _unfold_loop(x[:1], *_pairs(kw))[0],
                               rtol=1e-12)


@pytest.mark.parametrize("kw", CASES)
def test_fold_is_the_adjoint_of_unfold(kw) -> None:
    x = RNG.standard_normal((2, 3, 5, 6))
    cols = unfold(x, **kw)
    y = RNG.standard_normal(cols.shape)
    # <unfold x, y> = <x, fold y>
    np.testing.assert_allclose(np.vdot(cols, y), np.vdot(x, fold(y, output_size=(5, 6), **kw)),
                               rtol=1e-12)
    # fold(unfold(1)) counts the blocks that cover each pixel
    counts = fold(unfold(np.ones((1, 1, 5, 6)), **kw), output_size=(5, 6), **kw)
    want = np.zeros((5, 6))
    k, d, p, s = _pairs(kw)
    for a in range(0, 5 + 2 * p[0] - d[0] * (k[0] - 1), s[0]):
        for b in range(0, 6 + 2 * p[1] - d[1] * (k[1] - 1), s[1]):
            for i in range(k[0]):
                for j in range(k[1]):
                    r, c = a + i * d[0] - p[0], b + j * d[1] - p[1]
                    if 0 <= r < 5 and 0 <= c < 6:
                        want[r, c] += 1
    np.testing.assert_array_equal(counts[0, 0], want)
    # the transposes bind each other
    t = jax.linear_transpose(lambda a: unfold(a, **kw), x)(cols)[0]
    np.testing.assert_allclose(t, fold(cols, output_size=(5, 6), **kw), rtol=1e-12)


def test_unfold_is_strided_slices() -> None:
    """No gather or scatter in the forward or the gradient."""
    x = jnp.asarray(RNG.standard_normal((1, 2, 6, 6)))

    def f(a):
        return jnp.sum(jnp.sin(unfold(a, kernel_size=3, padding=1, stride=2)))

    hlo = jax.jit(jax.grad(f)).lower(x).as_text()
    assert "gather" not in hlo and "scatter" not in hlo and "dot_general" not in hlo


BAD = [
    (unfold, {"kernel_size": 4}, (1, 1, 3, 3), ValueError,
     r"gradrules.unfold: kernel_size \(4, 4\) .* larger than the padded input"),
    (unfold, {"kernel_size": 2}, (3, 3), ValueError, r"gradrules.unfold: x must be a 4-D"),
    (unfold, {"kernel_size": (1, 2, 3)}, (1, 1, 3, 3), TypeError,
     "kernel_size must be an int or a pair"),
    (unfold, {"kernel_size": 2, "stride": 0}, (1, 1, 3, 3), ValueError, "stride must be >= 1"),
    (fold, {"output_size": (4, 4), "kernel_size": 2}, (1, 6, 9), ValueError,
     r"gradrules.fold: x must be \[..., C \* 4, 9\]"),
    (fold, {"output_size": (4, 4), "kernel_size": 2}, (1, 8, 8), ValueError,
     r"gradrules.fold: x must be \[..., C \* 4, 9\].*\(1, 8, 8\)"),
    (fold, {"output_size": 4, "kernel_size": 2}, (1, 1, 4, 9), ValueError,
     "gradrules.fold: x must be a 3-D"),
]


@pytest.mark.parametrize("fn, kw, shape, exc, match", BAD)
def test_bad_input(fn, kw, shape, exc, match) -> None:
    with pytest.raises(exc, match=match):
        jax.eval_shape(lambda x: fn(x, **kw), np.zeros(shape))
