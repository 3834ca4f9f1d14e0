"""Indexing: the semantics the sample table cannot pin down (which duplicate
wins, ties, zeros of prod, padding and out-of-shard rows, the clip rule),
batching that binds one primitive, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradrules
from gradrules.primitives import indexing as ix
from gradrules.primitives import reduction as red
from gradrules.testing.check import check

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, (4, 3))


def _wrap_clip(index, n):
    index = np.asarray(index)
    return np.clip(np.where(index < 0, index + n, index), 0, n - 1)


def _grad(fn, *args, argnums=0):
    """Gradient of sum(w * fn(...)) for a fixed weight w."""
    out = fn(*args)
    w = np.arange(1.0, 1.0 + np.size(out)).reshape(np.shape(out))
    return jax.grad(lambda *a: red.sum(fn(*a) * w), argnums=argnums)(*args), w


# ------------------------------------------------------------- clip rule
def test_out_of_range_indices_wrap_once_then_clip() -> None:
    index = np.array([-1, -4, -9, 0, 3, 17])
    want = X[_wrap_clip(index, 4)]
    np.testing.assert_array_equal(ix.gather(X, index, axis=0), want)
    np.testing.assert_array_equal(ix.take(X, index, axis=0), want)
    np.testing.assert_array_equal(ix.index_select(X, index), want)
    np.testing.assert_array_equal(ix.embedding(index, X), want)
    np.testing.assert_array_equal(ix.take(X, index), X.ravel()[_wrap_clip(index, 12)])
    along = np.array([[5], [-1], [-8], [1]])
    np.testing.assert_array_equal(ix.take_along_axis(X, along, axis=1),
                                  np.take_along_axis(X, _wrap_clip(along, 3), axis=1))
    # scatters write where the gathers read
    src = np.ones((4, 1))
    want = X.copy()
    np.add.at(want, (np.arange(4)[:, None], _wrap_clip(along, 3)), 1.0)
    np.testing.assert_array_equal(ix.scatter_add(X, along, src, axis=1), want)


def test_gather_takes_nd_and_0d_indices() -> None:
    index = np.array([[2, 0], [1, 1]])
    np.testing.assert_array_equal(ix.gather(X, index, axis=1), X[:, index])
    np.testing.assert_array_equal(ix.gather(X, 2, axis=0), X[2])


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
        maybe_jit(lambda x, i: ix.gather(x, i, axis=0))(LONG, index), LONG[rows])
    np.testing.assert_array_equal(maybe_jit(lambda x, i: ix.take(x, i))(LONG, index), LONG[rows])
    np.testing.assert_array_equal(
        maybe_jit(lambda x, i: ix.take_along_axis(x, i, axis=0))(LONG, index), LONG[rows])
    g, w = _grad(maybe_jit(lambda x: ix.gather(x, index, axis=0)), LONG)
    want = np.zeros(300)
    np.add.at(want, rows, w)
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(ix.scatter_add(np.zeros(300), index, w, axis=0), want)
    table = LONG.reshape(300, 1)
    np.testing.assert_array_equal(ix.embedding(index, table, padding_idx=299)[:, 0],
                                  np.where(rows == 299, 0.0, LONG[rows]))
    g, w = _grad(lambda t: ix.embedding(index, t, padding_idx=299), table)
    want = np.zeros((300, 1))
    np.add.at(want, rows, w)
    want[299] = 0.0
    np.testing.assert_array_equal(g, want)


def test_narrow_ids_of_c_embedding_are_not_shifted_in_their_own_dtype() -> None:
    """uint8 ids 250 and 10 with start_index=200: 250 is row 50 of the shard,
    10 is outside it (10 - 200 must not wrap to 66)."""
    shard = np.arange(100.0).reshape(100, 1)
    ids = np.array([250, 10], np.uint8)
    np.testing.assert_array_equal(ix.c_embedding(shard, ids, start_index=200)[:, 0], [50.0, 0.0])
    g, _ = _grad(lambda w: ix.c_embedding(w, ids, start_index=200), shard)
    want = np.zeros((100, 1))
    want[50] = 1.0
    np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_narrow_indices_builds_wide_flat_positions(dtype, accumulate) -> None:
    """(19, 19) and (3, 5) in a 20 x 20 array are flat positions 399 and 65,
    which do not fit in int8 / uint8."""
    x = np.zeros((20, 20))
    indices = (np.array([19, 3], dtype), np.array([19, 5], dtype))
    weights = np.arange(400.0).reshape(20, 20)
    want = x.copy()
    want[19, 19], want[3, 5] = 1.0, 2.0
    np.testing.assert_array_equal(ix.index_put(x, indices, np.array([1.0, 2.0]),
                                               accumulate=accumulate), want)
    g = jax.grad(lambda v: red.sum(ix.index_put(x, indices, v, accumulate=accumulate)
                                   * weights))(np.ones(2))
    np.testing.assert_array_equal(g, [399.0, 65.0])


def test_narrow_indices_are_widened_to_int32_at_the_public_boundary() -> None:
    jaxpr = jax.make_jaxpr(lambda x, i: ix.gather(x, i, axis=0))(LONG, NARROW[0])
    gather_eqn = next(e for e in jaxpr.eqns if e.primitive is ix.gather_p)
    assert gather_eqn.invars[1].aval.dtype == np.int32


# ------------------------------------------------------------ duplicates
def test_scatter_add_accumulates_duplicates_and_its_transpose_gathers() -> None:
    x, index, src = np.zeros(3), np.array([1, 1, 1, 0]), np.array([1.0, 2.0, 4.0, 8.0])
    np.testing.assert_array_equal(ix.scatter_add(x, index, src, axis=0), [8.0, 7.0, 0.0])
    (gx, gsrc), w = _grad(lambda x, s: ix.scatter_add(x, index, s, axis=0), x, src,
                          argnums=(0, 1))
    np.testing.assert_array_equal(gx, w)
    np.testing.assert_array_equal(gsrc, w[index])


def test_scatter_last_duplicate_wins_and_alone_gets_the_gradient() -> None:
    x = np.array([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
    index = np.array([[2, 0], [0, 0], [2, 0]])
    src = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = ix.scatter(x, index, src, axis=0)
    np.testing.assert_array_equal(out, [[3.0, 6.0], [30.0, 40.0], [5.0, 60.0]])
    (gx, gsrc), w = _grad(lambda x, s: ix.scatter(x, index, s, axis=0), x, src, argnums=(0, 1))
    np.testing.assert_array_equal(gx, np.where([[1, 1], [0, 0], [1, 0]], 0.0, w))
    np.testing.assert_array_equal(gsrc, [[0.0, 0.0], [w[0, 0], 0.0], [w[2, 0], w[0, 1]]])
    # forward mode agrees with reverse mode
    jf = jax.jacfwd(lambda s: ix.scatter(x, index, s, axis=0))(src)
    jr = jax.jacrev(lambda s: ix.scatter(x, index, s, axis=0))(src)
    np.testing.assert_array_equal(jf, jr)
    # the rule does not depend on the backend: jit gives the same result
    np.testing.assert_array_equal(jax.jit(ix.scatter, static_argnames="axis")(
        x, index, src, axis=0), out)


def test_index_put_with_and_without_accumulate() -> None:
    x = np.zeros((3, 2))
    rows, vals = np.array([2, 0, 2]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(ix.index_put(x, (rows,), vals, accumulate=True),
                                  [[3, 4], [0, 0], [6, 8]])
    np.testing.assert_array_equal(ix.index_put(x, (rows,), vals), [[3, 4], [0, 0], [5, 6]])
    # overwriting: x loses the gradient of the rows written, only the last
    # duplicate of the values receives one
    (gx, gv), w = _grad(lambda x, v: ix.index_put(x, (rows,), v), x, vals, argnums=(0, 1))
    np.testing.assert_array_equal(gx, [[0, 0], w[1], [0, 0]])
    np.testing.assert_array_equal(gv, [[0, 0], w[0], w[2]])
    (gx, gv), w = _grad(lambda x, v: ix.index_put(x, (rows,), v, accumulate=True), x, vals,
                        argnums=(0, 1))
    np.testing.assert_array_equal(gx, w)
    np.testing.assert_array_equal(gv, w[rows])


def test_index_put_broadcasts_indices_and_values() -> None:
    x = np.zeros((3, 4))
    rows, cols = np.array([[0], [2]]), np.array([1, 3])
    out = ix.index_put(x, (rows, cols), 7.0)
    want = x.copy()
    want[rows, cols] = 7.0
    np.testing.assert_array_equal(out, want)
    g = jax.grad(lambda v: red.sum(ix.index_put(x, (rows, cols), v) * np.arange(12.0).reshape(
        3, 4)))(np.float64(1.0))
    assert g == 1 + 3 + 9 + 11


# -------------------------------------------------------- scatter_reduce
def test_scatter_reduce_values_and_mean_counts_x() -> None:
    x, index, src = np.array([1.0, 2.0, 3.0]), np.array([0, 0, 2]), np.array([4.0, 6.0, 5.0])
    want = {"sum": [11, 2, 8], "prod": [24, 2, 15], "amax": [6, 2, 5], "amin": [1, 2, 3],
            "mean": [11 / 3, 2, 4]}
    for reduce, w in want.items():
        np.testing.assert_allclose(ix.scatter_reduce(x, index, src, axis=0, reduce=reduce), w,
                                   rtol=1e-15)
    ints = ix.scatter_reduce(np.array([-7, 1]), np.array([0]), np.array([2]), axis=0,
                             reduce="mean")
    np.testing.assert_array_equal(ints, [-2, 1])    # -5 / 2 rounds toward zero


@pytest.mark.parametrize("reduce,sign", [("amax", 1.0), ("amin", -1.0)])
def test_scatter_reduce_ties_share_the_gradient_evenly(reduce, sign) -> None:
    x = sign * np.array([3.0, 1.0])
    index, src = np.array([0, 0, 1, 0]), sign * np.array([3.0, 2.0, 1.0, 3.0])
    fn = lambda x, s: ix.scatter_reduce(x, index, s, axis=0, reduce=reduce)  # noqa: E731
    gx, gs = jax.grad(lambda x, s: red.sum(fn(x, s)), argnums=(0, 1))(x, src)
    np.testing.assert_allclose(gx, [1 / 3, 0.5], rtol=1e-15)
    np.testing.assert_allclose(gs, [1 / 3, 0.0, 0.5, 1 / 3], rtol=1e-15)
    jx, js = jax.jacfwd(fn, argnums=(0, 1))(x, src)
    np.testing.assert_allclose(jx.sum(0), gx, rtol=1e-15)
    np.testing.assert_allclose(js.sum(0), gs, rtol=1e-15)


def test_scatter_reduce_prod_gradient_is_exact_with_zeros() -> None:
    x = np.array([2.0, 0.0, 5.0])
    index = np.array([0, 0, 1, 1, 2])
    src = np.array([0.0, 3.0, 4.0, 6.0, 0.0])
    fn = lambda x, s: ix.scatter_reduce(x, index, s, axis=0, reduce="prod")  # noqa: E731
    gx, gs = jax.grad(lambda x, s: red.sum(fn(x, s)), argnums=(0, 1))(x, src)
    # the product of the other factors of each group: {2, 0, 3}, {0, 4, 6}, {5, 0}
    np.testing.assert_array_equal(gx, [0.0, 24.0, 0.0])
    np.testing.assert_array_equal(gs, [6.0, 0.0, 0.0, 0.0, 5.0])
    jx, js = jax.jacfwd(fn, argnums=(0, 1))(x, src)
    np.testing.assert_array_equal(jx.sum(0), gx)
    np.testing.assert_array_equal(js.sum(0), gs)
    # second derivatives too: against the dense product of each group
    groups = [np.array([0, 3, 4]), np.array([1, 5, 6]), np.array([2, 7])]  # x then src

    def dense(v):
        return sum(jnp.prod(v[g]) for g in groups)

    def ours(v):
        return red.sum(fn(v[:3], v[3:]))

    v = np.concatenate([x, src])
    np.testing.assert_array_equal(jax.hessian(ours)(v), jax.hessian(dense)(v))


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_scatter_reduce_sum_and_mean_are_linear(reduce) -> None:
    index = np.array([[0, 2], [0, 0], [1, 2]])
    x, src = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    f = lambda x, s: ix.scatter_reduce(x, index, s, axis=0, reduce=reduce)  # noqa: E731
    ct = RNG.standard_normal((3, 2))
    tx, ts = jax.linear_transpose(f, x, src)(ct)
    np.testing.assert_allclose(np.vdot(f(x, src), ct), np.vdot(tx, x) + np.vdot(ts, src),
                               rtol=1e-12)


def test_scatter_reduce_prod_is_not_linear() -> None:
    index, x = np.array([0, 0]), np.ones(2)
    with pytest.raises(ValueError, match="reduce='prod' is not linear"):
        jax.linear_transpose(lambda s: ix.scatter_reduce(x, index, s, axis=0, reduce="prod"),
                             x)(x)


# ----------------------------------------------------- set_value / slice_scatter
def test_set_value_overwritten_elements_get_zero_gradient() -> None:
    x = np.arange(12.0).reshape(4, 3)
    kw = dict(starts=(-1, 0), ends=(0, 10), steps=(-2, 2), axes=(0, 1))
    value = np.array([[100.0, 200.0], [300.0, 400.0]])
    want = x.copy()
    want[-1:0:-2, 0:10:2] = value
    np.testing.assert_array_equal(ix.set_value(x, value, **kw), want)
    (gx, gv), w = _grad(lambda x, v: ix.set_value(x, v, **kw), x, value, argnums=(0, 1))
    mask = np.zeros((4, 3), bool)
    mask[-1:0:-2, 0:10:2] = True
    np.testing.assert_array_equal(gx, np.where(mask, 0.0, w))
    np.testing.assert_array_equal(gv, w[-1:0:-2, 0:10:2])
    # a scalar value is broadcast over the slice: its gradient sums it
    g = jax.grad(lambda v: red.sum(ix.set_value(x, v, **kw) * w))(np.float64(1.0))
    assert g == w[mask].sum()


def test_slice_scatter_matches_aten() -> None:
    x, src = np.zeros((5, 2)), np.ones((2, 2))
    want = x.copy()
    want[1:4:2] = src
    np.testing.assert_array_equal(ix.slice_scatter(x, src, start=1, end=4, step=2), want)
    (gx, gs), w = _grad(lambda x, s: ix.slice_scatter(x, s, start=1, end=4, step=2), x, src,
                        argnums=(0, 1))
    np.testing.assert_array_equal(gx[1:4:2], 0.0)
    np.testing.assert_array_equal(gx[::2], w[::2])
    np.testing.assert_array_equal(gs, w[1:4:2])


# ----------------------------------------------------- embedding / c_embedding
def test_embedding_padding_row_is_zero_and_gets_no_gradient() -> None:
    table = RNG.uniform(-1, 1, (4, 3))
    ids = np.array([[1, 3], [3, 0], [-1, 1]])
    out = ix.embedding(ids, table, padding_idx=-1)
    np.testing.assert_array_equal(out[0, 1], 0.0)
    np.testing.assert_array_equal(out[2, 0], 0.0)
    np.testing.assert_array_equal(out[0, 0], table[1])
    g, w = _grad(lambda t: ix.embedding(ids, t, padding_idx=3), table)
    np.testing.assert_array_equal(g[3], 0.0)
    np.testing.assert_array_equal(g[1], w[0, 0] + w[2, 1])    # repeated ids accumulate
    np.testing.assert_array_equal(g[0], w[1, 1])
    np.testing.assert_array_equal(g[2], 0.0)


def test_c_embedding_ids_outside_the_shard_give_zero_rows_and_no_gradient() -> None:
    shard = RNG.uniform(-1, 1, (3, 2))   # rows 4, 5, 6 of a vocabulary of 10
    ids = np.array([3, 4, 6, 7, -1, 5, 4])
    out = ix.c_embedding(shard, ids, start_index=4, vocab_size=10)
    inside = (ids >= 4) & (ids < 7)
    np.testing.assert_array_equal(out[~inside], 0.0)
    np.testing.assert_array_equal(out[inside], shard[ids[inside] - 4])
    g, w = _grad(lambda s: ix.c_embedding(s, ids, start_index=4), shard)
    np.testing.assert_array_equal(g, [w[1] + w[6], w[5], w[2]])


def test_one_hot_rows_and_axis() -> None:
    x = np.array([[0, 2], [3, -1]])
    out = ix.one_hot(x, num_classes=3)
    np.testing.assert_array_equal(out, jax.nn.one_hot(x, 3))
    assert out.dtype == jnp.float64
    np.testing.assert_array_equal(out[1], np.zeros((2, 3)))   # ids 3 and -1: no class
    np.testing.assert_array_equal(ix.one_hot(x, num_classes=4, axis=0, dtype=jnp.int32),
                                  jax.nn.one_hot(x, 4, axis=0, dtype=jnp.int32))
    assert gradrules.get_op("one_hot").nondiff == ("x",)


# --------------------------------------------------------------- batching
def _count(fn, *args, name):
    jaxpr = jax.make_jaxpr(fn)(*args)
    return sum(e.primitive.name == name for e in jaxpr.jaxpr.eqns)


@pytest.mark.parametrize("name,fn,args", [
    ("gather", lambda x, i: ix.gather(x, i, axis=1), (np.ones((2, 4, 3)), np.ones((2, 5), int))),
    ("take_along_axis", lambda x, i: ix.take_along_axis(x, i, axis=0),
     (np.ones((2, 4, 3)), np.ones((2, 2, 3), int))),
    ("scatter_add", lambda x, i: ix.scatter_add(x, i, i * 1.0, axis=0),
     (np.ones((2, 4, 3)), np.ones((2, 2, 3), int))),
    ("embedding", lambda w, i: ix.embedding(i, w, padding_idx=0),
     (np.ones((2, 4, 3)), np.ones((2, 5), int))),
    ("index_put", lambda x, i: ix.index_put(x, (i,), 1.0),
     (np.ones((2, 4, 3)), np.ones((2, 5), int))),
])
def test_vmap_of_batched_data_and_indices_binds_the_primitive_once(name, fn, args) -> None:
    vfn = jax.vmap(fn)
    assert _count(vfn, *args, name=name) == 1
    loop = np.stack([fn(*[a[b] for a in args]) for b in range(2)])
    np.testing.assert_array_equal(vfn(*args), loop)


# -------------------------------------------------------------- bad input
BAD_INDEX = [
    ("gather", lambda i: ix.gather(X, i, axis=0), "index"),
    ("take", lambda i: ix.take(X, i), "indices"),
    ("index_select", lambda i: ix.index_select(X, i), "index"),
    ("take_along_axis", lambda i: ix.take_along_axis(X, i, axis=0), "index"),
    ("scatter_add", lambda i: ix.scatter_add(X, i, X, axis=0), "index"),
    ("scatter", lambda i: ix.scatter(X, i, X, axis=0), "index"),
    ("scatter_reduce", lambda i: ix.scatter_reduce(X, i, X, axis=0, reduce="sum"), "index"),
    ("index_put", lambda i: ix.index_put(X, (i,), 1.0), r"indices\[0\]"),
    ("embedding", lambda i: ix.embedding(i, X), "ids"),
    ("c_embedding", lambda i: ix.c_embedding(X, i), "ids"),
    ("one_hot", lambda i: ix.one_hot(i, num_classes=3), "x"),
]


@pytest.mark.parametrize("op,fn,arg", BAD_INDEX)
@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_float_or_bool_index_arrays_are_rejected(op, fn, arg, dtype) -> None:
    with pytest.raises(TypeError, match=rf"gradrules.{op}: argument {arg} must have an "
                                        r"integer dtype"):
        fn(np.zeros(X.shape, dtype))


@pytest.mark.parametrize("op,fn", [
    ("gather", lambda: ix.gather(X, np.array([0]), axis=2)),
    ("take", lambda: ix.take(X, np.array([0]), axis=-3)),
    ("index_select", lambda: ix.index_select(X, np.array([0]), axis=2)),
    ("take_along_axis", lambda: ix.take_along_axis(X, np.zeros((4, 3), int), axis=2)),
    ("scatter_add", lambda: ix.scatter_add(X, np.zeros((4, 3), int), X, axis=-3)),
    ("scatter", lambda: ix.scatter(X, np.zeros((4, 3), int), X, axis=5)),
    ("one_hot", lambda: ix.one_hot(np.zeros(3, int), num_classes=2, axis=2)),
    ("slice_scatter", lambda: ix.slice_scatter(X, X, axis=2)),
    ("set_value", lambda: ix.set_value(X, 0.0, starts=0, ends=1, axes=2)),
])
def test_out_of_range_axes_are_rejected(op, fn) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: \w+=-?\d+ is out of range"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("take_along_axis", lambda: ix.take_along_axis(X, np.zeros((4, 2), int), axis=0),
     r"index with shape \(4, 2\) must match x with shape \(4, 3\)"),
    ("take_along_axis", lambda: ix.take_along_axis(X, np.zeros(4, int), axis=0),
     r"index with shape \(4,\) must have the rank of x"),
    ("scatter_add", lambda: ix.scatter_add(X, np.zeros((2, 3), int), np.ones((3, 3)), axis=0),
     r"index with shape \(2, 3\) and src with shape \(3, 3\) must have the same shape"),
    ("scatter", lambda: ix.scatter(X, np.zeros((2, 2), int), np.ones((2, 2)), axis=0),
     r"index with shape \(2, 2\) must match x with shape \(4, 3\)"),
    ("scatter_reduce", lambda: ix.scatter_reduce(X, np.zeros((1, 3), int), np.ones((2, 3)),
                                                 axis=0, reduce="mean"),
     r"index with shape \(1, 3\) and src with shape \(2, 3\)"),
    ("index_put", lambda: ix.index_put(X, (np.array([0, 1]),), np.ones((3, 3))),
     r"operands do not broadcast: values with shape \(3, 3\), the index shape \+ the axes "
     r"of x not indexed with shape \(2, 3\)"),
    ("index_put", lambda: ix.index_put(X, (np.array([0, 1]), np.array([0, 1, 2])), 1.0),
     r"operands do not broadcast: indices\[0\] with shape \(2,\), indices\[1\] with shape "
     r"\(3,\)"),
    ("index_put", lambda: ix.index_put(X, (np.array([0]),) * 3, 1.0),
     r"needs 1 to 2 index arrays"),
    ("set_value", lambda: ix.set_value(X, np.ones((3, 3)), starts=0, ends=2, axes=0),
     r"value with shape \(3, 3\) does not broadcast to the slice shape \(2, 3\)"),
    ("slice_scatter", lambda: ix.slice_scatter(X, np.ones((4, 3)), start=1),
     r"src with shape \(4, 3\) must have the slice shape \(3, 3\)"),
    ("index_select", lambda: ix.index_select(X, np.zeros((2, 2), int)),
     r"index must be 1-D, got shape \(2, 2\)"),
    ("embedding", lambda: ix.embedding(np.array([0]), np.ones(3)),
     r"weight must be a \[vocab, dim\] table, got shape \(3,\)"),
    ("gather", lambda: ix.gather(np.ones((0, 2)), np.array([0]), axis=0),
     r"cannot index axis 0 of x of size 0"),
])
def test_index_and_update_shapes_that_do_not_match(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("set_value", lambda: ix.set_value(X, 0.0, starts=0, ends=3, steps=0, axes=0),
     "a step of 0 is not allowed"),
    ("slice_scatter", lambda: ix.slice_scatter(X, X, step=0), "a step of 0 is not allowed"),
    ("one_hot", lambda: ix.one_hot(np.zeros(2, int), num_classes=-1),
     r"num_classes must be (an int )?>= 0, got -1"),
    ("c_embedding", lambda: ix.c_embedding(X, np.zeros(2, int), start_index=-1),
     r"start_index must be (an int )?>= 0, got -1"),
    ("c_embedding", lambda: ix.c_embedding(X, np.zeros(2, int), start_index=8, vocab_size=10),
     r"a shard of 4 rows at start_index=8 does not fit a vocabulary of vocab_size=10"),
    ("embedding", lambda: ix.embedding(np.zeros(2, int), X, padding_idx=4),
     "padding_idx=4 is out of range"),
    ("scatter_reduce", lambda: ix.scatter_reduce(X, np.zeros((4, 3), int), X, axis=0,
                                                 reduce="median"), "reduce must be one of"),
])
def test_bad_params(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


def test_checker_passes_on_the_c_embedding_of_a_batched_shard() -> None:
    """A whole vmapped lookup (batched shard and ids) through every check."""
    fn = jax.vmap(lambda w, i: ix.c_embedding(w, i, start_index=1))
    report = check(fn, RNG.uniform(-1, 1, (2, 3, 2)), np.array([[0, 1, 3], [4, 2, 2]]),
                   checks=["fd", "vmap", "closure"])
    report.raise_if_failed()
