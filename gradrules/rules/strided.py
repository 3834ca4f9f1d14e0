"""Rules of the strided family: as_strided is a gather at static storage
positions, linear in x. Its JVP binds it on the tangent, its transpose binds
``as_strided_transpose`` (a scatter-add at the same positions), whose
transpose is as_strided again. Batching moves the batch axis to the front
and counts it in ``batch_dims``, the leading axes the view maps over."""

from __future__ import annotations

from functools import partial
from collections.abc import Sequence
from typing import Any

from .._jax import BatchDim, BatchResult, Cotangent, MaybeUndefined, aval_of
from ..core.primitive import register_rules
from ..primitives.strided import as_strided_p, as_strided_transpose_p
from ._common import bdim_to_front, linear_jvp


def _as_strided_transpose(ct: Cotangent, x: MaybeUndefined, *, size: tuple[int, ...],
                          stride: tuple[int, ...], storage_offset: int,
                          batch_dims: int) -> list[Any]:
    return [as_strided_transpose_p.bind(
        ct, shape=tuple(aval_of(x).shape[batch_dims:]), size=size, stride=stride,
        storage_offset=storage_offset, batch_dims=batch_dims)]


def _as_strided_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, size: tuple[int, ...],
                      stride: tuple[int, ...], storage_offset: int,
                      batch_dims: int) -> BatchResult:
    return as_strided_p.bind(bdim_to_front(args[0], dims[0]), size=size, stride=stride,
                             storage_offset=storage_offset, batch_dims=batch_dims + 1), 0


register_rules(as_strided_p, linear=("x",), jvp=partial(linear_jvp, as_strided_p),
               transpose=_as_strided_transpose, batch=_as_strided_batch)


def _as_strided_transpose_transpose(ct: Cotangent, t: MaybeUndefined, *,
                                    shape: tuple[int, ...], size: tuple[int, ...],
                                    stride: tuple[int, ...], storage_offset: int,
                                    batch_dims: int) -> list[Any]:
    return [as_strided_p.bind(ct, size=size, stride=stride, storage_offset=storage_offset,
                              batch_dims=batch_dims)]


def _as_strided_transpose_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                                shape: tuple[int, ...], size: tuple[int, ...],
                                stride: tuple[int, ...], storage_offset: int,
                                batch_dims: int) -> BatchResult:
    return as_strided_transpose_p.bind(
        bdim_to_front(args[0], dims[0]), shape=shape, size=size, stride=stride,
        storage_offset=storage_offset, batch_dims=batch_dims + 1), 0


register_rules(as_strided_transpose_p, linear=("ct",),
               jvp=partial(linear_jvp, as_strided_transpose_p),
               transpose=_as_strided_transpose_transpose, batch=_as_strided_transpose_batch)
