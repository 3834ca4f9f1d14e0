"""The segment family (jax.ops semantics): values against jax.ops, dropped
out-of-range ids, empty segments (sum and mean 0, max / min the identity),
the tie rule of max / min's derivative, segment_sum's gather transpose, vmap
with batched ids, and the errors for bad input."""

from functools import partial

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules._jax import iter_eqns
from gradrules.primitives import segment as sg

rng = np.random.default_rng(0)
DATA = rng.normal(size=(6, 2))
IDS = np.array([3, 0, 3, -1, 7, 0])          # segment 1 and 2 empty; -1 and 7 dropped
N = 4


@pytest.mark.parametrize("name", ["segment_sum", "segment_max", "segment_min"])
def test_values_match_jax_ops(name):
    ours = getattr(sg, name)(DATA, IDS, num_segments=N)
    ref = getattr(jax.ops, name)(DATA, IDS, num_segments=N)
    np.testing.assert_array_equal(ours, ref)
    ints = np.arange(6, dtype=np.int32)
    np.testing.assert_array_equal(getattr(sg, name)(ints, IDS, num_segments=N),
                                  getattr(jax.ops, name)(ints, IDS, num_segments=N))
    assert getattr(gradrules, name) is getattr(sg, name)


def test_empty_segments_hold_the_identity():
    assert np.all(np.asarray(sg.segment_sum(DATA, IDS, num_segments=N))[1:3] == 0)
    assert np.all(np.asarray(sg.segment_mean(DATA, IDS, num_segments=N))[1:3] == 0)
    assert np.all(np.asarray(sg.segment_max(DATA, IDS, num_segments=N))[1:3] == -np.inf)
    assert np.all(np.asarray(sg.segment_min(DATA, IDS, num_segments=N))[1:3] == np.inf)
    assert sg.segment_sum(np.zeros((0, 3)), np.zeros(0, int), num_segments=2).shape == (2, 3)
    assert sg.segment_sum(DATA, IDS, num_segments=0).shape == (0, 2)


def test_segment_mean_is_sum_over_count():
    mean = sg.segment_mean(DATA, IDS, num_segments=N)
    np.testing.assert_allclose(mean[0], DATA[[1, 5]].mean(0), rtol=1e-15)
    np.testing.assert_allclose(mean[3], DATA[[0, 2]].mean(0), rtol=1e-15)
    g = jax.grad(lambda d: sg.segment_mean(d, IDS, num_segments=N).sum())(DATA)
    np.testing.assert_allclose(g[:, 0], [0.5, 0.5, 0.5, 0.0, 0.0, 0.5])


def test_segment_sum_transposes_to_a_gather():
    """Its VJP is ct[ids] (0 for the dropped rows), one segment_take; and the
    gather's VJP is segment_sum again (the second derivative stays in the
    family)."""
    ct = rng.normal(size=(N, 2))
    _, vjp = jax.vjp(lambda d: sg.segment_sum(d, IDS, num_segments=N), DATA)
    (g,) = vjp(ct)
    want = np.where((IDS >= 0) & (IDS < N), 1.0, 0.0)[:, None] * ct[np.clip(IDS, 0, N - 1)]
    np.testing.assert_array_equal(g, want)
    jaxpr = jax.make_jaxpr(vjp)(ct)
    names = [e.primitive.name for e in iter_eqns(jaxpr.jaxpr)]
    assert "segment_take" in names and "scatter-add" not in names
    (back,) = jax.linear_transpose(vjp, ct)((g,))
    np.testing.assert_allclose(back, jax.ops.segment_sum(g, IDS, num_segments=N))


def test_segment_take_batches_over_a_symbolic_segment_count():
    """vmap of segment_take (the gather of segment_sum's transpose) with
    batched ids folds the batch into the segment axis, ids offset by the
    segment count: exported with symbolic batch and segment sizes, its value
    and gradient equal the direct computation at two sizes of each (id -1,
    and 5 at n = 4, out of range: they read 0)."""
    ids = np.array([[0], [2], [5], [-1]], np.int32)

    def loss(x):                                   # x [b, n, 3]
        bids = jnp.broadcast_to(ids, x.shape[:1] + ids.shape)
        return jnp.sum(jax.vmap(sg.segment_take_p.bind)(x, bids) ** 2)

    program = jax.jit(jax.value_and_grad(loss))
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, n, 3"), np.float32)
    exported = jax.export.export(program)(spec)
    for b, n in [(2, 4), (3, 7)]:
        x = rng.uniform(-1, 1, (b, n, 3)).astype(np.float32)
        for got, want in zip(exported.call(x), program(x)):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_max_ties_share_the_gradient_like_the_max_reduction():
    data = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 5.0])
    ids = np.array([0, 0, 0, 1, 1, 9])
    g = jax.jit(jax.grad(lambda d: sg.segment_max(d, ids, num_segments=3).sum()))(data)
    np.testing.assert_allclose(g, [0, 0.5, 0.5, 0, 1, 0])
    # the max reduction splits ties the same way
    np.testing.assert_allclose(jax.grad(lambda d: gradrules.max(d))(data[:3]), g[:3])
    gmin = jax.jit(jax.grad(lambda d: sg.segment_min(d, ids, num_segments=3).sum()))(-data)
    np.testing.assert_allclose(gmin, g)
    t = jax.jvp(lambda d: sg.segment_max(d, ids, num_segments=3), (data,), (np.ones(6),))[1]
    np.testing.assert_allclose(t, [1.0, 1.0, 0.0])      # the empty segment: tangent 0
    h = jax.jit(jax.hessian(lambda d: sg.segment_max(d, ids, num_segments=3).sum()))(data)
    np.testing.assert_array_equal(h, 0.0)


def test_derivatives_against_jax_ops_where_distinct():
    data = rng.permutation(12).reshape(6, 2) * 0.5
    for name in ("segment_sum", "segment_max", "segment_min"):
        ours = jax.jit(jax.jacrev(partial(getattr(sg, name), segment_ids=IDS,
                                          num_segments=N)))(data)
        ref = jax.jit(jax.jacfwd(partial(getattr(jax.ops, name), segment_ids=IDS,
                                         num_segments=N)))(data)
        np.testing.assert_array_equal(ours, np.nan_to_num(ref))   # jax.ops: NaN at empties


@pytest.mark.parametrize("name", ["segment_sum", "segment_max", "segment_min",
                                  "segment_mean"])
def test_vmap_with_batched_ids_and_data(name):
    fn = getattr(sg, name)
    data = rng.normal(size=(3, 5, 2))
    ids = np.array([[0, 1, 1, 2, 7], [2, 2, 2, 0, -3], [1, 0, 1, 0, 1]])
    loop = np.stack([fn(data[k], ids[k], num_segments=3) for k in range(3)])
    np.testing.assert_array_equal(jax.vmap(lambda d, i: fn(d, i, num_segments=3))(data, ids),
                                  loop)
    loop = np.stack([fn(data[0], ids[k], num_segments=3) for k in range(3)])
    np.testing.assert_array_equal(jax.vmap(lambda i: fn(data[0], i, num_segments=3))(ids),
                                  loop)
    loop = np.stack([fn(data[:, :, k].T, ids[0], num_segments=3) for k in range(2)], 1)
    got = jax.vmap(lambda d: fn(d, ids[0], num_segments=3), in_axes=2, out_axes=1)(
        data.transpose(1, 0, 2))
    np.testing.assert_array_equal(got, loop)
    def loss(d, i):
        return jnp.sum(fn(d, i, num_segments=3) ** 2)
    grads = jax.vmap(jax.grad(loss))(data, ids)
    loop = np.stack([jax.grad(loss)(data[k], ids[k]) for k in range(3)])
    np.testing.assert_allclose(np.nan_to_num(grads), np.nan_to_num(loop), rtol=1e-14)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sg.segment_sum(DATA, IDS), TypeError, "num_segments"),
    (lambda: sg.segment_sum(DATA, IDS, num_segments=2.0), TypeError,
     "gradrules.segment_sum: num_segments must be an int"),
    (lambda: sg.segment_sum(DATA, IDS, num_segments=-1), ValueError,
     "gradrules.segment_sum: num_segments must be an int >= 0"),
    (lambda: sg.segment_max(DATA, IDS[:5], num_segments=2), ValueError,
     r"gradrules.segment_max: segment_ids must be 1-D .* shape \(5,\) and data with shape"),
    (lambda: sg.segment_min(DATA, IDS.reshape(2, 3), num_segments=2), ValueError,
     "gradrules.segment_min: segment_ids must be 1-D"),
    (lambda: sg.segment_sum(DATA, IDS.astype(float), num_segments=2), TypeError,
     "gradrules.segment_sum: argument segment_ids must have an integer dtype"),
    (lambda: sg.segment_mean(np.arange(6), IDS, num_segments=2), TypeError,
     "gradrules.segment_mean"),
    (lambda: sg.segment_sum(np.float64(1.0), np.zeros(1, int), num_segments=2), ValueError,
     "gradrules.segment_sum: data must have at least one axis"),
])
def test_errors_name_the_op_and_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
