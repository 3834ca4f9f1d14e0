"""silu_gated, silu_rowsplit and gelu_gated: the swigluLimit clamp and its
kinks, the halves of silu_rowsplit, gelu's two forms, float32 accumulation,
and bad input (the fused primitives each transform binds, and kernels:
tests/test_fused.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradrules
from gradrules import _jax
from gradrules.primitives.arithmetic import multiply
from gradrules.primitives.gated import gelu_gated, silu_gated, silu_rowsplit
from gradrules.primitives.reduction import sum as gr_sum

rng = np.random.default_rng(0)
G, U = rng.normal(size=(3, 4)) * 2, rng.normal(size=(3, 4)) * 2


def test_silu_gated_is_swiglu() -> None:
    np.testing.assert_allclose(silu_gated(G, U), jax.nn.silu(G) * U, rtol=1e-12)
    dg, du = jax.grad(lambda g, u: gr_sum(silu_gated(g, u)), (0, 1))(G, U)
    s = jax.nn.sigmoid(G)
    np.testing.assert_allclose(dg, U * s * (1 + G * (1 - s)), rtol=1e-12)
    np.testing.assert_allclose(du, jax.nn.silu(G), rtol=1e-12)


def test_limit_clamps_gate_above_and_up_both_ways() -> None:
    gate = np.array([-3.0, 0.5, 1.0, 2.5])
    up = np.array([-2.0, -1.0, 0.3, 1.7])
    np.testing.assert_allclose(silu_gated(gate, up, limit=1.0),
                               jax.nn.silu(np.minimum(gate, 1.0)) * np.clip(up, -1.0, 1.0),
                               rtol=1e-12)


def test_limit_derivative_at_and_beyond_the_kinks() -> None:
    """The clamps pass derivatives inside their range, boundary included (as
    PyTorch's clamp), and none outside."""
    gate = np.array([1.0, 1.5, 0.2, 0.2])         # at, beyond, inside, inside
    up = np.array([0.5, 0.5, -1.0, 1.5])          # inside, inside, at -limit, beyond
    dg, du = jax.grad(lambda g, u: gr_sum(silu_gated(g, u, limit=1.0)), (0, 1))(gate, up)
    s = jax.nn.sigmoid(gate)
    dsilu = s * (1 + gate * (1 - s))
    np.testing.assert_allclose(dg, [dsilu[0] * 0.5, 0.0, dsilu[2] * -1.0, dsilu[3] * 1.0],
                               rtol=1e-12)
    np.testing.assert_allclose(du, [jax.nn.silu(1.0), jax.nn.silu(1.0), jax.nn.silu(0.2), 0.0],
                               rtol=1e-12)
    _, t = jax.jvp(lambda g, u: silu_gated(g, u, limit=1.0), (gate, up),
                   (np.ones(4), np.ones(4)))
    np.testing.assert_allclose(t, dg + du, rtol=1e-12)
    h = jax.jit(jax.hessian(lambda g: gr_sum(silu_gated(g, up, limit=1.0))))(gate)
    assert h[1, 1] == 0.0 and np.isfinite(h).all()


@pytest.mark.parametrize("activation, limit", [("silu", None), ("silu", 0.8), ("gelu", None),
                                               ("gelu_tanh", None)])
def test_silu_rowsplit_is_the_gated_op_of_its_halves(activation, limit) -> None:
    x = np.concatenate([G, U], -1)
    if activation == "silu":
        f = lambda g, u: silu_gated(g, u, limit=limit)  # noqa: E731
    else:
        f = lambda g, u: gelu_gated(g, u, approximate=activation == "gelu_tanh")  # noqa: E731
    w = rng.normal(size=G.shape)
    ours = lambda x: gr_sum(multiply(silu_rowsplit(x, activation=activation, limit=limit), w))  # noqa: E731
    theirs = lambda x: gr_sum(multiply(f(x[..., :4], x[..., 4:]), w))  # noqa: E731
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-12)
    np.testing.assert_allclose(jax.grad(ours)(x), jax.grad(theirs)(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jax.jit(jax.hessian(ours))(x), jax.jit(jax.hessian(theirs))(x),
                               rtol=1e-10, atol=1e-12)
    if activation == "silu":
        grad = jax.make_jaxpr(jax.grad(ours))(x)
        assert "silu_gated_vjp" in {p.name for p, _ in _jax.jaxpr_primitives(grad)}


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_gated_is_geglu(approximate) -> None:
    np.testing.assert_allclose(gelu_gated(G, U, approximate=approximate),
                               jax.nn.gelu(G, approximate=approximate) * U, rtol=1e-12)
    ref = lambda g, u: jnp.sum(jax.nn.gelu(g, approximate=approximate) * u)  # noqa: E731
    ours = lambda g, u: gr_sum(gelu_gated(g, u, approximate=approximate))  # noqa: E731
    for a, b in zip(jax.grad(ours, (0, 1))(G, U), jax.grad(ref, (0, 1))(G, U)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_bfloat16_accumulates_in_float32() -> None:
    g, u = jnp.asarray(G * 4, jnp.bfloat16), jnp.asarray(U, jnp.bfloat16)
    y = silu_gated(g, u, limit=3.0)
    assert y.dtype == jnp.bfloat16
    want = silu_gated(g.astype(jnp.float32), u.astype(jnp.float32), limit=3.0)
    np.testing.assert_array_equal(np.float32(y), np.float32(want.astype(jnp.bfloat16)))


def test_bad_input() -> None:
    with pytest.raises(ValueError, match=r"gradrules\.silu_gated: gate with shape \(3, 4\) and "
                                         r"up with shape \(4,\) must have one shape"):
        silu_gated(G, U[0])
    with pytest.raises(ValueError, match=r"gradrules\.silu_gated: limit must be > 0"):
        silu_gated(G, U, limit=0.0)
    with pytest.raises(TypeError, match=r"gradrules\.gelu_gated: argument gate must have a "
                                        "floating dtype"):
        gelu_gated(np.arange(3), np.arange(3))
    with pytest.raises(TypeError, match=r"gradrules\.gelu_gated: approximate must be a bool"):
        gelu_gated(G, U, approximate="tanh")
    with pytest.raises(ValueError, match=r"gradrules\.silu_rowsplit: the last axis of x holds "
                                         "gate and up halves and must have an even size"):
        silu_rowsplit(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"gradrules\.silu_rowsplit: activation must be one of"):
        silu_rowsplit(np.ones((2, 4)), activation="relu")
    with pytest.raises(ValueError, match=r"gradrules\.silu_rowsplit: limit \(swigluLimit\) "
                                         "applies to activation='silu' only"):
        silu_rowsplit(np.ones((2, 4)), activation="gelu", limit=1.0)



def _compiled(fn, *args):
    return jax.jit(fn).lower(*args).compile()


def _silu_case(op: str, kwargs: dict, halves: int) -> tuple:
    """(our function's and the reference's jvp, grad (of ``sum(w * out)``)
    and Hessian-vector product, and the float32 arguments) of a silu op."""
    r = np.random.default_rng(1)
    args = tuple(jnp.asarray(r.normal(size=(256, 1024 // halves)) * 3, jnp.float32)
                 for _ in range(halves))
    tangents = tuple(jnp.asarray(r.normal(size=a.shape), jnp.float32) for a in args)
    w = jnp.asarray(r.normal(size=(256, 512)), jnp.float32)
    entry = gradrules.get_op(op)

    def modes(fn):
        grad = jax.grad(lambda *a: jnp.sum(w * fn(*a, **kwargs)), tuple(range(halves)))
        return {"jvp": lambda *a: jax.jvp(lambda *b: fn(*b, **kwargs), a, tangents)[1],
                "grad": grad, "hvp": lambda *a: jax.jvp(grad, a, tangents)[1]}

    return modes(entry.fn), modes(entry.reference), args


SILU_CASES = [("silu_gated", {}, 2), ("silu_gated", {"limit": 1.5}, 2),
              ("silu_rowsplit", {"limit": 1.0}, 1)]


@pytest.mark.parametrize("op, kwargs, halves", SILU_CASES)
def test_silu_derivatives_compile_to_one_exp(op, kwargs, halves) -> None:
    """silu's ``s`` and ``s'`` come from one ``sigmoid_and_slope``: the
    compiled tangent map, gradient and Hessian-vector product hold one exp
    each (a separate sigmoid was a second)."""
    ours, _, args = _silu_case(op, kwargs, halves)
    for mode, fn in ours.items():
        hlo = _compiled(fn, *args).as_text()
        assert hlo.count(" exponential(") == 1, (mode, hlo)


@pytest.mark.parametrize("op, kwargs, halves", SILU_CASES[1:])
def test_silu_hvp_temp_is_no_more_than_the_references(op, kwargs, halves) -> None:
    """With the clamp, the compiled Hessian-vector product's temp memory is
    no more than the jax.numpy reference's (a separate sigmoid's value was
    one more [n] buffer written out)."""
    ours, ref, args = _silu_case(op, kwargs, halves)
    temp = [_compiled(f["hvp"], *args).memory_analysis().temp_size_in_bytes for f in (ours, ref)]
    assert temp[0] <= temp[1], temp

# -------------------------------------------------------------------- glu
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_glu_is_jax_nn_glu(axis) -> None:
    from gradrules.primitives.gated import glu
    x = np.random.default_rng(5).normal(size=(4, 2, 6))
    np.testing.assert_allclose(glu(x, axis), jax.nn.glu(x, axis), rtol=1e-14)
    np.testing.assert_allclose(jax.jacrev(lambda v: glu(v, axis=axis))(x),
                               jax.jacfwd(lambda v: jax.nn.glu(v, axis))(x), atol=1e-14)
    h = jax.jit(jax.hessian(lambda v: gr_sum(glu(v, axis=axis))))(x[:2, :, :2])
    np.testing.assert_allclose(h, jax.jit(jax.hessian(lambda v: jnp.sum(jax.nn.glu(v, axis))))(
        x[:2, :, :2]), atol=1e-14)


def test_glu_batches_along_its_axis() -> None:
    from gradrules.primitives.gated import glu
    x = np.random.default_rng(6).normal(size=(3, 4, 5))
    out = jax.vmap(lambda v: glu(v, axis=1), in_axes=2, out_axes=2)(x)
    np.testing.assert_allclose(out, jax.nn.glu(x, 1), rtol=1e-14)
    out = jax.vmap(lambda v: glu(v, axis=-1), in_axes=0)(x[:, :, :4])
    np.testing.assert_allclose(out, jax.nn.glu(x[:, :, :4], -1), rtol=1e-14)


@pytest.mark.parametrize("shape, axis, exc, match", [
    ((3, 5), -1, ValueError, r"gradrules.glu: axis -1 of x .* even size, got x with shape \(3, 5\)"),
    ((3, 4), 2, ValueError, "gradrules.glu"),
    ((), -1, ValueError, "gradrules.glu: x must have at least one axis"),
])
def test_glu_errors(shape, axis, exc, match) -> None:
    from gradrules.primitives.gated import glu
    with pytest.raises(exc, match=match):
        glu(np.ones(shape), axis)
    with pytest.raises(exc, match=match):
        jax.jit(lambda v: glu(v, axis))(np.ones(shape))
    with pytest.raises(TypeError, match="gradrules.glu"):
        glu(np.ones((2, 4), np.int32))
