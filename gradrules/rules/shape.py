"""Rules of the shape family. All these primitives are linear: the JVP binds
the primitive on the tangent, and each transpose is another shape primitive."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import BatchDim, BatchResult, Cotangent, MaybeUndefined
from ..core.primitive import register_rules
from ..primitives._compose import unbroadcast
from ..primitives.reduction import sum_p
from ..primitives.shape import (broadcast_in_dim_p, broadcast_to_p, expand_dims_p, reshape_p,
                                squeeze_p, transpose_p)
from ._common import bdim_to_front, linear_jvp


# reshape -------------------------------------------------------------------
def _reshape_transpose(ct: Cotangent, x: MaybeUndefined, *, new_sizes: tuple[int, ...]
                       ) -> list[Any]:
    return [reshape_p.bind(ct, new_sizes=tuple(x.aval.shape))]


def _reshape_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                   new_sizes: tuple[int, ...]) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    return reshape_p.bind(x, new_sizes=(np.shape(x)[0],) + new_sizes), 0


register_rules(reshape_p, linear=("x",),
               jvp=partial(linear_jvp, reshape_p), transpose=_reshape_transpose,
               batch=_reshape_batch)


# transpose -----------------------------------------------------------------
def _transpose_transpose(ct: Cotangent, x: MaybeUndefined, *, permutation: tuple[int, ...]
                         ) -> list[Any]:
    return [transpose_p.bind(ct, permutation=tuple(int(i) for i in np.argsort(permutation)))]


def _transpose_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                     permutation: tuple[int, ...]) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    return transpose_p.bind(x, permutation=(0,) + tuple(p + 1 for p in permutation)), 0


register_rules(transpose_p, linear=("x",), jvp=partial(linear_jvp, transpose_p),
               transpose=_transpose_transpose, batch=_transpose_batch)


# broadcast_in_dim ----------------------------------------------------------
def _broadcast_in_dim_transpose(ct: Cotangent, x: MaybeUndefined, *, shape: tuple[int, ...],
                                broadcast_dimensions: tuple[int, ...]) -> list[Any]:
    in_shape = tuple(x.aval.shape)
    new_axes = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    stretched = tuple(d for i, d in enumerate(broadcast_dimensions)
                      if in_shape[i] == 1 and shape[d] != 1)
    out = sum_p.bind(ct, axes=tuple(sorted(new_axes + stretched)), keepdims=True)
    return [reshape_p.bind(out, new_sizes=in_shape)]


def _broadcast_in_dim_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                            shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]
                            ) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    return broadcast_in_dim_p.bind(
        x, shape=(np.shape(x)[0],) + shape,
        broadcast_dimensions=(0,) + tuple(d + 1 for d in broadcast_dimensions)), 0


register_rules(broadcast_in_dim_p, linear=("x",), jvp=partial(linear_jvp, broadcast_in_dim_p),
               transpose=_broadcast_in_dim_transpose, batch=_broadcast_in_dim_batch)


# broadcast_to --------------------------------------------------------------
def _broadcast_to_transpose(ct: Cotangent, x: MaybeUndefined, *, shape: tuple[int, ...]
                            ) -> list[Any]:
    return [unbroadcast(ct, x.aval)]


def _broadcast_to_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                        shape: tuple[int, ...]) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    b = np.shape(x)[0]
    missing = len(shape) - (np.ndim(x) - 1)
    if missing:
        x = expand_dims_p.bind(x, axes=tuple(range(1, 1 + missing)))
    return broadcast_to_p.bind(x, shape=(b,) + shape), 0


register_rules(broadcast_to_p, linear=("x",), jvp=partial(linear_jvp, broadcast_to_p),
               transpose=_broadcast_to_transpose, batch=_broadcast_to_batch)


def _shift_axes(axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a + 1 for a in axes)


# expand_dims ---------------------------------------------------------------
def _expand_dims_transpose(ct: Cotangent, x: MaybeUndefined, *, axes: tuple[int, ...]
                           ) -> list[Any]:
    return [squeeze_p.bind(ct, axes=axes)]


def _expand_dims_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, axes: tuple[int, ...]
                       ) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    return expand_dims_p.bind(x, axes=_shift_axes(axes)), 0


register_rules(expand_dims_p, linear=("x",), jvp=partial(linear_jvp, expand_dims_p),
               transpose=_expand_dims_transpose, batch=_expand_dims_batch)


# squeeze -------------------------------------------------------------------
def _squeeze_transpose(ct: Cotangent, x: MaybeUndefined, *, axes: tuple[int, ...]
                       ) -> list[Any]:
    return [reshape_p.bind(ct, new_sizes=tuple(x.aval.shape))]


def _squeeze_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, axes: tuple[int, ...]
                   ) -> BatchResult:
    x = bdim_to_front(args[0], dims[0])
    return squeeze_p.bind(x, axes=_shift_axes(axes)), 0


register_rules(squeeze_p, linear=("x",),
               jvp=partial(linear_jvp, squeeze_p), transpose=_squeeze_transpose,
               batch=_squeeze_batch)
