"""Segment reductions (jax.ops): segment_sum, segment_max, segment_min,
segment_mean, and segment_take, the gather that segment_sum's transpose is.

``data`` has its segments along axis 0: ``segment_ids`` is a 1-D integer array
of length ``data.shape[0]`` naming the segment of each row, in any order, with
repeats. ``num_segments`` is a static int (jax.ops can infer it from the
values of the ids; a traced shape cannot, so here it is required). The
result has shape ``(num_segments,) + data.shape[1:]``. As jax.ops (its
default ``mode``, FILL_OR_DROP): a row whose id is out of range, negative
included, is dropped. An empty segment holds the identity of the reduction:
0 for sum and mean (not 0 / 0), -inf / +inf for max / min on floats (the
dtype's smallest / largest value on integers), as jax.ops gives.
jax.ops' ``indices_are_sorted`` / ``unique_indices`` / ``bucket_size`` hints
are not taken.

The primitives take the ids in the form of a scatter's index array, shape
``[n, 1]`` (the public functions add the axis), as jax.ops' scatter-add and
the gather of its transpose do: the forward and the transpose then share one
index array, through which XLA places a row-sharded data's cotangent as it
places data.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray, aval_of
from ..core.args import int_param
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .arithmetic import maximum
from .convert import data_arg, index_arg
from .shape import expand_dims_p

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "segment"


# ------------------------------------------------------------------ helpers
def _check_ids(op: str, data: Any, ids: Any, data_name: str = "data") -> None:
    check_dtype(op, "segment_ids", ids.dtype, "int")
    if len(data.shape) < 1:
        raise ValueError(f"{op_name(op)}: {data_name} must have at least one axis, got a "
                         "scalar")
    if len(ids.shape) != 1 or ids.shape[0] != data.shape[0]:
        raise ValueError(f"{op_name(op)}: segment_ids must be 1-D with one id per row of "
                         f"{data_name}, got segment_ids with shape {tuple(ids.shape)} and "
                         f"{data_name} with shape {tuple(data.shape)}")


def _check_index(op: str, ids: Any, rows: int | None = None) -> None:
    """The ids of a primitive: an integer index array ``[n, 1]`` (n = rows)."""
    check_dtype(op, "segment_ids", ids.dtype, "int")
    if len(ids.shape) != 2 or ids.shape[1] != 1 or rows is not None and ids.shape[0] != rows:
        want = f"({rows}, 1)" if rows is not None else "(n, 1)"
        raise ValueError(f"{op_name(op)}: the primitive takes segment_ids with shape {want} "
                         f"(a scatter index), got {tuple(ids.shape)}")


def segment_index(ids: Any) -> Any:
    """1-D ids ``[n]`` as the primitives take them: ``[n, 1]``."""
    return expand_dims_p.bind(ids, axes=(1,))


def _ids(index: Array) -> Array:
    """The ``[n, 1]`` index as jax.ops takes the ids, ``[n]`` (its scatter
    takes that index array back, reshaped: XLA places the two alike)."""
    return jax.lax.squeeze(index, (1,))


def _segment_meta(op: str, kind: str, data: Any, segment_ids: Any, *, num_segments: int
                  ) -> ShapedArray:
    """``(num_segments,) + data.shape[1:]``, data of dtype class ``kind``."""
    check_dtype(op, "data", data.dtype, kind)
    if len(data.shape) < 1:
        raise ValueError(f"{op_name(op)}: data must have at least one axis, got a scalar")
    _check_index(op, segment_ids, data.shape[0])
    return ShapedArray((num_segments,) + tuple(data.shape[1:]), data.dtype,
                       weak_type=data.weak_type)


def _segment_args(op: str, data: ArrayLike, segment_ids: ArrayLike, num_segments: Any,
                  kind: str) -> tuple[Any, Any, int]:
    """Validate a call: data (rank >= 1, dtype class ``kind``), 1-D integer
    ids, one per row, and a static int num_segments >= 0."""
    data = data_arg(op, "data", data)
    check_dtype(op, "data", jnp.result_type(data), kind)
    ids = index_arg(op, "segment_ids", segment_ids)
    _check_ids(op, aval_of(data), aval_of(ids))
    return data, ids, int_param(op, "num_segments", num_segments, lo=0)


def _define(name: str, kind: str, impl: Callable[..., Array]) -> Any:
    return define_primitive(name, family=FAMILY, operands=("data", "segment_ids"),
                            params=("num_segments",),
                            infer_meta=partial(_segment_meta, name, kind), impl=impl)


def segment_counts(segment_ids: Any, num_segments: int, like: Any) -> Any:
    """The number of rows of each segment (``segment_ids`` ``[n, 1]``, as the
    primitives take them), in the dtype of ``like`` and shaped
    to broadcast against it (``(num_segments, 1, ...)``), at least 1 (so an
    empty segment divides by 1): gradrules ops."""
    aval = aval_of(like)
    ones = np.ones(np.shape(segment_ids)[:1], aval.dtype)
    count = maximum(segment_sum_p.bind(ones, segment_ids, num_segments=num_segments), 1.0)
    extra = len(aval.shape) - 1
    return expand_dims_p.bind(count, axes=tuple(range(1, 1 + extra))) if extra else count


# -------------------------------------------------------------- segment_sum
def _segment_sum_impl(data: Array, segment_ids: Array, *, num_segments: int) -> Array:
    return jax.ops.segment_sum(data, _ids(segment_ids), num_segments)


segment_sum_p = _define("segment_sum", "numeric", _segment_sum_impl)


def segment_sum(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int) -> Array:
    """``out[s] = sum_{i: segment_ids[i] == s} data[i]`` (jax.ops.segment_sum);
    0 for an empty segment, out-of-range ids dropped.

    Linear in data; segment_ids takes no tangent. The transpose is the gather
    ``segment_take(ct, segment_ids)`` (``ct[segment_ids[i]]``, 0 for a dropped
    row), whose transpose is segment_sum again.
    """
    data, ids, n = _segment_args("segment_sum", data, segment_ids, num_segments, "numeric")
    return segment_sum_p.bind(data, segment_index(ids), num_segments=n)


def _segment_sum_reference(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int
                           ) -> Array:
    return jax.ops.segment_sum(data, segment_ids, num_segments)


# ------------------------------------------------------------- segment_take
def _segment_take_meta(x: Any, segment_ids: Any) -> ShapedArray:
    op = "segment_take"
    check_dtype(op, "x", x.dtype, "numeric")
    if len(x.shape) < 1:
        raise ValueError(f"{op_name(op)}: x must have an axis of segments, got a scalar")
    _check_index(op, segment_ids)
    return ShapedArray(tuple(segment_ids.shape[:1]) + tuple(x.shape[1:]), x.dtype,
                       weak_type=x.weak_type)


def _segment_take_impl(x: Array, segment_ids: Array) -> Array:
    n = x.shape[0]
    shape = segment_ids.shape[:1] + x.shape[1:]
    if n == 0:
        return jnp.zeros(shape, x.dtype)
    # The gather of jax.ops.segment_sum's transpose (its index, dimension
    # numbers and mode): out-of-range rows, negative ids included, filled
    # with 0.
    dnums = jax.lax.GatherDimensionNumbers(offset_dims=tuple(range(1, x.ndim)),
                                           collapsed_slice_dims=(0,), start_index_map=(0,))
    return jax.lax.gather(x, segment_ids, dnums, (1,) + x.shape[1:],
                          mode=jax.lax.GatherScatterMode.FILL_OR_DROP, fill_value=0)


segment_take_p = define_primitive("segment_take", family=FAMILY, operands=("x", "segment_ids"),
                                  infer_meta=_segment_take_meta, impl=_segment_take_impl)

register_op(OpDef(name="segment_sum", family=FAMILY, fn=segment_sum,
                  primitives=(segment_sum_p, segment_take_p),
                  reference=_segment_sum_reference, operands=("data", "segment_ids"),
                  linear=(("data",),), nondiff=("segment_ids",)))


# ------------------------------------------------------ segment_max and min
def _segment_max_impl(data: Array, segment_ids: Array, *, num_segments: int) -> Array:
    return jax.ops.segment_max(data, _ids(segment_ids), num_segments)


def _segment_min_impl(data: Array, segment_ids: Array, *, num_segments: int) -> Array:
    return jax.ops.segment_min(data, _ids(segment_ids), num_segments)


segment_max_p = _define("segment_max", "numeric", _segment_max_impl)
segment_min_p = _define("segment_min", "numeric", _segment_min_impl)


def segment_max(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int) -> Array:
    """``out[s] = max_{i: segment_ids[i] == s} data[i]`` (jax.ops.segment_max);
    -inf for an empty float segment (the dtype's minimum for integers),
    out-of-range ids dropped.

    d out[s] / d data[i] = [segment_ids[i] == s and data[i] == out[s]] /
    count_s, count_s the number of rows of s equal to out[s]: ties share the
    gradient evenly, as the ``max`` reduction's; an empty segment's tangent
    is 0.
    """
    data, ids, n = _segment_args("segment_max", data, segment_ids, num_segments, "numeric")
    return segment_max_p.bind(data, segment_index(ids), num_segments=n)


def segment_min(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int) -> Array:
    """``out[s] = min_{i: segment_ids[i] == s} data[i]`` (jax.ops.segment_min);
    +inf for an empty float segment (the dtype's maximum for integers),
    out-of-range ids dropped. The derivative as ``segment_max``'s: ties share
    the gradient evenly."""
    data, ids, n = _segment_args("segment_min", data, segment_ids, num_segments, "numeric")
    return segment_min_p.bind(data, segment_index(ids), num_segments=n)


def _segment_max_reference(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int
                           ) -> Array:
    return jax.ops.segment_max(data, segment_ids, num_segments)


def _segment_min_reference(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int
                           ) -> Array:
    return jax.ops.segment_min(data, segment_ids, num_segments)


register_op(OpDef(name="segment_max", family=FAMILY, fn=segment_max,
                  primitives=(segment_max_p,), reference=_segment_max_reference,
                  operands=("data", "segment_ids"), nondiff=("segment_ids",)))
register_op(OpDef(name="segment_min", family=FAMILY, fn=segment_min,
                  primitives=(segment_min_p,), reference=_segment_min_reference,
                  operands=("data", "segment_ids"), nondiff=("segment_ids",)))


# ------------------------------------------------------------- segment_mean
def _mean_counts(segment_ids: Array, num_segments: int, ndim: int, dtype: Any) -> Array:
    count = jax.ops.segment_sum(jnp.ones(segment_ids.shape, dtype), segment_ids,
                                num_segments)
    return jnp.maximum(count, 1).reshape((num_segments,) + (1,) * (ndim - 1))


def _segment_mean_impl(data: Array, segment_ids: Array, *, num_segments: int) -> Array:
    total = _segment_sum_impl(data, segment_ids, num_segments=num_segments)
    count = _segment_sum_impl(jnp.ones(segment_ids.shape[:1], data.dtype), segment_ids,
                              num_segments=num_segments)
    shape = (num_segments,) + (1,) * (data.ndim - 1)
    return total / jnp.maximum(count, 1).reshape(shape)


segment_mean_p = _define("segment_mean", "float", _segment_mean_impl)


def segment_mean(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int) -> Array:
    """``out[s] = segment_sum(data)[s] / count_s``, count_s the number of rows
    with id s; 0 for an empty segment (the sum 0 divided by 1, not 0 / 0),
    out-of-range ids dropped (and not counted). jax.ops has no segment_mean:
    the reference is segment_sum divided by the clipped count.

    Linear in data; the transpose is ``segment_take(ct / count, segment_ids)``.
    """
    data, ids, n = _segment_args("segment_mean", data, segment_ids, num_segments, "float")
    return segment_mean_p.bind(data, segment_index(ids), num_segments=n)


def _segment_mean_reference(data: ArrayLike, segment_ids: ArrayLike, *, num_segments: int
                            ) -> Array:
    data = jnp.asarray(data)
    ids = jnp.asarray(segment_ids)
    return (jax.ops.segment_sum(data, ids, num_segments)
            / _mean_counts(ids, num_segments, data.ndim, data.dtype))


register_op(OpDef(name="segment_mean", family=FAMILY, fn=segment_mean,
                  primitives=(segment_mean_p, segment_take_p),
                  reference=_segment_mean_reference, operands=("data", "segment_ids"),
                  linear=(("data",),), nondiff=("segment_ids",)))
