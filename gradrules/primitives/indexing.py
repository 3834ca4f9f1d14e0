"""Indexing: gather, take, index_select, take_along_axis, scatter_add, embedding,
c_embedding, one_hot, scatter, scatter_reduce, index_put, set_value,
slice_scatter.

Out-of-range indices follow one rule everywhere (the one ``x[i]`` follows in
jax.numpy): a negative index ``i`` counts from the end (``i + n``), then the
index is clipped into ``[0, n - 1]``. Gathers read, and scatters write, the
clipped position. The exception is ``c_embedding``, whose ids outside the
shard give zero rows, and ``one_hot``, whose ids outside ``[0, num_classes)``
give zero rows. Index arrays must have an integer dtype (never cast from
float or bool); one narrower than int32 (int8, uint8, int16, uint16) is
widened to int32 by the public functions, so ``i + n`` and flat positions
cannot overflow in the index's own dtype.

Scatters that overwrite (``scatter``, ``index_put`` without accumulate)
resolve duplicate indices by one deterministic rule: the update that comes
last in row-major order of the index array wins, and only it receives a
gradient.

Some primitives carry a ``batch_dims`` param (leading axes shared by the data
and the index operands, as in ``tf.gather``): the public functions bind 0;
the batching rules add one per vmapped axis, so a batched gather is still one
primitive.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import Primitive, ShapedArray
from ..core.meta import (broadcast_shapes, check_dtype, int_param, int_tuple, normalize_axis,
                         op_name, same_dtype)
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._elementwise import as_array, promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "indexing"


# ------------------------------------------------------------------ helpers
def index_dtype(dtype: Any) -> np.dtype:
    """The dtype index arithmetic runs in: ``dtype``, or int32 where ``dtype``
    is narrower (int8 + n, or a flat position, would wrap around)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int32) if dtype.itemsize < 4 else dtype


def wide_index(index: Array) -> Array:
    """``index`` in ``index_dtype`` (jax.numpy; for the reference lowerings)."""
    dtype = index_dtype(jnp.result_type(index))
    return index if jnp.result_type(index) == dtype else jnp.asarray(index).astype(dtype)


def clip_index(index: Array, n: int) -> Array:
    """The documented rule: negative indices count from the end, then clip."""
    index = wide_index(index)
    index = jnp.where(index < 0, index + n, index)
    return jnp.clip(index, 0, max(n - 1, 0))


def index_arg(op: str, arg: str, index: Any) -> Any:
    """An integer index array (Python ints are accepted; floats and bools are
    not), widened to int32 where its dtype is narrower (``index_dtype``)."""
    index = as_array(op, arg, index)
    if isinstance(index, bool) or not isinstance(index, int) and not jnp.issubdtype(
            jnp.result_type(index), jnp.integer):
        raise TypeError(f"{op_name(op)}: argument {arg} must have an integer dtype, "
                        f"got {jnp.result_type(index)}")
    if isinstance(index, int):
        return jnp.asarray(index)
    dtype = index_dtype(jnp.result_type(index))
    if jnp.result_type(index) == dtype:
        return index
    if isinstance(index, (np.ndarray, np.generic)):
        return np.asarray(index, dtype)
    from .convert import convert_element_type
    return convert_element_type(index, dtype=dtype)


def data_arg(op: str, arg: str, x: Any) -> Any:
    (x,) = promote(op, {arg: x}, "any")
    return x


def vmapped(fn: Callable[..., Array], batch_dims: int) -> Callable[..., Array]:
    """``fn`` mapped over ``batch_dims`` leading axes of every argument."""
    for _ in range(batch_dims):
        fn = jax.vmap(fn)
    return fn


def _check_batch(op: str, a: Any, a_name: str, b: Any, b_name: str, batch_dims: int) -> None:
    if tuple(a.shape[:batch_dims]) != tuple(b.shape[:batch_dims]):
        raise ValueError(f"{op_name(op)}: the {batch_dims} leading batch axes of {a_name} "
                         f"{tuple(a.shape)} and {b_name} {tuple(b.shape)} differ")


def _check_nonempty(op: str, n: int, index: Any, what: str) -> None:
    if n == 0 and math.prod(index.shape) > 0:
        raise ValueError(f"{op_name(op)}: cannot index {what} of size 0 with a non-empty "
                         f"index of shape {tuple(index.shape)}")


# ------------------------------------------- gather, take, index_select
def _take_meta(op: str) -> Callable[..., ShapedArray]:
    def infer_meta(x: Any, index: Any, *, axis: int, batch_dims: int) -> ShapedArray:
        check_dtype(op, "x", x.dtype, "any")
        check_dtype(op, "index", index.dtype, "int")
        if not 0 <= batch_dims <= axis < len(x.shape) or batch_dims > len(index.shape):
            raise ValueError(f"{op_name(op)}: axis={axis} is out of range for x with shape "
                             f"{tuple(x.shape)}")
        _check_batch(op, x, "x", index, "index", batch_dims)
        _check_nonempty(op, x.shape[axis], index, f"axis {axis} of x")
        shape = x.shape[:axis] + index.shape[batch_dims:] + x.shape[axis + 1:]
        return ShapedArray(tuple(shape), x.dtype, weak_type=x.weak_type)
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def _take_impl(x: Array, index: Array, *, axis: int, batch_dims: int) -> Array:
    a = axis - batch_dims

    def take(x: Array, i: Array) -> Array:
        return jnp.take(x, clip_index(i, x.shape[a]), axis=a, mode="clip")
    return vmapped(take, batch_dims)(x, index)


def _take_primitive(name: str) -> Primitive:
    return define_primitive(name, family=FAMILY, operands=("x", "index"),
                            params=("axis", "batch_dims"), infer_meta=_take_meta(name),
                            impl=_take_impl)


gather_p = _take_primitive("gather")
take_p = _take_primitive("take")
index_select_p = _take_primitive("index_select")


def _take_args(op: str, x: ArrayLike, index: ArrayLike, axis: Any, arg: str = "index"
               ) -> tuple[Any, Any, int]:
    x = data_arg(op, "x", x)
    index = index_arg(op, arg, index)
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name(op)}: x must have at least one axis, got a scalar")
    return x, index, normalize_axis(op, axis, np.ndim(x))


def gather(x: ArrayLike, index: ArrayLike, *, axis: int) -> Array:
    """Rows of ``x`` along ``axis`` picked by ``index`` (any shape):
    ``out[a, i..., b] = x[a, index[i...], b]``, shape
    ``x.shape[:axis] + index.shape + x.shape[axis+1:]`` (Paddle's gather, which
    takes a 1-D or 0-D index, is the special case). Out-of-range indices clip.

    Linear in x; ``index`` takes no tangent. The transpose is a scatter-add
    of the cotangent into zeros shaped like x (``scatter_add``).
    """
    x, index, axis = _take_args("gather", x, index, axis)
    return gather_p.bind(x, index, axis=axis, batch_dims=0)


def take(x: ArrayLike, indices: ArrayLike, *, axis: int | None = None) -> Array:
    """``jnp.take(x, indices, axis, mode="clip")`` with negative indices counted
    from the end: ``axis=None`` indexes the flattened x. Linear in x; the
    transpose scatter-adds the cotangent into zeros."""
    if axis is None:
        from .shape import reshape
        x = reshape(data_arg("take", "x", x), (-1,))
        axis = 0
    x, indices, axis = _take_args("take", x, indices, axis, "indices")
    return take_p.bind(x, indices, axis=axis, batch_dims=0)


def index_select(x: ArrayLike, index: ArrayLike, *, axis: int = 0) -> Array:
    """``x`` restricted to the entries ``index`` (1-D) along ``axis`` (torch /
    Paddle index_select). Linear in x; the transpose scatter-adds the
    cotangent, accumulating duplicate indices."""
    x, index, axis = _take_args("index_select", x, index, axis)
    if np.ndim(index) != 1:
        raise ValueError(f"{op_name('index_select')}: index must be 1-D, got shape "
                         f"{np.shape(index)}")
    return index_select_p.bind(x, index, axis=axis, batch_dims=0)


def _wrap(index: Array, n: int) -> Array:
    """Negative indices count from the end (the references clip with mode="clip")."""
    index = wide_index(index)
    return jnp.where(index < 0, index + n, index)


def _reference_take(x: Array, index: Array, *, axis: int | None = None) -> Array:
    if axis is None:
        x, axis = jnp.ravel(x), 0
    return jnp.take(x, _wrap(index, x.shape[axis]), axis=axis, mode="clip")


# ------------------------------------------------------- take_along_axis
def _along_axis_shapes(op: str, x: Any, index: Any, axis: int, what: str = "index") -> None:
    if len(index.shape) != len(x.shape) or not 0 <= axis < len(x.shape):
        raise ValueError(f"{op_name(op)}: {what} with shape {tuple(index.shape)} must have "
                         f"the rank of x with shape {tuple(x.shape)} (axis={axis})")
    bad = [d for d in range(len(x.shape)) if d != axis and index.shape[d] != x.shape[d]]
    if bad:
        raise ValueError(f"{op_name(op)}: {what} with shape {tuple(index.shape)} must match x "
                         f"with shape {tuple(x.shape)} on every axis but axis={axis}")
    _check_nonempty(op, x.shape[axis], index, f"axis {axis} of x")


def _take_along_axis_infer_meta(x: Any, index: Any, *, axis: int) -> ShapedArray:
    check_dtype("take_along_axis", "x", x.dtype, "any")
    check_dtype("take_along_axis", "index", index.dtype, "int")
    _along_axis_shapes("take_along_axis", x, index, axis)
    return ShapedArray(tuple(index.shape), x.dtype, weak_type=x.weak_type)


def _take_along_axis_impl(x: Array, index: Array, *, axis: int) -> Array:
    return jnp.take_along_axis(x, clip_index(index, x.shape[axis]), axis=axis, mode="clip")


take_along_axis_p = define_primitive("take_along_axis", family=FAMILY, operands=("x", "index"),
                                     params=("axis",), infer_meta=_take_along_axis_infer_meta,
                                     impl=_take_along_axis_impl)


def take_along_axis(x: ArrayLike, index: ArrayLike, *, axis: int) -> Array:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``
    (torch.gather): ``index`` has the rank of x and its shape on every other
    axis. Out-of-range indices clip.

    Linear in x; the transpose is ``scatter_add`` of the cotangent into zeros
    with the same index.
    """
    x = data_arg("take_along_axis", "x", x)
    index = index_arg("take_along_axis", "index", index)
    axis = normalize_axis("take_along_axis", axis, np.ndim(x))
    return take_along_axis_p.bind(x, index, axis=axis)


def _reference_take_along_axis(x: Array, index: Array, *, axis: int) -> Array:
    return jnp.take_along_axis(x, index, axis=axis, mode="clip")


# ------------------------------------------------------------ scatter_add
def _scatter_meta(op: str) -> Callable[..., ShapedArray]:
    """infer_meta of the scatters along an axis: ``(x, index, src)``."""
    def infer_meta(x: Any, index: Any, src: Any, *, axis: int, **params: Any) -> ShapedArray:
        dtype = same_dtype(op, {"x": x, "src": src})
        check_dtype(op, "x", dtype, "any")
        check_dtype(op, "index", index.dtype, "int")
        _along_axis_shapes(op, x, index, axis)
        if tuple(index.shape) != tuple(src.shape):
            raise ValueError(f"{op_name(op)}: index with shape {tuple(index.shape)} and src "
                             f"with shape {tuple(src.shape)} must have the same shape")
        return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type and src.weak_type)
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def along_axis_indices(index: Array, axis: int, n: int) -> tuple[Array, ...]:
    """The full index tuple of ``x.at[...]`` for an index along ``axis``."""
    return tuple(clip_index(index, n) if d == axis else
                 lax.broadcasted_iota(index.dtype, index.shape, d) for d in range(index.ndim))


def _scatter_add_impl(x: Array, index: Array, src: Array, *, axis: int) -> Array:
    return x.at[along_axis_indices(index, axis, x.shape[axis])].add(src)


scatter_add_p = define_primitive("scatter_add", family=FAMILY, operands=("x", "index", "src"),
                                 params=("axis",), infer_meta=_scatter_meta("scatter_add"),
                                 impl=_scatter_add_impl)


def scatter_args(op: str, x: ArrayLike, index: ArrayLike, src: ArrayLike, axis: int
                 ) -> tuple[Any, Any, Any, int]:
    x, src = promote(op, {"x": x, "src": src}, "any")
    index = index_arg(op, "index", index)
    return x, index, src, normalize_axis(op, axis, np.ndim(x))


def scatter_add(x: ArrayLike, index: ArrayLike, src: ArrayLike, *, axis: int) -> Array:
    """``out = x``, then ``out[..., index[..., i, ...], ...] += src[..., i, ...]``
    along ``axis`` (torch.scatter_add): ``index`` and ``src`` share one shape,
    which matches x on every other axis. Duplicate indices accumulate;
    out-of-range indices clip.

    Linear in (x, src): the tangent is ``scatter_add(t_x, index, t_src)``; the
    transpose sends the cotangent to x unchanged and
    ``take_along_axis(ct, index)`` to src.
    """
    x, index, src, axis = scatter_args("scatter_add", x, index, src, axis)
    return scatter_add_p.bind(x, index, src, axis=axis)


def dense_scatter(index: Array, src: Array, axis: int, n: int, fill: Any = 0.0) -> Array:
    """Reference helper: ``index.shape`` with ``axis`` replaced by ``n`` plus a
    trailing axis over the entries of ``index`` along ``axis``: the src values
    that land at each target, ``fill`` elsewhere."""
    axis = axis % np.ndim(index)
    hit = jnp.clip(_wrap(index, n), 0, n - 1)[..., None] == jnp.arange(n)
    vals = jnp.where(hit, jnp.asarray(src)[..., None], fill)
    return jnp.moveaxis(vals, (axis, -1), (-1, axis))


def _reference_scatter_add(x: Array, index: Array, src: Array, *, axis: int) -> Array:
    return x + jnp.sum(dense_scatter(index, src, axis, x.shape[axis]), axis=-1)


# -------------------------------------------------------------- embedding
def _check_table(op: str, shape: tuple[int, ...], batch_dims: int, what: str) -> None:
    if len(shape) != 2 + batch_dims:
        raise ValueError(f"{op_name(op)}: weight must be a {what}, got shape {tuple(shape)}")


def _lookup_meta(op: str, ids: Any, weight: Any, batch_dims: int, what: str) -> ShapedArray:
    """infer_meta of a row lookup: ``ids.shape + (dim,)``."""
    check_dtype(op, "ids", ids.dtype, "int")
    check_dtype(op, "weight", weight.dtype, "any")
    _check_table(op, weight.shape, batch_dims, what)
    _check_batch(op, ids, "ids", weight, "weight", batch_dims)
    return ShapedArray(tuple(ids.shape) + (weight.shape[-1],), weight.dtype,
                       weak_type=weight.weak_type)


def _embedding_infer_meta(ids: Any, weight: Any, *, padding_idx: int | None,
                          batch_dims: int) -> ShapedArray:
    out = _lookup_meta("embedding", ids, weight, batch_dims, "[vocab, dim] table")
    _check_nonempty("embedding", weight.shape[batch_dims], ids, "a weight table")
    return out


def _embedding_impl(ids: Array, weight: Array, *, padding_idx: int | None,
                    batch_dims: int) -> Array:
    def lookup(ids: Array, weight: Array) -> Array:
        rows = clip_index(ids, weight.shape[0])
        out = jnp.take(weight, rows, axis=0, mode="clip")
        if padding_idx is None:
            return out
        return jnp.where((rows == padding_idx)[..., None], jnp.zeros((), weight.dtype), out)
    return vmapped(lookup, batch_dims)(ids, weight)


embedding_p = define_primitive("embedding", family=FAMILY, operands=("ids", "weight"),
                               params=("padding_idx", "batch_dims"),
                               infer_meta=_embedding_infer_meta, impl=_embedding_impl)


def embedding(ids: ArrayLike, weight: ArrayLike, *, padding_idx: int | None = None) -> Array:
    """Rows of the table ``weight`` [vocab, dim] picked by ``ids`` (any shape):
    ``out[i..., :] = weight[ids[i...], :]``. Out-of-range ids clip.

    ``padding_idx`` (negative counts from the end) names a padding row: ids
    that pick it give a zero row, so that row never receives a gradient
    (Paddle's embedding). Linear in weight; the transpose scatter-adds the
    cotangent rows into a zero table, accumulating repeated ids.
    """
    ids = index_arg("embedding", "ids", ids)
    weight = data_arg("embedding", "weight", weight)
    _check_table("embedding", np.shape(weight), 0, "[vocab, dim] table")
    if padding_idx is not None:
        vocab = np.shape(weight)[0]
        padding_idx = int_param("embedding", "padding_idx", padding_idx)
        if not -vocab <= padding_idx < vocab:
            raise ValueError(f"{op_name('embedding')}: padding_idx={padding_idx} is out of "
                             f"range for a table of {vocab} rows")
        padding_idx = int(padding_idx) % vocab
    return embedding_p.bind(ids, weight, padding_idx=padding_idx, batch_dims=0)


def _reference_embedding(ids: Array, weight: Array, *, padding_idx: int | None = None
                         ) -> Array:
    rows = jnp.clip(_wrap(ids, weight.shape[0]), 0, weight.shape[0] - 1)
    out = weight[rows]
    if padding_idx is None:
        return out
    return jnp.where((rows == padding_idx % weight.shape[0])[..., None], 0.0, out)


# ------------------------------------------------------------ c_embedding
def _c_embedding_infer_meta(weight: Any, ids: Any, *, start_index: int,
                            batch_dims: int) -> ShapedArray:
    return _lookup_meta("c_embedding", ids, weight, batch_dims, "[rows, dim] shard")


def _c_embedding_impl(weight: Array, ids: Array, *, start_index: int, batch_dims: int) -> Array:
    def lookup(weight: Array, ids: Array) -> Array:
        n = weight.shape[0]
        if n == 0:
            return jnp.zeros(ids.shape + weight.shape[1:], weight.dtype)
        local = wide_index(ids) - start_index
        inside = (local >= 0) & (local < n)
        rows = jnp.take(weight, jnp.clip(local, 0, n - 1), axis=0)
        return jnp.where(inside[..., None], rows, jnp.zeros((), weight.dtype))
    return vmapped(lookup, batch_dims)(weight, ids)


c_embedding_p = define_primitive("c_embedding", family=FAMILY, operands=("weight", "ids"),
                                 params=("start_index", "batch_dims"),
                                 infer_meta=_c_embedding_infer_meta, impl=_c_embedding_impl)


def c_embedding(weight: ArrayLike, ids: ArrayLike, *, start_index: int = 0,
                vocab_size: int = -1) -> Array:
    """Paddle's c_embedding, the lookup in one shard of a vocab-parallel table:
    ``weight`` holds rows ``[start_index, start_index + rows)`` of a
    ``vocab_size`` table (-1: unknown). ``out[i...] = weight[ids[i...] -
    start_index]`` for ids inside the shard and a zero row for every other id
    (no clipping here: those belong to other shards).

    Linear in weight; ids outside the shard receive no gradient. The
    transpose scatter-adds the in-shard cotangent rows into a zero shard.
    """
    weight = data_arg("c_embedding", "weight", weight)
    ids = index_arg("c_embedding", "ids", ids)
    _check_table("c_embedding", np.shape(weight), 0, "[rows, dim] shard")
    start_index = int_param("c_embedding", "start_index", start_index, lo=0)
    vocab_size = int_param("c_embedding", "vocab_size", vocab_size)
    rows = np.shape(weight)[0]
    if vocab_size != -1 and not start_index + rows <= vocab_size:
        raise ValueError(f"{op_name('c_embedding')}: a shard of {rows} rows at start_index="
                         f"{start_index} does not fit a vocabulary of vocab_size={vocab_size}")
    return c_embedding_p.bind(weight, ids, start_index=start_index, batch_dims=0)


def _reference_c_embedding(weight: Array, ids: Array, *, start_index: int = 0,
                           vocab_size: int = -1) -> Array:
    local = wide_index(ids) - start_index
    inside = (local >= 0) & (local < weight.shape[0])
    return jnp.where(inside[..., None], weight[jnp.where(inside, local, 0)], 0.0)


# ---------------------------------------------------------------- one_hot
def _one_hot_infer_meta(x: Any, *, num_classes: int, dtype: np.dtype, axis: int) -> ShapedArray:
    check_dtype("one_hot", "x", x.dtype, "int")
    shape = list(x.shape)
    shape.insert(axis, num_classes)
    return ShapedArray(tuple(shape), dtype)


def _one_hot_impl(x: Array, *, num_classes: int, dtype: np.dtype, axis: int) -> Array:
    return jax.nn.one_hot(x, num_classes, dtype=dtype, axis=axis)


one_hot_p = define_primitive("one_hot", family=FAMILY, operands=("x",),
                             params=("num_classes", "dtype", "axis"),
                             infer_meta=_one_hot_infer_meta, impl=_one_hot_impl)


def one_hot(x: ArrayLike, *, num_classes: int, dtype: Any = None, axis: int = -1) -> Array:
    """``out[..., c, ...] = 1 if x[...] == c else 0`` with the class axis of
    ``num_classes`` at ``axis`` of the result (``jax.nn.one_hot``); ids
    outside ``[0, num_classes)`` give an all-zero row. ``dtype`` defaults to
    the default float dtype. Not differentiable (integer input)."""
    x = index_arg("one_hot", "x", x)
    num_classes = int_param("one_hot", "num_classes", num_classes, lo=0)
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64 if dtype is None else dtype)
    check_dtype("one_hot", "dtype", dtype, "any")
    axis = normalize_axis("one_hot", axis, np.ndim(x) + 1)
    return one_hot_p.bind(x, num_classes=num_classes, dtype=np.dtype(dtype), axis=axis)


# -------------------------------------------------- scatter (overwrite)
def position_dtype(n: int) -> Any:
    """The integer dtype of the positions 0 .. n - 1."""
    return np.int32 if n < 2**31 else np.int64


def last_wins(x: Array, idx: tuple[Array, ...], updates: Array) -> Array:
    """``x.at[idx].set(updates)`` where, among updates that hit the same
    element, the last one in row-major order of the index wins (XLA's
    scatter leaves that order unspecified). ``idx`` indexes the first
    ``len(idx)`` axes of x; ``updates`` has shape ``idx[0].shape + rest``."""
    k, ishape = len(idx), idx[0].shape
    size = math.prod(ishape)
    if size == 0:
        return x
    pos = jnp.arange(size, dtype=position_dtype(size)).reshape(ishape)
    winner = jnp.full(x.shape[:k], -1, pos.dtype).at[idx].max(pos)
    picked = updates.reshape((size,) + x.shape[k:])[jnp.maximum(winner, 0)]
    hit = (winner >= 0).reshape(winner.shape + (1,) * (x.ndim - k))
    return jnp.where(hit, picked, x)


def _scatter_impl(x: Array, index: Array, src: Array, *, axis: int) -> Array:
    return last_wins(x, along_axis_indices(index, axis, x.shape[axis]), src)


scatter_p = define_primitive("scatter", family=FAMILY, operands=("x", "index", "src"),
                             params=("axis",), infer_meta=_scatter_meta("scatter"),
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


# ----------------------------------------------------------- scatter_reduce
SCATTER_REDUCE = ("sum", "prod", "amax", "amin", "mean")


def _scatter_reduce_impl(x: Array, index: Array, src: Array, *, axis: int, reduce: str) -> Array:
    at = x.at[along_axis_indices(index, axis, x.shape[axis])]
    if reduce == "sum":
        return at.add(src)
    if reduce == "prod":
        return at.multiply(src)
    if reduce == "amax":
        return at.max(src)
    if reduce == "amin":
        return at.min(src)
    count = jnp.zeros(x.shape, x.dtype).at[along_axis_indices(index, axis, x.shape[axis])].add(
        jnp.ones((), x.dtype)) + 1
    total = at.add(src)
    return total / count if jnp.issubdtype(x.dtype, jnp.inexact) else lax.div(total, count)


scatter_reduce_p = define_primitive("scatter_reduce", family=FAMILY,
                                    operands=("x", "index", "src"), params=("axis", "reduce"),
                                    infer_meta=_scatter_meta("scatter_reduce"),
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
    if reduce not in SCATTER_REDUCE:
        raise ValueError(f"{op_name('scatter_reduce')}: reduce must be one of "
                         f"{SCATTER_REDUCE}, got {reduce!r}")
    x, index, src, axis = scatter_args("scatter_reduce", x, index, src, axis)
    return scatter_reduce_p.bind(x, index, src, axis=axis, reduce=reduce)


def _reference_scatter_reduce(x: Array, index: Array, src: Array, *, axis: int,
                              reduce: str) -> Array:
    n = x.shape[axis]
    fill = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -jnp.inf, "amin": jnp.inf}[reduce]
    both = jnp.concatenate([jnp.asarray(x)[..., None],
                            dense_scatter(index, src, axis, n, fill)], axis=-1)
    if reduce == "sum":
        return jnp.sum(both, -1)
    if reduce == "prod":
        return jnp.prod(both, -1)
    if reduce == "amax":
        return jnp.max(both, -1)
    if reduce == "amin":
        return jnp.min(both, -1)
    count = jnp.sum(dense_scatter(index, jnp.ones(index.shape), axis, n), -1)
    return jnp.sum(both, -1) / (1 + count)


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
        _check_nonempty("index_put", n, ind, f"axis {i} of x")
    want = tuple(indices[0].shape) + tuple(x.shape[len(indices):])
    if tuple(values.shape) != want:
        raise ValueError(f"{op_name('index_put')}: values with shape {tuple(values.shape)} "
                         f"must have shape {want}")
    return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type and values.weak_type)


def _index_put_impl(x: Array, values: Array, *indices: Array, accumulate: bool) -> Array:
    idx = tuple(clip_index(i, n) for i, n in zip(indices, x.shape))
    return x.at[idx].add(values) if accumulate else last_wins(x, idx, values)


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
    from .shape import broadcast_to
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
    flat = jnp.ravel_multi_index(tuple(jnp.broadcast_to(_wrap(i, n), ishape)
                                       for i, n in zip(indices, lead)), lead, mode="clip")
    rest = x.shape[k:]
    vals = jnp.broadcast_to(values, ishape + rest).reshape((-1,) + rest)
    x2 = jnp.reshape(x, (-1,) + rest)
    hit = flat.reshape(-1)[:, None] == jnp.arange(x2.shape[0])    # [entry, target]
    hit = hit.reshape(hit.shape + (1,) * len(rest))
    if accumulate:
        out = x2 + jnp.sum(jnp.where(hit, vals[:, None], 0.0), axis=0)
    elif flat.size == 0:
        out = x2
    else:
        last = hit.shape[0] - 1 - jnp.argmax(hit[::-1], axis=0)   # last entry per target
        picked = jnp.take_along_axis(vals, jnp.broadcast_to(last, x2.shape), axis=0)
        out = jnp.where(hit.any(0), picked, x2)
    return out.reshape(x.shape)


# ------------------------------------------------ set_value, slice_scatter
def strided_positions(start: int, step: int, count: int) -> tuple[int, int, int, bool]:
    """The ascending ``(lo, hi, stride)`` slice of positions ``start + j *
    step`` for ``j < count``, and whether they are taken in reverse."""
    if count == 0:
        return 0, 0, 1, False
    last = start + (count - 1) * step
    lo = min(start, last)
    return lo, max(start, last) + 1, abs(step), step < 0


def _slices_index(slices: tuple[tuple[int, int, int], ...]) -> tuple[Any, tuple[int, ...]]:
    """The ascending numpy index of ``slices`` and the axes taken in reverse."""
    index, rev = [], []
    for d, s in enumerate(slices):
        lo, hi, stride, reverse = strided_positions(*s)
        index.append(slice(lo, hi, stride))
        if reverse:
            rev.append(d)
    return tuple(index), tuple(rev)


def _slice_update_meta(op: str) -> Callable[..., ShapedArray]:
    def infer_meta(x: Any, value: Any, *, slices: tuple[tuple[int, int, int], ...]
                   ) -> ShapedArray:
        dtype = same_dtype(op, {"x": x, "value": value})
        check_dtype(op, "x", dtype, "any")
        if len(slices) != len(x.shape) or any(
                c < 0 or st == 0 or c and not (0 <= s < n and 0 <= s + (c - 1) * st < n)
                for (s, st, c), n in zip(slices, x.shape)):
            raise ValueError(f"{op_name(op)}: slices {slices} do not fit x with shape "
                             f"{tuple(x.shape)}")
        want = tuple(c for _, _, c in slices)
        if tuple(value.shape) != want:
            raise ValueError(f"{op_name(op)}: the value has shape {tuple(value.shape)} but "
                             f"the slice has shape {want}")
        return ShapedArray(tuple(x.shape), dtype, weak_type=x.weak_type and value.weak_type)
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def _slice_update_impl(x: Array, value: Array, *, slices: tuple[tuple[int, int, int], ...]
                       ) -> Array:
    index, rev = _slices_index(slices)
    return x.at[index].set(jnp.flip(value, rev) if rev else value)


def _slice_update_primitive(name: str) -> Primitive:
    return define_primitive(name, family=FAMILY, operands=("x", "value"), params=("slices",),
                            infer_meta=_slice_update_meta(name), impl=_slice_update_impl)


set_value_p = _slice_update_primitive("set_value")
slice_scatter_p = _slice_update_primitive("slice_scatter")


def _python_slice(op: str, n: int, start: Any, end: Any, step: Any) -> tuple[int, int, int]:
    """Python's slice semantics (bounds clamp): ``(start, step, count)``."""
    start, end, step = (None if v is None else int_param(op, arg, v)
                        for arg, v in (("start", start), ("end", end), ("step", step)))
    if step == 0:
        raise ValueError(f"{op_name(op)}: a step of 0 is not allowed")
    s = slice(start, end, step)
    lo, _, st = s.indices(n)
    return lo, st, len(range(*s.indices(n)))


def _full_slices(x: Any) -> list[tuple[int, int, int]]:
    return [(0, 1, n) for n in np.shape(x)]


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
    from .shape import broadcast_to
    x, value = promote("set_value", {"x": x, "value": value}, "any")
    axes = int_tuple("set_value", "axes", axes)
    starts, ends = int_tuple("set_value", "starts", starts), int_tuple("set_value", "ends", ends)
    steps = (1,) * len(axes) if steps is None else int_tuple("set_value", "steps", steps)
    if not len(starts) == len(ends) == len(steps) == len(axes):
        raise ValueError(f"{op_name('set_value')}: starts, ends, steps and axes must have the "
                         f"same length, got {starts}, {ends}, {steps}, {axes}")
    slices = _full_slices(x)
    for a, s, e, st in zip(axes, starts, ends, steps):
        a = normalize_axis("set_value", a, np.ndim(x), "axes")
        slices[a] = _python_slice("set_value", np.shape(x)[a], s, e, st)
    shape = tuple(c for _, _, c in slices)
    try:
        value = broadcast_to(value, shape)
    except ValueError:
        raise ValueError(f"{op_name('set_value')}: value with shape {np.shape(value)} does not "
                         f"broadcast to the slice shape {shape}") from None
    return set_value_p.bind(x, value, slices=tuple(slices))


def slice_scatter(x: ArrayLike, src: ArrayLike, *, axis: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Array:
    """aten.slice_scatter: x with ``x[..., start:end:step, ...] = src`` at
    ``axis`` (Python slice semantics; src must have the slice's shape
    exactly). Linear in (x, src): x gets zero gradient where it was
    overwritten, src the cotangent's slice."""
    x, src = promote("slice_scatter", {"x": x, "src": src}, "any")
    axis = normalize_axis("slice_scatter", axis, np.ndim(x))
    slices = _full_slices(x)
    slices[axis] = _python_slice("slice_scatter", np.shape(x)[axis], start, end, step)
    want = tuple(c for _, _, c in slices)
    if np.shape(src) != want:
        raise ValueError(f"{op_name('slice_scatter')}: src with shape {np.shape(src)} must "
                         f"have the slice shape {want}")
    return slice_scatter_p.bind(x, src, slices=tuple(slices))


def _reference_set_value(x: Array, value: Array, *, starts: Any, ends: Any, steps: Any = None,
                         axes: Any) -> Array:
    index = [slice(None)] * x.ndim
    steps = [1] * len(list(axes)) if steps is None else list(steps)
    for a, s, e, st in zip(int_tuple("", "", axes), int_tuple("", "", starts),
                           int_tuple("", "", ends), steps):
        index[a] = slice(s, e, st)
    return jnp.asarray(x).at[tuple(index)].set(value)


def _reference_slice_scatter(x: Array, src: Array, *, axis: int = 0, start: Any = None,
                             end: Any = None, step: int = 1) -> Array:
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, end, step)
    return jnp.asarray(x).at[tuple(index)].set(src)


register_op(OpDef("gather", FAMILY, gather, (gather_p,), _reference_take, ("x", "index"),
                  linear=(("x",),), nondiff=("index",)))
register_op(OpDef("take", FAMILY, take, (take_p,), _reference_take, ("x", "indices"),
                  linear=(("x",),), nondiff=("indices",)))
register_op(OpDef("index_select", FAMILY, index_select, (index_select_p,),
                  lambda x, index, *, axis=0: _reference_take(x, index, axis=axis),
                  ("x", "index"), linear=(("x",),), nondiff=("index",)))
register_op(OpDef("take_along_axis", FAMILY, take_along_axis, (take_along_axis_p,),
                  _reference_take_along_axis, ("x", "index"), linear=(("x",),),
                  nondiff=("index",)))
register_op(OpDef("scatter_add", FAMILY, scatter_add, (scatter_add_p,), _reference_scatter_add,
                  ("x", "index", "src"), linear=(("x", "src"),), nondiff=("index",)))
register_op(OpDef("embedding", FAMILY, embedding, (embedding_p,), _reference_embedding,
                  ("ids", "weight"), linear=(("weight",),), nondiff=("ids",)))
register_op(OpDef("c_embedding", FAMILY, c_embedding, (c_embedding_p,), _reference_c_embedding,
                  ("weight", "ids"), linear=(("weight",),), nondiff=("ids",)))
register_op(OpDef("one_hot", FAMILY, one_hot, (one_hot_p,),
                  lambda x, *, num_classes, dtype=None, axis=-1: jax.nn.one_hot(
                      x, num_classes, axis=axis,
                      dtype=jax.dtypes.canonicalize_dtype(jnp.float64 if dtype is None else dtype)),
                  ("x",), nondiff=("x",)))
register_op(OpDef("scatter", FAMILY, scatter, (scatter_p,), _reference_scatter,
                  ("x", "index", "src"), linear=(("x", "src"),), nondiff=("index",)))
register_op(OpDef("scatter_reduce", FAMILY, scatter_reduce, (scatter_reduce_p,),
                  _reference_scatter_reduce, ("x", "index", "src"), nondiff=("index",)))
register_op(OpDef("index_put", FAMILY, index_put, (index_put_p,), _reference_index_put,
                  ("x", "indices", "values"), linear=(("x", "values"),), nondiff=("indices",)))
register_op(OpDef("set_value", FAMILY, set_value, (set_value_p,), _reference_set_value,
                  ("x", "value"), linear=(("x", "value"),)))
register_op(OpDef("slice_scatter", FAMILY, slice_scatter, (slice_scatter_p,),
                  _reference_slice_scatter, ("x", "src"), linear=(("x", "src"),)))
