"""Slicing: the clip rule of dynamic_slice and narrow start dtypes,
strided slices, select / row_slice, split and its transpose, batching that
binds one primitive, and bad input."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.bench import compiled_costs
from gradrules.core.dims import python_slice, slice_count
from gradrules.primitives import layout as lo
from gradrules.primitives import reduction as red
from gradrules.primitives import scatter as sc
from gradrules.primitives import slicing as sl

from _helpers import check_symbolic_export, count_bound, vjp_of

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, (3, 4))


# -------------------------------------------------- slices and the clip rule
def test_dynamic_slice_clips_the_start_so_the_block_fits() -> None:
    x = np.arange(10.0)
    for start, want in ((3, 3), (8, 6), (-1, 6), (-3, 6), (-20, 0)):
        got = sl.dynamic_slice(x, np.array([start]), slice_sizes=(4,))
        np.testing.assert_array_equal(got, x[want:want + 4])
        np.testing.assert_array_equal(
            sl.dynamic_update_slice(x, -np.ones(4), np.array([start]))[want:want + 4], -1.0)
    # traced scalar starts under jit
    f = jax.jit(lambda x, i: sl.dynamic_slice(x, (i, 1), slice_sizes=(2, 2)))
    np.testing.assert_array_equal(f(X, jnp.int32(2)), X[1:3, 1:3])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_narrow_start_indices_do_not_wrap_around(dtype, jit) -> None:
    """An int8 start -1 on an axis of 300 is 299 (not 43); a uint8 start 250
    is 250: values and gradients as numpy gives them."""
    maybe_jit = jax.jit if jit else (lambda f: f)
    x = np.arange(300.0)
    start = np.array([-1 if dtype == np.int8 else 250], dtype)
    at = 299 if dtype == np.int8 else 250
    slice_ = maybe_jit(lambda x, s: sl.dynamic_slice(x, s, slice_sizes=(1,)))
    np.testing.assert_array_equal(slice_(x, start), x[at:at + 1])
    np.testing.assert_array_equal(slice_(x, (start[0],)), x[at:at + 1])
    g = jax.grad(lambda x: red.sum(slice_(x, start)))(x)
    np.testing.assert_array_equal(np.nonzero(g)[0], [at])
    update = maybe_jit(lambda x, u, s: sl.dynamic_update_slice(x, u, s))
    np.testing.assert_array_equal(np.nonzero(update(x, -np.ones(1), start) < 0)[0], [at])
    gu = jax.grad(lambda u: red.sum(update(x, u, start) * x))(np.zeros(1))
    np.testing.assert_array_equal(gu, [float(at)])


def test_dynamic_slices_count_from_the_end_once() -> None:
    """A negative start is counted from the end by lax alone, so the slice,
    the update and their gradients compile to lax's own FLOPs (the starts
    were normalised twice: 2x its index arithmetic)."""
    x, u, s = jnp.asarray(X), jnp.ones((2, 2)), jnp.array([-2, 1])
    pairs = [(lambda x, s: sl.dynamic_slice(x, s, slice_sizes=(2, 2)),
              lambda x, s: jax.lax.dynamic_slice(x, list(s), (2, 2)), (x, s)),
             (lambda x, u, s: sl.dynamic_update_slice(x, u, s),
              lambda x, u, s: jax.lax.dynamic_update_slice(x, u, list(s)), (x, u, s))]
    for ours, ref, args in pairs:
        grads = [jax.grad(lambda *a, f=f: jnp.sum(jnp.sin(f(*a))), argnums=0) for f in (ours, ref)]
        for f, r in ((ours, ref), tuple(grads)):
            np.testing.assert_allclose(f(*args), r(*args), rtol=1e-6)
            assert compiled_costs(f, *args).flops <= compiled_costs(r, *args).flops


def test_vmap_of_dynamic_slice_with_batched_starts_binds_it_once() -> None:
    starts = np.array([[0, 1], [2, 0], [1, 2]])
    fn = jax.vmap(lambda s: sl.dynamic_slice(X, s, slice_sizes=(2, 2)))
    assert count_bound(fn, starts, name="dynamic_slice") == 1
    np.testing.assert_array_equal(fn(starts), [X[a:a + 2, b:b + 2] for a, b in
                                               [(0, 1), (1, 0), (1, 2)]])


def test_dynamic_update_slice_overwritten_elements_get_zero_gradient() -> None:
    (gx, gu), w = jax.grad(lambda x, u: red.sum(sl.dynamic_update_slice(x, u, (1, 2)) * X),
                           argnums=(0, 1))(np.zeros((3, 4)), np.zeros((2, 2))), X
    np.testing.assert_array_equal(gx[1:3, 2:4], 0.0)
    np.testing.assert_array_equal(gx[0], w[0])
    np.testing.assert_array_equal(gu, w[1:3, 2:4])


def test_slice_with_strides_transposes_to_an_interior_pad() -> None:
    g, w = vjp_of(lambda x: sl.slice(x, start=(0, 1), limit=(3, 4), strides=(2, 2)), X)
    want = np.zeros_like(X)
    want[0:3:2, 1:4:2] = w
    np.testing.assert_array_equal(g, want)


def test_select_and_row_slice() -> None:
    np.testing.assert_array_equal(sl.select(X, axis=1, index=-1), X[:, 3])
    np.testing.assert_array_equal(sl.row_slice(X, rows=3, cols=4, row_index=1), X[1])
    g, w = vjp_of(lambda x: sl.row_slice(x, rows=3, cols=4, row_index=1), X)
    np.testing.assert_array_equal(g, np.stack([0 * w, w, 0 * w]))


def test_split_and_concatenate_are_each_others_transpose() -> None:
    a, b, c = sl.split(X, indices_or_sections=(1, 3), axis=1)
    assert [p.shape for p in (a, b, c)] == [(3, 1), (3, 2), (3, 1)]
    np.testing.assert_array_equal(lo.concatenate([a, b, c], axis=-1), X)
    # only one piece used: the others transpose from symbolic zeros
    g = jax.grad(lambda x: red.sum(sl.split(x, indices_or_sections=2, axis=1)[1]))(X)
    np.testing.assert_array_equal(g, [[0, 0, 1, 1]] * 3)


# ------------------------------------------------- symbolic sizes (export)
SYMBOLIC_CASES = {
    # (function of x, x's symbolic shape, the sizes of its symbol to call at)
    "slice_to_a_symbolic_limit": (
        lambda x: sl.slice(x, start=(1, 1), limit=(x.shape[0], 4)), "b + 1, 5", (1, 4)),
    "slice_with_strides_to_a_symbolic_limit": (
        lambda x: sl.slice(x, start=(0, 1), limit=(x.shape[0], 5), strides=(2, 3)), "b, 5",
        (2, 5)),
    "slice_from_a_symbolic_start": (
        lambda x: sl.slice(x, start=(x.shape[0] - 2, 0), limit=x.shape), "b + 2, 3", (1, 4)),
    "split_into_sections_of_a_symbolic_axis": (
        lambda x: sl.split(x, indices_or_sections=2, axis=0), "2*b, 3", (1, 3)),
    "split_at_points_of_a_symbolic_axis": (
        lambda x: sl.split(x, indices_or_sections=(1,), axis=1), "3, b", (1, 4)),
    "split_at_a_symbolic_point": (
        lambda x: sl.split(x, indices_or_sections=(1, x.shape[0] - 1), axis=0), "b + 1, 2",
        (1, 4)),
    "dynamic_slice_of_a_symbolic_size": (
        lambda x: sl.dynamic_slice(x, (1, 0), slice_sizes=(2, x.shape[1])), "3, b", (1, 4)),
    "row_slice_of_symbolic_rows": (
        lambda x: sl.row_slice(x, rows=x.shape[0], cols=3, row_index=0), "b, 3", (1, 4)),
    # transposed by a pad whose widths are symbolic (pad's infer_meta)
    "slice_that_may_be_empty": (
        lambda x: sl.slice(x, start=(1,), limit=(x.shape[0],)), "b", (1, 4)),
    "slice_of_the_last_entry": (
        lambda x: sl.slice(x, start=(x.shape[0] - 1,), limit=(x.shape[0],)), "b", (1, 4)),
    "select_from_the_end": (lambda x: sl.select(x, axis=0, index=-1), "b, 3", (2, 5)),
    # slice updates: Python's clamped bounds on a symbolic sliced axis
    # (an empty slice at b = 1), their transpose a slice of symbolic bounds
    "slice_scatter_from_a_start": (
        lambda x: sc.slice_scatter(x, 2 * x[1:], axis=0, start=1), "b, 4", (1, 4)),
    # (src sliced by lax's rule: jnp's x[::2] writes its size ceil(b / 2) as
    # floordiv(b + 1, 2), a form JAX cannot prove equal to lax's)
    "slice_scatter_with_a_step": (
        lambda x: sc.slice_scatter(x, 2 * sl.slice(x, start=(0, 0), limit=x.shape,
                                                   strides=(2, 1)), axis=0, step=2),
        "b, 3", (1, 4)),
    "slice_scatter_walking_backwards": (
        lambda x: sc.slice_scatter(x, 2 * x[1:], axis=0, end=0, step=-1), "b, 3", (1, 4)),
    "set_value_to_the_symbolic_end": (
        lambda x: sc.set_value(x, 2 * x[1:], starts=(1,), ends=(x.shape[0],), axes=(0,)),
        "b, 4", (1, 4)),
    "set_value_from_the_end_to_a_clamped_bound": (
        lambda x: sc.set_value(x, 3 * x[0], starts=(-2,), ends=(10 ** 9,), steps=(2,),
                               axes=(0,)), "b, 4", (1, 5)),
}


@pytest.mark.parametrize("name", SYMBOLIC_CASES)
def test_export_of_values_and_grads_with_symbolic_sizes(name) -> None:
    """infer_meta and the rules take symbolic sizes (slice bounds, split
    points and sections, block sizes): the value and gradient of
    ``sum(out ** 2)`` exported once equal the direct computation at two
    sizes of the symbol."""
    fn, shape, sizes = SYMBOLIC_CASES[name]
    check_symbolic_export(fn, shape, sizes, RNG, "b")


def test_python_slice_is_pythons_slice_indices() -> None:
    """``core.dims.python_slice`` (the clamped bounds of set_value and
    slice_scatter, symbolic-aware) gives Python's positions for every start,
    end and step on small axes, with the stop never past the start."""
    vals = (None, *range(-6, 7))
    for n, step, a, b in itertools.product(range(5), (-3, -2, -1, 1, 2, 3), vals, vals):
        want = range(*slice(a, b, step).indices(n))
        start, stop = python_slice("t", n, a, b, step)
        count = slice_count(start, stop, step)
        assert (start - stop) * step <= 0 and list(range(start, stop, step)) == list(want)
        assert count == len(want)


def test_bounds_undecided_for_a_symbolic_size_are_a_value_error_naming_the_op() -> None:
    """A bound that holds for some sizes of the symbol only (a start of 2 on
    an axis of b >= 1) is refused as lax refuses it, but as a ValueError
    naming the op and the sizes."""
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 3"), np.float32)
    cases = [
        ("slice", lambda x: sl.slice(x, start=(2, 0), limit=x.shape),
         r"start \(2, 0\) and limit \(b, 3\) must satisfy"),
        ("split", lambda x: sl.split(x, indices_or_sections=2, axis=0),
         r"indices_or_sections=2 sections do not divide axis 0 of x with shape \(b, 3\)"),
        ("split", lambda x: sl.split(x, indices_or_sections=(2,), axis=0),
         r"split points indices_or_sections=\(2,\) must be increasing and within \[0, b\]"),
        ("dynamic_slice", lambda x: sl.dynamic_slice(x, (0, 0), slice_sizes=(2, 3)),
         r"slice_sizes \(2, 3\) must lie in \[0, shape\] for x with shape \(b, 3\)"),
        ("select", lambda x: sl.select(x, axis=0, index=1),
         r"index=1 is out of range for axis 0 of x with shape \(b, 3\)"),
        ("set_value", lambda x: sc.set_value(x, 0.0, starts=(x.shape[0] - 2,), ends=(3,),
                                             axes=(0,)),
         r"starts=b - 2 may be negative or not, depending on the symbolic sizes"),
    ]
    for op, fn, msg in cases:
        with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
            jax.export.export(jax.jit(fn))(spec)


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("op,fn,msg", [
    ("slice", lambda: sl.slice(X, start=(0, 0), limit=(2, 2), strides=(1, 0)),
     r"strides must be positive \(a step of 0 is not allowed\)"),
    ("slice", lambda: sl.slice(X, start=(2, 0), limit=(1, 4)),
     r"start \(2, 0\) and limit \(1, 4\) must satisfy"),
    ("slice", lambda: sl.slice(X, start=(0,), limit=(1,)), "start must have 2 entries"),
    ("split", lambda: sl.split(X, indices_or_sections=3, axis=1),
     r"indices_or_sections=3 sections do not divide axis 1 of x with shape \(3, 4\)"),
    ("split", lambda: sl.split(X, indices_or_sections=(3, 1), axis=1),
     r"split points indices_or_sections=\(3, 1\) must be increasing"),
    ("select", lambda: sl.select(X, axis=0, index=3), "index=3 is out of range"),
    ("select", lambda: sl.select(X, axis=-3, index=0), "axis=-3 is out of range"),
    ("row_slice", lambda: sl.row_slice(X, rows=4, cols=3, row_index=0),
     r"x with shape \(3, 4\) is not a \[rows=4, cols=3\] matrix"),
    ("row_slice", lambda: sl.row_slice(X, rows=3, cols=4, row_index=3),
     "row_index=3 is out of range for 3 rows"),
    ("dynamic_slice", lambda: sl.dynamic_slice(X, np.array([0]), slice_sizes=(1, 1)),
     r"start_indices must have shape \(2,\)"),
    ("dynamic_slice", lambda: sl.dynamic_slice(X, (0, 0), slice_sizes=(4, 1)),
     r"slice_sizes \(4, 1\) must lie in \[0, shape\]"),
    ("dynamic_slice", lambda: sl.dynamic_slice(X, (0, 0), slice_sizes=(-1, 1)),
     r"slice_sizes \(-1, 1\) must lie in \[0, shape\]"),
    ("dynamic_update_slice", lambda: sl.dynamic_update_slice(X, np.ones((4, 1)), (0, 0)),
     r"update with shape \(4, 1\) does not fit in x with shape \(3, 4\)"),
    ("split", lambda: sl.split(X, indices_or_sections=1, axis=2), "axis=2 is out of range"),
])
def test_bad_input_is_a_value_error_naming_the_op(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("dynamic_slice", lambda: sl.dynamic_slice(X, np.array([0.0, 1.0]), slice_sizes=(1, 1)),
     "argument start_indices must have an integer dtype"),
    ("dynamic_update_slice", lambda: sl.dynamic_update_slice(X, X, (0.5, 0)),
     "argument start_indices must have an integer dtype"),
    ("slice", lambda: sl.slice(X, start=(0, 0.5), limit=(1, 1)), "start must hold ints"),
    ("split", lambda: sl.split(X, indices_or_sections=(1.5,)), "indices_or_sections must hold"),
])
def test_bad_types_are_a_type_error_naming_the_op(op, fn, msg) -> None:
    with pytest.raises(TypeError, match=rf"gradrules.{op}: {msg}"):
        fn()
