"""Sorting and selection: tie-breaking, where the gradient of sort / topk goes
(to the selected elements, ties included), argmax / argmin, nonzero (cut,
padded, batched), and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives import sort as so

TIES = np.array([3.0, 1.0, 3.0, 2.0, 1.0])


def test_sort_is_stable_and_matches_numpy() -> None:
    values, idx = so.sort(TIES)
    np.testing.assert_array_equal(values, np.sort(TIES))
    np.testing.assert_array_equal(idx, [1, 4, 3, 0, 2])
    values, idx = so.sort(TIES, descending=True)
    np.testing.assert_array_equal(values, [3, 3, 2, 1, 1])
    np.testing.assert_array_equal(idx, [0, 2, 3, 1, 4])     # equal elements keep order
    np.testing.assert_array_equal(so.argsort(TIES, descending=True), idx)
    x = np.random.default_rng(0).uniform(-1, 1, (3, 4, 2))
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(so.sort(x, axis=axis)[0], np.sort(x, axis=axis))
        np.testing.assert_array_equal(so.argsort(x, axis=axis), np.argsort(x, axis=axis))


def test_sort_gradient_follows_the_indices_at_ties() -> None:
    _, idx = so.sort(TIES)
    perm = np.eye(5)[np.asarray(idx)]          # values = perm @ x
    np.testing.assert_array_equal(jax.jit(jax.jacfwd(lambda v: so.sort(v)[0]))(TIES), perm)
    np.testing.assert_array_equal(jax.jit(jax.jacrev(lambda v: so.sort(v)[0]))(TIES), perm)
    np.testing.assert_array_equal(jax.jit(jax.hessian(lambda v: so.sort(v)[0][-1]))(TIES), 0.0)


def test_topk_ties_take_the_lower_index_and_the_gradient() -> None:
    values, idx = so.topk(TIES, k=3)
    np.testing.assert_array_equal(values, [3, 3, 2])
    np.testing.assert_array_equal(idx, [0, 2, 3])
    g = jax.grad(lambda v: jnp.sum(so.topk(v, k=3)[0] * np.array([1.0, 10.0, 100.0])))(TIES)
    np.testing.assert_array_equal(g, [1, 0, 10, 100, 0])
    values, idx = so.topk(TIES, k=2, largest=False)
    np.testing.assert_array_equal(values, [1, 1])
    np.testing.assert_array_equal(idx, [1, 4])
    g = jax.grad(lambda v: jnp.sum(so.topk(v, k=1, largest=False)[0]))(TIES)
    np.testing.assert_array_equal(g, [0, 1, 0, 0, 0])


@pytest.mark.parametrize("name", ["sort", "topk", "max_pool2d"])
def test_selection_gradients_neither_wrap_nor_clip_their_indices(name) -> None:
    """sort's, topk's and max_pool2d's indices lie in [0, n) by construction:
    their JVP binds take_along_axis with ``in_range=True`` (shown in the
    jaxpr), so the gradient's scatter-add uses them as they are, as
    jax.numpy's does (with the wrap and the clip: sort 1.17x, topk 5x the
    reference's FLOPs; max_pool2d 0.61x, 0.56x without). Left over: topk's
    indices converted to the index dtype (int64 under x64)."""
    from gradrules.bench import compiled_costs
    from gradrules.primitives import pool
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((64, 128)), jnp.float32)
    k = {"sort": 128, "topk": 8}.get(name)
    w = jnp.asarray(rng.standard_normal((32, 64) if k is None else (64, k)), jnp.float32)
    kw = {"kernel_size": 3, "stride": 2, "padding": 1}
    ours = {"sort": lambda v: so.sort(v, axis=1)[0], "topk": lambda v: so.topk(v, k=k)[0],
            "max_pool2d": lambda v: pool.max_pool2d(v[None, None], **kw)[0][0, 0]}[name]
    ref = {"sort": lambda v: jnp.sort(v, axis=1), "topk": lambda v: jax.lax.top_k(v, k)[0],
           "max_pool2d": lambda v: pool._max_pool_reference(2, v[None, None], **kw)[0][0, 0]
           }[name]
    grads = [jax.grad(lambda v, u, f=f: jnp.sum(u * f(v))) for f in (ours, ref)]
    assert "in_range=True" in str(jax.make_jaxpr(lambda v: jax.jvp(ours, (v,), (v,)))(x))
    costs = [compiled_costs(g, x, w) for g in grads]
    assert " clamp(" not in costs[0].compiled.as_text()
    assert costs[0].flops <= costs[1].flops + w.size
    np.testing.assert_array_equal(grads[0](x, w), grads[1](x, w))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_is_one_top_k_and_no_sort(largest) -> None:
    """topk compiles to lax.top_k: the largest take its values with its
    indices (they were gathered again, the index clamped and masked), the
    smallest are the top k of an order-reversing key, never a full sort
    (75x the time of jax.numpy's top_k(-x) at [646, 1615], k = 3), their
    values gathered with no clamp. The reference's values and indices, along
    a middle axis too; the smallest as the sort's first k where -x would
    differ: zeros of either sign tie, NaNs of either sign come last,
    integers down to the minimum."""
    from gradrules.bench import compiled_costs
    x = jnp.asarray(np.random.default_rng(4).standard_normal((16, 40, 8)), jnp.float32)
    for axis in (-1, 1):
        text = compiled_costs(lambda v: so.topk(v, k=5, axis=axis, largest=largest),
                              x).compiled.as_text()
        assert " sort(" not in text and " clamp(" not in text
        assert (" gather(" in text) != largest
        got = so.topk(x, k=5, axis=axis, largest=largest)
        want = so._topk_reference(x, k=5, axis=axis, largest=largest)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    if largest:
        return
    i8 = np.iinfo(np.int8)
    for edge in (np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -0.0, 1.0, 0.0], np.float32),
                 np.array([i8.max, i8.min, 0, -1, i8.min, 3], np.int8)):
        values, idx = so.topk(edge, k=edge.size, largest=False)
        sorted_values, order = so.sort(edge)
        np.testing.assert_array_equal(idx, order)
        np.testing.assert_array_equal(np.signbit(values), np.signbit(sorted_values))


def test_topk_k_edges_and_axes() -> None:
    x = np.random.default_rng(1).uniform(-1, 1, (2, 5, 3))
    v, i = so.topk(x, k=0, axis=1)
    assert v.shape == i.shape == (2, 0, 3)
    v, i = so.topk(x, k=5, axis=1)
    np.testing.assert_array_equal(v, -np.sort(-x, axis=1))
    v, i = so.topk(x, k=2, axis=-1)
    np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(i), -1), v)
    g = jax.grad(lambda z: jnp.sum(so.topk(z, k=1, axis=0)[0]))(x)
    np.testing.assert_array_equal(g, x == x.max(0, keepdims=True))


def test_argmax_argmin() -> None:
    x = np.array([[1, 5, 5], [7, 0, 7]])
    assert so.argmax(x) == 3 and so.argmin(x) == 4        # first occurrence, flattened
    assert so.argmax(np.array([2.0, 9.0, 9.0])) == 1
    np.testing.assert_array_equal(so.argmax(x, axis=1), [1, 0])
    np.testing.assert_array_equal(so.argmin(x, axis=-2), [0, 1, 0])
    assert so.argmax(x, axis=None, keepdims=True).shape == (1, 1)
    assert so.argmin(x, axis=0, keepdims=True).shape == (1, 3)
    assert so.argmax(np.float32(2.0)) == 0
    assert so.argmax(x).dtype == jnp.argmax(x).dtype == np.int64   # x64 in tests
    _, t = jax.jvp(lambda v: so.argmax(v, axis=0), (x * 1.0,), (np.ones((2, 3)),))
    assert t.dtype == jax.dtypes.float0


def test_index_outputs_have_no_tangent() -> None:
    x = np.array([0.3, -1.0, 2.0])
    _, t_idx = jax.jvp(lambda v: so.sort(v)[1], (x,), (np.ones(3),))
    assert t_idx.dtype == jax.dtypes.float0
    _, t_idx = jax.jvp(lambda v: so.topk(v, k=2)[1], (x,), (np.ones(3),))
    assert t_idx.dtype == jax.dtypes.float0


# ---------------------------------------------------------------- bad input
def test_bad_k() -> None:
    x = jnp.ones((2, 3))
    with pytest.raises(ValueError, match=r"gradrules\.topk: k=4 must be in \[0, 3\], the size "
                                         r"of axis 1 of x with shape \(2, 3\)"):
        so.topk(x, k=4)
    with pytest.raises(ValueError, match=r"gradrules\.topk: k=-1 must be in \[0, 2\]"):
        so.topk(x, k=-1, axis=0)
    with pytest.raises(TypeError, match=r"gradrules\.topk: k must be an int, got 2.0"):
        so.topk(x, k=2.0)
    with pytest.raises(TypeError, match=r"gradrules\.topk: largest must be a bool"):
        so.topk(x, k=1, largest=1)


@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_bad_sort_input(name) -> None:
    fn = getattr(so, name)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: axis=2 is out of range"):
        fn(jnp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: axis must be an int, got None"):
        fn(jnp.ones((2, 3)), axis=None)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: x must have at least one axis"):
        fn(jnp.float32(1.0))
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: descending must be a bool"):
        fn(jnp.ones(3), descending="no")
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: argument x is complex"):
        fn(jnp.ones(3, jnp.complex64))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_bad_arg_extremum_input(name) -> None:
    fn = getattr(so, name)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: axis must be None or an int, "
                                        r"got \(0, 1\)"):
        fn(jnp.ones((2, 3)), axis=(0, 1))
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: axis=-3 is out of range"):
        fn(jnp.ones((2, 3)), axis=-3)
    with pytest.raises(ValueError, match=rf"gradrules\.{name}: cannot reduce x with shape "
                                         r"\(2, 0\) over a size-0 axis"):
        fn(jnp.ones((2, 0)), axis=1)
    with pytest.raises(TypeError, match=rf"gradrules\.{name}: keepdims must be a bool"):
        fn(jnp.ones(3), keepdims=None)


# ---------------------------------------------------------------- nonzero
MASKED = np.array([[0.0, 1.5, 0.0, -2.0], [3.0, 0.0, 0.0, 4.0], [0.0, 0.0, 0.0, 5.0]])


@pytest.mark.parametrize("x", [MASKED, MASKED > 1, (MASKED * 2).astype(np.int32),
                               MASKED[0], MASKED.reshape(3, 2, 2)])
@pytest.mark.parametrize("size, fill_value", [(5, 0), (2, -1), (9, 7), (0, 0)])
def test_nonzero_matches_jnp(x, size, fill_value) -> None:
    got = so.nonzero(x, size=size, fill_value=fill_value)
    want = jnp.nonzero(x, size=size, fill_value=fill_value)
    assert len(got) == x.ndim
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == (size,)
        np.testing.assert_array_equal(g, w)


def test_nonzero_fill_per_axis_jit_and_jaxpr() -> None:
    rows, cols = jax.jit(lambda v: so.nonzero(v, size=7, fill_value=(-1, -2)))(MASKED)
    np.testing.assert_array_equal(rows, [0, 0, 1, 1, 2, -1, -1])
    np.testing.assert_array_equal(cols, [1, 3, 0, 3, 3, -2, -2])
    eqns = jax.make_jaxpr(lambda v: so.nonzero(v, size=3))(MASKED).jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["nonzero"]
    assert eqns[0].params["fill_value"] == (0, 0) and eqns[0].params["size"] == 3


@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_nonzero_vmap_binds_once_with_per_example_indices(in_axes) -> None:
    x = np.stack([MASKED, MASKED[::-1], np.zeros_like(MASKED)], axis=in_axes % 3)

    def f(v):
        return so.nonzero(v, size=4, fill_value=-1)

    got = jax.vmap(f, in_axes=in_axes)(x)
    for b in range(3):
        want = f(np.take(x, b, axis=in_axes))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g[b], w)
    nested = jax.vmap(jax.vmap(f))(np.stack([x, x]) if in_axes == 0 else x[None])
    assert nested[0].shape[-1] == 4
    eqns = jax.make_jaxpr(jax.vmap(f, in_axes=in_axes))(x).jaxpr.eqns
    assert [e.params["batch_dims"] for e in eqns if e.primitive.name == "nonzero"] == [1]


def test_nonzero_has_no_tangent() -> None:
    _, t = jax.jvp(lambda v: so.nonzero(v, size=3), (MASKED,), (np.ones_like(MASKED),))
    assert all(ti.dtype == jax.dtypes.float0 for ti in t)


def test_bad_nonzero_input() -> None:
    with pytest.raises(TypeError, match=r"gradrules\.nonzero: size is required"):
        so.nonzero(MASKED)
    with pytest.raises(ValueError, match=r"gradrules\.nonzero: size must be an int >= 0, got -1"):
        so.nonzero(MASKED, size=-1)
    with pytest.raises(TypeError, match=r"gradrules\.nonzero: size must be an int, got 2.0"):
        so.nonzero(MASKED, size=2.0)
    with pytest.raises(TypeError, match=r"gradrules\.nonzero: size must be an int"):
        jax.jit(lambda v, n: so.nonzero(v, size=n))(MASKED, 3)
    with pytest.raises(ValueError, match=r"gradrules\.nonzero: x must have at least one axis"):
        so.nonzero(np.float64(1.0), size=1)
    with pytest.raises(ValueError, match=r"gradrules\.nonzero: fill_value must have 2 "
                                         r"entries, got \(1, 2, 3\)"):
        so.nonzero(MASKED, size=2, fill_value=(1, 2, 3))
    with pytest.raises(TypeError, match=r"gradrules\.nonzero: fill_value must "):
        so.nonzero(MASKED, size=2, fill_value=0.5)
    with pytest.raises(TypeError, match=r"gradrules\.nonzero: argument x is complex"):
        so.nonzero(jnp.ones(3, jnp.complex64), size=2)


def test_sort_keeps_an_explicit_batch_sharding() -> None:
    """The iota sorted along with x has x's sharding (lax.sort needs equal
    ones): values and indices on a one-device mesh with an Explicit ``data``
    axis."""
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((1,), ("data",), axis_types=(AxisType.Explicit,))
    x = np.random.default_rng(6).normal(size=(4, 5))
    with jax.set_mesh(mesh):
        xs = jax.device_put(x, NamedSharding(mesh, P("data")))
        for descending in (False, True):
            values, indices = jax.jit(lambda v: so.sort(v, axis=1, descending=descending))(xs)
            assert jax.typeof(values).sharding.spec == P("data", None)
            assert jax.typeof(indices).sharding.spec == P("data", None)
            np.testing.assert_array_equal(indices, np.argsort(-x if descending else x, 1,
                                                              kind="stable"))
