"""Layout: pad modes and their transposes at the borders, the pad value as
a differentiable operand, tile's grad and double grad (the seed yaml),
tensor_unfold's overlapping windows, repeat and flip, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradrules.primitives import layout as lo
from gradrules.primitives import reduction as red
from gradrules.testing.check import check

from _helpers import mode_costs, vjp_of

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, (3, 4))


# --------------------------------------------------------------------- pad
def test_pad_modes_match_torch_reflection_and_replication_pads() -> None:
    x = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)    # NCHW
    # reflection_pad2d(x, (left=3, right=1, top=2, bottom=2)): no edge repeated
    got = lo.pad(x, ((0, 0), (0, 0), (2, 2), (3, 1)), mode="reflect")
    rows = [2, 1, 0, 1, 2, 1, 0]
    cols = [3, 2, 1, 0, 1, 2, 3, 2]
    np.testing.assert_array_equal(got[0, 0], x[0, 0][np.ix_(rows, cols)])
    # replication_pad3d repeats the edge on each side
    y = np.arange(8.0).reshape(1, 1, 2, 2, 2)
    got = lo.pad(y, ((0, 0), (0, 0), (1, 0), (0, 2), (3, 1)), mode="replicate")
    idx = [np.array([0, 0, 1]), np.array([0, 1, 1, 1]), np.array([0, 0, 0, 0, 1, 1])]
    np.testing.assert_array_equal(got[0, 0], y[0, 0][np.ix_(*idx)])


@pytest.mark.parametrize("mode,widths", [
    ("reflect", ((2, 2), (3, 3))),      # the widest: n - 1 on both sides
    ("reflect", ((0, 1), (1, 0))),
    ("replicate", ((3, 2), (0, 4))),
    ("constant", ((2, 0), (1, 3))),
])
def test_pad_transposes_fold_the_borders_back(mode, widths) -> None:
    """The cotangent of every copy lands on the element it copies, as in the
    transpose of the gather that ``jnp.pad`` is."""
    got, w = vjp_of(lambda x: lo.pad(x, widths, mode=mode), X)
    np_mode = {"replicate": "edge"}.get(mode, mode)
    want, _ = vjp_of(lambda x: jnp.pad(x, widths, mode=np_mode), X, w)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    # the same through jax.linear_transpose (the dot-product identity)
    ct = RNG.standard_normal(np.shape(lo.pad(X, widths, mode=mode)))
    (tx,) = jax.linear_transpose(lambda x: lo.pad(x, widths, mode=mode), X)(ct)
    np.testing.assert_allclose(np.vdot(lo.pad(X, widths, mode=mode), ct), np.vdot(X, tx),
                               rtol=1e-12)


def test_pad_replicate_border_sums_every_copy() -> None:
    g, _ = vjp_of(lambda x: lo.pad(x, (2, 3), mode="replicate"), np.zeros(3), np.ones(8))
    np.testing.assert_array_equal(g, [3.0, 1.0, 4.0])


def test_pad_value_is_a_differentiable_operand() -> None:
    x = RNG.uniform(-1, 1, (2, 3))
    out = lo.pad(x, ((1, 0), (2, 1)), value=0.5)
    np.testing.assert_array_equal(out, np.pad(x, ((1, 0), (2, 1)), constant_values=0.5))
    gv = jax.grad(lambda v: red.sum(lo.pad(x, ((1, 0), (2, 1)), value=v) ** 2))(0.5)
    np.testing.assert_allclose(gv, 2 * 0.5 * (out.size - x.size), rtol=1e-14)
    # (x, value) jointly through the checker: fd to order 2, vmap of a
    # batched value, closure and the Hessian
    report = check(lambda x, v: lo.pad(x, ((1, 0), (2, 1)), value=v), x, np.float64(0.5),
                   checks=["fd", "vmap", "closure", "hessian_symmetry"])
    report.raise_if_failed()
    # pad is linear in (x, value) jointly
    ct = RNG.standard_normal(out.shape)
    tx, tv = jax.linear_transpose(lambda x, v: lo.pad(x, ((1, 0), (2, 1)), value=v), x,
                                  np.float64(0.5))(ct)
    np.testing.assert_allclose(np.vdot(out, ct), np.vdot(x, tx) + 0.5 * tv, rtol=1e-12)


def test_pad_value_takes_the_dtype_of_x() -> None:
    x = np.ones(2, np.float32)
    assert lo.pad(x, 1, value=jnp.asarray(2.0, jnp.float64)).dtype == np.float32
    assert lo.pad(np.arange(2), 1, value=7).dtype == np.arange(2).dtype


def test_pad_value_has_no_effect_outside_the_constant_mode() -> None:
    g = jax.grad(lambda v: red.sum(lo.pad(X, 1, mode="reflect", value=v)))(2.0)
    assert g == 0.0


# -------------------------------------------------------------------- tile
def test_tile_grad_and_double_grad_are_the_seed_yaml_ones() -> None:
    """tile_grad sums the cotangent over the tiles; tile_double_grad =
    tile(grad_x_grad), both by composition (to order 3 in the sample table)."""
    x, reps = RNG.uniform(-1, 1, (2, 3)), (3, 2)
    out_grad = RNG.standard_normal((6, 6))
    x_grad, _ = vjp_of(lambda x: lo.tile(x, repeat_times=reps), x, out_grad)
    np.testing.assert_allclose(x_grad, out_grad.reshape(3, 2, 2, 3).sum((0, 2)), rtol=1e-14)

    def tile_grad(g):
        return jax.vjp(lambda x: lo.tile(x, repeat_times=reps), x)[1](g)[0]

    grad_x_grad = RNG.standard_normal((2, 3))
    (grad_out_grad,) = jax.linear_transpose(tile_grad, out_grad)(grad_x_grad)
    np.testing.assert_allclose(grad_out_grad, np.tile(grad_x_grad, reps), rtol=1e-14)


def test_tile_adds_leading_axes_and_pads_short_repeat_times() -> None:
    x = np.arange(3.0)
    np.testing.assert_array_equal(lo.tile(x, repeat_times=(2, 1, 2)), np.tile(x, (2, 1, 2)))
    y = np.ones((2, 3))
    np.testing.assert_array_equal(lo.tile(y, repeat_times=2), np.tile(y, 2))


# ----------------------------------------------------------- tensor_unfold
def test_tensor_unfold_windows_and_the_fold_adds_overlaps() -> None:
    x = np.arange(7.0)
    out = lo.tensor_unfold(x, axis=0, size=3, step=2)
    np.testing.assert_array_equal(out, [[0, 1, 2], [2, 3, 4], [4, 5, 6]])
    g, _ = vjp_of(lambda x: lo.tensor_unfold(x, axis=0, size=3, step=2), x, np.ones((3, 3)))
    np.testing.assert_array_equal(g, [1, 1, 2, 1, 2, 1, 1])     # windows holding each x
    # a gap between windows: the elements no window holds get zero
    g, _ = vjp_of(lambda x: lo.tensor_unfold(x, axis=0, size=2, step=3), x, np.ones((2, 2)))
    np.testing.assert_array_equal(g, [1, 1, 0, 1, 1, 0, 0])
    np.testing.assert_array_equal(lo.tensor_fold(out, axis=0, size=3, step=2, length=7),
                                  x * [1, 1, 2, 1, 2, 1, 1])


def test_tensor_unfold_of_a_middle_axis() -> None:
    x = RNG.uniform(-1, 1, (2, 5, 3))
    out = lo.tensor_unfold(x, axis=-2, size=2, step=1)
    assert out.shape == (2, 4, 3, 2)
    np.testing.assert_array_equal(out[:, 1, :, 0], x[:, 1])
    np.testing.assert_array_equal(out[:, 1, :, 1], x[:, 2])


@pytest.mark.parametrize("shape, kw", [
    ((300, 64), dict(axis=0, size=2, step=3)),      # gaps between the windows
    ((40, 90), dict(axis=-1, size=8, step=3)),      # overlapping windows
])
def test_tensor_unfold_grad_costs_no_more_than_jax_numpys(shape, kw) -> None:
    """The fold (unfold's transpose) adds whole blocks of the windows back
    with pads, in one fused pass, not a scatter-add through an index table
    (a transposed copy of the windows, a zeros buffer and the scatter: 3x
    the bytes, and temp memory): bytes and temp within the bench's bar of
    jax.numpy's gradient (stacked window slices), the same values."""
    x = jnp.asarray(RNG.standard_normal(shape), jnp.float32)
    fns = (lambda a: lo.tensor_unfold(a, **kw), lambda a: lo._reference_tensor_unfold(a, **kw))
    (ours, got), (ref, want) = mode_costs("grad", fns, x)
    assert ours.bytes_accessed <= 1.1 * ref.bytes_accessed
    assert ours.temp_bytes <= ref.temp_bytes + 2**20
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape, kw", [
    ((76, 3, 3), dict(axis=-1, size=3, step=1, length=5)),
    ((100, 30, 4), dict(axis=0, size=4, step=3, length=301)),
])
def test_tensor_fold_costs_no_more_than_jax_numpys(shape, kw) -> None:
    """tensor_fold forward against jax.numpy's transposed window slices:
    bytes and temp within the bench's bar, the same values."""
    y = jnp.asarray(RNG.standard_normal(shape), jnp.float32)
    fns = (lambda a: lo.tensor_fold(a, **kw), lambda a: lo._reference_tensor_fold(a, **kw))
    (ours, got), (ref, want) = mode_costs("forward", fns, y)
    assert ours.bytes_accessed <= 1.1 * ref.bytes_accessed
    assert ours.temp_bytes <= ref.temp_bytes + 2**20
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------- repeat, flip
def test_repeat_sums_the_copies() -> None:
    g, w = vjp_of(lambda x: lo.repeat(x, repeats=(2, 0, 1), axis=0), np.ones((3, 2)))
    np.testing.assert_array_equal(g, [w[0] + w[1], [0, 0], w[2]])
    np.testing.assert_array_equal(lo.repeat(np.arange(3.0), repeats=2), np.repeat(
        np.arange(3.0), 2))


def test_repeat_by_counts_grad_adds_whole_slices() -> None:
    """With one count per element, repeat's transpose adds the cotangent's
    slices back at each copy's source (take_transpose: one index per slice),
    as jnp.repeat's gradient does: no more bytes or temp memory than it
    (an index broadcast to the cotangent's shape, scatter-added element by
    element, took 2.5x the bytes and a temp of 3 cotangents), and its values."""
    x = jnp.asarray(RNG.standard_normal((200, 96)), jnp.float32)
    reps = tuple(int(r) for r in np.arange(200) % 3)
    fns = (lambda a: lo.repeat(a, repeats=reps, axis=0),
           lambda a: jnp.repeat(a, np.array(reps), axis=0, total_repeat_length=sum(reps)))
    (ours, got), (ref, want) = mode_costs("grad", fns, x)
    assert ours.bytes_accessed <= 1.01 * ref.bytes_accessed
    assert ours.temp_bytes <= ref.temp_bytes + 2**12
    assert ours.flops <= ref.flops
    np.testing.assert_array_equal(got[0], want[0])


def test_flip() -> None:
    np.testing.assert_array_equal(lo.flip(X, axis=(0, -1)), X[::-1, ::-1])
    np.testing.assert_array_equal(lo.flip(X, axis=None), X[::-1, ::-1])


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_stack_is_jax_numpys_and_its_transpose_selects(axis) -> None:
    xs = [RNG.standard_normal((2, 3)) for _ in range(3)]
    want = np.stack(xs, axis=axis)
    np.testing.assert_array_equal(lo.stack(xs, axis=axis), want)
    ct = RNG.standard_normal(want.shape)
    fn = lambda *v: lo.stack(v, axis=axis)  # noqa: E731
    got = jax.linear_transpose(fn, *xs)(ct)
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g, np.take(ct, i, axis))
    names = {e.primitive.name for e in jax.make_jaxpr(jax.linear_transpose(fn, *xs))(ct).jaxpr.eqns}
    assert names == {"select"}, names
    assert lo.stack((np.float64(1.0), 2)).dtype == np.float64


@pytest.mark.parametrize("shift, axis", [
    (1, None), (-7, None), (2, 0), (-1, -1), ((1, 2), (0, 1)), ((1, -3, 2), (1, 0, 1)),
    (3, (0, 1)), ((1, 2), 1), (0, 1), (4, 0)])
def test_roll_is_jax_numpys_and_its_transpose_rolls_back(shift, axis) -> None:
    x = RNG.standard_normal((3, 4))
    want = np.roll(x, shift, axis)
    np.testing.assert_array_equal(lo.roll(x, shift, axis), want)
    fn = lambda v: lo.roll(v, shift, axis)  # noqa: E731
    (g,) = jax.linear_transpose(fn, x)(want)
    np.testing.assert_array_equal(g, x)
    names = {e.primitive.name for e in jax.make_jaxpr(jax.linear_transpose(fn, x))(want)
             .jaxpr.eqns}
    # the pieces of ct padded back into place and added (jnp.roll's transpose):
    # no gather, scatter or dot, and no second slices-and-concatenate roll
    assert names <= {"split", "pad", "add", "reshape"}, names


def test_roll_of_an_empty_axis_and_of_a_scalar() -> None:
    np.testing.assert_array_equal(lo.roll(np.ones((0, 2)), 3, 0), np.ones((0, 2)))
    np.testing.assert_array_equal(lo.roll(np.float64(2.0), 1), 2.0)


def test_roll_and_stack_vmap_bind_once() -> None:
    x = RNG.standard_normal((2, 3, 4))
    for name, fn, args in (("roll", lambda v: lo.roll(v, (1, 2), (0, 1)), (x,)),
                           ("stack", lambda u, v: lo.stack([u, v], axis=-1), (x, x + 1))):
        for axis in (0, 1, 2):
            vfn = jax.vmap(fn, in_axes=axis)
            assert sum(e.primitive.name == name
                       for e in jax.make_jaxpr(vfn)(*args).jaxpr.eqns) == 1
            loop = np.stack([fn(*[np.take(a, i, axis) for a in args])
                             for i in range(x.shape[axis])])
            np.testing.assert_array_equal(vfn(*args), loop)


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("op,fn,msg", [
    ("tensor_unfold", lambda: lo.tensor_unfold(X, axis=0, size=2, step=0),
     r"size=2 and step=0 must be positive \(a step of 0 is not allowed\)"),
    ("tensor_unfold", lambda: lo.tensor_unfold(X, axis=0, size=0, step=1),
     "size=0 and step=1 must be positive"),
    ("tensor_unfold", lambda: lo.tensor_unfold(X, axis=0, size=4, step=1),
     "size=4 is larger than axis 0 of size 3"),
    ("pad", lambda: lo.pad(X, ((1, -1), (0, 0))), "pad_width must not be negative"),
    ("pad", lambda: lo.pad(X, 3, mode="reflect"),
     r"mode='reflect' pads an axis of size 3 by at most 2 on each side, got \(3, 3\)"),
    ("pad", lambda: lo.pad(np.ones((0, 2)), 1, mode="replicate"),
     "mode='replicate' cannot pad an axis of size 0"),
    ("pad", lambda: lo.pad(X, 1, mode="wrap"), "mode must be one of"),
    ("pad", lambda: lo.pad(X, ((1, 1),) * 3), r"pad_width .* is not an int"),
    ("pad", lambda: lo.pad(X, 1, value=np.ones(2)), r"value must be a scalar, got shape \(2,\)"),
    ("tile", lambda: lo.tile(X, repeat_times=(2, -1)), "repeat_times must not be negative"),
    ("repeat", lambda: lo.repeat(X, repeats=-2, axis=0), "repeats must not be negative"),
    ("repeat", lambda: lo.repeat(X, repeats=(1, 2), axis=0), "repeats must have 3 entries"),
    ("concatenate", lambda: lo.concatenate([X, np.ones((2, 3))]),
     r"arrays\[1\] with shape \(2, 3\) does not match arrays\[0\] with shape \(3, 4\)"),
    ("concatenate", lambda: lo.concatenate([X, X], axis=2), "axis=2 is out of range"),
    ("flip", lambda: lo.flip(X, axis=2), "axis=2 is out of range"),
    ("tensor_unfold", lambda: lo.tensor_unfold(X, axis=2, size=1, step=1),
     "axis=2 is out of range"),
    ("repeat", lambda: lo.repeat(X, repeats=1, axis=-3), "axis=-3 is out of range"),
    ("stack", lambda: lo.stack([X, np.ones((4, 3))]),
     r"arrays\[1\] with shape \(4, 3\) differs from arrays\[0\] with shape \(3, 4\)"),
    ("stack", lambda: lo.stack([X, X], axis=3), "axis=3 is out of range"),
    ("roll", lambda: lo.roll(X, (1, 2, 3), (0, 1)), r"shift \(1, 2, 3\) and axis \(0, 1\) do "
                                                  "not broadcast"),
    ("roll", lambda: lo.roll(X, 1, 2), "axis=2 is out of range"),
])
def test_bad_input_is_a_value_error_naming_the_op(op, fn, msg) -> None:
    with pytest.raises(ValueError, match=rf"gradrules.{op}: {msg}"):
        fn()


@pytest.mark.parametrize("op,fn,msg", [
    ("tile", lambda: lo.tile(X, repeat_times=(2.0,)), "repeat_times must hold ints"),
    ("pad", lambda: lo.pad(X, 1.5), "pad_width must hold ints"),
    ("stack", lambda: lo.stack(X), "arrays must be a non-empty list or tuple of arrays"),
    ("roll", lambda: lo.roll(X, 1.5), "shift must hold ints"),
    ("roll", lambda: jax.jit(lambda x, s: lo.roll(x, s))(X, 1), "shift must be a static int"),
])
def test_bad_types_are_a_type_error_naming_the_op(op, fn, msg) -> None:
    with pytest.raises(TypeError, match=rf"gradrules.{op}: {msg}"):
        fn()


def test_repeat_by_one_count_is_a_broadcast() -> None:
    """repeat with one count compiles to a broadcast and a reshape (no
    gather, no arithmetic), as jnp.repeat with a Python int."""
    from gradrules.bench import compiled_costs
    x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 96)), jnp.float32)
    ours = compiled_costs(lambda v: lo.repeat(v, repeats=2, axis=-1), x)
    ref = compiled_costs(lambda v: jnp.repeat(v, 2, axis=-1), x)
    assert ours.flops == ref.flops == 0 and ours.temp_bytes == ref.temp_bytes
    np.testing.assert_array_equal(lo.repeat(x, repeats=2, axis=-1),
                                  jnp.repeat(x, 2, axis=-1))


def test_roll_grad_costs_no_more_than_jax_numpys() -> None:
    """roll's transpose is jnp.roll's transposed slices and concatenate (per
    axis, the two pieces of the cotangent padded back into place and added:
    one fused pass), not a second slices-and-concatenate roll, which keeps a
    copy of a piece: no more temp memory, bytes or FLOPs than jax.numpy's
    gradient, and the same values."""
    x = jnp.asarray(RNG.standard_normal((96, 160)), jnp.float32)
    for shift, axis in ((7, 1), ((5, -3), (0, 1)), (-11, None)):
        fns = (lambda a: lo.roll(a, shift, axis), lambda a: jnp.roll(a, shift, axis))
        (ours, got), (ref, want) = mode_costs("grad", fns, x)
        assert ours.temp_bytes <= ref.temp_bytes + 2**12, (shift, axis)
        assert ours.bytes_accessed <= 1.01 * ref.bytes_accessed, (shift, axis)
        assert ours.flops <= 1.01 * ref.flops, (shift, axis)
        np.testing.assert_array_equal(got[0], want[0])
