"""Semantics of the spectral family beyond the rule checker: eigh and svd
against numpy (up to the signs of the vectors) and their reconstructions,
closed-form first derivatives, the stability of LAPACK's signs that the
finite-difference checks rely on, finite eigenvalue tangents on a degenerate
spectrum, the norms against numpy, their subgradient 0 at x == 0 in every
mode and order, and the errors for bad input."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules as gr
from gradrules.testing.samples.spectral import symmetric, with_singular_values

RNG = np.random.default_rng(15)
A33 = symmetric(RNG, (), 3, (-1.5, 0.5, 2.0))
B233 = symmetric(RNG, (2,), 3, (-2.0, -0.5, 1.0))


def _same_up_to_sign(got, want):
    """Columns of got equal those of want times +-1 (each column its own sign)."""
    signs = np.sign(np.sum(got * want, axis=-2, keepdims=True))
    assert np.all(signs != 0)
    np.testing.assert_allclose(got, want * signs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("a", [A33, B233, RNG.standard_normal((2, 2))],
                         ids=["3x3", "batch 2x3x3", "not symmetric"])
def test_eigh_values_vectors_and_reconstruction(a):
    w, v = gr.eigh(a)
    sym = (a + np.swapaxes(a, -1, -2)) / 2
    w_np, v_np = np.linalg.eigh(sym)
    np.testing.assert_allclose(w, w_np, rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(np.asarray(w), axis=-1) > 0)          # ascending
    _same_up_to_sign(np.asarray(v), v_np)
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), sym, atol=1e-12)
    eye = np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, eye, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (3, 2), (2, 3), (2, 2, 3)])
def test_svd_values_vectors_and_reconstruction(shape):
    a = RNG.standard_normal(shape)
    u, s, vh = gr.svd(a)
    u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=False)
    assert (u.shape, s.shape, vh.shape) == (u_np.shape, s_np.shape, vh_np.shape)
    np.testing.assert_allclose(s, s_np, rtol=1e-12, atol=1e-12)
    _same_up_to_sign(np.asarray(u), u_np)
    _same_up_to_sign(np.swapaxes(np.asarray(vh), -1, -2), np.swapaxes(vh_np, -1, -2))
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=1e-12)


@pytest.mark.parametrize("shape", [(8, 40, 24), (8, 24, 40)], ids=["tall", "wide"])
def test_svd_gradient_needs_no_more_temp_memory_than_jax(shape):
    """The parts of du (tall) and dV (wide) outside the span of u / V are
    scaled and negated on k x k or u-sized factors, so that the gradient
    keeps no scaled and negated [m, k] copies side by side: its compiled
    temp memory is at most jnp.linalg.svd's."""
    a = RNG.standard_normal(shape).astype(np.float32)
    w = [np.cos(np.arange(np.prod(o.shape))).reshape(o.shape).astype(np.float32)
         for o in jax.eval_shape(gr.svd, a)]

    def temp(svd):
        grad = jax.grad(lambda a: sum(jnp.sum(wi * o) for wi, o in zip(w, svd(a))))
        return jax.jit(grad).lower(a).compile().memory_analysis().temp_size_in_bytes
    assert temp(gr.svd) <= temp(lambda a: jnp.linalg.svd(a, full_matrices=False))


def test_closed_form_first_derivatives():
    """d w_i / dA = v_i v_i^T and d s_i / dA = u_i v_i^T: the gradient of
    sum(c * w) is V diag(c) V^T, that of sum(c * s) is U diag(c) Vh."""
    c = np.array([0.3, -1.0, 2.0])
    g = jax.grad(lambda a: jnp.sum(gr.eigh(a)[0] * c))(A33)
    _, v = np.linalg.eigh(A33)
    np.testing.assert_allclose(g, (v * c) @ v.T, atol=1e-12)
    a = with_singular_values(RNG, (), 3, 2, (2.0, 0.7))
    g = jax.grad(lambda a: jnp.sum(gr.svd(a)[1] * c[:2]))(a)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(g, (u * c[:2]) @ vh, atol=1e-12)
    # forward mode of the vectors against jax.numpy's own rules
    t = RNG.standard_normal((3, 3))
    ours = jax.jvp(lambda a: gr.eigh(a)[1], (A33,), (t,))[1]
    ref = jax.jvp(lambda a: jnp.linalg.eigh(a)[1], (A33,), (t,))[1]
    np.testing.assert_allclose(ours, ref, atol=1e-10)


@pytest.mark.parametrize("op", ["eigh", "svd"])
def test_vector_signs_hold_under_small_perturbations(op):
    """The finite-difference checks assume LAPACK's sign of each vector does
    not flip between a +- 1e-5 step on a matrix with a distinct spectrum."""
    a = B233 if op == "eigh" else with_singular_values(RNG, (2,), 2, 3, (1.8, 0.6))
    fn = getattr(gr, op)
    base = [np.asarray(x) for x in fn(a)]
    for _ in range(5):
        step = 1e-5 * RNG.standard_normal(a.shape)
        for x0, x1 in zip(base, fn(a + step)):
            np.testing.assert_allclose(x1, x0, atol=1e-3)


def test_degenerate_spectrum_keeps_eigenvalue_tangents_finite():
    """On a repeated eigenvalue the eigenvector tangent is not defined (the
    1 / (w_j - w_i) factors); the eigenvalue tangent and gradient are."""
    a = np.diag([1.0, 1.0, 2.0])
    t = RNG.standard_normal((3, 3))
    dw = jax.jvp(lambda a: gr.eigh(a)[0], (a,), (t,))[1]
    assert np.all(np.isfinite(dw))
    np.testing.assert_allclose(np.sum(dw), np.trace(t), atol=1e-12)
    g = jax.grad(lambda a: jnp.sum(gr.eigh(a)[0]))(a)
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    dv = jax.jvp(lambda a: gr.eigh(a)[1], (a,), (t,))[1]
    assert not np.all(np.isfinite(dv))


X = np.array([[1.5, -0.3, 2.0], [-0.7, 0.2, -1.1]])


@pytest.mark.parametrize("kwargs", [
    {}, {"ord": 2, "axis": 1}, {"ord": None, "axis": 0}, {"ord": 1, "axis": -1},
    {"ord": np.inf, "axis": 1}, {"ord": -np.inf, "axis": 0, "keepdims": True},
    {"ord": "fro", "axis": (0, 1)}, {"ord": None, "axis": (1, 0), "keepdims": True},
    {"ord": "fro"}, {"ord": 1.0, "axis": 1},
])
def test_norm_matches_numpy(kwargs):
    np.testing.assert_allclose(gr.norm(X, **kwargs), np.linalg.norm(X, **kwargs), rtol=1e-13)


def test_norm_of_a_vector_and_of_all_elements():
    x3 = RNG.standard_normal((2, 3, 2))
    np.testing.assert_allclose(gr.norm(x3), np.linalg.norm(x3.ravel()), rtol=1e-13)
    for ord in (None, 2, 1, np.inf, -np.inf):
        np.testing.assert_allclose(gr.norm(X[0], ord), np.linalg.norm(X[0], ord), rtol=1e-13)
    np.testing.assert_allclose(gr.matrix_norm(x3), np.linalg.norm(x3, axis=(-2, -1)),
                               rtol=1e-13)
    assert gr.matrix_norm(x3, keepdims=True).shape == (2, 1, 1)


def test_norm_params_show_in_the_jaxpr():
    eqn = jax.make_jaxpr(lambda x: gr.norm(x, np.inf, axis=-1))(X).jaxpr.eqns[0]
    assert eqn.primitive.name == "norm"
    assert (eqn.params["ord"], eqn.params["axes"], eqn.params["keepdims"]) == ("inf", (1,), False)


def test_norm_max_shares_the_gradient_among_ties_as_jnp():
    x = np.array([1.0, -1.0, 0.5])
    for ord in (np.inf, -np.inf, 1, 2):
        np.testing.assert_allclose(jax.grad(lambda x: gr.norm(x, ord))(x),
                                   jax.grad(lambda x: jnp.linalg.norm(x, ord))(x), atol=1e-15)


@pytest.mark.parametrize("fn", [
    lambda x: gr.norm(x), lambda x: gr.norm(x, 1), lambda x: gr.norm(x, np.inf),
    lambda x: gr.norm(x, -np.inf), lambda x: gr.norm(x.reshape(2, 2), "fro"),
    lambda x: gr.matrix_norm(x.reshape(2, 2)),
], ids=["2", "1", "inf", "-inf", "fro", "matrix_norm"])
def test_norm_at_zero_has_subgradient_zero_in_every_mode(fn):
    x = np.zeros(4)
    t = RNG.standard_normal(4)
    assert float(fn(x)) == 0.0
    np.testing.assert_array_equal(jax.grad(fn)(x), np.zeros(4))
    np.testing.assert_array_equal(jax.jacfwd(fn)(x), np.zeros(4))
    assert float(jax.jvp(fn, (x,), (t,))[1]) == 0.0
    for higher in (jax.hessian(fn), jax.jacfwd(jax.hessian(fn)),
                   jax.jacrev(jax.jacfwd(jax.grad(fn)))):
        assert np.all(np.isfinite(jax.jit(higher)(x)))


@pytest.mark.parametrize("fn, arg, exc, match", [
    (gr.eigh, np.zeros((2, 3)), ValueError, r"gradrules.eigh: argument a must be square .*\(2, 3\)"),
    (gr.eigh, np.zeros(3), ValueError, r"gradrules.eigh: argument a must have rank >= 2.*\(3,\)"),
    (gr.eigh, np.zeros((2, 2), np.int32), TypeError, r"gradrules.eigh: argument a"),
    (gr.eigh, np.zeros((2, 2), np.float16), TypeError, r"gradrules.eigh: .*float32 or float64"),
    (gr.svd, np.zeros(3), ValueError, r"gradrules.svd: argument a must have rank >= 2"),
    (gr.svd, np.zeros((2, 2), jnp.bfloat16), TypeError, r"gradrules.svd: .*float32 or float64"),
    (gr.matrix_norm, np.zeros(3), ValueError, r"gradrules.matrix_norm: argument x must have "
                                              r"rank >= 2"),
    (gr.norm, np.zeros((2, 2), np.int32), TypeError, r"gradrules.norm"),
])
def test_bad_matrices_raise_at_trace_time(fn, arg, exc, match):
    with pytest.raises(exc, match=match):
        fn(arg)
    with pytest.raises(exc, match=match):
        jax.jit(fn)(arg)


@pytest.mark.parametrize("kwargs, match", [
    ({"ord": 3, "axis": 1}, r"ord=3 is not supported for a vector norm"),
    ({"ord": 0, "axis": 1}, r"ord=0 is not supported"),
    ({"ord": "fro", "axis": 1}, r"ord='fro' is not supported for a vector norm"),
    ({"ord": True, "axis": 1}, r"ord=True is not supported"),
    ({"ord": "max", "axis": (0, 1)}, r"ord='max' is not supported for a matrix norm"),
    ({"ord": 3, "axis": (0, 1)}, r"ord=3 is not supported for a matrix norm"),
    ({"axis": (0, 1, 1)}, r"axis must be None, an int or a pair"),
    ({"axis": (1, 1)}, r"repeated axis"),
    ({"axis": 2}, r"axis=2 is out of range"),
])
def test_bad_norm_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=rf"gradrules.norm: {match}"):
        gr.norm(X, **kwargs)


@pytest.mark.parametrize("ord", [1, -1, 2, -2, np.inf, -np.inf, "nuc"])
def test_matrix_ords_match_jax_numpy_with_gradients(ord):
    """The matrix norms over an axis pair in either order (rows, cols), with
    and without keepdims, and their gradients, as jnp.linalg.norm."""
    x = np.random.default_rng(3).normal(size=(3, 4, 2))
    for axis, keepdims in (((0, 1), False), ((2, 0), True)):
        def ours(x):
            return gr.norm(x, ord, axis, keepdims)

        def ref(x):
            return jnp.linalg.norm(x, ord, axis, keepdims)
        np.testing.assert_allclose(ours(x), ref(x), rtol=1e-12)
        assert ours(x).shape == ref(x).shape
        np.testing.assert_allclose(jax.jit(jax.grad(lambda x: jnp.sum(ours(x) ** 2)))(x),
                                   jax.jit(jax.grad(lambda x: jnp.sum(ref(x) ** 2)))(x),
                                   rtol=1e-10)


def test_norm_needs_an_axis_beyond_a_matrix_and_elements_for_max():
    with pytest.raises(ValueError, match=r"gradrules.norm: ord=1 with axis=None needs a vector"):
        jax.jit(lambda x: gr.norm(x, 1))(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"gradrules.norm: ord=inf over axes \(0,\).*no "
                                         r"elements"):
        gr.norm(np.zeros((0, 2)), np.inf, axis=0)


@pytest.mark.parametrize("mode", ["grad", "hvp"])
def test_norm_derivatives_do_no_more_work_than_jax_numpy(mode):
    """The 2-norm's JVP is ``sum(t * x) / norm`` with the per-slice
    reciprocal outside the sum (its guard at norm 0 on the slice, not on
    every entry): FLOPs and bytes at most jnp.linalg.norm's (a select per
    entry took 1.25x the FLOPs in the gradient, and the HVP wrote the
    broadcast reciprocal out: 1.33x the bytes)."""
    from _helpers import mode_costs
    x = jnp.asarray(RNG.standard_normal((48, 40, 64)), jnp.float32)
    kw = {"ord": "fro", "axis": (0, 2)}
    (ours, got), (ref, want) = mode_costs(
        mode, [lambda a: gr.norm(a, **kw), lambda a: jnp.linalg.norm(a, **kw)], x)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert ours.flops <= 1.01 * ref.flops, (ours, ref)
    assert ours.bytes_accessed <= 1.01 * ref.bytes_accessed, (ours, ref)
