"""attention: semantics (GQA, causal aligned to the end, masks, bias, fully
masked rows, block sizes), memory, bad input (the primitive each transform
binds, and kernels: tests/test_fused.py)."""

from functools import partial

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from gradrules.core.kernels import Implementation
import gradrules
from gradrules.primitives.attention import (BlockSizes, attention, attention_p,
                                            attention_reference, dot_product_attention)
from gradrules.testing.check import check

from _helpers import mode_costs


def _qkv(rng, b, sq, sk, h, hkv, d, dtype=np.float64):
    return (rng.standard_normal((b, sq, h, d)).astype(dtype),
            rng.standard_normal((b, sk, hkv, d)).astype(dtype),
            rng.standard_normal((b, sk, hkv, d)).astype(dtype))


def _numpy_attention(q, k, v, *, causal=False, scale=None, mask=None, bias=None):
    """Loops over batch, head and query row: the definition, in numpy."""
    b, sq, h, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    scale = d ** -0.5 if scale is None else scale
    out = np.zeros(q.shape)
    for bi in range(b):
        for hi in range(h):
            kh = hi // (h // hkv)
            for i in range(sq):
                s = scale * k[bi, :, kh] @ q[bi, i, hi]
                if bias is not None:
                    s = s + np.broadcast_to(bias, (b, h, sq, sk))[bi, hi, i]
                keep = np.ones(sk, bool)
                if mask is not None:
                    keep &= np.broadcast_to(mask, (b, h, sq, sk))[bi, hi, i]
                if causal:
                    keep &= np.arange(sk) <= i + sk - sq
                if keep.any():
                    e = np.exp(s[keep] - s[keep].max())
                    out[bi, i, hi] = (e / e.sum()) @ v[bi, keep, kh]
    return out


@pytest.mark.parametrize("sq,sk,h,hkv,causal", [
    (5, 5, 4, 2, True), (3, 7, 2, 1, True), (7, 3, 3, 3, True), (4, 6, 4, 1, False)])
@pytest.mark.parametrize("blocks", [(None, None), (2, 3), (1, 1)])
def test_matches_definition(sq, sk, h, hkv, causal, blocks):
    rng = np.random.default_rng(0)
    q, k, v = _qkv(rng, 2, sq, sk, h, hkv, 3)
    got = attention(q, k, v, causal=causal, block_q=blocks[0], block_k=blocks[1])
    np.testing.assert_allclose(got, _numpy_attention(q, k, v, causal=causal), atol=1e-12)


def test_matches_jax_nn_dot_product_attention():
    """(jax.nn computes its softmax in float32 even for float64 input.)"""
    rng = np.random.default_rng(1)
    q, k, v = _qkv(rng, 2, 6, 6, 4, 2, 8)
    mask = rng.uniform(size=(2, 1, 6, 6)) > 0.2
    mask[..., 0] = True
    bias = rng.standard_normal((1, 4, 6, 6))
    for kw in (dict(causal=True), dict(mask=mask, bias=bias)):
        want = jax.nn.dot_product_attention(
            q, k, v, is_causal=kw.get("causal", False), mask=kw.get("mask"), bias=kw.get("bias"))
        np.testing.assert_allclose(attention(q, k, v, block_q=4, block_k=4, **kw), want,
                                   atol=1e-6)


def test_causal_is_aligned_to_the_end():
    """Sq < Sk (decoding): the last query sees every key; Sq > Sk: the first
    Sq - Sk queries see none and give 0."""
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng, 1, 2, 5, 1, 1, 4)
    full = attention(q[:, -1:], k, v)
    np.testing.assert_allclose(attention(q, k, v, causal=True)[:, -1:], full, atol=1e-12)
    q, k, v = _qkv(rng, 1, 5, 2, 1, 1, 4)
    out = attention(q, k, v, causal=True, block_q=2, block_k=1)
    np.testing.assert_array_equal(out[:, :3], 0.0)
    assert np.all(np.abs(np.asarray(out[:, 3:])) > 0)


def _all_masked_case():
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, 1, 3, 4, 2, 1, 2)
    mask = np.ones((1, 2, 3, 4), bool)
    mask[0, 1, 1] = False                  # head 1, row 1: no key at all
    return q, k, v, mask


def test_fully_masked_row_gives_zero_and_zero_finite_derivatives():
    q, k, v, mask = _all_masked_case()

    def f(q, k, v):
        return attention(q, k, v, mask=mask, block_q=2, block_k=2)

    out = f(q, k, v)
    np.testing.assert_array_equal(out[0, 1, 1], 0.0)
    dq, dk, dv = jax.grad(lambda *a: jnp.sum(jnp.sin(f(*a))), argnums=(0, 1, 2))(q, k, v)
    for g in (dq, dk, dv):
        assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(dq[0, 1, 1], 0.0)
    jac = jax.jit(jax.jacfwd(f))(q, k, v)
    assert np.all(np.isfinite(jac)) and np.all(jac[0, 1, 1] == 0.0)
    hess = jax.jit(jax.hessian(lambda q: jnp.sum(jnp.sin(f(q, k, v)))))(q)
    assert np.all(np.isfinite(hess)) and np.all(hess[0, 1, 1] == 0.0)


def test_minus_inf_bias_acts_as_a_mask():
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng, 1, 3, 4, 1, 1, 2)
    mask = np.array([[True, False, True, True], [False] * 4, [True] * 4])[None, None]
    bias = np.where(mask, 0.0, -np.inf)

    def loss(q, **kw):
        return jnp.sum(jnp.sin(attention(q, k, v, **kw)))

    np.testing.assert_allclose(attention(q, k, v, bias=bias), attention(q, k, v, mask=mask),
                               atol=1e-12)
    g = jax.grad(lambda q: loss(q, bias=bias))(q)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, jax.grad(lambda q: loss(q, mask=mask))(q), atol=1e-12)


def test_no_keys_gives_zero():
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, 2, 3, 0, 2, 1, 2)
    np.testing.assert_array_equal(attention(q, k, v, causal=True), 0.0)
    g = jax.grad(lambda q: jnp.sum(attention(q, k, v) ** 2))(q)
    np.testing.assert_array_equal(g, 0.0)


def test_bias_and_mask_operands_pass_every_check():
    """mask and bias are keyword arguments (held fixed by the op's samples):
    here they are arguments of a function, so the checker differentiates the
    bias and vmaps over both, in every combination."""
    rng = np.random.default_rng(6)
    q, k, v = _qkv(rng, 2, 3, 4, 2, 1, 2)
    mask = rng.uniform(size=(2, 1, 3, 4)) > 0.3
    mask[..., 0] = True
    mask[0, 0, 1] = False
    bias = rng.uniform(-1, 1, (1, 2, 1, 4))

    def f(q, k, v, mask, bias):
        return attention(q, k, v, mask=mask, bias=bias, causal=True, block_q=2, block_k=3)

    report = check(f, q, k, v, mask, bias, checks=["fd", "vmap", "closure", "hessian_symmetry"])
    report.raise_if_failed()


def test_block_sizes_do_not_change_derivatives():
    rng = np.random.default_rng(7)
    q, k, v = _qkv(rng, 1, 5, 7, 2, 1, 3)
    bias = rng.standard_normal((1, 2, 5, 7))

    def grads(**blocks):
        def loss(q, k, v, b):
            return jnp.sum(jnp.cos(attention(q, k, v, bias=b, causal=True, **blocks)))
        return jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(q, k, v, bias)

    want = grads()
    for got in (grads(block_q=2, block_k=3), grads(block_q=1, block_k=2)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, atol=1e-12)


def test_bf16_accumulates_in_float32():
    rng = np.random.default_rng(9)
    q, k, v = (jnp.asarray(x, jnp.bfloat16) for x in _qkv(rng, 1, 16, 16, 2, 1, 8))
    out, lse, lse_lo = jax.eval_shape(lambda q, k, v: attention_p.bind(
        q, k, v, np.ones((1, 1, 1, 1), bool), np.zeros((1, 1, 1, 1), jnp.bfloat16),
        causal=True, scale=0.3, implementation=Implementation("xla", BlockSizes(4, 4))), q, k, v)
    assert out.dtype == jnp.bfloat16 and lse.dtype == lse_lo.dtype == jnp.float32
    got = attention(q, k, v, causal=True, block_q=4, block_k=4)
    assert got.dtype == jnp.bfloat16
    want = _numpy_attention(*(np.asarray(x, np.float64) for x in (q, k, v)), causal=True)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, atol=2e-2)
    g = jax.grad(lambda q: jnp.sum(attention(q, k, v).astype(jnp.float32)))(q)
    assert g.dtype == jnp.bfloat16 and np.all(np.isfinite(np.asarray(g, np.float32)))


def test_bf16_tangent_is_one_rounding_of_the_exact_tangent():
    """The bfloat16 tangent comes from float32 sums (``sum p v`` too, not
    the bfloat16 output): within one bfloat16 rounding (2**-8 relative) of
    the float64 tangent at the same inputs, beside float32 round-off."""
    rng = np.random.default_rng(14)
    primals, tangents = (tuple(jnp.asarray(x, jnp.bfloat16) for x in _qkv(rng, 1, 8, 8, 2, 1, 8))
                         for _ in range(2))

    def tangents_of(primals, tangents):                   # gradrules', float64's
        wide = [tuple(x.astype(jnp.float64) for x in xs) for xs in (primals, tangents)]
        return (jax.jvp(partial(attention, causal=True), primals, tangents)[1],
                jax.jvp(partial(attention_reference, causal=True), *wide)[1])

    got, want = (np.asarray(x, np.float64) for x in jax.jit(tangents_of)(primals, tangents))
    err = np.abs(got - want)
    within = bool((err <= 2.0 ** -8 * np.abs(want) + 1e-5 * np.abs(want).max()).all())
    assert within, f"max error {err.max():.2e}, max |tangent| {np.abs(want).max():.2f}"


def test_grad_never_materialises_the_scores():
    """XLA's memory analysis of the compiled grad: far below one [S, S] array."""
    s = 2048
    x = jax.ShapeDtypeStruct((1, s, 1, 16), jnp.float32)

    def loss(q, k, v):
        return jnp.sum(attention(q, k, v, causal=True) ** 2)

    compiled = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).lower(x, x, x).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    assert temp < s * s * 4 / 8, temp


# ------------------------------------------------------------- bad input
def test_heads_that_do_not_divide():
    q, k, v = _qkv(np.random.default_rng(0), 1, 2, 2, 3, 2, 4)
    with pytest.raises(ValueError, match=r"gradrules\.attention: the 3 heads of q .* 2 heads"):
        attention(q, k, v)


@pytest.mark.parametrize("shapes,match", [
    (((2, 3, 4), (2, 3, 1, 4), (2, 3, 1, 4)), r"argument q must have rank 4.*\(2, 3, 4\)"),
    (((2, 3, 1, 4), (2, 3, 1, 4), (2, 5, 1, 4)), r"k and v .* v \(2, 5, 1, 4\)"),
    (((2, 3, 1, 4), (2, 3, 1, 8), (2, 3, 1, 8)), r"head_dim of q"),
    (((2, 3, 1, 4), (1, 3, 1, 4), (1, 3, 1, 4)), r"batch"),
    (((1, 3, 2, 4), (1, 3, 0, 4), (1, 3, 0, 4)), r"heads of k and v"),
])
def test_bad_shapes(shapes, match):
    q, k, v = (np.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match=match):
        attention(q, k, v)


def test_bad_dtypes():
    q = np.zeros((1, 2, 1, 2))
    with pytest.raises(TypeError, match=r"gradrules\.attention: argument q must have a floating"):
        attention(q.astype(np.int32), q, q)
    with pytest.raises(TypeError, match=r"argument mask must have bool"):
        attention(q, q, q, mask=np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"argument bias must have a floating"):
        attention(q, q, q, bias=np.ones((2, 2), bool))


def test_mask_and_bias_that_do_not_broadcast():
    q = np.zeros((1, 2, 1, 2))
    with pytest.raises(ValueError, match=r"argument mask with shape \(1, 1, 3, 2\)"):
        attention(q, q, q, mask=np.ones((3, 2), bool))
    with pytest.raises(ValueError, match=r"argument bias must have rank <= 4"):
        attention(q, q, q, bias=np.zeros((1, 1, 1, 2, 2)))


@pytest.mark.parametrize("kw,exc,match", [
    (dict(causal=1), TypeError, "causal must be a bool"),
    (dict(scale="x"), TypeError, "scale must be a Python number"),
    (dict(scale=float("inf")), ValueError, "scale must be finite"),
    (dict(block_q=0), ValueError, "block_q must be >= 1"),
    (dict(block_k=2.0), TypeError, "block_k must be an int"),
])
def test_bad_params(kw, exc, match):
    q = np.zeros((1, 2, 1, 2))
    with pytest.raises(exc, match=match):
        attention(q, q, q, **kw)


def test_zero_head_dim_needs_a_scale():
    q = np.zeros((1, 2, 1, 0))
    with pytest.raises(ValueError, match="head_dim is 0"):
        attention(q, q, q)
    np.testing.assert_array_equal(attention(q, q, q, scale=1.0), q)


# ------------------------------------------------------ dot_product_attention
@pytest.mark.parametrize("t,s,unbatched", [(3, 5, False), (5, 3, True)])
def test_dot_product_attention_is_jax_nns(t, s, unbatched):
    """Values and gradients (query, key, value, bias) equal jax.nn's, GQA,
    is_causal aligned top-left as jax.nn when T != S, with a mask and a
    bias; unbatched [T, N, H] too (T == S: the checker's samples). (jax.nn's
    softmax is float32: float32 tolerances.)"""
    rng = np.random.default_rng(10)
    q, k, v = _qkv(rng, 2, t, s, 4, 2, 8)
    bias = rng.standard_normal((1, 4, t, s))
    mask = rng.uniform(size=(2, 1, t, s)) > 0.3
    mask[..., 0] = True
    if unbatched:
        q, k, v, bias, mask = q[0], k[0], v[0], bias[0], mask[0]
    for kw in ({"is_causal": True}, {"mask": mask, "is_causal": True}):
        def ours(q, k, v, b, kw=kw):
            return jnp.sum(jnp.sin(dot_product_attention(q, k, v, b, **kw)))

        def theirs(q, k, v, b, kw=kw):
            return jnp.sum(jnp.sin(jax.nn.dot_product_attention(q, k, v, b, **kw)))

        np.testing.assert_allclose(dot_product_attention(q, k, v, bias, **kw),
                                   jax.nn.dot_product_attention(q, k, v, bias, **kw), atol=2e-6)
        for a, b in zip(jax.jit(jax.grad(ours, (0, 1, 2, 3)))(q, k, v, bias),
                        jax.jit(jax.grad(theirs, (0, 1, 2, 3)))(q, k, v, bias)):
            np.testing.assert_allclose(a, b, atol=2e-5)


def test_dot_product_attention_causal_is_top_left_attention_is_bottom_right():
    """T=2 < S=4: dot_product_attention's first query sees key 0 alone (jax.nn),
    attention(causal=True)'s sees keys 0..2 (decoding)."""
    rng = np.random.default_rng(11)
    q, k, v = _qkv(rng, 1, 2, 4, 1, 1, 4)
    top_left = dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(top_left[:, 0, 0], v[:, 0, 0], atol=1e-12)
    bottom_right = attention(q, k, v, causal=True)
    np.testing.assert_allclose(bottom_right[:, 0:1],
                               attention(q[:, :1], k[:, :3], v[:, :3]), atol=1e-12)
    tril = np.tril(np.ones((2, 4), bool))
    np.testing.assert_allclose(top_left, attention(q, k, v, mask=tril), atol=1e-12)


def test_dot_product_attention_binds_attention_and_is_listed():
    rng = np.random.default_rng(12)
    q, k, v = _qkv(rng, 1, 3, 3, 2, 2, 2)
    jaxpr = str(jax.make_jaxpr(lambda q: dot_product_attention(q, k, v, is_causal=True))(q))
    assert "attention[" in jaxpr and "causal=True" in jaxpr
    op = gradrules.get_op("dot_product_attention")
    assert op.primitives == gradrules.get_op("attention").primitives
    assert gradrules.dot_product_attention is dot_product_attention


def test_dot_product_attention_fully_masked_row_is_zero():
    """The one documented difference: jax.nn gives the mean of the values."""
    rng = np.random.default_rng(13)
    q, k, v = _qkv(rng, 1, 2, 3, 1, 1, 2)
    mask = np.array([[True, False, True], [False, False, False]])
    out = dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_array_equal(out[0, 1], 0.0)
    np.testing.assert_allclose(jax.nn.dot_product_attention(q, k, v, mask=mask)[0, 1, 0],
                               v[0].mean(0)[0], atol=1e-6)
    g = jax.grad(lambda q: jnp.sum(dot_product_attention(q, k, v, mask=mask) ** 2))(q)
    assert np.isfinite(g).all() and np.all(g[0, 1] == 0.0)


@pytest.mark.parametrize("args,kw,exc,match", [
    (((2, 3, 2, 4), (2, 3, 2, 4), (3, 2, 4)), {}, ValueError, "all have rank 4"),
    (((1, 2, 3, 2, 4),) * 3, {}, ValueError, "all have rank 4"),
    (((2, 3, 4), (3, 2, 4), (3, 2, 4)), {}, ValueError, "N a multiple of K"),
    (((2, 3, 3, 4), (2, 5, 2, 4), (2, 5, 2, 4)), {}, ValueError, "N a multiple of K"),
    (((2, 3, 2, 4), (2, 5, 2, 3), (2, 5, 2, 3)), {}, ValueError, "N a multiple of K"),
    (((3, 2, 4), (5, 2, 4), (5, 2, 4)), {"is_causal": 1}, TypeError, "is_causal must be a bool"),
    (((3, 2, 4), (5, 2, 4), (5, 2, 4)), {"is_causal": True, "mask": np.ones((3, 5))},
     TypeError, "mask"),
])
def test_dot_product_attention_bad_input(args, kw, exc, match):
    arrays = [np.ones(a) for a in args]
    with pytest.raises(exc, match=rf"gradrules\.dot_product_attention: .*{match}"):
        dot_product_attention(*arrays, **kw)
    with pytest.raises(exc, match=match):
        jax.jit(lambda *a: dot_product_attention(*a, **kw))(*arrays)


# ----------------------------------------- second order: the backward's JVP
@pytest.mark.parametrize("mode", ["grad", "hvp"])
def test_one_key_block_gradient_does_no_more_than_jax_numpy(mode):
    """With every key in one block (the bench's grown sample: GQA 28/1
    heads, T=42 < S=56, is_causal), the backward and its JVP take delta_i =
    ct_i . out_i - ct_lse_i (and its tangent) as row sums in the block
    instead of reading out (and t_out): where the loss is linear in the
    output, XLA drops the forward's p v (1.18x jax.numpy's FLOPs in grad,
    1.25x in the HVP, before); and the weights are masked inside the
    exponential, one [B, H, T, S] array instead of two (+2.2 MiB temp
    before). FLOPs, bytes and temp against the jax.numpy reference's
    gradient of ``sum(w * out)`` (as ``gradrules bench``), values too."""
    rng = np.random.default_rng(16)
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(rng, 28, 42, 56, 28, 1, 28))
    fns = (partial(dot_product_attention, is_causal=True),
           partial(gradrules.get_op("dot_product_attention").reference, is_causal=True))
    (ours, got), (ref, want) = mode_costs(mode, fns, q, k, v, diff=(0, 1, 2))
    assert ours.flops <= ref.flops, (ours.flops, ref.flops)
    assert ours.bytes_accessed <= ref.bytes_accessed, (ours.bytes_accessed, ref.bytes_accessed)
    assert ours.temp_bytes <= ref.temp_bytes, (ours.temp_bytes, ref.temp_bytes)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=2e-4 * np.abs(w).max())


def _backward_jvp_operands(rng, dtype, offset):
    """attention_vjp_jvp_p's operands: GQA, causal Sq=5 < Sk=7, a mask with
    an all-masked row, a bias [1, H, Sq, Sk] whose tangent broadcasts over
    rows, a cotangent of lse, keys and values ``offset`` from 0 (the
    softmax does not see a common offset of the keys, so dq is small beside
    ``offset * sum_j g_ij``, which is 0 exactly: an error in delta shows);
    and its params."""
    q, k, v = _qkv(rng, 2, 5, 7, 4, 2, 3)
    k, v = k + offset, v + offset
    mask = rng.uniform(size=(2, 1, 5, 7)) > 0.3
    mask[..., 0] = True
    mask[1, 0, 2] = False
    bias = rng.standard_normal((1, 4, 5, 7))
    params = dict(causal=True, scale=0.6, implementation=Implementation("xla", None))
    q, k, v, bias = (jnp.asarray(x, dtype) for x in (q, k, v, bias))
    out, lse, lse_lo = attention_p.bind(q, k, v, mask, bias, **params)
    ct_out, tq, t_out, tk, tv = (jnp.asarray(rng.standard_normal(np.shape(x)), dtype)
                                 for x in (q, q, q, k, v))
    ct_lse, t_lse = (jnp.asarray(rng.standard_normal(np.shape(lse)), lse.dtype) for _ in range(2))
    tbias = jnp.asarray(rng.standard_normal((1, 4, 1, 7)), dtype)
    operands = (q, k, v, mask, bias, out, lse, lse_lo, ct_out, ct_lse, tq, tk, tv, tbias, t_out,
                t_lse)
    return operands, params


@pytest.mark.parametrize("blocks", [None, BlockSizes(block_q=2, block_k=3)])
def test_bf16_backward_and_its_jvp_take_sum_p_v_in_float32_as_the_dense_maps(blocks):
    """In bfloat16, attention_vjp_p and attention_vjp_jvp_p against
    ``_backward_map`` and ``_backward_jvp_map`` (its JVP): all take the
    output as ``sum_j p v`` (and its tangent) in float32, not the rounded
    ``out`` (whose rounding, times the keys' offset, would be the whole of
    dq), so t_out goes unused: summed in the block itself when the keys are
    one block (None: the defaults), in a first pass over key blocks of 3.
    Under vmap (two examples; mask and bias shared, tbias not): the batching
    rules too. (float64, with blocks and padding: the checker's fd of
    attention, whose vjp->jvp is attention_vjp_jvp_p.)"""
    from gradrules.primitives.attention import attention_vjp_jvp_p, attention_vjp_p
    from gradrules.rules.attention import _backward_jvp_map, _backward_map
    rng = np.random.default_rng(15)
    (first, params), (second, _) = (_backward_jvp_operands(rng, jnp.bfloat16, 8.0)
                                    for _ in range(2))
    params = dict(params, implementation=Implementation("xla", blocks))
    shared = (3, 4)                                  # mask, bias
    operands = [x if i in shared else jnp.stack([x, second[i]]) for i, x in enumerate(first)]
    axes = [None if i in shared else 0 for i in range(len(first))]
    maths = dict(causal=True, scale=params["scale"])

    def batched(backward, backward_jvp):
        def both(*ops):
            return backward(*ops[:10]), backward_jvp(*ops)
        return jax.jit(jax.vmap(both, in_axes=axes))

    blockwise = batched(partial(attention_vjp_p.bind, **params),
                        partial(attention_vjp_jvp_p.bind, **params))
    got = blockwise(*operands)
    want = batched(partial(_backward_map, **maths), partial(_backward_jvp_map, **maths))(*operands)
    _, again = blockwise(*operands[:-2], 2 * operands[-2], operands[-1])
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        np.testing.assert_allclose(g, w, atol=2e-2 * np.abs(w).max())
    for g, a in zip(got[1], again):
        np.testing.assert_array_equal(np.asarray(g, np.float64), np.asarray(a, np.float64))


def test_hvp_runs_the_blockwise_backward_jvp_without_the_scores():
    """A Hessian-vector product binds attention_vjp_jvp (with kernel='xla'
    when the call asks for a Pallas kernel, which it has not), whose
    compiled lowering holds far less than one [S, S] array (XLA's memory
    analysis)."""
    from gradrules.primitives.attention import attention_vjp_jvp_p
    s = 2048
    x = jax.ShapeDtypeStruct((1, s, 1, 16), jnp.float32)

    def hvp(q, k, v, tq):
        def grad(q):
            return jax.grad(lambda q: jnp.sum(attention(q, k, v, causal=True) ** 2))(q)
        return jax.jvp(grad, (q,), (tq,))[1]

    with gradrules.config.using(kernel="interpret"):
        jaxpr = jax.make_jaxpr(hvp)(x, x, x, x)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is attention_vjp_jvp_p]
    assert eqn.params["implementation"].kernel == "xla"
    assert "einsum" not in str(jaxpr), jaxpr
    compiled = jax.jit(partial(attention_vjp_jvp_p.bind, **eqn.params)).lower(
        *(v.aval for v in eqn.invars)).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    assert temp < s * s * 4 / 8, temp
