"""rope: rotate-half semantics, positions / start_pos, the transpose is the
inverse rotation, relative positions, vmap over positions, bad input, the
angle tables computed once."""

import re

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from gradrules.primitives.rope import rope
from gradrules.testing.check import check


def _numpy_rope(x, positions, theta=10000.0):
    """The pairs (i, i + D/2) rotated one by one."""
    b, s, h, d = x.shape
    positions = np.broadcast_to(positions, (b, s))
    out = np.empty_like(x)
    for i in range(d // 2):
        a = positions * theta ** (-2.0 * i / d)
        c, sn = np.cos(a)[:, :, None], np.sin(a)[:, :, None]
        out[..., i] = x[..., i] * c - x[..., i + d // 2] * sn
        out[..., i + d // 2] = x[..., i + d // 2] * c + x[..., i] * sn
    return out


def test_matches_definition():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3, 8))
    np.testing.assert_allclose(rope(x), _numpy_rope(x, np.arange(5)), atol=1e-12)
    pos = rng.integers(0, 1000, (2, 5))
    np.testing.assert_allclose(rope(x, positions=pos, theta=500.0),
                               _numpy_rope(x, pos, 500.0), atol=1e-12)


def test_start_pos_and_positions_agree():
    x = np.random.default_rng(1).standard_normal((2, 4, 1, 6))
    want = rope(x, positions=np.arange(7, 11))
    np.testing.assert_allclose(rope(x, start_pos=7), want, atol=1e-12)
    np.testing.assert_allclose(rope(x, positions=np.tile(np.arange(7, 11), (2, 1))), want,
                               atol=1e-12)


def test_position_zero_is_the_identity_and_norms_are_kept():
    x = np.random.default_rng(2).standard_normal((1, 3, 2, 4))
    np.testing.assert_allclose(rope(x, positions=np.zeros(3, np.int32)), x, atol=1e-15)
    out = rope(x, start_pos=123)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1),
                               rtol=1e-12)


def test_scores_depend_on_relative_position_only():
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 1, 1, 1, 8))
    scores = [float(jnp.vdot(rope(q, start_pos=p + 3), rope(k, start_pos=p))) for p in (0, 9, 40)]
    np.testing.assert_allclose(scores, scores[0], rtol=1e-10)


def test_transpose_is_the_inverse_rotation():
    x = np.random.default_rng(4).standard_normal((2, 3, 2, 4))
    pos = np.array([[0, 5, 9], [1, 2, 3]])
    (back,) = jax.linear_transpose(lambda x: rope(x, positions=pos), x)(rope(x, positions=pos))
    np.testing.assert_allclose(back, x, atol=1e-12)
    jaxpr = jax.make_jaxpr(jax.grad(lambda x: jnp.sum(rope(x, positions=pos) ** 2)))(x)
    inverse = [e.params["inverse"] for e in jaxpr.eqns if e.primitive.name == "rope"]
    assert inverse == [False, True]


def test_positions_operand_passes_every_check():
    """positions is a keyword argument (held fixed by the op's samples); as a
    function argument it is vmapped too, [S] and [B, S]."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 1, 4))

    def f(x, positions):
        return rope(x, positions=positions, theta=50.0)

    for pos in (rng.integers(0, 9, (3,)), rng.integers(0, 9, (2, 3))):
        check(f, x, pos, checks=["fd", "vmap", "closure"]).raise_if_failed()


def test_bf16_rotates_in_float32():
    x = np.random.default_rng(6).standard_normal((1, 4, 1, 8))
    xb = jnp.asarray(x, jnp.bfloat16)
    out = rope(xb, start_pos=1000)
    assert out.dtype == jnp.bfloat16
    want = _numpy_rope(np.asarray(xb, np.float64), np.arange(1000, 1004))
    np.testing.assert_allclose(np.asarray(out, np.float64), want, atol=2e-2)


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("shape,match", [
    ((1, 2, 1, 3), r"even head_dim, got shape \(1, 2, 1, 3\)"),
    ((2, 1, 4), r"argument x must be \[batch, seq, heads, head_dim\], got shape \(2, 1, 4\)"),
])
def test_bad_x(shape, match):
    with pytest.raises(ValueError, match=match):
        rope(np.ones(shape))
    with pytest.raises(TypeError, match=r"gradrules\.rope: argument x must have a floating"):
        rope(np.ones((1, 2, 1, 4), np.int32))


def test_bad_positions():
    x = np.ones((2, 3, 1, 4))
    with pytest.raises(TypeError, match=r"gradrules\.rope: argument positions must have an "
                                        r"integer dtype"):
        rope(x, positions=np.arange(3.0))
    with pytest.raises(ValueError, match=r"positions must have shape \[seq\] = \(3,\) or "
                                         r"\[batch, seq\] = \(2, 3\).*got \(4,\)"):
        rope(x, positions=np.arange(4))
    with pytest.raises(ValueError, match="positions or start_pos, not both"):
        rope(x, positions=np.arange(3), start_pos=2)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(theta=0.0), ValueError, "theta must be > 0"),
    (dict(theta="big"), TypeError, "theta must be a Python number"),
    (dict(start_pos=1.5), TypeError, "start_pos must be an int"),
])
def test_bad_params(kw, exc, match):
    with pytest.raises(exc, match=match):
        rope(np.ones((1, 2, 1, 4)), **kw)


def _fusions_with(hlo: str, ops: tuple[str, ...]) -> list[str]:
    """The result types of the fused computations of the compiled ``hlo``
    that evaluate any of ``ops``."""
    blocks = re.findall(r"^%\S+ \([^\n]*\) -> (\S+) \{\n(.*?)\n\}", hlo, re.M | re.S)
    return [result for result, body in blocks if any(f" {op}(" in body for op in ops)]


@pytest.mark.parametrize("mode", ["forward", "grad"])
def test_cos_and_sin_are_computed_once_per_position_and_frequency(mode):
    """XLA's CPU loop fusion re-evaluates a fused producer for every element
    of its consumer: with cos and sin fused into the rotation they would be
    computed per batch entry and head (6x the time on JAX 0.10.2). With the
    positions an argument (not folded into constants), cos and sin are
    evaluated in a fusion of their own, none of the shape of x."""
    x, w = jnp.asarray(np.random.default_rng(1).standard_normal((2, 4, 16, 6, 32)), jnp.float32)
    positions = jnp.arange(3, 19)
    def forward(a, positions):
        return rope(a, positions=positions)
    fn = forward if mode == "forward" else jax.grad(lambda a, p: jnp.sum(forward(a, p) * w))
    hlo = jax.jit(fn).lower(x, positions).compile().as_text()
    trig = _fusions_with(hlo, ("cosine", "sine"))
    assert trig and all("4,16,6,32" not in t for t in trig), trig
