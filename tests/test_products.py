"""Products: dot in every case of jnp.dot (vectors, N-d, scalars), outer of
flattened operands, kron of unequal ranks, cross along any axes with
broadcasting and for 2-vectors; their gradients against jax.numpy's, vmap
with both operands batched, and bad input naming the op and argument."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives import products as pr

from _helpers import count_bound, mode_costs, reduced_extents

RNG = np.random.default_rng(0)


def f(*shape):
    return RNG.standard_normal(shape)


DOT_CASES = [(f(3), f(3)), (f(2, 3), f(3)), (f(3), f(3, 2)), (f(2, 3), f(3, 4)),
             (f(2, 1, 3), f(4, 3, 2)), (f(3), f(2, 3, 2)), (f(), f(2, 2)), (f(2), f()),
             (f(0, 3), f(3, 2)), (f(2, 0), f(0, 3))]


@pytest.mark.parametrize("a, b", DOT_CASES, ids=[f"{a.shape}-{b.shape}" for a, b in DOT_CASES])
def test_dot_matches_numpy_and_its_gradients_jax_numpy(a, b) -> None:
    np.testing.assert_allclose(pr.dot(a, b), np.dot(a, b), rtol=1e-13, atol=1e-14)
    w = f(*np.shape(np.dot(a, b)))
    got = jax.grad(lambda a, b: jnp.sum(pr.dot(a, b) * w), argnums=(0, 1))(a, b)
    want = jax.grad(lambda a, b: jnp.sum(jnp.dot(a, b) * w), argnums=(0, 1))(a, b)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("a, b", [(f(4, 2, 3), f(4, 3, 2)), (f(4, 3), f(4, 3)),
                                  (f(4, 2, 3), f(4, 3)), (f(4, 2), f(4, 3, 2, 2))])
def test_dot_vmap_of_both_operands_is_one_bmm(a, b) -> None:
    vfn = jax.vmap(pr.dot)
    assert count_bound(vfn, a, b, name="bmm") == 1
    np.testing.assert_allclose(vfn(a, b), np.stack([np.dot(x, y) for x, y in zip(a, b)]),
                               rtol=1e-13)


def test_outer_flattens_and_kron_pads_the_lower_rank() -> None:
    a, b = f(2, 2), f(3)
    np.testing.assert_allclose(pr.outer(a, b), np.outer(a, b), rtol=1e-15)
    for x, y in ((f(2, 3), f(2, 1)), (f(3), f(2, 2)), (f(2, 1, 2), f(3)), (f(), f(2))):
        np.testing.assert_allclose(pr.kron(x, y), np.kron(x, y), rtol=1e-15)


def test_outer_and_kron_transposes_contract_with_the_other_operand() -> None:
    """outer's transposes are matrix-vector dots; kron's a multiply and a sum
    over the cotangent viewed as [ma, nb, ...]: no gather, no dense matrix."""
    a, b = f(2, 3), f(3, 2)
    for fn, allowed in ((pr.outer, {"reshape", "dot"}),
                        (pr.kron, {"reshape", "expand_dims", "multiply", "sum"})):
        out = fn(a, b)
        for lin, arg in (((lambda x, fn=fn: fn(x, b)), a), ((lambda y, fn=fn: fn(a, y)), b)):
            jaxpr = jax.make_jaxpr(jax.linear_transpose(lin, arg))(out)
            names = {e.primitive.name for e in jaxpr.jaxpr.eqns}
            assert names <= allowed and names & {"dot", "sum"}, names


@pytest.mark.parametrize("a, b", [(f(4, 3), f(4, 1)), (f(1, 3), f(4, 2)), (f(1, 1), f(2, 3))])
def test_kron_transposes_reduce_no_axis_of_one(a, b) -> None:
    """kron's transposes sum the cotangent over the other operand's axes,
    and the lowering reduces none of size 1 (sum's drops them with a
    reshape: JAX 0.11.2's XLA took 1.4x the time of jnp.kron's gradient with
    them reduced too); the cotangents match numpy's kron's."""
    out = pr.kron(a, b)
    w = f(*out.shape)
    for i, (lin, arg) in enumerate((((lambda x: pr.kron(x, b)), a), ((lambda y: pr.kron(a, y)), b))):
        other = b if i == 0 else a
        extents = reduced_extents(jax.linear_transpose(lin, arg), out)
        assert all(1 not in e for e in extents), extents
        assert len(extents) == (max(other.shape) > 1), extents   # one sum, none over 1 x 1
        (got,) = jax.linear_transpose(lin, arg)(w)
        want = np.einsum("ajbk,jk->ab" if i == 0 else "ajbk,ab->jk",
                         w.reshape(a.shape[0], b.shape[0], a.shape[1], b.shape[1]),
                         b if i == 0 else a)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("a, b, kw", [
    (f(2, 3), f(3), {}),
    (f(3, 2), f(2, 3), {"axisa": 0}),
    (f(3, 4), f(4, 3), {"axisa": 0, "axisb": 1, "axisc": 0}),
    (f(3, 2), f(3, 2), {"axis": 0}),
    (f(4, 2), f(2), {}),
    (f(2), f(2, 3), {}),
    (f(3, 1, 2), f(2, 3), {"axisa": 0}),
])
def test_cross_matches_jax_numpy_with_gradients(a, b, kw) -> None:
    """(2-vectors: jnp.cross after padding them to 3-vectors, as JAX 0.11
    deprecates them in jnp.cross.)"""
    want = pr.reference_cross(a, b, **kw)
    np.testing.assert_allclose(pr.cross(a, b, **kw), want, rtol=1e-14, atol=1e-15)
    w = f(*np.shape(want))
    got = jax.grad(lambda a, b: jnp.sum(pr.cross(a, b, **kw) * w), argnums=(0, 1))(a, b)
    ref = jax.grad(lambda a, b: jnp.sum(pr.reference_cross(a, b, **kw) * w),
                   argnums=(0, 1))(a, b)
    for g, h in zip(got, ref):
        np.testing.assert_allclose(g, h, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("mode", ["grad", "hvp"])
def test_cross_gradient_reads_and_writes_what_jax_numpys_does(mode) -> None:
    """Both halves of cross's gradient (and their JVP) as one computation:
    no more bytes or temp memory than jax.numpy's, where binding cross_p in
    the transposes wrote each stacked result transposed and copied it back
    (1.67x the bytes, a temp of the result's size)."""
    a, b = (jnp.asarray(f(4096, 3), jnp.float32) for _ in range(2))
    (ours, got), (ref, want) = mode_costs(mode, (pr.cross, pr.reference_cross), a, b,
                                          diff=(0, 1))
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-5)
    assert ours.bytes_accessed <= ref.bytes_accessed and ours.flops <= ref.flops
    assert ours.temp_bytes <= ref.temp_bytes


def test_cross_of_the_basis_is_right_handed() -> None:
    e = np.eye(3)
    np.testing.assert_array_equal(pr.cross(e[0], e[1]), e[2])
    np.testing.assert_array_equal(pr.cross(e[1], e[0]), -e[2])
    assert pr.cross(np.array([1.0, 0.0]), np.array([0.0, 1.0])).shape == ()
    np.testing.assert_array_equal(pr.cross(np.array([1.0, 2.0]), np.array([3.0, 4.0])), -2.0)
    np.testing.assert_array_equal(pr.cross(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])),
                                  [10.0, -5.0, -2.0])
    a, b = f(2, 3), f(3, 2)
    np.testing.assert_array_equal(pr.reference_cross(a, b, axisb=0), jnp.cross(a, b, axisb=0))


BAD = [
    (pr.dot, (f(2, 3), f(2, 3)), {}, ValueError,
     r"gradrules.dot: the last axis of a \(shape \(2, 3\)\) has 3 entries but b \(shape "
     r"\(2, 3\)\) has 2"),
    (pr.dot, (f(3), f(2)), {}, ValueError, r"gradrules.dot: .* has 2 along its only axis"),
    (pr.dot, (f(2), np.ones(2, bool)), {}, TypeError, r"gradrules.dot: argument b must"),
    (pr.cross, (f(4), f(4)), {}, ValueError,
     r"gradrules.cross: a with shape \(4,\) has 4 entries along axisa=-1"),
    (pr.cross, (f(3, 2), f(3)), {"axisb": 1}, ValueError,
     r"gradrules.cross: axisb=1 is out of range"),
    (pr.cross, (f(2, 3), f(4, 3)), {}, ValueError, r"gradrules.cross: operands do not broadcast"),
    (pr.cross, (np.float64(1.0), f(3)), {}, ValueError, r"gradrules.cross: a must have a vector"),
    (pr.kron, (f(2), "x"), {}, TypeError, r"gradrules.kron: argument b must be an array"),
]


@pytest.mark.parametrize("fn, args, kwargs, exc, match", BAD,
                         ids=[f"{b[0].__name__}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_raises_eagerly_and_under_jit(fn, args, kwargs, exc, match) -> None:
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)
    arrays = [a for a in args if not isinstance(a, str)]
    if len(arrays) == len(args):
        with pytest.raises(exc, match=match):
            jax.jit(lambda *a: fn(*a, **kwargs))(*args)
