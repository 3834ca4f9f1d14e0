"""Matrix structure: tril, triu, diagonal, diag and trace against numpy at
every offset (past the edges too), their transposes (masks, diagonal <-> a
select on the diagonal, a diagonal broadcast: no dense identity, no gather
or scatter primitive), batching, and bad input naming the op and the argument."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives import matrix as mx

from _helpers import check_symbolic_export, count_bound, mode_costs, vjp_of

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
OFFSETS = (-4, -3, -1, 0, 1, 3, 5)


def _primitives(fn, *args):
    return {e.primitive.name for e in jax.make_jaxpr(fn)(*args).jaxpr.eqns}


@pytest.mark.parametrize("k", OFFSETS)
def test_values_match_numpy_at_every_offset(k) -> None:
    np.testing.assert_array_equal(mx.tril(A, k), np.tril(A, k))
    np.testing.assert_array_equal(mx.triu(A, k), np.triu(A, k))
    np.testing.assert_array_equal(mx.diagonal(A, k), np.diagonal(A, k))
    np.testing.assert_allclose(mx.trace(A, k), np.trace(A, k), rtol=1e-15)
    np.testing.assert_array_equal(mx.diag(A, k), np.diag(A, k))
    v = RNG.standard_normal(3)
    np.testing.assert_array_equal(mx.diag(v, k), np.diag(v, k))


def test_stacks_of_matrices_and_other_axis_pairs() -> None:
    x = RNG.standard_normal((2, 3, 4, 5))
    np.testing.assert_array_equal(mx.tril(x, -1), np.tril(x, -1))
    for args in ((1, 1, 3), (-2, 3, 0), (0, -1, -3), (2, 2, 1)):
        np.testing.assert_array_equal(mx.diagonal(x, *args), np.diagonal(x, *args))
        np.testing.assert_allclose(mx.trace(x, *args), np.trace(x, *args), rtol=1e-14)
    assert mx.diagonal(np.ones((0, 3)), 1).shape == (0,)
    assert mx.trace(np.ones((2, 0, 3))).shape == (3,)
    np.testing.assert_array_equal(mx.trace(np.ones((0, 2))), 0.0)


@pytest.mark.parametrize("k", (-2, 0, 1, 4))
def test_transposes_match_jax_numpy(k) -> None:
    x = RNG.standard_normal((3, 2, 4))
    for ours, ref in ((lambda a: mx.diagonal(a, k, 2, 0), lambda a: jnp.diagonal(a, k, 2, 0)),
                      (lambda a: mx.trace(a, k, 0, 2), lambda a: jnp.trace(a, k, 0, 2)),
                      (lambda a: mx.tril(a, k), lambda a: jnp.tril(a, k)),
                      (lambda a: mx.triu(a, k), lambda a: jnp.triu(a, k))):
        got, w = vjp_of(ours, x)
        want, _ = vjp_of(ref, x, w)
        np.testing.assert_array_equal(got, want)
    v = RNG.standard_normal(3)
    got, w = vjp_of(lambda a: mx.diag(a, k), v)
    np.testing.assert_array_equal(got, vjp_of(lambda a: jnp.diag(a, k), v, w)[0])


def test_transposes_are_structural_not_dense() -> None:
    """diagonal <-> diag (the diagonal's entries and a select), trace -> a
    broadcast and a diag, tril -> tril: no gather, no dot, no multiply by an
    identity."""
    x = RNG.standard_normal((4, 4))
    dense = {"gather", "dot_general", "matmul", "einsum", "mul", "multiply", "scatter_add"}
    for fn, arg, expect in ((lambda a: mx.diagonal(a, 1), x, "diag"), (mx.trace, x, "diag"),
                            (lambda a: mx.diag(a, -1), x[0], "diagonal"), (mx.tril, x, "tril"),
                            (mx.triu, x, "triu")):
        out = fn(arg)
        names = _primitives(jax.linear_transpose(fn, arg), out)
        assert expect in names and not names & dense, names


def test_vmap_binds_once_on_any_batch_axis() -> None:
    x = RNG.standard_normal((3, 2, 4))
    for name, fn, arg in (("diagonal", lambda a: mx.diagonal(a, 1), x), ("trace", mx.trace, x),
                          ("tril", mx.tril, x), ("diag", mx.diag, x[:, 0])):
        for axis in range(arg.ndim):
            vfn = jax.vmap(fn, in_axes=axis)
            assert count_bound(vfn, arg, name=name) == 1
            loop = np.stack([fn(np.take(arg, i, axis)) for i in range(arg.shape[axis])])
            np.testing.assert_array_equal(vfn(arg), loop)


BAD = [
    (mx.tril, (np.ones(3),), {}, ValueError, r"gradrules.tril: x must have rank >= 2"),
    (mx.triu, (np.ones((2, 2)),), {"k": 1.5}, TypeError, r"gradrules.triu: k must be an int"),
    (mx.diag, (np.ones((2, 2, 2)),), {}, ValueError, r"gradrules.diag: v must be 1-D .* or 2-D"),
    (mx.diagonal, (np.ones((2, 3)),), {"axis1": 1, "axis2": -1}, ValueError,
     r"gradrules.diagonal: axis1=1 and axis2=-1 name the same axis"),
    (mx.diagonal, (np.ones((2, 3)),), {"axis2": 2}, ValueError,
     r"gradrules.diagonal: axis2=2 is out of range"),
    (mx.trace, (np.ones(4),), {}, ValueError, r"gradrules.trace: x must have rank >= 2"),
    (mx.trace, (np.ones((2, 2), bool),), {}, TypeError, r"gradrules.trace: argument x must"),
]


@pytest.mark.parametrize("fn, args, kwargs, exc, match", BAD,
                         ids=[f"{b[0].__name__}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_raises_eagerly_and_under_jit(fn, args, kwargs, exc, match) -> None:
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)
    with pytest.raises(exc, match=match):
        jax.jit(lambda *a: fn(*a, **kwargs))(*args)


@pytest.mark.parametrize("offset, axis1, axis2", [(1, 2, 0), (0, 0, 1), (-2, 1, 2)])
def test_trace_grad_costs_no_more_than_jax_numpys(offset, axis1, axis2) -> None:
    """trace's transpose is ct broadcast over the matrices and kept on the
    diagonal (``diag`` of one entry repeated along it: no pad of ct to the
    diagonal's length, which costs XLA's CPU a bounds check per element under
    a transposed layout), with the diagonal's mask built once per matrix,
    not per matrix of the stack: jax.numpy's FLOPs, bytes and temp memory,
    no pad, and the same values."""
    x = jnp.asarray(RNG.standard_normal((20, 30, 40)), jnp.float32)
    fns = [lambda a, f=f: f(a, offset, axis1, axis2) for f in (mx.trace, jnp.trace)]
    (ours, got), (ref, want) = mode_costs("grad", fns, x)
    assert ours.temp_bytes <= ref.temp_bytes + 2**12
    assert ours.bytes_accessed <= 1.01 * ref.bytes_accessed
    assert ours.flops <= 1.01 * ref.flops
    assert " pad(" not in ours.compiled.as_text()
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("offset, axis1, axis2", [(1, 0, 1), (-2, 2, 0)])
def test_diagonal_gathers_at_iota_positions(offset, axis1, axis2) -> None:
    """diagonal's positions are an iota in the gather's fusion, taken as in
    range (no wrap of negative positions): no index table read from memory,
    no more FLOPs or bytes than jax.numpy's, the same values."""
    x = jnp.asarray(RNG.standard_normal((30, 20, 40)), jnp.float32)
    fns = [lambda a, f=f: f(a, offset, axis1, axis2) for f in (mx.diagonal, jnp.diagonal)]
    (ours, got), (ref, want) = mode_costs("forward", fns, x)
    assert ours.flops <= ref.flops
    assert ours.bytes_accessed <= ref.bytes_accessed
    assert " constant({" not in ours.compiled.as_text()
    np.testing.assert_array_equal(got, want)


def test_diag_of_one_repeated_entry_and_trace_are_each_others_transposes() -> None:
    """The transpose of trace is diag of ct as one entry repeated along the
    diagonal; that diag's transpose sums the diagonal (trace) again, so the
    transpose of the transpose is trace itself, at every offset (an empty
    diagonal included)."""
    x = RNG.standard_normal((3, 2, 4))
    for k in (-3, -1, 0, 2, 4):
        fn = lambda a: mx.trace(a, k, 2, 0)  # noqa: E731
        back = jax.linear_transpose(fn, x)
        ct = RNG.standard_normal(2)
        (m,) = back(ct)
        np.testing.assert_array_equal(m, jax.vjp(lambda a: jnp.trace(a, k, 2, 0), x)[1](ct)[0])
        (again,) = jax.linear_transpose(back, ct)((x,))
        np.testing.assert_allclose(again, np.trace(x, k, 2, 0), rtol=1e-14)
        assert "trace" in _primitives(jax.linear_transpose(back, ct), (x,))


# ------------------------------------------------- symbolic sizes (export)
SYMBOLIC_CASES = {
    # (function of x, x's symbolic shape): called at n = 2 and n = 5
    **{f"diagonal_{k}": (lambda x, k=k: mx.diagonal(x, k), "n, n") for k in (-1, 0, 1)},
    "diagonal_past_the_edge": (lambda x: mx.diagonal(x, 3), "n, n"),
    "diagonal_of_a_stack": (lambda x: mx.diagonal(x, 1, 2, 0), "n, 3, n + 1"),
    **{f"trace_{k}": (lambda x, k=k: mx.trace(x, k), "n, n") for k in (-2, 0, 1)},
    "trace_of_a_stack": (lambda x: mx.trace(x, -1, 1, 2), "3, n, 2 * n"),
    **{f"diag_{k}": (lambda v, k=k: mx.diag(v, k), "n") for k in (-2, 0, 1)},
    "diag_of_a_matrix": (lambda x: mx.diag(x, -1), "n, n"),
}


@pytest.mark.parametrize("name", SYMBOLIC_CASES)
def test_export_of_values_and_grads_with_a_symbolic_matrix_size(name) -> None:
    """diagonal, trace and diag take a symbolic matrix size (the diagonal's
    length ``max(0, min(rows + min(k, 0), cols - max(k, 0)))`` symbolic
    too): the value and gradient of ``sum(out ** 2)`` exported once equal
    the direct computation at two sizes."""
    fn, shape = SYMBOLIC_CASES[name]
    check_symbolic_export(fn, shape, (2, 5), RNG, "n")
