"""Scatters: scatter_add, scatter, scatter_reduce, index_put, set_value,
slice_scatter.

Indices follow the gather family's rule (``primitives.gather``): a negative
index counts from the end, then it is clipped into ``[0, n - 1]``; scatters
write the position the gathers read. Index arrays must have an integer dtype;
narrower ones are widened to int32 by the public functions.

Scatters that overwrite (``scatter``, ``index_put`` without accumulate)
resolve duplicate indices by one deterministic rule: the update that comes
last in row-major order of the index array wins, and only it receives a
gradient.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import choice_param, int_param, int_tuple
from ..core.dims import Size, python_slice, slice_count
from ..core.meta import broadcast_shapes, check_dtype, normalize_axis, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import index_arg, promote
from .gather import IN_RANGE, check_along_axis, check_nonempty, clip_index, wrap_index
from .reduction import extremum_identity
from .shape import broadcast_to
from .slicing import slice_fits

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "scatter"


# ------------------------------------------------------------------ helpers
def _scatter_infer_meta(op: str, x: Any, index: Any, src: Any, *, axis: int,
                        **params: Any) -> ShapedArray:
    """infer_meta of the scatters along an axis: ``(x, index, src)``."""
    dtype = same_dtype(op, {"x": x, "src": src})
    check_dtype(op, "x", dtype, "any")
    check_dtype(op, "index", index.dtype, "int")
    check_along_axis(op, x, index, axis)
    if tuple(index.shape) != tuple(src.shape):
        raise ValueError(f"{op_name(op)}: index with shape {tuple(index.shape)} and src "
                         f"with shape {tuple(src.shape)} must have the same shape")
    return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type and src.weak_type)


def along_axis(scatter_op: Any, x: Array, index: Array, src: Array, axis: int,
               in_range: bool = False) -> Array:
    """``x`` with ``src`` scattered along ``axis`` at the (clipped) ``index``
    by the lax scatter ``scatter_op`` (``lax.scatter_add``, ...): the other
    axes are batching axes, as in the gather of ``jnp.take_along_axis`` (whose
    transpose this is), so they keep the sharding of x, index and src. An
    index in ``[0, n)`` by construction (``in_range``) is used as it is."""
    batch = tuple(d for d in range(x.ndim) if d != axis)
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(axis,), scatter_dims_to_operand_dims=(axis,),
        operand_batching_dims=batch, scatter_indices_batching_dims=batch)
    if not in_range:
        index = clip_index(index, x.shape[axis])
    return scatter_op(x, index[..., None], src, dnums,
                      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def scatter_args(op: str, x: ArrayLike, index: ArrayLike, src: ArrayLike, axis: int
                 ) -> tuple[Any, Any, Any, int]:
    x, src = promote(op, {"x": x, "src": src}, "any")
    index = index_arg(op, "index", index)
    return x, index, src, normalize_axis(op, axis, np.ndim(x))


def dense_scatter(index: Array, src: Array, axis: int, n: int, fill: Any = 0.0) -> Array:
    """Reference helper: ``index.shape`` with ``axis`` replaced by ``n`` plus a
    trailing axis over the entries of ``index`` along ``axis``: the src values
    that land at each target, ``fill`` elsewhere."""
    axis = axis % np.ndim(index)
    src = jnp.asarray(src)
    hit = clip_index(index, n)[..., None] == jnp.arange(n)
    vals = jnp.where(hit, src[..., None], jnp.asarray(fill, src.dtype))
    return jnp.moveaxis(vals, (axis, -1), (-1, axis))


# ------------------------------------------------------------ scatter_add
def _scatter_add_impl(x: Array, index: Array, src: Array, *, axis: int, in_range: bool
                      ) -> Array:
    return along_axis(lax.scatter_add, x, index, src, axis, in_range)


scatter_add_p = define_primitive("scatter_add", family=FAMILY, operands=("x", "index", "src"),
                                 params=("axis", "in_range"),
                                 infer_meta=partial(_scatter_infer_meta, "scatter_add"),
                                 impl=_scatter_add_impl)


def scatter_add(x: ArrayLike, index: ArrayLike, src: ArrayLike, *, axis: int) -> Array:
    """``out = x``, then ``out[..., index[..., i, ...], ...] += src[..., i, ...]``
    along ``axis`` (torch.scatter_add): ``index`` and ``src`` share one shape,
    which matches x on every other axis. Duplicate indices accumulate;
    out-of-range indices clip.

    Linear in (x, src): the tangent is ``scatter_add(t_x, index, t_src)``; the
    transpose sends the cotangent to x unchanged and
    ``take_along_axis(ct, index)`` to src. The primitive's ``in_range`` param
    (that of take_along_axis, whose transpose binds it) is True only for an
    index in ``[0, n)`` by construction, which is then not clipped.
    """
    x, index, src, axis = scatter_args("scatter_add", x, index, src, axis)
    return scatter_add_p.bind(x, index, src, axis=axis, in_range=False)


def _reference_scatter_add(x: Array, index: Array, src: Array, *, axis: int) -> Array:
    # dtype: jnp.sum widens narrow integers
    return x + jnp.sum(dense_scatter(index, src, axis, x.shape[axis]), axis=-1, dtype=x.dtype)


register_op(OpDef(name="scatter_add", family=FAMILY, fn=scatter_add,
                  primitives=(scatter_add_p,), reference=_reference_scatter_add,
                  operands=("x", "index", "src"), linear=(("x", "src"),),
                  nondiff=("index",)))


# -------------------------------------------------- scatter (overwrite)
def position_dtype(n: int) -> Any:
    """The integer dtype of the positions 0 .. n - 1 (int32 for a symbolic
    ``n``, as JAX's own indexing takes)."""
    return np.int32 if jax.export.is_symbolic_dim(n) or n < 2**31 else np.int64


def last_wins(x: Array, idx: tuple[Array, ...], updates: Array) -> Array:
    """``x.at[idx].set(updates)`` where, among updates that hit the same
    element, the last one in row-major order of the index wins (XLA's
    scatter leaves that order unspecified). ``idx`` indexes the first
    ``len(idx)`` axes of x, clipped into range; ``updates`` has shape
    ``idx[0].shape + rest``."""
    k, ishape = len(idx), idx[0].shape
    size = math.prod(ishape)
    if size == 0:
        return x
    pos = jnp.arange(size, dtype=position_dtype(size)).reshape(ishape)
    winner = jnp.full(x.shape[:k], -1, pos.dtype).at[idx].max(pos, **IN_RANGE)
    picked = updates.reshape((size,) + x.shape[k:])[jnp.maximum(winner, 0)]
    hit = (winner >= 0).reshape(winner.shape + (1,) * (x.ndim - k))
    return jnp.where(hit, picked, x)


def _scatter_impl(x: Array, index: Array, src: Array, *, axis: int) -> Array:
    """``last_wins`` along ``axis``: entries that hit one element share every
    other coordinate, so the last in row-major order is the last along
    ``axis``; the largest axis position scattered onto each element picks it."""
    if index.size == 0:
        return x
    pos = lax.broadcasted_iota(position_dtype(index.shape[axis]), index.shape, axis,
                               out_sharding=jax.typeof(index).sharding)
    winner = along_axis(lax.scatter_max, lax.full_like(x, -1, pos.dtype), index, pos, axis)
    picked = jnp.take_along_axis(src, jnp.maximum(winner, 0), axis=axis, mode="clip")
    return jnp.where(winner >= 0, picked, x)


scatter_p = define_primitive("scatter", family=FAMILY, operands=("x", "index", "src"),
                             params=("axis",), infer_meta=partial(_scatter_infer_meta, "scatter"),
                             impl=_scatter_impl)


def scatter(x: ArrayLike, index: ArrayLike, src: ArrayLike, *, axis: int) -> Array:
    """``out = x``, then ``out[..., index[..., i, ...], ...] = src[..., i, ...]``
    along ``axis`` (torch.scatter; shapes as ``scatter_add``). Duplicate
    indices: the entry that comes last along ``axis`` (row-major order of
    index) wins, deterministically. Out-of-range indices clip.

    Linear in (x, src): the transpose sends x the cotangent with the written
    elements zeroed (``scatter`` of zeros) and src the cotangent gathered at
    the winning entries (0 for the overwritten duplicates).
    """
    x, index, src, axis = scatter_args("scatter", x, index, src, axis)
    return scatter_p.bind(x, index, src, axis=axis)


def _reference_last_along(x: Array, index: Array, src: Array, axis: int) -> tuple[Array, Array]:
    """Reference helper: per target, (whether any entry hits it, the value of
    the last entry that does, along the trailing contributor axis)."""
    n = x.shape[axis]
    hit = dense_scatter(index, jnp.ones(index.shape, bool), axis, n, fill=False)
    vals = dense_scatter(index, src, axis, n)
    k = hit.shape[-1]
    last = k - 1 - jnp.argmax(hit[..., ::-1], axis=-1)
    return hit.any(-1), jnp.take_along_axis(vals, last[..., None], axis=-1)[..., 0]


def _reference_scatter(x: Array, index: Array, src: Array, *, axis: int) -> Array:
    if index.size == 0:
        return jnp.asarray(x)
    any_hit, last = _reference_last_along(x, index, src, axis % x.ndim)
    return jnp.where(any_hit, last, x)


register_op(OpDef(name="scatter", family=FAMILY, fn=scatter, primitives=(scatter_p,),
                  reference=_reference_scatter, operands=("x", "index", "src"),
                  linear=(("x", "src"),), nondiff=("index",)))


# ----------------------------------------------------------- scatter_reduce
SCATTER_REDUCE = ("sum", "prod", "amax", "amin", "mean")
LINEAR_REDUCE = ("sum", "mean")   # the reductions scatter_reduce is linear in (x, src) for


def _scatter_reduce_impl(x: Array, index: Array, src: Array, *, axis: int, reduce: str) -> Array:
    scatter_op = {"prod": lax.scatter_mul, "amax": lax.scatter_max, "amin": lax.scatter_min}
    if reduce in scatter_op:
        return along_axis(scatter_op[reduce], x, index, src, axis)
    total = along_axis(lax.scatter_add, x, index, src, axis)
    if reduce == "sum":
        return total
    count = along_axis(lax.scatter_add, jnp.ones_like(x), index, jnp.ones_like(src), axis)
    return total / count if jnp.issubdtype(x.dtype, jnp.inexact) else lax.div(total, count)


scatter_reduce_p = define_primitive("scatter_reduce", family=FAMILY,
                                    operands=("x", "index", "src"), params=("axis", "reduce"),
                                    infer_meta=partial(_scatter_infer_meta, "scatter_reduce"),
                                    impl=_scatter_reduce_impl)


def scatter_reduce(x: ArrayLike, index: ArrayLike, src: ArrayLike, *, axis: int,
                   reduce: str) -> Array:
    """torch.scatter_reduce with ``include_self=True``: each element of x
    reduced with the src entries scattered onto it along ``axis`` (shapes as
    ``scatter_add``), ``reduce`` in sum / prod / amax / amin / mean (mean
    counts x itself: ``(x + sum) / (1 + count)``, rounded toward zero for
    integers). Out-of-range indices clip.

    sum and mean are linear in (x, src) and have transposes; amax and amin
    share the gradient evenly among the tied candidates (x and the entries);
    prod's first and second derivatives are exact with zeros among the
    factors (the partial of a factor is the product of the others).
    """
    choice_param("scatter_reduce", "reduce", reduce, SCATTER_REDUCE)
    x, index, src, axis = scatter_args("scatter_reduce", x, index, src, axis)
    return scatter_reduce_p.bind(x, index, src, axis=axis, reduce=reduce)


def _reference_scatter_reduce(x: Array, index: Array, src: Array, *, axis: int,
                              reduce: str) -> Array:
    n = x.shape[axis]
    fill = {"sum": 0, "mean": 0, "prod": 1, "amax": extremum_identity("max", src.dtype),
            "amin": extremum_identity("min", src.dtype)}[reduce]
    both = jnp.concatenate([jnp.asarray(x)[..., None],
                            dense_scatter(index, src, axis, n, fill)], axis=-1)
    if reduce == "sum":                # dtype: jnp.sum and prod widen narrow integers
        return jnp.sum(both, -1, dtype=both.dtype)
    if reduce == "prod":
        return jnp.prod(both, -1, dtype=both.dtype)
    if reduce == "amax":
        return jnp.max(both, -1)
    if reduce == "amin":
        return jnp.min(both, -1)
    count = 1 + jnp.sum(dense_scatter(index, jnp.ones(index.shape, both.dtype), axis, n), -1,
                        dtype=both.dtype)
    total = jnp.sum(both, -1, dtype=both.dtype)
    return total / count if jnp.issubdtype(both.dtype, jnp.inexact) else lax.div(total, count)


register_op(OpDef(name="scatter_reduce", family=FAMILY, fn=scatter_reduce,
                  primitives=(scatter_reduce_p,), reference=_reference_scatter_reduce,
                  operands=("x", "index", "src"), nondiff=("index",)))


# --------------------------------------------------------------- index_put
def _index_put_infer_meta(x: Any, values: Any, *indices: Any, accumulate: bool) -> ShapedArray:
    dtype = same_dtype("index_put", {"x": x, "values": values})
    check_dtype("index_put", "x", dtype, "any")
    if not 1 <= len(indices) <= len(x.shape):
        raise ValueError(f"{op_name('index_put')}: needs 1 to {len(x.shape)} index arrays for "
                         f"x with shape {tuple(x.shape)}, got {len(indices)}")
    for i, (ind, n) in enumerate(zip(indices, x.shape)):
        check_dtype("index_put", f"indices[{i}]", ind.dtype, "int")
        if tuple(ind.shape) != tuple(indices[0].shape):
            raise ValueError(f"{op_name('index_put')}: indices[{i}] with shape "
                             f"{tuple(ind.shape)} differs from indices[0] with shape "
                             f"{tuple(indices[0].shape)}")
        check_nonempty("index_put", n, ind, f"axis {i} of x")
    want = tuple(indices[0].shape) + tuple(x.shape[len(indices):])
    if tuple(values.shape) != want:
        raise ValueError(f"{op_name('index_put')}: values with shape {tuple(values.shape)} "
                         f"must have shape {want}")
    return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type and values.weak_type)


def _index_put_impl(x: Array, values: Array, *indices: Array, accumulate: bool) -> Array:
    idx = tuple(clip_index(i, n) for i, n in zip(indices, x.shape))
    if accumulate:
        return x.at[idx].add(values, **IN_RANGE)
    return last_wins(x, idx, values)


index_put_p = define_primitive("index_put", family=FAMILY, operands=("x", "values", "*indices"),
                               params=("accumulate",), infer_meta=_index_put_infer_meta,
                               impl=_index_put_impl)


def index_put(x: ArrayLike, indices: tuple[ArrayLike, ...], values: ArrayLike, *,
              accumulate: bool = False) -> Array:
    """``x[indices] = values`` (or ``+=`` with ``accumulate``), torch's
    index_put: ``indices`` is a tuple of integer arrays that broadcast
    together and index the leading axes of x; ``values`` broadcasts to
    ``index_shape + x.shape[len(indices):]``. Out-of-range indices clip.
    With ``accumulate`` duplicates add up; without it the one that comes
    last in row-major order of the (broadcast) index wins.

    Linear in (x, values). The transpose sends values the cotangent gathered
    at the indices (only at the winning duplicates when overwriting, summed
    over the broadcast axes), and x the cotangent (with the overwritten
    elements zeroed when not accumulating).
    """
    x, values = promote("index_put", {"x": x, "values": values}, "any")
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    if not isinstance(accumulate, bool):
        raise TypeError(f"{op_name('index_put')}: accumulate must be a bool, got "
                        f"{accumulate!r}")
    indices = [index_arg("index_put", f"indices[{i}]", ind) for i, ind in enumerate(indices)]
    if not 1 <= len(indices) <= np.ndim(x):
        raise ValueError(f"{op_name('index_put')}: needs 1 to {np.ndim(x)} index arrays for x "
                         f"with shape {np.shape(x)}, got {len(indices)}")
    ishape = broadcast_shapes("index_put", {f"indices[{i}]": np.shape(ind)
                                            for i, ind in enumerate(indices)})
    vshape = ishape + tuple(np.shape(x)[len(indices):])
    if broadcast_shapes("index_put", {"values": np.shape(values),
                                      "the index shape + the axes of x not indexed": vshape}
                        ) != vshape:
        raise ValueError(f"{op_name('index_put')}: values with shape {np.shape(values)} do "
                         f"not broadcast to {vshape} (the index shape, then the axes of x "
                         f"with shape {np.shape(x)} that are not indexed)")
    indices = [broadcast_to(i, ishape) for i in indices]
    return index_put_p.bind(x, broadcast_to(values, vshape), *indices, accumulate=accumulate)


def _reference_index_put(x: Array, indices: tuple[Array, ...], values: Array, *,
                         accumulate: bool = False) -> Array:
    k = len(indices)
    ishape = jnp.broadcast_shapes(*(jnp.shape(i) for i in indices))
    lead = x.shape[:k]
    flat = jnp.ravel_multi_index(tuple(jnp.broadcast_to(wrap_index(i, n), ishape)
                                       for i, n in zip(indices, lead)), lead, mode="clip")
    rest = x.shape[k:]
    vals = jnp.broadcast_to(values, ishape + rest).reshape((-1,) + rest)
    x2 = jnp.reshape(x, (-1,) + rest)
    hit = flat.reshape(-1)[:, None] == jnp.arange(x2.shape[0])    # [entry, target]
    hit = hit.reshape(hit.shape + (1,) * len(rest))
    if accumulate:
        zero = jnp.zeros((), x2.dtype)          # dtype: in x's integer dtype too
        out = x2 + jnp.sum(jnp.where(hit, vals[:, None], zero), axis=0, dtype=x2.dtype)
    elif flat.size == 0:
        out = x2
    else:
        last = hit.shape[0] - 1 - jnp.argmax(hit[::-1], axis=0)   # last entry per target
        picked = jnp.take_along_axis(vals, jnp.broadcast_to(last, x2.shape), axis=0)
        out = jnp.where(hit.any(0), picked, x2)
    return out.reshape(x.shape)


register_op(OpDef(name="index_put", family=FAMILY, fn=index_put, primitives=(index_put_p,),
                  reference=_reference_index_put,
                  operands=("x", "indices", "values"), linear=(("x", "values"),),
                  nondiff=("indices",)))


# ------------------------------------------------ set_value, slice_scatter
def _slice_fits(start: Size, stop: Size, step: int, n: Size) -> bool:
    """``0 <= start <= stop <= n`` (a positive step) or ``-1 <= stop <=
    start <= n - 1`` (a negative one), for every value of the symbolic
    sizes: the walk from start towards stop stays in the axis."""
    if step > 0:
        return slice_fits((start,), (stop,), (n,))
    return step < 0 and slice_fits((stop + 1,), (start + 1,), (n,))


def _slice_update_infer_meta(op: str, x: Any, value: Any, *,
                             slices: tuple[tuple[Size, Size, int], ...]) -> ShapedArray:
    """infer_meta of set_value and slice_scatter: ``(x, value)`` with
    ``slices`` one ``(start, stop, step)`` per axis of x, as
    ``core.dims.python_slice`` gives it (sizes may be symbolic): the value
    has ``slice_count`` entries on each axis."""
    dtype = same_dtype(op, {"x": x, "value": value})
    check_dtype(op, "x", dtype, "any")
    if len(slices) != len(x.shape) or not all(
            _slice_fits(*s, n) for s, n in zip(slices, x.shape)):
        raise ValueError(f"{op_name(op)}: slices {slices} do not fit x with shape "
                         f"{tuple(x.shape)}")
    want = _slices_shape(slices)
    if tuple(value.shape) != want:
        raise ValueError(f"{op_name(op)}: the value has shape {tuple(value.shape)} but "
                         f"the slice has shape {want}")
    return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type and value.weak_type)


def _slice_update_impl(x: Array, value: Array, *, slices: tuple[tuple[Size, Size, int], ...]
                       ) -> Array:
    """One ``lax.scatter`` (what ``x.at[start:stop:step].set`` builds): an
    axis of step 1 is a window of the value's size at its start (an index
    column only where the start is not 0); any other step is a scatter axis
    whose positions ``start + step * iota(count)`` (descending for a
    negative step) take the value's entries in order. The window and index
    sizes are the value's own (``slice_count``), so symbolic sizes need no
    comparison of two forms of one size."""
    strided = tuple(d for d, (_, _, step) in enumerate(slices) if step != 1)
    indexed = tuple(d for d, (start, _, step) in enumerate(slices) if step != 1 or start != 0)
    grid = tuple(np.shape(value)[d] for d in strided)
    dtype = np.result_type(np.int32, *(position_dtype(n) for n in np.shape(x)))
    columns = []
    for d in indexed:
        start, _, step = slices[d]
        if step == 1:
            columns.append(jnp.full(grid, start, dtype))
        else:
            k = strided.index(d)
            pos = start + step * lax.iota(dtype, grid[k])
            columns.append(lax.broadcast_in_dim(pos, grid, (k,)))
    index = jnp.stack(columns, axis=-1) if columns else jnp.zeros(grid + (0,), dtype)
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(d for d in range(x.ndim) if d not in strided),
        inserted_window_dims=strided, scatter_dims_to_operand_dims=indexed)
    return lax.scatter(x, index, value, dnums, indices_are_sorted=all(
        step > 0 for _, _, step in slices), unique_indices=True,
        mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _python_slice(op: str, n: Size, start: Any, end: Any, step: Any,
                  args: tuple[str, str] = ("start", "end")) -> tuple[Size, Size, int]:
    """Python's slice semantics (bounds clamp): ``(start, stop, step)``
    (``core.dims.python_slice``; the bounds and ``n`` may be symbolic)."""
    start, end = (None if v is None else int_param(op, arg, v, symbolic=True)
                  for arg, v in zip(args, (start, end)))
    step = 1 if step is None else int_param(op, "step", step)
    if step == 0:
        raise ValueError(f"{op_name(op)}: a step of 0 is not allowed")
    return (*python_slice(op, n, start, end, step, args=args), step)


def _slices_shape(slices: Any) -> tuple[Size, ...]:
    return tuple(slice_count(*s) for s in slices)


def _full_slices(x: Any) -> list[tuple[Size, Size, int]]:
    return [(0, n, 1) for n in np.shape(x)]


set_value_p = define_primitive("set_value", family=FAMILY, operands=("x", "value"),
                               params=("slices",),
                               infer_meta=partial(_slice_update_infer_meta, "set_value"),
                               impl=_slice_update_impl)


def set_value(x: ArrayLike, value: ArrayLike, *, starts: Any, ends: Any, steps: Any = None,
              axes: Any) -> Array:
    """Paddle's set_value: ``x[s_0, s_1, ...] = value`` with the slice
    ``starts[i]:ends[i]:steps[i]`` on axis ``axes[i]`` (Python semantics:
    bounds clamp, negative values count from the end, negative steps walk
    backwards; a step of 0 is an error) and ``value`` broadcast to the slice.

    Linear in (x, value): x gets the cotangent with the slice zeroed (zero
    gradient where it was overwritten), value the cotangent's slice summed
    over its broadcast axes.
    """
    x, value = promote("set_value", {"x": x, "value": value}, "any")
    axes = int_tuple("set_value", "axes", axes)
    starts = int_tuple("set_value", "starts", starts, symbolic=True)
    ends = int_tuple("set_value", "ends", ends, symbolic=True)
    steps = (1,) * len(axes) if steps is None else int_tuple("set_value", "steps", steps)
    if not len(starts) == len(ends) == len(steps) == len(axes):
        raise ValueError(f"{op_name('set_value')}: starts, ends, steps and axes must have the "
                         f"same length, got {starts}, {ends}, {steps}, {axes}")
    slices = _full_slices(x)
    for a, s, e, st in zip(axes, starts, ends, steps):
        a = normalize_axis("set_value", a, np.ndim(x), "axes")
        slices[a] = _python_slice("set_value", np.shape(x)[a], s, e, st, ("starts", "ends"))
    shape = _slices_shape(slices)
    try:
        value = broadcast_to(value, shape)
    except ValueError:
        raise ValueError(f"{op_name('set_value')}: value with shape {np.shape(value)} does not "
                         f"broadcast to the slice shape {shape}") from None
    return set_value_p.bind(x, value, slices=tuple(slices))


def _reference_set_value(x: Array, value: Array, *, starts: Any, ends: Any, steps: Any = None,
                         axes: Any) -> Array:
    index = [slice(None)] * x.ndim
    steps = [1] * len(list(axes)) if steps is None else list(steps)
    for a, s, e, st in zip(int_tuple("", "", axes), int_tuple("", "", starts),
                           int_tuple("", "", ends), steps):
        index[a] = slice(s, e, st)
    return jnp.asarray(x).at[tuple(index)].set(value)


register_op(OpDef(name="set_value", family=FAMILY, fn=set_value, primitives=(set_value_p,),
                  reference=_reference_set_value, operands=("x", "value"),
                  linear=(("x", "value"),)))


slice_scatter_p = define_primitive("slice_scatter", family=FAMILY, operands=("x", "value"),
                                   params=("slices",),
                                   infer_meta=partial(_slice_update_infer_meta, "slice_scatter"),
                                   impl=_slice_update_impl)


def slice_scatter(x: ArrayLike, src: ArrayLike, *, axis: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Array:
    """aten.slice_scatter: x with ``x[..., start:end:step, ...] = src`` at
    ``axis`` (Python slice semantics; src must have the slice's shape
    exactly). Under ``jax.export`` the axis and the bounds may be symbolic
    (a bound's sign must be decided); a strided count is ``lax.slice``'s
    expression of it. Linear in (x, src): x gets zero gradient where it was
    overwritten, src the cotangent's slice."""
    x, src = promote("slice_scatter", {"x": x, "src": src}, "any")
    axis = normalize_axis("slice_scatter", axis, np.ndim(x))
    slices = _full_slices(x)
    step = int_param("slice_scatter", "step", step)     # an int, not None
    slices[axis] = _python_slice("slice_scatter", np.shape(x)[axis], start, end, step)
    want = _slices_shape(slices)
    if np.shape(src) != want:
        raise ValueError(f"{op_name('slice_scatter')}: src with shape {np.shape(src)} must "
                         f"have the slice shape {want}")
    return slice_scatter_p.bind(x, src, slices=tuple(slices))


def _reference_slice_scatter(x: Array, src: Array, *, axis: int = 0, start: Any = None,
                             end: Any = None, step: int = 1) -> Array:
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, end, step)
    return jnp.asarray(x).at[tuple(index)].set(src)


register_op(OpDef(name="slice_scatter", family=FAMILY, fn=slice_scatter,
                  primitives=(slice_scatter_p,), reference=_reference_slice_scatter,
                  operands=("x", "src"), linear=(("x", "src"),)))
