"""Strided views: as_strided (torch's ``aten.as_strided``) and its transpose.

JAX arrays have no storage of their own to view, so ``as_strided`` reads x
as the contiguous row-major storage torch would give it: the flat
``storage = ravel(x)``, and ``out[i_0, ..., i_k] = storage[storage_offset +
sum_j i_j * stride_j]``. It is a gather at indices known when tracing: linear
in x, its transpose adds each cotangent element back at the storage position
it was read from (positions read twice, by overlapping windows, add up).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import int_param, int_tuple
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import data_arg

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "strided"


def storage_index(size: tuple[int, ...], stride: tuple[int, ...], storage_offset: int
                  ) -> np.ndarray:
    """``storage_offset + sum_j i_j * stride_j`` at every index ``i`` of ``size``."""
    index = np.full(size, storage_offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(size, stride)):
        index += (np.arange(n) * s).reshape((n,) + (1,) * (len(size) - axis - 1))
    return index


def check_view(op: str, storage: int, size: tuple[int, ...], stride: tuple[int, ...],
               storage_offset: int) -> None:
    """The view stays inside a storage of ``storage`` elements."""
    if len(size) != len(stride):
        raise ValueError(f"{op_name(op)}: size {size} and stride {stride} must have the "
                         "same length")
    if any(n < 0 for n in size) or any(s < 0 for s in stride) or storage_offset < 0:
        raise ValueError(f"{op_name(op)}: size {size}, stride {stride} and storage_offset "
                         f"{storage_offset} must be non-negative")
    if math.prod(size) and storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) \
            >= storage:
        raise ValueError(f"{op_name(op)}: size {size}, stride {stride} and storage_offset "
                         f"{storage_offset} reach past the {storage} elements of x")


def _index_type(storage: int) -> Any:
    return np.int32 if storage < 2 ** 31 else np.int64


# --------------------------------------------------------------- as_strided
def _as_strided_infer_meta(x: Any, *, size: tuple[int, ...], stride: tuple[int, ...],
                           storage_offset: int, batch_dims: int) -> ShapedArray:
    check_dtype("as_strided", "x", x.dtype, "any")
    batch, example = x.shape[:batch_dims], x.shape[batch_dims:]
    check_view("as_strided", math.prod(example), size, stride, storage_offset)
    return ShapedArray(batch + size, x.dtype, weak_type=x.weak_type)


def _as_strided_impl(x: Array, *, size: tuple[int, ...], stride: tuple[int, ...],
                     storage_offset: int, batch_dims: int) -> Array:
    storage = math.prod(x.shape[batch_dims:])
    index = storage_index(size, stride, storage_offset).astype(_index_type(storage))
    flat = x.reshape(x.shape[:batch_dims] + (storage,))
    return flat.at[(slice(None),) * batch_dims + (index,)].get(mode="promise_in_bounds")


as_strided_p = define_primitive("as_strided", family=FAMILY, operands=("x",),
                                params=("size", "stride", "storage_offset", "batch_dims"),
                                infer_meta=_as_strided_infer_meta, impl=_as_strided_impl)
"""as_strided of each of x's trailing ``x.shape[batch_dims:]`` examples (the
leading axes are vmap's, added by the batching rule)."""


def as_strided(x: ArrayLike, size: Any, stride: Any, storage_offset: int = 0) -> Array:
    """torch's ``as_strided`` on x's contiguous row-major storage:
    ``out[i] = ravel(x)[storage_offset + sum_j i_j * stride_j]``, ``out`` of
    shape ``size``. Windows may overlap (``as_strided(v, (3, 2), (1, 1))``
    gives the sliding pairs of v).

    Linear in x: ``d out = as_strided(d x)``; the transpose adds the
    cotangent back at the storage positions it was read from (overlaps add).
    """
    x = data_arg("as_strided", "x", x)
    size = int_tuple("as_strided", "size", size)
    stride = int_tuple("as_strided", "stride", stride)
    storage_offset = int_param("as_strided", "storage_offset", storage_offset)
    check_view("as_strided", math.prod(np.shape(x)), size, stride, storage_offset)
    return as_strided_p.bind(x, size=size, stride=stride, storage_offset=storage_offset,
                             batch_dims=0)


def _reference_as_strided(x: Array, size: Any, stride: Any, storage_offset: int = 0) -> Array:
    return jnp.ravel(x)[storage_index(tuple(size), tuple(stride), storage_offset)]


register_op(OpDef(name="as_strided", family=FAMILY, fn=as_strided, primitives=(as_strided_p,),
                  reference=_reference_as_strided, operands=("x",), linear=(("x",),)))


# ----------------------------------------------------- as_strided_transpose
def _as_strided_transpose_infer_meta(ct: Any, *, shape: tuple[int, ...],
                                     size: tuple[int, ...], stride: tuple[int, ...],
                                     storage_offset: int, batch_dims: int) -> ShapedArray:
    batch = tuple(ct.shape[:batch_dims])
    if tuple(ct.shape[batch_dims:]) != size:
        raise ValueError(f"{op_name('as_strided_transpose')}: ct has shape "
                         f"{tuple(ct.shape)}, not {batch_dims} batch axes and the view's "
                         f"size {size}")
    check_view("as_strided_transpose", math.prod(shape), size, stride, storage_offset)
    return ShapedArray(batch + shape, ct.dtype, weak_type=ct.weak_type)


def _as_strided_transpose_impl(ct: Array, *, shape: tuple[int, ...], size: tuple[int, ...],
                               stride: tuple[int, ...], storage_offset: int,
                               batch_dims: int) -> Array:
    storage = math.prod(shape)
    batch = ct.shape[:batch_dims]
    index = storage_index(size, stride, storage_offset).astype(_index_type(storage))
    flat = jnp.zeros(batch + (storage,), ct.dtype).at[
        (slice(None),) * batch_dims + (index.ravel(),)].add(
        ct.reshape(batch + (index.size,)), mode="promise_in_bounds")
    return flat.reshape(batch + shape)


as_strided_transpose_p = define_primitive(
    "as_strided_transpose", family=FAMILY, operands=("ct",),
    params=("shape", "size", "stride", "storage_offset", "batch_dims"),
    infer_meta=_as_strided_transpose_infer_meta, impl=_as_strided_transpose_impl)
"""The transpose of as_strided: each example of ``ct`` (after ``batch_dims``
leading axes) added into zeros of ``shape`` at the storage positions of the
view (linear; its transpose is as_strided)."""
