"""Gathers: the semantics the sample table cannot pin down (the clip rule,
narrow index dtypes, padding and out-of-shard rows), batching that binds one
primitive, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradrules
from gradrules.bench import compiled_costs
from gradrules.primitives import gather as ga
from gradrules.primitives import scatter as sc
from gradrules.testing.check import check

from _helpers import (check_index_dtype_rejected, check_symbolic_export,
                      check_vmap_binds_once, grad_of)

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, (4, 3))


def _wrap_clip(index, n):
    index = np.asarray(index)
    return np.clip(np.where(index < 0, index + n, index), 0, n - 1)


# ------------------------------------------------------------- clip rule
def test_out_of_range_indices_wrap_once_then_clip() -> None:
    index = np.array([-1, -4, -9, 0, 3, 17])
    want = X[_wrap_clip(index, 4)]
    np.testing.assert_array_equal(ga.gather(X, index, axis=0), want)
    np.testing.assert_array_equal(ga.take(X, index, axis=0), want)
    np.testing.assert_array_equal(ga.index_select(X, index), want)
    np.testing.assert_array_equal(ga.embedding(index, X), want)
    np.testing.assert_array_equal(ga.take(X, index), X.ravel()[_wrap_clip(index, 12)])
    along = np.array([[5], [-1], [-8], [1]])
    np.testing.assert_array_equal(ga.take_along_axis(X, along, axis=1),
                                  np.take_along_axis(X, _wrap_clip(along, 3), axis=1))
    # scatters write where the gathers read
    src = np.ones((4, 1))
    want = X.copy()
    np.add.at(want, (np.arange(4)[:, None], _wrap_clip(along, 3)), 1.0)
    np.testing.assert_array_equal(sc.scatter_add(X, along, src, axis=1), want)


def test_gather_takes_nd_and_0d_indices() -> None:
    index = np.array([[2, 0], [1, 1]])
    np.testing.assert_array_equal(ga.gather(X, index, axis=1), X[:, index])
    np.testing.assert_array_equal(ga.gather(X, 2, axis=0), X[2])


# --------------------------------------------- narrow index dtypes (int8, uint8)
LONG = np.arange(300.0)
NARROW = [np.array([-1, 100, -128, 3], np.int8), np.array([255, 5, 200, 3], np.uint8)]


def _wide(index):
    return np.asarray(index).astype(np.int64)


@pytest.mark.parametrize("index", NARROW, ids=["int8", "uint8"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_narrow_indices_do_not_wrap_around(index, jit) -> None:
    """i + n and flat positions are computed in at least int32: int8 -1 on an
    axis of 300 is 299 (not 43), in values and in gradients."""
    maybe_jit = jax.jit if jit else (lambda f: f)
    rows = _wrap_clip(_wide(index), 300)
    np.testing.assert_array_equal(
        maybe_jit(lambda x, i: ga.gather(x, i, axis=0))(LONG, index), LONG[rows])
    np.testing.assert_array_equal(maybe_jit(lambda x, i: ga.take(x, i))(LONG, index), LONG[rows])
    np.testing.assert_array_equal(
        maybe_jit(lambda x, i: ga.take_along_axis(x, i, axis=0))(LONG, index), LONG[rows])
    g, w = grad_of(maybe_jit(lambda x: ga.gather(x, index, axis=0)), LONG)
    want = np.zeros(300)
    np.add.at(want, rows, w)
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(sc.scatter_add(np.zeros(300), index, w, axis=0), want)
    table = LONG.reshape(300, 1)
    np.testing.assert_array_equal(ga.embedding(index, table, padding_idx=299)[:, 0],
                                  np.where(rows == 299, 0.0, LONG[rows]))
    g, w = grad_of(lambda t: ga.embedding(index, t, padding_idx=299), table)
    want = np.zeros((300, 1))
    np.add.at(want, rows, w)
    want[299] = 0.0
    np.testing.assert_array_equal(g, want)


def test_narrow_ids_of_c_embedding_are_not_shifted_in_their_own_dtype() -> None:
    """uint8 ids 250 and 10 with start_index=200: 250 is row 50 of the shard,
    10 is outside it (10 - 200 must not wrap to 66)."""
    shard = np.arange(100.0).reshape(100, 1)
    ids = np.array([250, 10], np.uint8)
    np.testing.assert_array_equal(ga.c_embedding(shard, ids, start_index=200)[:, 0], [50.0, 0.0])
    g, _ = grad_of(lambda w: ga.c_embedding(w, ids, start_index=200), shard)
    want = np.zeros((100, 1))
    want[50] = 1.0
    np.testing.assert_array_equal(g, want)


def test_narrow_indices_are_widened_to_int32_at_the_public_boundary() -> None:
    jaxpr = jax.make_jaxpr(lambda x, i: ga.gather(x, i, axis=0))(LONG, NARROW[0])
    gather_eqn = next(e for e in jaxpr.eqns if e.primitive is ga.gather_p)
    assert gather_eqn.invars[1].aval.dtype == np.int32


# ----------------------------------------------------- embedding / c_embedding
def test_embedding_padding_row_is_zero_and_gets_no_gradient() -> None:
    table = RNG.uniform(-1, 1, (4, 3))
    ids = np.array([[1, 3], [3, 0], [-1, 1]])
    out = ga.embedding(ids, table, padding_idx=-1)
    np.testing.assert_array_equal(out[0, 1], 0.0)
    np.testing.assert_array_equal(out[2, 0], 0.0)
    np.testing.assert_array_equal(out[0, 0], table[1])
    g, w = grad_of(lambda t: ga.embedding(ids, t, padding_idx=3), table)
    np.testing.assert_array_equal(g[3], 0.0)
    np.testing.assert_array_equal(g[1], w[0, 0] + w[2, 1])    # repeated ids accumulate
    np.testing.assert_array_equal(g[0], w[1, 1])
    np.testing.assert_array_equal(g[2], 0.0)


def test_c_embedding_ids_outside_the_shard_give_zero_rows_and_no_gradient() -> None:
    shard = RNG.uniform(-1, 1, (3, 2))   # rows 4, 5, 6 of a vocabulary of 10
    ids = np.array([3, 4, 6, 7, -1, 5, 4])
    out = ga.c_embedding(shard, ids, start_index=4, vocab_size=10)
    inside = (ids >= 4) & (ids < 7)
    np.testing.assert_array_equal(out[~inside], 0.0)
    np.testing.assert_array_equal(out[inside], shard[ids[inside] - 4])
    g, w = grad_of(lambda s: ga.c_embedding(s, ids, start_index=4), shard)
    np.testing.assert_array_equal(g, [w[1] + w[6], w[5], w[2]])
    # the clipped local ids are gathered as they are: no second wrap or clip
    ref = ga._reference_c_embedding
    assert (compiled_costs(lambda s, i: ga.c_embedding(s, i, start_index=4), shard, ids).flops
            <= compiled_costs(lambda s, i: ref(s, i, start_index=4), shard, ids).flops)


def test_one_hot_rows_and_axis() -> None:
    x = np.array([[0, 2], [3, -1]])
    out = ga.one_hot(x, num_classes=3)
    np.testing.assert_array_equal(out, jax.nn.one_hot(x, 3))
    assert out.dtype == jnp.float64
    np.testing.assert_array_equal(out[1], np.zeros((2, 3)))   # ids 3 and -1: no class
    np.testing.assert_array_equal(ga.one_hot(x, num_classes=4, axis=0, dtype=jnp.int32),
                                  jax.nn.one_hot(x, 4, axis=0, dtype=jnp.int32))
    assert gradrules.get_op("one_hot").nondiff == ("x",)


# --------------------------------------------------------------- batching
@pytest.mark.parametrize("name,fn,args", [
    ("gather", lambda x, i: ga.gather(x, i, axis=1), (np.ones((2, 4, 3)), np.ones((2, 5), int))),
    ("take_along_axis", lambda x, i: ga.take_along_axis(x, i, axis=0),
     (np.ones((2, 4, 3)), np.ones((2, 2, 3), int))),
    ("embedding", lambda w, i: ga.embedding(i, w, padding_idx=0),
     (np.ones((2, 4, 3)), np.ones((2, 5), int))),
])
def test_vmap_of_batched_data_and_indices_binds_the_primitive_once(name, fn, args) -> None:
    check_vmap_binds_once(name, fn, args)


# -------------------------------------------------------------- bad input
BAD_INDEX = [
    ("gather", lambda i: ga.gather(X, i, axis=0), "index"),
    ("take", lambda i: ga.take(X, i), "indices"),
    ("index_select", lambda i: ga.index_select(X, i), "index"),
    ("take_along_axis", lambda i: ga.take_along_axis(X, i, axis=0), "index"),
    ("embedding", lambda i: ga.embedding(i, X), "ids"),
    ("c_embedding", lambda i: ga.c_embedding(X, i), "ids"),
    ("one_hot", lambda i: ga.one_hot(i, num_classes=3), "x"),
]


@pytest.mark.parametrize("op,fn,arg", BAD_INDEX)
@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_float_or_bool_index_arrays_are_rejected(op, fn, arg, dtype) -> None:
    check_index_dtype_rejected(op, fn, arg, dtype, X.shape)


@pytest.mark.parametrize("op,fn", [
    ("gather", lambda: ga.gather(X, np.array([0]), axis=2)),
    ("take", lambda: ga.take(X, np.array([0]), axis=-3)),
    ("index_select", lambda: ga.index_select(X, np.array([0]), axis=2)),
    ("take_along_axis", lambda: ga.take_along_axis(X, np.zeros((4, 3), int), axis=2)),
    ("one_hot", lambda: ga.one_hot(np.zeros(3, int), num_classes=2, axis=2)),
])
def test_out_of_range_axes_are_rejected(op, fn) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: \w+=-?\d+ is out of range"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("take_along_axis", lambda: ga.take_along_axis(X, np.zeros((4, 2), int), axis=0),
     r"index with shape \(4, 2\) must match x with shape \(4, 3\)"),
    ("take_along_axis", lambda: ga.take_along_axis(X, np.zeros(4, int), axis=0),
     r"index with shape \(4,\) must have the rank of x"),
    ("index_select", lambda: ga.index_select(X, np.zeros((2, 2), int)),
     r"index must be 1-D, got shape \(2, 2\)"),
    ("embedding", lambda: ga.embedding(np.array([0]), np.ones(3)),
     r"weight must be a \[vocab, dim\] table, got shape \(3,\)"),
    ("gather", lambda: ga.gather(np.ones((0, 2)), np.array([0]), axis=0),
     r"cannot index axis 0 of x of size 0"),
])
def test_index_and_update_shapes_that_do_not_match(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("one_hot", lambda: ga.one_hot(np.zeros(2, int), num_classes=-1),
     r"num_classes must be (an int )?>= 0, got -1"),
    ("c_embedding", lambda: ga.c_embedding(X, np.zeros(2, int), start_index=-1),
     r"start_index must be (an int )?>= 0, got -1"),
    ("c_embedding", lambda: ga.c_embedding(X, np.zeros(2, int), start_index=8, vocab_size=10),
     r"a shard of 4 rows at start_index=8 does not fit a vocabulary of vocab_size=10"),
    ("embedding", lambda: ga.embedding(np.zeros(2, int), X, padding_idx=4),
     "padding_idx=4 is out of range"),
])
def test_bad_params(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


# ------------------------------------------------- symbolic sizes (export)
IDS = np.array([0, 1, -1, 1], np.int32)
SYMBOLIC_CASES = {
    # (function of x, x's symbolic shape): the gathered axis is symbolic, so
    # the index rule (i + n, clip to n - 1) and the padding row read n
    "take_counting_from_the_end": (lambda x: ga.take(x, IDS, axis=0), "n + 1, 3"),
    "embedding_with_a_padding_row": (lambda x: ga.embedding(IDS, x, padding_idx=1), "n + 1, 3"),
    "embedding_with_the_last_row_for_padding": (
        lambda x: ga.embedding(IDS, x, padding_idx=-1), "n + 1, 3"),
    "c_embedding_of_a_symbolic_shard": (
        lambda x: ga.c_embedding(x, IDS + 2, start_index=1), "n + 1, 3"),
}


@pytest.mark.parametrize("name", SYMBOLIC_CASES)
def test_export_of_values_and_grads_with_a_symbolic_gathered_axis(name) -> None:
    """The value and gradient of ``sum(out ** 2)`` exported once for a
    symbolic number of rows equal the direct computation at two sizes."""
    fn, shape = SYMBOLIC_CASES[name]
    check_symbolic_export(fn, shape, (1, 4), RNG, "n")


@pytest.mark.parametrize("op,fn,msg", [
    ("embedding", lambda x: ga.embedding(IDS, x, padding_idx=3),
     r"padding_idx=3 is out of range for a table of n rows for some values of the symbolic"),
    ("c_embedding", lambda x: ga.c_embedding(x, IDS, start_index=1, vocab_size=10),
     r"a shard of n rows at start_index=1 does not fit a vocabulary of vocab_size=10 for "
     r"some values of the symbolic"),
])
def test_params_that_fit_only_some_symbolic_tables_are_rejected(op, fn, msg) -> None:
    """A padding row or a shard checked against a symbolic number of rows
    must fit for every value of it: a ValueError naming the op and the
    param otherwise (not JAX's inconclusive comparison)."""
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("n, 3"), np.float32)
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        jax.eval_shape(fn, spec)


def test_checker_passes_on_the_c_embedding_of_a_batched_shard() -> None:
    """A whole vmapped lookup (batched shard and ids) through every check."""
    fn = jax.vmap(lambda w, i: ga.c_embedding(w, i, start_index=1))
    report = check(fn, RNG.uniform(-1, 1, (2, 3, 2)), np.array([[0, 1, 3], [4, 2, 2]]),
                   checks=["fd", "vmap", "closure"])
    report.raise_if_failed()


@pytest.mark.parametrize("name", ["gather", "embedding"])
def test_lookup_gradients_scatter_whole_rows(name) -> None:
    """The transpose of a row lookup adds whole rows of the cotangent into
    the table (one index per row, as jnp.take's transpose), so the gradient
    costs no more than the reference's: no index broadcast to the
    cotangent's shape, no per-element scatter."""
    table = jnp.asarray(RNG.standard_normal((512, 64)), jnp.float32)
    ids = jnp.asarray(RNG.integers(0, 512, (4, 128)), jnp.int32)
    w = jnp.asarray(RNG.standard_normal((4, 128, 64)), jnp.float32)
    ours = {"gather": lambda t: ga.gather(t, ids, axis=0),
            "embedding": lambda t: ga.embedding(ids, t)}[name]
    costs = [compiled_costs(jax.grad(lambda t, v, f=f: jnp.sum(v * f(t))), table, w)
             for f in (ours, lambda t: jnp.take(t, ids, axis=0))]
    assert costs[0].temp_bytes <= costs[1].temp_bytes + 2**16
    assert costs[0].flops <= 1.1 * costs[1].flops + 4 * ids.size    # + index arithmetic
    assert costs[0].bytes_accessed <= 1.1 * costs[1].bytes_accessed


@pytest.mark.parametrize("batched", [False, True])
def test_gradient_along_a_later_axis_scatters_slices_in_place(batched) -> None:
    """The transpose of index_select along axis 1 (and of a vmapped take,
    whose batch axis comes before the index) adds whole columns of the
    cotangent into the zeros where they belong (``take_transpose``: one
    scatter-add, as jnp.take's transpose): no copy of the cotangent moved
    to the front and of the result moved back (1.33x the reference's bytes)."""
    x = jnp.asarray(RNG.standard_normal((4, 256, 512)), jnp.float32)
    index = jnp.asarray(RNG.integers(0, 512, (4, 384) if batched else (384,)), jnp.int32)
    w = jnp.asarray(RNG.standard_normal((4, 256, 384)), jnp.float32)
    if batched:
        ours = jax.vmap(lambda t, i: ga.take(t, i, axis=1))
        ref = jax.vmap(lambda t, i: jnp.take(t, i, axis=1, mode="clip"))
    else:
        ours = lambda t, i: ga.index_select(t, i, axis=2)    # noqa: E731
        ref = lambda t, i: jnp.take(t, i, axis=2, mode="clip")     # noqa: E731
    grads = [jax.grad(lambda t, i, f=f: jnp.sum(w * f(t, i))) for f in (ours, ref)]
    costs = [compiled_costs(g, x, index) for g in grads]
    assert costs[0].bytes_accessed <= costs[1].bytes_accessed
    assert costs[0].temp_bytes <= costs[1].temp_bytes
    np.testing.assert_allclose(grads[0](x, index), grads[1](x, index), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float33", 3, "not a dtype"])
@pytest.mark.parametrize("jit", [False, True])
def test_a_dtype_that_is_not_one_names_the_op(dtype, jit) -> None:
    """one_hot, convert_element_type and the samplers raise a TypeError that
    names the op and the argument, eagerly and under jit (not numpy's bare
    'data type not understood')."""
    ids = jnp.arange(3)
    calls = [("one_hot", lambda i: ga.one_hot(i, num_classes=4, dtype=dtype)),
             ("convert_element_type",
              lambda i: gradrules.convert_element_type(i, dtype=dtype)),
             ("uniform", lambda i: gradrules.uniform(jax.random.key(0), (2,), dtype=dtype))]
    for name, call in calls:
        with pytest.raises(TypeError, match=rf"{name}.*dtype {dtype!r} is not a dtype"):
            (jax.jit(call) if jit else call)(ids)


@pytest.mark.parametrize("fn, ref, index_shape", [
    (ga.take_along_axis, ga._reference_take_along_axis, (40, 60)),
    (ga.index_select, ga._reference_index_select, (60,)),
    (ga.take, ga._reference_take, (3, 4))])
def test_forward_normalises_each_index_once(fn, ref, index_shape) -> None:
    """Negative indices are wrapped once and clipped by the gather itself
    (take_along_axis wrapped twice: 2.3x the reference's FLOPs; take and
    index_select clipped twice: 1.33x): the forward does the reference's work."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 50)).astype(np.float32)
    index = rng.integers(-60, 60, index_shape).astype(np.int32)
    ours, want = (compiled_costs(lambda a, i, f=f: f(a, i, axis=1), x, index)
                  for f in (fn, ref))
    assert ours.flops <= want.flops
    np.testing.assert_array_equal(fn(x, index, axis=1), ref(x, index, axis=1))
