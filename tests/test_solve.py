"""Semantics of the solve family beyond the rule checker: values against
numpy, jnp.linalg.solve's vector and batching conventions, triangular_solve's
flags and its unread triangle, a third derivative against its closed form,
the vmap fold of a shared triangular matrix, 16-bit input, and the errors
for bad input."""

import itertools
import re

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules import _jax
from gradrules.core.registry import is_catalog_primitive
from gradrules.testing.samples.solve import dominant, spd

RNG = np.random.default_rng(15)
LAX_LINALG = {"cholesky", "triangular_solve", "lu", "qr", "householder_product", "geqrf",
              "lu_pivots_to_permutation", "custom_linear_solve"}


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _op(a, transpose):
    return np.swapaxes(a, -1, -2) if transpose else a


@pytest.mark.parametrize("left_side, lower, transpose_a, unit_diagonal",
                         list(itertools.product((True, False), repeat=4)))
def test_triangular_solve_every_flag(left_side, lower, transpose_a, unit_diagonal):
    a = dominant(RNG, (2, 3, 3))
    b = RNG.standard_normal((2, 3, 4) if left_side else (2, 4, 3))
    got = gradrules.triangular_solve(a, b, left_side=left_side, lower=lower,
                                     transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri = tri - np.eye(3) * np.diagonal(a, axis1=-2, axis2=-1)[..., None] + np.eye(3)
    op = _op(tri, transpose_a)
    want = np.linalg.solve(op, b) if left_side else np.swapaxes(
        np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_triangular_solve_ignores_the_other_triangle_and_broadcasts_batch_axes():
    a, b = dominant(RNG, (3, 3)), RNG.standard_normal((2, 3, 2))
    got = gradrules.triangular_solve(a, b)
    np.testing.assert_allclose(got, np.linalg.solve(np.tril(a), b), rtol=1e-12)
    g = jax.grad(lambda a: gradrules.triangular_solve(a, b).sum())(a)
    assert np.all(np.triu(g, 1) == 0) and np.any(np.tril(g) != 0)
    g = jax.grad(lambda a: gradrules.triangular_solve(a, b, unit_diagonal=True).sum())(a)
    assert np.all(np.triu(g) == 0)


def test_triangular_solve_vmap_over_b_shares_a():
    """vmap over b alone folds the batch into b's columns: one solve against
    the [m, m] matrix, no broadcast copies of a."""
    a, b = dominant(RNG, (3, 3)), RNG.standard_normal((5, 3, 2))
    f = jax.vmap(lambda b: gradrules.triangular_solve(a, b, left_side=True), in_axes=0)
    np.testing.assert_allclose(f(b), np.linalg.solve(np.tril(a), b), rtol=1e-12)
    eqns = [e for e in jax.make_jaxpr(f)(b).jaxpr.eqns if e.primitive.name == "triangular_solve"]
    assert len(eqns) == 1 and eqns[0].invars[0].aval.shape == (3, 3)
    assert eqns[0].invars[1].aval.shape == (3, 10)


def test_cholesky_vmap_and_its_derivatives_on_spd_batches():
    """The checker's vmap property permutes a sample's entries (NaN factors
    for cholesky beyond its first variant); here every variant is SPD."""
    s = spd(RNG, (2, 3, 3))
    for axis in (0, 2):
        got = jax.vmap(gradrules.cholesky, in_axes=axis)(np.moveaxis(s, 0, axis))
        np.testing.assert_allclose(got, np.linalg.cholesky(s), rtol=1e-12)
    for ours, ref in ((jax.jacfwd(gradrules.cholesky), jax.jacfwd(jnp.linalg.cholesky)),
                      (jax.grad(lambda x: (gradrules.cholesky(x) ** 2).sum()),
                       jax.grad(lambda x: (jnp.linalg.cholesky(x) ** 2).sum()))):
        np.testing.assert_allclose(jax.jit(jax.vmap(ours, in_axes=2))(np.moveaxis(s, 0, 2)),
                                   np.stack([jax.jit(ref)(x) for x in s]), rtol=1e-10,
                                   atol=1e-12)


def test_solve_conventions_match_jnp():
    a = dominant(RNG, (2, 3, 3))
    for b in (RNG.standard_normal(3), RNG.standard_normal((3, 2)),
              RNG.standard_normal((4, 1, 3, 2))):
        got = gradrules.solve(a, b)
        want = jnp.linalg.solve(a, b)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(gradrules.solve(a[0], b[0, 0]), np.linalg.solve(a[0], b[0, 0]),
                               rtol=1e-12)


def test_solve_transpose_a_and_one_factorisation_per_gradient():
    """solve's transpose_a solves with a^T from a's own LU factorisation, so
    that the gradient in a and b (and its JVP) factorises a once, like
    jnp.linalg.solve's: one getrf in the compiled HLO of each."""
    from gradrules.primitives.solve import solve_p
    a, b = dominant(RNG, (3, 5, 5)), RNG.standard_normal((5, 2))
    np.testing.assert_allclose(solve_p.bind(a, b, transpose_a=True),
                               np.linalg.solve(np.swapaxes(a, -1, -2), b), rtol=1e-12)

    def getrfs(solve):
        loss = lambda a, b: jnp.sum(jnp.cos(solve(a, b)))
        grad = jax.grad(loss, argnums=(0, 1))
        hvp = lambda a, b: jax.jvp(grad, (a, b), (a, b))[1]
        return [len(re.findall(r'custom_call_target="[^"]*getrf',
                               jax.jit(f).lower(a, b).compile().as_text()))
                for f in (grad, hvp)]
    assert getrfs(gradrules.solve) == getrfs(jnp.linalg.solve) == [1, 1]


def test_triangular_solve_gradient_keeps_no_negated_copy_of_b():
    """The sign of triangular_solve's JVP in a sits on da (a's shape, fused
    into the triangle mask), not on the product (b's shape): the gradient
    in a and b needs no more temp memory than jax's own."""
    a = dominant(RNG, (88, 88, 88)).astype(np.float32)     # the bench's size
    b, w = (RNG.standard_normal((88, 132, 88)).astype(np.float32) for _ in range(2))

    def temp(solve):
        grad = jax.grad(lambda a, b, w: jnp.sum(w * solve(a, b)), argnums=(0, 1))
        return jax.jit(grad).lower(a, b, w).compile().memory_analysis().temp_size_in_bytes
    ours = temp(lambda a, b: gradrules.triangular_solve(a, b, left_side=False, lower=True))
    ref = temp(lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=False, lower=True))
    assert ours <= ref


def test_values_against_numpy():
    s, a = spd(RNG, (2, 3, 3)), dominant(RNG, (2, 3, 3))
    a[1, 0, 0] = -9.0                                   # a negative determinant
    np.testing.assert_allclose(gradrules.cholesky(s), np.linalg.cholesky(s), rtol=1e-12)
    np.testing.assert_allclose(gradrules.inv(a), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(gradrules.det(a), np.linalg.det(a), rtol=1e-12)
    sign, logabs = gradrules.slogdet(a)
    want_sign, want_logabs = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, want_sign)
    assert sign[1] == -1.0
    np.testing.assert_allclose(logabs, want_logabs, rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 2), (3, 3), (2, 4), (2, 3, 2)])
def test_qr_is_the_reduced_factorisation(shape):
    a = RNG.standard_normal(shape)
    q, r = gradrules.qr(a)
    k = min(shape[-2:])
    assert q.shape == shape[:-1] + (k,) and r.shape == shape[:-2] + (k, shape[-1])
    wq, wr = np.linalg.qr(a, mode="reduced")
    np.testing.assert_allclose(np.abs(q), np.abs(wq), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_array_equal(np.tril(r, -1), 0)


def _lax_linalg_free(fn, *args):
    """Every linear-algebra primitive in the jaxpr of ``fn`` is gradrules'."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    foreign = {e.primitive.name for e in _jax.iter_eqns(jaxpr)
               if e.primitive.name in LAX_LINALG and not is_catalog_primitive(e.primitive)}
    assert not foreign, foreign


def test_third_derivative_of_logdet_has_its_closed_form():
    """f(t) = log det(A + t S): f''' = 2 tr((A^-1 S)^3), through slogdet, and
    through cholesky as 2 sum(log diag L); all in gradrules' primitives."""
    a, s = spd(RNG, (3, 3)), spd(RNG, (3, 3)) - 3 * np.eye(3)
    m = np.linalg.solve(a, s)
    want = 2 * np.trace(m @ m @ m)

    def via_slogdet(t):
        return gradrules.slogdet(a + t * s)[1]

    def via_cholesky(t):
        return 2 * jnp.sum(jnp.log(jnp.diagonal(gradrules.cholesky(a + t * s))))

    for f in (via_slogdet, via_cholesky):
        d3 = jax.jacfwd(jax.jacrev(jax.jacfwd(f)))
        np.testing.assert_allclose(jax.jit(d3)(0.0), want, rtol=1e-9)
        _lax_linalg_free(d3, 0.0)


def test_third_derivatives_of_solve_and_qr_match_jax():
    a, b = dominant(RNG, (3, 3)), RNG.standard_normal((3, 2))
    s = RNG.standard_normal((3, 3))

    def third(fn):
        f = lambda t: fn(a + t * s)  # noqa: E731
        return jax.jit(jax.jacfwd(jax.jacfwd(jax.jacrev(f))))(0.0)

    for ours, ref in ((lambda m: gradrules.solve(m, b), lambda m: jnp.linalg.solve(m, b)),
                      (lambda m: gradrules.qr(m[:, :2])[1], lambda m: jnp.linalg.qr(m[:, :2])[1]),
                      (lambda m: gradrules.qr(m[:2])[0], lambda m: jnp.linalg.qr(m[:2])[0])):
        np.testing.assert_allclose(third(ours), third(ref), rtol=1e-8, atol=1e-10)


def test_16_bit_input_is_factorised_in_float32():
    s = spd(RNG, (3, 3))
    for dtype in (jnp.float16, jnp.bfloat16):
        low = gradrules.cholesky(jnp.asarray(s, dtype))
        assert low.dtype == dtype
        np.testing.assert_allclose(np.asarray(low, np.float64), np.linalg.cholesky(s),
                                   rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("fn, args, err, words", [
    (gradrules.cholesky, (np.ones((2, 3)),), ValueError, ["cholesky", "square", "(2, 3)"]),
    (gradrules.inv, (np.ones(3),), ValueError, ["inv", "rank >= 2", "(3,)"]),
    (gradrules.det, (np.eye(3, dtype=np.int32),), TypeError, ["det", "floating", "int32"]),
    (gradrules.slogdet, (np.ones((1, 2, 3)),), ValueError, ["slogdet", "square"]),
    (gradrules.qr, (np.ones(4),), ValueError, ["qr", "rank >= 2"]),
    (gradrules.solve, (np.eye(3), np.ones(4)), ValueError, ["solve", "4 rows", "3 x 3"]),
    (gradrules.solve, (np.eye(3), np.ones((2, 4, 3))), ValueError, ["solve", "rows"]),
    (gradrules.solve, (np.ones(3), np.ones(3)), ValueError, ["solve", "argument a", "rank"]),
    (gradrules.solve, (np.ones((2, 3, 3)), np.ones((4, 3, 1))), ValueError,
     ["solve", "broadcast", "(2,)", "(4,)"]),
    (gradrules.triangular_solve, (np.eye(3), np.ones((2, 3))), ValueError,
     ["triangular_solve", "2 rows", "3 x 3"]),
    (gradrules.triangular_solve, (np.eye(3), np.ones(3)), ValueError,
     ["triangular_solve", "argument b", "rank >= 2"]),
    (gradrules.triangular_solve, (np.eye(3), np.ones((3, 2))), ValueError,
     ["triangular_solve", "2 columns", "left_side=False"]),
])
def test_bad_input_errors_name_the_op_and_shapes(fn, args, err, words):
    kwargs = {"left_side": False} if "left_side=False" in words else {}
    for call in (fn, jax.jit(fn, static_argnames=tuple(kwargs))):
        with pytest.raises(err) as info:
            call(*args, **kwargs)
        for w in words:
            assert w in str(info.value), (w, str(info.value))


def test_bad_flags():
    with pytest.raises(TypeError, match="triangular_solve.*lower"):
        gradrules.triangular_solve(np.eye(2), np.ones((2, 2)), lower="yes")
