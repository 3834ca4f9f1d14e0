"""Scatters: the semantics the sample table cannot pin down (which duplicate
wins, ties, zeros of prod, narrow indices in flat positions), batching that
binds one primitive, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives import reduction as red
from gradrules.primitives import scatter as sc

from _helpers import (check_index_dtype_rejected, check_symbolic_export,
                      check_vmap_binds_once, grad_of, mode_costs)

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, (4, 3))


# --------------------------------------------- narrow index dtypes
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
    np.testing.assert_array_equal(sc.index_put(x, indices, np.array([1.0, 2.0]),
                                               accumulate=accumulate), want)
    g = jax.grad(lambda v: red.sum(sc.index_put(x, indices, v, accumulate=accumulate)
                                   * weights))(np.ones(2))
    np.testing.assert_array_equal(g, [399.0, 65.0])


# ------------------------------------------------------------ duplicates
def test_scatter_add_accumulates_duplicates_and_its_transpose_gathers() -> None:
    x, index, src = np.zeros(3), np.array([1, 1, 1, 0]), np.array([1.0, 2.0, 4.0, 8.0])
    np.testing.assert_array_equal(sc.scatter_add(x, index, src, axis=0), [8.0, 7.0, 0.0])
    (gx, gsrc), w = grad_of(lambda x, s: sc.scatter_add(x, index, s, axis=0), x, src,
                            argnums=(0, 1))
    np.testing.assert_array_equal(gx, w)
    np.testing.assert_array_equal(gsrc, w[index])


def test_scatter_last_duplicate_wins_and_alone_gets_the_gradient() -> None:
    x = np.array([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
    index = np.array([[2, 0], [0, 0], [2, 0]])
    src = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = sc.scatter(x, index, src, axis=0)
    np.testing.assert_array_equal(out, [[3.0, 6.0], [30.0, 40.0], [5.0, 60.0]])
    (gx, gsrc), w = grad_of(lambda x, s: sc.scatter(x, index, s, axis=0), x, src, argnums=(0, 1))
    np.testing.assert_array_equal(gx, np.where([[1, 1], [0, 0], [1, 0]], 0.0, w))
    np.testing.assert_array_equal(gsrc, [[0.0, 0.0], [w[0, 0], 0.0], [w[2, 0], w[0, 1]]])
    # forward mode agrees with reverse mode
    jf = jax.jacfwd(lambda s: sc.scatter(x, index, s, axis=0))(src)
    jr = jax.jacrev(lambda s: sc.scatter(x, index, s, axis=0))(src)
    np.testing.assert_array_equal(jf, jr)
    # the rule does not depend on the backend: jit gives the same result
    np.testing.assert_array_equal(jax.jit(sc.scatter, static_argnames="axis")(
        x, index, src, axis=0), out)


def test_index_put_with_and_without_accumulate() -> None:
    x = np.zeros((3, 2))
    rows, vals = np.array([2, 0, 2]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(sc.index_put(x, (rows,), vals, accumulate=True),
                                  [[3, 4], [0, 0], [6, 8]])
    np.testing.assert_array_equal(sc.index_put(x, (rows,), vals), [[3, 4], [0, 0], [5, 6]])
    # overwriting: x loses the gradient of the rows written, only the last
    # duplicate of the values receives one
    (gx, gv), w = grad_of(lambda x, v: sc.index_put(x, (rows,), v), x, vals, argnums=(0, 1))
    np.testing.assert_array_equal(gx, [[0, 0], w[1], [0, 0]])
    np.testing.assert_array_equal(gv, [[0, 0], w[0], w[2]])
    (gx, gv), w = grad_of(lambda x, v: sc.index_put(x, (rows,), v, accumulate=True), x, vals,
                          argnums=(0, 1))
    np.testing.assert_array_equal(gx, w)
    np.testing.assert_array_equal(gv, w[rows])


def test_index_put_broadcasts_indices_and_values() -> None:
    x = np.zeros((3, 4))
    rows, cols = np.array([[0], [2]]), np.array([1, 3])
    out = sc.index_put(x, (rows, cols), 7.0)
    want = x.copy()
    want[rows, cols] = 7.0
    np.testing.assert_array_equal(out, want)
    g = jax.grad(lambda v: red.sum(sc.index_put(x, (rows, cols), v) * np.arange(12.0).reshape(
        3, 4)))(np.float64(1.0))
    assert g == 1 + 3 + 9 + 11


def test_index_put_normalises_each_index_once() -> None:
    """index_put clips its indices itself (wrap negatives, then clip) and
    scatters them as they are: ``.at[]`` wrapping them again cost take's
    gradient (a scatter-add via index_put) 1.6x the reference's FLOPs."""
    from gradrules.primitives import gather as ga

    x = RNG.standard_normal((40, 50)).astype(np.float32)
    index = RNG.integers(-60, 60, (30, 20)).astype(np.int32)
    take = [lambda a, i, f=f: f(a, i, axis=1) for f in (ga.take, ga._reference_take)]
    (ours, got), (ref, want) = mode_costs("grad", take, x, index)
    assert ours.flops <= ref.flops
    np.testing.assert_allclose(got, want, rtol=1e-6)
    values = RNG.standard_normal((30, 20, 50)).astype(np.float32)
    for accumulate in (False, True):
        put = jax.jit(lambda a, i, v, acc=accumulate: sc.index_put(a, (i,), v, accumulate=acc))
        np.testing.assert_allclose(put(x, index, values), sc._reference_index_put(
            jnp.asarray(x), (index,), values, accumulate=accumulate), rtol=1e-5, atol=1e-5)


# -------------------------------------------------------- scatter_reduce
def test_scatter_reduce_values_and_mean_counts_x() -> None:
    x, index, src = np.array([1.0, 2.0, 3.0]), np.array([0, 0, 2]), np.array([4.0, 6.0, 5.0])
    want = {"sum": [11, 2, 8], "prod": [24, 2, 15], "amax": [6, 2, 5], "amin": [1, 2, 3],
            "mean": [11 / 3, 2, 4]}
    for reduce, w in want.items():
        np.testing.assert_allclose(sc.scatter_reduce(x, index, src, axis=0, reduce=reduce), w,
                                   rtol=1e-15)
    ints = sc.scatter_reduce(np.array([-7, 1]), np.array([0]), np.array([2]), axis=0,
                             reduce="mean")
    np.testing.assert_array_equal(ints, [-2, 1])    # -5 / 2 rounds toward zero


@pytest.mark.parametrize("reduce,sign", [("amax", 1.0), ("amin", -1.0)])
def test_scatter_reduce_ties_share_the_gradient_evenly(reduce, sign) -> None:
    x = sign * np.array([3.0, 1.0])
    index, src = np.array([0, 0, 1, 0]), sign * np.array([3.0, 2.0, 1.0, 3.0])
    fn = lambda x, s: sc.scatter_reduce(x, index, s, axis=0, reduce=reduce)  # noqa: E731
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
    fn = lambda x, s: sc.scatter_reduce(x, index, s, axis=0, reduce="prod")  # noqa: E731
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
    f = lambda x, s: sc.scatter_reduce(x, index, s, axis=0, reduce=reduce)  # noqa: E731
    ct = RNG.standard_normal((3, 2))
    tx, ts = jax.linear_transpose(f, x, src)(ct)
    np.testing.assert_allclose(np.vdot(f(x, src), ct), np.vdot(tx, x) + np.vdot(ts, src),
                               rtol=1e-12)


def test_scatter_reduce_prod_is_not_linear() -> None:
    index, x = np.array([0, 0]), np.ones(2)
    with pytest.raises(ValueError, match="reduce='prod' is not linear"):
        jax.linear_transpose(lambda s: sc.scatter_reduce(x, index, s, axis=0, reduce="prod"),
                             x)(x)


# ----------------------------------------------------- set_value / slice_scatter
def test_set_value_overwritten_elements_get_zero_gradient() -> None:
    x = np.arange(12.0).reshape(4, 3)
    kw = dict(starts=(-1, 0), ends=(0, 10), steps=(-2, 2), axes=(0, 1))
    value = np.array([[100.0, 200.0], [300.0, 400.0]])
    want = x.copy()
    want[-1:0:-2, 0:10:2] = value
    np.testing.assert_array_equal(sc.set_value(x, value, **kw), want)
    (gx, gv), w = grad_of(lambda x, v: sc.set_value(x, v, **kw), x, value, argnums=(0, 1))
    mask = np.zeros((4, 3), bool)
    mask[-1:0:-2, 0:10:2] = True
    np.testing.assert_array_equal(gx, np.where(mask, 0.0, w))
    np.testing.assert_array_equal(gv, w[-1:0:-2, 0:10:2])
    # a scalar value is broadcast over the slice: its gradient sums it
    g = jax.grad(lambda v: red.sum(sc.set_value(x, v, **kw) * w))(np.float64(1.0))
    assert g == w[mask].sum()


def test_slice_scatter_matches_aten() -> None:
    x, src = np.zeros((5, 2)), np.ones((2, 2))
    want = x.copy()
    want[1:4:2] = src
    np.testing.assert_array_equal(sc.slice_scatter(x, src, start=1, end=4, step=2), want)
    (gx, gs), w = grad_of(lambda x, s: sc.slice_scatter(x, s, start=1, end=4, step=2), x, src,
                          argnums=(0, 1))
    np.testing.assert_array_equal(gx[1:4:2], 0.0)
    np.testing.assert_array_equal(gx[::2], w[::2])
    np.testing.assert_array_equal(gs, w[1:4:2])


# --------------------------------------------------------------- batching
@pytest.mark.parametrize("name,fn,args", [
    ("scatter_add", lambda x, i: sc.scatter_add(x, i, i * 1.0, axis=0),
     (np.ones((2, 4, 3)), np.ones((2, 2, 3), int))),
    ("index_put", lambda x, i: sc.index_put(x, (i,), 1.0),
     (np.ones((2, 4, 3)), np.ones((2, 5), int))),
])
def test_vmap_of_batched_data_and_indices_binds_the_primitive_once(name, fn, args) -> None:
    check_vmap_binds_once(name, fn, args)


# -------------------------------------------------------------- bad input
BAD_INDEX = [
    ("scatter_add", lambda i: sc.scatter_add(X, i, X, axis=0), "index"),
    ("scatter", lambda i: sc.scatter(X, i, X, axis=0), "index"),
    ("scatter_reduce", lambda i: sc.scatter_reduce(X, i, X, axis=0, reduce="sum"), "index"),
    ("index_put", lambda i: sc.index_put(X, (i,), 1.0), r"indices\[0\]"),
]


@pytest.mark.parametrize("op,fn,arg", BAD_INDEX)
@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_float_or_bool_index_arrays_are_rejected(op, fn, arg, dtype) -> None:
    check_index_dtype_rejected(op, fn, arg, dtype, X.shape)


@pytest.mark.parametrize("op,fn", [
    ("scatter_add", lambda: sc.scatter_add(X, np.zeros((4, 3), int), X, axis=-3)),
    ("scatter", lambda: sc.scatter(X, np.zeros((4, 3), int), X, axis=5)),
    ("slice_scatter", lambda: sc.slice_scatter(X, X, axis=2)),
    ("set_value", lambda: sc.set_value(X, 0.0, starts=0, ends=1, axes=2)),
])
def test_out_of_range_axes_are_rejected(op, fn) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: \w+=-?\d+ is out of range"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("scatter_add", lambda: sc.scatter_add(X, np.zeros((2, 3), int), np.ones((3, 3)), axis=0),
     r"index with shape \(2, 3\) and src with shape \(3, 3\) must have the same shape"),
    ("scatter", lambda: sc.scatter(X, np.zeros((2, 2), int), np.ones((2, 2)), axis=0),
     r"index with shape \(2, 2\) must match x with shape \(4, 3\)"),
    ("scatter_reduce", lambda: sc.scatter_reduce(X, np.zeros((1, 3), int), np.ones((2, 3)),
                                                 axis=0, reduce="mean"),
     r"index with shape \(1, 3\) and src with shape \(2, 3\)"),
    ("index_put", lambda: sc.index_put(X, (np.array([0, 1]),), np.ones((3, 3))),
     r"operands do not broadcast: values with shape \(3, 3\), the index shape \+ the axes "
     r"of x not indexed with shape \(2, 3\)"),
    ("index_put", lambda: sc.index_put(X, (np.array([0, 1]), np.array([0, 1, 2])), 1.0),
     r"operands do not broadcast: indices\[0\] with shape \(2,\), indices\[1\] with shape "
     r"\(3,\)"),
    ("index_put", lambda: sc.index_put(X, (np.array([0]),) * 3, 1.0),
     r"needs 1 to 2 index arrays"),
    ("set_value", lambda: sc.set_value(X, np.ones((3, 3)), starts=0, ends=2, axes=0),
     r"value with shape \(3, 3\) does not broadcast to the slice shape \(2, 3\)"),
    ("slice_scatter", lambda: sc.slice_scatter(X, np.ones((4, 3)), start=1),
     r"src with shape \(4, 3\) must have the slice shape \(3, 3\)"),
])
def test_index_and_update_shapes_that_do_not_match(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("set_value", lambda: sc.set_value(X, 0.0, starts=0, ends=3, steps=0, axes=0),
     "a step of 0 is not allowed"),
    ("slice_scatter", lambda: sc.slice_scatter(X, X, step=0), "a step of 0 is not allowed"),
    ("scatter_reduce", lambda: sc.scatter_reduce(X, np.zeros((4, 3), int), X, axis=0,
                                                 reduce="median"), "reduce must be one of"),
])
def test_bad_params(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


# ------------------------------------------------- symbolic sizes (export)
ROWS = np.array([0, -1, 1, -1], np.int32)
SYMBOLIC_CASES = {
    # (function of x, x's symbolic shape): the indexed axis (index_put's
    # flat positions, the index rule's i + n) or the index itself (the
    # positions that find the surviving writes) has a symbolic size
    "index_put_counting_from_the_end": (
        lambda x: sc.index_put(x, (ROWS,), 2 * x[:4]), "n + 3, 3"),
    "index_put_of_two_axes_accumulating": (
        lambda x: sc.index_put(x, (ROWS, ROWS[::-1]), x[0, :4], accumulate=True),
        "n + 3, n + 3"),
    "index_put_under_vmap": (
        lambda x: jax.vmap(lambda r: sc.index_put(r, (ROWS[:2],), 2 * r[:2]))(x), "n, 3"),
    "scatter_of_a_symbolic_number_of_rows": (
        lambda x: sc.scatter(x[:2], jnp.broadcast_to(jnp.arange(x.shape[0])[:, None] % 2,
                                                     x.shape).astype(np.int32), x, axis=0),
        "n + 1, 3"),
}


@pytest.mark.parametrize("name", SYMBOLIC_CASES)
def test_export_of_values_and_grads_with_symbolic_sizes(name) -> None:
    """The value and gradient of ``sum(out ** 2)`` exported once for a
    symbolic size equal the direct computation at two sizes of it."""
    fn, shape = SYMBOLIC_CASES[name]
    check_symbolic_export(fn, shape, (1, 4), RNG, "n")


@pytest.mark.parametrize("fn", [
    lambda x, i: sc.scatter(x, i, x[:, :3], axis=1),
    lambda x, i: sc.scatter_add(x, i, x[:, :3], axis=1),
    lambda x, i: sc.scatter_reduce(x, i, x[:, :3], axis=1, reduce="mean"),
    lambda x, i: jax.grad(lambda v: red.sum(sc.scatter(v, i, v[:, :3] * 2.0, axis=1) ** 2))(x),
])
def test_scatters_along_an_axis_keep_an_explicit_batch_sharding(fn) -> None:
    """The axes other than ``axis`` are batching axes of the lax scatter, so
    they keep their sharding: on a one-device mesh with an Explicit ``data``
    axis, as without a mesh."""
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((1,), ("data",), axis_types=(AxisType.Explicit,))
    x = np.random.default_rng(7).normal(size=(4, 5))
    index = np.array([[0, 0, 4], [-1, 1, 1], [2, 2, 2], [3, 9, -9]])
    want = jax.jit(fn)(x, index)
    with jax.set_mesh(mesh):
        xs, ixs = (jax.device_put(a, NamedSharding(mesh, P("data"))) for a in (x, index))
        out = jax.jit(fn)(xs, ixs)
    assert jax.typeof(out).sharding.spec == P("data", None)
    np.testing.assert_allclose(out, want, rtol=1e-12)
