"""Rules of the slicing family. Every primitive here is linear in its array
data (``dynamic_slice`` in x, ``dynamic_update_slice`` in (x, update); the
start indices take no tangent): the JVP binds it on the tangents
(``linear_jvp``) and each transpose is made of slicing and layout primitives
(slice -> pad, select / row_slice -> pad, dynamic_slice <->
dynamic_update_slice, split -> concatenate), so derivatives of any order are
compositions of catalog primitives. Batching rules move the batch axis to the
front and bind the primitive once."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from .._jax import (Array, BatchDim, BatchResult, Cotangent, MaybeUndefined, aval_of,
                    is_undefined_primal)
from ..core.dims import Size, strided_extent
from ..core.primitive import register_rules
from ..primitives._compose import zeros
from ..primitives.layout import concatenate_p, pad_p
from ..primitives.shape import expand_dims_p
from ..primitives.slicing import (dynamic_slice_p, dynamic_update_slice_p, row_slice_p,
                                  select_p, slice_p, split_p)
from ._common import bdim_to_front, instantiate, linear_jvp, shifted_front_batch
from .layout import pad_axis


# ------------------------------------------------------------------- slice
def _slice_transpose(ct: Cotangent, x: MaybeUndefined, *, start_indices: tuple[Size, ...],
                     limit_indices: tuple[Size, ...], strides: tuple[int, ...]) -> list[Any]:
    """ct padded back into place: ``start`` zeros before, ``stride - 1``
    between the m taken entries, and after them the rest of the axis (it
    ends ``strided_extent(m, stride) = (m - 1) * stride + 1`` past
    ``start``, nothing for m = 0; sizes may be symbolic)."""
    widths = []
    for lo, m, s, n in zip(start_indices, aval_of(ct).shape, strides, aval_of(x).shape):
        real_limit = lo + strided_extent(m, s)
        widths.append((lo, n - real_limit, s - 1))
    return [pad_p.bind(ct, zeros((), aval_of(ct).dtype), widths=tuple(widths), mode="constant")]


def _slice_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                 start_indices: tuple[Size, ...], limit_indices: tuple[Size, ...],
                 strides: tuple[int, ...]) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    return slice_p.bind(x, start_indices=(0,) + start_indices,
                        limit_indices=(aval_of(x).shape[0],) + limit_indices,
                        strides=(1,) + strides), 0


register_rules(slice_p, linear=("x",),
               jvp=partial(linear_jvp, slice_p), transpose=_slice_transpose,
               batch=_slice_batch)


# --------------------------------------------------------- row_slice, select
def _select_transpose(ct: Cotangent, x: MaybeUndefined, *, axis: int, index: int) -> list[Any]:
    ct = expand_dims_p.bind(ct, axes=(axis,))
    return [pad_axis(ct, axis, index, aval_of(x).shape[axis] - 1 - index)]


register_rules(row_slice_p, linear=("x",),
               jvp=partial(linear_jvp, row_slice_p), transpose=_select_transpose,
               batch=partial(shifted_front_batch, row_slice_p, ("axis",)))
register_rules(select_p, linear=("x",),
               jvp=partial(linear_jvp, select_p), transpose=_select_transpose,
               batch=partial(shifted_front_batch, select_p, ("axis",)))


# ------------------------------------------ dynamic_slice / dynamic_update_slice
def _dynamic_slice_transpose(ct: Cotangent, x: MaybeUndefined, starts: Array, *,
                             slice_sizes: tuple[int, ...], batch_dims: int) -> list[Any]:
    z = zeros(aval_of(x).shape, aval_of(ct).dtype)
    return [dynamic_update_slice_p.bind(z, ct, starts, batch_dims=batch_dims), None]


register_rules(dynamic_slice_p, linear=("x",), jvp=partial(linear_jvp, dynamic_slice_p),
               transpose=_dynamic_slice_transpose,
               batch=partial(shifted_front_batch, dynamic_slice_p, ("batch_dims",)))


def _dynamic_update_slice_transpose(ct: Cotangent, x: MaybeUndefined, update: MaybeUndefined,
                                    starts: Array, *, batch_dims: int) -> list[Any]:
    ushape = aval_of(update).shape
    ct_x = ct_u = None
    if is_undefined_primal(x):
        ct_x = dynamic_update_slice_p.bind(ct, zeros(ushape, aval_of(ct).dtype), starts,
                                           batch_dims=batch_dims)
    if is_undefined_primal(update):
        ct_u = dynamic_slice_p.bind(ct, starts, slice_sizes=ushape[batch_dims:],
                                    batch_dims=batch_dims)
    return [ct_x, ct_u, None]


register_rules(dynamic_update_slice_p, linear=("x", "update"),
               jvp=partial(linear_jvp, dynamic_update_slice_p),
               transpose=_dynamic_update_slice_transpose,
               batch=partial(shifted_front_batch, dynamic_update_slice_p, ("batch_dims",)))


# ------------------------------------------------------------------- split
def _split_transpose(cts: Sequence[Cotangent], x: MaybeUndefined, *, sizes: tuple[int, ...],
                     axis: int) -> list[Any]:
    """The pieces' cotangents joined back (zeros for the unused pieces: an
    entry of ``cts`` may be a symbolic zero)."""
    return [concatenate_p.bind(*(instantiate(c, c) for c in cts), axis=axis)]


register_rules(split_p, linear=("x",),
               jvp=partial(linear_jvp, split_p), transpose=_split_transpose,
               batch=partial(shifted_front_batch, split_p, ("axis",)))
