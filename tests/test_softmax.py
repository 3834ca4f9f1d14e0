"""softmax and log_softmax: -inf rows in every mode, float32 accumulation of
bfloat16 input, bad input (the fused primitives each transform binds, and
kernels: tests/test_fused.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives.arithmetic import multiply
from gradrules.primitives.compare import where
from gradrules.primitives.reduction import sum as gr_sum
from gradrules.primitives.softmax import log_softmax, softmax

WHERE = np.array([[True, False, True, True], [True, True, False, False],
                  [False, False, False, False]])

X = jnp.array([[1.0, -jnp.inf, 0.5, 2.0],
               [-jnp.inf, -jnp.inf, -jnp.inf, -jnp.inf],
               [0.3, 0.1, -0.2, 0.0]])
W = jnp.array([[0.5, -1.0, 2.0, 1.5], [1.0, 2.0, 3.0, 4.0], [-0.3, 0.7, 0.2, -1.1]])


def test_softmax_of_an_all_inf_row_is_zero_with_zero_derivatives() -> None:
    y = softmax(X)
    np.testing.assert_array_equal(y[1], 0.0)
    np.testing.assert_allclose(y[0], jax.nn.softmax(X[0]), rtol=1e-6)
    assert y[0, 1] == 0.0
    f = lambda x: gr_sum(multiply(softmax(x), W))  # noqa: E731
    grad, hessian = jax.jit(jax.grad(f)), jax.jit(jax.hessian(f))
    for d in (grad(X), jax.jit(jax.jacfwd(f))(X), hessian(X)):
        assert np.isfinite(d).all()
    np.testing.assert_array_equal(grad(X)[1], 0.0)
    np.testing.assert_array_equal(hessian(X)[1], 0.0)


def test_log_softmax_of_inf_entries() -> None:
    """-inf entries stay -inf, finite rows sum to probability 1, and the
    tangents are finite: an all -inf row passes the tangent through."""
    y = log_softmax(X)
    assert np.isneginf(y[1]).all() and np.isneginf(y[0, 1])
    np.testing.assert_allclose(jnp.exp(y[0]).sum(), 1.0, rtol=1e-6)
    t = jnp.ones_like(X) * jnp.arange(4.0)
    _, ty = jax.jvp(log_softmax, (X,), (t,))
    assert np.isfinite(ty).all()
    np.testing.assert_allclose(ty[1], t[1])
    finite = jnp.isfinite(y)
    g = jax.jit(jax.grad(lambda x: gr_sum(multiply(where(finite, log_softmax(x), 0.0), W))))(X)
    assert np.isfinite(g).all()
    assert g[0, 1] == 0.0
    h = jax.jit(jax.hessian(lambda x: gr_sum(multiply(where(finite, log_softmax(x), 0.0), W))))(X)
    assert np.isfinite(h).all()


@pytest.mark.parametrize("fn, ref", [(softmax, jax.nn.softmax),
                                     (log_softmax, jax.nn.log_softmax)])
def test_any_axis_matches_jax_nn(fn, ref) -> None:
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 3, 4)))
    for axis in (0, 1, -1, -3):
        np.testing.assert_allclose(fn(x, axis=axis), ref(x, axis=axis), rtol=1e-12)


@pytest.mark.parametrize("fn, ref", [(softmax, jax.nn.softmax),
                                     (log_softmax, jax.nn.log_softmax)])
def test_a_size_0_axis_gives_an_empty_result_as_jax_nn(fn, ref) -> None:
    x = np.ones((2, 0))
    assert fn(x, axis=-1).shape == ref(x, axis=-1).shape == (2, 0)
    assert jax.grad(lambda v: jnp.sum(fn(v, axis=-1)))(x).shape == (2, 0)


@pytest.mark.parametrize("fn", [softmax, log_softmax])
def test_bfloat16_accumulates_in_float32(fn) -> None:
    x = jnp.asarray(np.random.default_rng(1).normal(size=(3, 4096)) * 4, jnp.bfloat16)
    y = fn(x)
    assert y.dtype == jnp.bfloat16
    want = fn(x.astype(jnp.float32)).astype(jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(y, np.float32), np.asarray(want, np.float32))
    g = jax.grad(lambda v: gr_sum(fn(v).astype(jnp.float32)))(x)
    assert g.dtype == jnp.bfloat16 and np.isfinite(np.asarray(g, np.float32)).all()


@pytest.mark.parametrize("fn", [softmax, log_softmax])
def test_bad_input(fn) -> None:
    name = fn.__name__
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x must have a floating "
                                        "dtype, got int"):
        fn(jnp.arange(3))
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: axis=2 is out of range for an "
                                         "array of rank 2"):
        fn(jnp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: axis must be an int"):
        fn(jnp.ones((2, 3)), axis=1.0)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: repeated axis"):
        fn(jnp.ones((2, 3)), axis=(1, -1))
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: where must be a bool array"):
        fn(jnp.ones((2, 3)), where=jnp.ones((2, 3)))
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: where with shape \(3,\) does "
                                         r"not broadcast to the shape \(2, 4\) of x"):
        fn(jnp.ones((2, 4)), -1, jnp.ones(3, bool))
    with pytest.raises(TypeError, match="complex input is not supported"):
        fn(jnp.ones(3, jnp.complex64))


@pytest.mark.parametrize("value", [3e38, -3e38, 1e4])
def test_rows_of_huge_values_are_normalised_by_their_maximum(value) -> None:
    """A float32 row of equal huge values: softmax 1/n and log_softmax -log n
    (normalising by a rounded log-sum-exp gave 1 and 0), with finite
    gradients."""
    x = jnp.full((2, 5), value, jnp.float32)
    np.testing.assert_allclose(softmax(x), np.full((2, 5), 0.2), rtol=1e-6)
    np.testing.assert_allclose(log_softmax(x), np.full((2, 5), -np.log(5.0)), rtol=1e-6)
    for fn in (softmax, log_softmax):
        g = jax.grad(lambda v, f=fn: jnp.sum(f(v)[:, 0]))(x)
        assert bool(jnp.isfinite(g).all())
    g = jax.grad(lambda v: jnp.sum(softmax(v)[:, 0]))(x)
    np.testing.assert_allclose(g[0], [0.16, -0.04, -0.04, -0.04, -0.04], atol=1e-6)


@pytest.mark.parametrize("fn, ref", [(softmax, jax.nn.softmax),
                                     (log_softmax, jax.nn.log_softmax)])
def test_axis_positional_and_as_a_tuple_as_jax_nn(fn, ref) -> None:
    x = jnp.asarray(np.random.default_rng(2).normal(size=(2, 3, 4)))
    for axis in (1, (0, 2), (2, 0), (-1,), None, (0, 1, 2)):
        np.testing.assert_allclose(fn(x, axis), ref(x, axis), rtol=1e-12)
    g = jax.jit(jax.grad(lambda v: jnp.sum(jnp.sin(fn(v, (0, 2))))))(x)
    want = jax.jit(jax.grad(lambda v: jnp.sum(jnp.sin(ref(v, (0, 2))))))(x)
    np.testing.assert_allclose(g, want, rtol=1e-10)


@pytest.mark.parametrize("fn, ref, outside", [(softmax, jax.nn.softmax, 0.0),
                                              (log_softmax, jax.nn.log_softmax, -np.inf)])
def test_where_as_jax_nn_with_zero_derivatives_outside(fn, ref, outside) -> None:
    """Excluded entries give 0 (softmax) or -inf (log_softmax), as jax.nn;
    a row with nothing selected too; the derivatives at every order are
    finite and 0 there, and match jax.nn's elsewhere."""
    x = jnp.asarray(np.random.default_rng(3).normal(size=(3, 4)))
    y = fn(x, -1, WHERE)
    np.testing.assert_allclose(y, ref(x, -1, WHERE), rtol=1e-12)
    assert np.all(y[~WHERE] == outside)
    np.testing.assert_allclose(fn(x.T, 0, WHERE.T), y.T, rtol=1e-12)
    np.testing.assert_allclose(fn(x, (0, 1), WHERE), ref(x, (0, 1), WHERE), rtol=1e-12)

    def f(v, fun=fn):
        return gr_sum(multiply(where(WHERE, fun(v, -1, WHERE), 0.0), W))

    g = jax.jit(jax.grad(f))(x)
    np.testing.assert_allclose(g, jax.jit(jax.grad(lambda v: f(v, ref)))(x), rtol=1e-10,
                               atol=1e-15)
    assert np.all(g[~WHERE] == 0.0)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(f))(x), g, rtol=1e-12)
    h = jax.jit(jax.hessian(f))(x)
    assert np.isfinite(h).all() and np.all(h[~WHERE] == 0.0) and np.all(h[..., ~WHERE] == 0.0)
    _, t = jax.jvp(lambda v: fn(v, -1, WHERE), (x,), (jnp.ones_like(x),))
    assert np.all(t[~WHERE] == 0.0)


def test_where_broadcasts_and_vmaps() -> None:
    x = jnp.asarray(np.random.default_rng(4).normal(size=(2, 3, 4)))
    w = WHERE[:1]                                   # [1, 4]: the same entries in every row
    np.testing.assert_allclose(softmax(x, -1, w), jax.nn.softmax(x, -1, w), rtol=1e-12)
    got = jax.vmap(lambda v, m: log_softmax(v, -1, m), in_axes=(0, None))(x, WHERE)
    np.testing.assert_allclose(got, jax.nn.log_softmax(x, -1, WHERE), rtol=1e-12)


@pytest.mark.parametrize("op", [softmax, log_softmax])
def test_the_forward_is_one_pass_with_the_references_flops(op):
    """The guards for rows that are all -inf are maximums, not selects
    (``_fused.row_shift``, ``row_total``): XLA's CPU reduction fusion takes
    the whole row op in, so x is read once and the output written once, with
    no more FLOPs than the reference (a select would split it into passes
    that write x - max out and read it back). XLA fuses it so from 4096
    rows on."""
    from gradrules.bench import compiled_costs
    from gradrules.core.registry import get_op
    x = jnp.asarray(np.random.default_rng(0).standard_normal((4096, 128)), jnp.float32)
    ours = compiled_costs(op, x)
    ref = compiled_costs(get_op(op.__name__).reference, x)
    assert ours.bytes_accessed <= 2.1 * x.nbytes
    assert ours.flops <= 1.01 * ref.flops
    assert ours.temp_bytes <= ref.temp_bytes


def test_log_softmax_grad_computes_exp_once():
    """log_softmax's backward is lowered from x (``g + e (-sum(g) / s)``,
    ``e = exp(x - m)``), so XLA fuses it with the forward's row statistics
    and computes e once, with jax.nn's FLOPs; from the forward's logp,
    ``exp(logp)`` took ``(x - m) - log s`` per element again (1.17x)."""
    from _helpers import mode_costs
    from gradrules.core.registry import get_op
    x = jnp.asarray(np.random.default_rng(0).standard_normal((4096, 128)), jnp.float32)
    fns = (log_softmax, get_op("log_softmax").reference)
    (ours, got), (ref, want) = mode_costs("grad", fns, x)
    assert ours.flops <= 1.001 * ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=2e-5)


def test_log_softmax_hvp_takes_the_references_flops():
    """A Hessian-vector product binds the backward's tangent
    ``log_softmax_vjp_jvp``, lowered from x as ``e (tx - sum(e tx) / s)
    (-sum(g) / s)`` with the forward's ``e = exp(x - m)``: jax.nn's FLOPs
    (the JVP of ``g + exp(logp) (-sum(g))`` took ``(x - m) - log s`` per
    element again, 10 FLOPs per element where jax.nn's HVP takes 9)."""
    from _helpers import mode_costs
    from gradrules.core.registry import get_op
    x = jnp.asarray(np.random.default_rng(0).standard_normal((4096, 128)), jnp.float32)
    fns = (log_softmax, get_op("log_softmax").reference)
    (ours, got), (ref, want) = mode_costs("hvp", fns, x)
    assert ours.flops <= 1.001 * ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=2e-5)
