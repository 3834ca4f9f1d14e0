"""Gathers: gather, take, index_select, take_along_axis, embedding,
c_embedding, one_hot (and the index helpers the scatter and slicing families
share: ``wide_index``, ``clip_index``, ``vmapped``).

Out-of-range indices follow one rule everywhere (the one ``x[i]`` follows in
jax.numpy): a negative index ``i`` counts from the end (``i + n``), then the
index is clipped into ``[0, n - 1]``. Gathers read, and scatters write, the
clipped position. The exception is ``c_embedding``, whose ids outside the
shard give zero rows, and ``one_hot``, whose ids outside ``[0, num_classes)``
give zero rows. Index arrays must have an integer dtype (never cast from
float or bool); one narrower than int32 (int8, uint8, int16, uint16) is
widened to int32 by the public functions, so ``i + n`` and flat positions
cannot overflow in the index's own dtype.

Some primitives carry a ``batch_dims`` param (leading axes shared by the data
and the index operands, as in ``tf.gather``): the public functions bind 0;
the batching rules add one per vmapped axis, so a batched gather is still one
primitive.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import dtype_param, index_dtype, int_param
from ..core.dims import Size, definitely_in, definitely_le, is_constant, max_dim
from ..core.meta import check_dtype, normalize_axis, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import data_arg, index_arg
from .shape import reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "gather"


# ------------------------------------------------------------------ helpers


def wide_index(index: Array) -> Array:
    """``index`` in ``index_dtype`` (jax.numpy; for the reference lowerings)."""
    dtype = index_dtype(jnp.result_type(index))
    return index if jnp.result_type(index) == dtype else jnp.asarray(index).astype(dtype)


def wrap_index(index: Array, n: Size) -> Array:
    """Negative indices count from the end (the references clip with mode="clip")."""
    index = wide_index(index)
    return jnp.where(index < 0, index + n, index)


def clip_index(index: Array, n: Size) -> Array:
    """The documented rule: negative indices count from the end, then clip
    (``n`` may be symbolic)."""
    return jnp.clip(wrap_index(index, n), 0, max_dim(n - 1, 0))


# jax.numpy's indexing options (``.at[idx]``, ``take_along_axis``) for indices
# known to lie in ``[0, n)``: clipped by ``clip_index``, or in range by
# construction (sort's and topk's, the ``in_range`` param of take_along_axis
# and scatter_add). The gather or scatter neither wraps nor clips them.
IN_RANGE: dict[str, Any] = {"mode": "promise_in_bounds", "wrap_negative_indices": False}


def take_clip(x: Array, index: Array, axis: int) -> Array:
    """``jnp.take(x, index, axis, mode="clip")``, shaped
    ``x.shape[:axis] + index.shape + x.shape[axis+1:]`` also where x's axis
    is empty (the index then is too), where jnp.take returns x itself."""
    if x.shape[axis] == 0:
        axis %= x.ndim
        return jnp.zeros((*x.shape[:axis], *index.shape, *x.shape[axis + 1:]), x.dtype)
    return jnp.take(x, index, axis=axis, mode="clip")


def vmapped(fn: Callable[..., Array], batch_dims: int) -> Callable[..., Array]:
    """``fn`` mapped over ``batch_dims`` leading axes of every argument."""
    for _ in range(batch_dims):
        fn = jax.vmap(fn)
    return fn


def _check_batch(op: str, a: Any, a_name: str, b: Any, b_name: str, batch_dims: int) -> None:
    if tuple(a.shape[:batch_dims]) != tuple(b.shape[:batch_dims]):
        raise ValueError(f"{op_name(op)}: the {batch_dims} leading batch axes of {a_name} "
                         f"{tuple(a.shape)} and {b_name} {tuple(b.shape)} differ")


def check_nonempty(op: str, n: int, index: Any, what: str) -> None:
    """An axis of size 0 cannot be indexed by a non-empty index."""
    if n == 0 and math.prod(index.shape) > 0:
        raise ValueError(f"{op_name(op)}: cannot index {what} of size 0 with a non-empty "
                         f"index of shape {tuple(index.shape)}")


def check_along_axis(op: str, x: Any, index: Any, axis: int, what: str = "index") -> None:
    """An index along ``axis`` (take_along_axis, the scatters): the rank of x
    and its shape on every other axis."""
    if len(index.shape) != len(x.shape) or not 0 <= axis < len(x.shape):
        raise ValueError(f"{op_name(op)}: {what} with shape {tuple(index.shape)} must have "
                         f"the rank of x with shape {tuple(x.shape)} (axis={axis})")
    bad = [d for d in range(len(x.shape)) if d != axis and index.shape[d] != x.shape[d]]
    if bad:
        raise ValueError(f"{op_name(op)}: {what} with shape {tuple(index.shape)} must match x "
                         f"with shape {tuple(x.shape)} on every axis but axis={axis}")
    check_nonempty(op, x.shape[axis], index, f"axis {axis} of x")


# ------------------------------------------- gather, take, index_select
def _take_infer_meta(op: str, x: Any, index: Any, *, axis: int, batch_dims: int) -> ShapedArray:
    check_dtype(op, "x", x.dtype, "any")
    check_dtype(op, "index", index.dtype, "int")
    if not 0 <= batch_dims <= axis < len(x.shape) or batch_dims > len(index.shape):
        raise ValueError(f"{op_name(op)}: axis={axis} is out of range for x with shape "
                         f"{tuple(x.shape)}")
    _check_batch(op, x, "x", index, "index", batch_dims)
    check_nonempty(op, x.shape[axis], index, f"axis {axis} of x")
    shape = x.shape[:axis] + index.shape[batch_dims:] + x.shape[axis + 1:]
    return ShapedArray(tuple(shape), x.dtype, weak_type=x.weak_type)


def _take_impl(x: Array, index: Array, *, axis: int, batch_dims: int) -> Array:
    a = axis - batch_dims

    def take(x: Array, i: Array) -> Array:        # the gather clips, as in the reference
        return take_clip(x, wrap_index(i, x.shape[a]), a)
    return vmapped(take, batch_dims)(x, index)


def _take_args(op: str, x: ArrayLike, index: ArrayLike, axis: Any, arg: str = "index"
               ) -> tuple[Any, Any, int]:
    x = data_arg(op, "x", x)
    index = index_arg(op, arg, index)
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name(op)}: x must have at least one axis, got a scalar")
    return x, index, normalize_axis(op, axis, np.ndim(x))


def _reference_take(x: Array, index: Array, *, axis: int | None = None) -> Array:
    if axis is None:
        x, axis = jnp.ravel(x), 0
    return take_clip(x, wrap_index(index, x.shape[axis]), axis)


# The transpose of gather, take, index_select, embedding and c_embedding:
# ``out[a, j, b] = sum over i... with index[i...] -> j of src[a, i..., b]``, out
# shaped like x (``size`` entries along ``axis``), the index wrapped and
# clipped by the same rule as the gathers. Linear in src; its transpose is the
# gather (``gather_p``).
def _take_transpose_infer_meta(src: Any, index: Any, *, axis: int, batch_dims: int,
                               size: int) -> ShapedArray:
    check_dtype("take_transpose", "src", src.dtype, "any")
    check_dtype("take_transpose", "index", index.dtype, "int")
    block = len(index.shape) - batch_dims
    if not 0 <= batch_dims <= axis <= len(src.shape) - block or block < 0:
        raise ValueError(f"{op_name('take_transpose')}: axis={axis} is out of range for src "
                         f"with shape {tuple(src.shape)} and index with shape "
                         f"{tuple(index.shape)}")
    _check_batch("take_transpose", src, "src", index, "index", batch_dims)
    if tuple(src.shape[axis:axis + block]) != tuple(index.shape[batch_dims:]):
        raise ValueError(f"{op_name('take_transpose')}: src with shape {tuple(src.shape)} "
                         f"must hold index's shape {tuple(index.shape[batch_dims:])} at "
                         f"axis={axis}")
    check_nonempty("take_transpose", size, index, f"axis {axis} of the result")
    shape = src.shape[:axis] + (size,) + src.shape[axis + block:]
    return ShapedArray(tuple(shape), src.dtype, weak_type=src.weak_type)


def _take_transpose_impl(src: Array, index: Array, *, axis: int, batch_dims: int,
                         size: int) -> Array:
    """Zeros with the slices of src added at the index along ``axis``: one
    scatter-add of whole slices (jnp.take's transpose), no transposed copy."""
    a = axis - batch_dims

    def add_back(src: Array, i: Array) -> Array:
        out = jnp.zeros((*src.shape[:a], size, *src.shape[a + i.ndim:]), src.dtype)
        if size == 0:
            return out
        return out.at[(slice(None),) * a + (clip_index(i, size),)].add(src, **IN_RANGE)
    return vmapped(add_back, batch_dims)(src, index)


take_transpose_p = define_primitive("take_transpose", family=FAMILY, operands=("src", "index"),
                                    params=("axis", "batch_dims", "size"),
                                    infer_meta=_take_transpose_infer_meta,
                                    impl=_take_transpose_impl)


gather_p = define_primitive("gather", family=FAMILY, operands=("x", "index"),
                            params=("axis", "batch_dims"),
                            infer_meta=partial(_take_infer_meta, "gather"), impl=_take_impl)


def gather(x: ArrayLike, index: ArrayLike, *, axis: int) -> Array:
    """Rows of ``x`` along ``axis`` picked by ``index`` (any shape):
    ``out[a, i..., b] = x[a, index[i...], b]``, shape
    ``x.shape[:axis] + index.shape + x.shape[axis+1:]`` (Paddle's gather, which
    takes a 1-D or 0-D index, is the special case). Out-of-range indices clip.

    Linear in x; ``index`` takes no tangent. The transpose adds the
    cotangent's slices into zeros shaped like x at the indices, whole slices
    along ``axis`` (``take_transpose``).
    """
    x, index, axis = _take_args("gather", x, index, axis)
    return gather_p.bind(x, index, axis=axis, batch_dims=0)


register_op(OpDef(name="gather", family=FAMILY, fn=gather, primitives=(gather_p,),
                  reference=_reference_take, operands=("x", "index"),
                  linear=(("x",),), nondiff=("index",)))


take_p = define_primitive("take", family=FAMILY, operands=("x", "index"),
                          params=("axis", "batch_dims"),
                          infer_meta=partial(_take_infer_meta, "take"), impl=_take_impl)


def take(x: ArrayLike, indices: ArrayLike, *, axis: int | None = None) -> Array:
    """``jnp.take(x, indices, axis, mode="clip")`` with negative indices counted
    from the end: ``axis=None`` indexes the flattened x. Linear in x; the
    transpose scatter-adds the cotangent into zeros."""
    if axis is None:
        x = reshape(data_arg("take", "x", x), (-1,))
        axis = 0
    x, indices, axis = _take_args("take", x, indices, axis, "indices")
    return take_p.bind(x, indices, axis=axis, batch_dims=0)


register_op(OpDef(name="take", family=FAMILY, fn=take, primitives=(take_p,),
                  reference=_reference_take, operands=("x", "indices"),
                  linear=(("x",),), nondiff=("indices",)))


index_select_p = define_primitive("index_select", family=FAMILY, operands=("x", "index"),
                                  params=("axis", "batch_dims"),
                                  infer_meta=partial(_take_infer_meta, "index_select"),
                                  impl=_take_impl)


def index_select(x: ArrayLike, index: ArrayLike, *, axis: int = 0) -> Array:
    """``x`` restricted to the entries ``index`` (1-D) along ``axis`` (torch /
    Paddle index_select). Linear in x; the transpose scatter-adds the
    cotangent, accumulating duplicate indices."""
    x, index, axis = _take_args("index_select", x, index, axis)
    if np.ndim(index) != 1:
        raise ValueError(f"{op_name('index_select')}: index must be 1-D, got shape "
                         f"{np.shape(index)}")
    return index_select_p.bind(x, index, axis=axis, batch_dims=0)


def _reference_index_select(x: Array, index: Array, *, axis: int = 0) -> Array:
    return _reference_take(x, index, axis=axis)


register_op(OpDef(name="index_select", family=FAMILY, fn=index_select,
                  primitives=(index_select_p,), reference=_reference_index_select,
                  operands=("x", "index"), linear=(("x",),), nondiff=("index",)))


# ------------------------------------------------------- take_along_axis
def _take_along_axis_infer_meta(x: Any, index: Any, *, axis: int, in_range: bool
                                ) -> ShapedArray:
    check_dtype("take_along_axis", "x", x.dtype, "any")
    check_dtype("take_along_axis", "index", index.dtype, "int")
    check_along_axis("take_along_axis", x, index, axis)
    return ShapedArray(tuple(index.shape), x.dtype, weak_type=x.weak_type)


def _take_along_axis_impl(x: Array, index: Array, *, axis: int, in_range: bool) -> Array:
    """jnp.take_along_axis wraps negative indices (once) and its gather clips;
    an index in ``[0, n)`` by construction (``in_range``) is read as it is."""
    if in_range:
        return jnp.take_along_axis(x, index, axis=axis, **IN_RANGE)
    return jnp.take_along_axis(x, wide_index(index), axis=axis, mode="clip")


take_along_axis_p = define_primitive("take_along_axis", family=FAMILY, operands=("x", "index"),
                                     params=("axis", "in_range"),
                                     infer_meta=_take_along_axis_infer_meta,
                                     impl=_take_along_axis_impl)


def take_along_axis(x: ArrayLike, index: ArrayLike, *, axis: int) -> Array:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``
    (torch.gather): ``index`` has the rank of x and its shape on every other
    axis. Out-of-range indices clip.

    Linear in x; the transpose is ``scatter_add`` of the cotangent into zeros
    with the same index. The primitive's ``in_range`` param is True only
    where the index lies in ``[0, n)`` by construction (the JVPs of sort and
    topk bind it so): the gather and its transpose then neither wrap nor clip.
    """
    x = data_arg("take_along_axis", "x", x)
    index = index_arg("take_along_axis", "index", index)
    axis = normalize_axis("take_along_axis", axis, np.ndim(x))
    return take_along_axis_p.bind(x, index, axis=axis, in_range=False)


def _reference_take_along_axis(x: Array, index: Array, *, axis: int) -> Array:
    return jnp.take_along_axis(x, index, axis=axis, mode="clip")


register_op(OpDef(name="take_along_axis", family=FAMILY, fn=take_along_axis,
                  primitives=(take_along_axis_p,),
                  reference=_reference_take_along_axis, operands=("x", "index"),
                  linear=(("x",),), nondiff=("index",)))


# -------------------------------------------------------------- embedding
def _for_some(size: Size) -> str:
    """What a failed size check adds to its message where the size is
    symbolic: the check must hold for every value of the symbolic sizes."""
    return "" if is_constant(size) else " for some values of the symbolic sizes"


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
    check_nonempty("embedding", weight.shape[batch_dims], ids, "a weight table")
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
        padding_idx = int(int_param("embedding", "padding_idx", padding_idx))
        if not definitely_in(-vocab, padding_idx, vocab - 1):
            raise ValueError(f"{op_name('embedding')}: padding_idx={padding_idx} is out of "
                             f"range for a table of {vocab} rows{_for_some(vocab)}")
        padding_idx = padding_idx if padding_idx >= 0 else padding_idx + vocab
    return embedding_p.bind(ids, weight, padding_idx=padding_idx, batch_dims=0)


def _reference_embedding(ids: Array, weight: Array, *, padding_idx: int | None = None
                         ) -> Array:
    rows = clip_index(ids, weight.shape[0])
    out = weight[rows]
    if padding_idx is None:
        return out
    return jnp.where((rows == padding_idx % weight.shape[0])[..., None],
                     jnp.zeros((), out.dtype), out)


register_op(OpDef(name="embedding", family=FAMILY, fn=embedding, primitives=(embedding_p,),
                  reference=_reference_embedding, operands=("ids", "weight"),
                  linear=(("weight",),), nondiff=("ids",)))


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
        rows = weight.at[jnp.clip(local, 0, n - 1)].get(**IN_RANGE)
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
    if vocab_size != -1 and not definitely_le(start_index + rows, vocab_size):
        raise ValueError(f"{op_name('c_embedding')}: a shard of {rows} rows at start_index="
                         f"{start_index} does not fit a vocabulary of vocab_size={vocab_size}"
                         f"{_for_some(rows)}")
    return c_embedding_p.bind(weight, ids, start_index=start_index, batch_dims=0)


def _reference_c_embedding(weight: Array, ids: Array, *, start_index: int = 0,
                           vocab_size: int = -1) -> Array:
    local = wide_index(ids) - start_index
    inside = (local >= 0) & (local < weight.shape[0])
    return jnp.where(inside[..., None], weight[jnp.where(inside, local, 0)],
                     jnp.zeros((), weight.dtype))


register_op(OpDef(name="c_embedding", family=FAMILY, fn=c_embedding,
                  primitives=(c_embedding_p,), reference=_reference_c_embedding,
                  operands=("weight", "ids"), linear=(("weight",),),
                  nondiff=("ids",)))


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


def _one_hot_dtype(dtype: Any) -> Any:
    """The dtype of the result: the default float dtype when None."""
    return jax.dtypes.canonicalize_dtype(
        dtype_param("one_hot", "dtype", jnp.float64 if dtype is None else dtype))


def one_hot(x: ArrayLike, *, num_classes: int, dtype: Any = None, axis: int = -1) -> Array:
    """``out[..., c, ...] = 1 if x[...] == c else 0`` with the class axis of
    ``num_classes`` at ``axis`` of the result (``jax.nn.one_hot``); ids
    outside ``[0, num_classes)`` give an all-zero row. ``dtype`` defaults to
    the default float dtype. Not differentiable (integer input)."""
    x = index_arg("one_hot", "x", x)
    num_classes = int_param("one_hot", "num_classes", num_classes, lo=0)
    dtype = _one_hot_dtype(dtype)
    axis = normalize_axis("one_hot", axis, np.ndim(x) + 1)
    return one_hot_p.bind(x, num_classes=num_classes, dtype=np.dtype(dtype), axis=axis)


def _reference_one_hot(x: Array, *, num_classes: int, dtype: Any = None, axis: int = -1
                       ) -> Array:
    return jax.nn.one_hot(x, num_classes, axis=axis, dtype=_one_hot_dtype(dtype))


register_op(OpDef(name="one_hot", family=FAMILY, fn=one_hot, primitives=(one_hot_p,),
                  reference=_reference_one_hot, operands=("x",), nondiff=("x",)))
