"""Rules of the creation family.

arange has no operand: it is not differentiable, and vmap, which only
batches primitives with a batched operand, never calls its batching rule
(written all the same: it binds arange unbatched). full is linear in its
fill value where the result is floating: its tangent is full of the
tangent, its transpose the sum of the cotangent's copies back to the fill
value's shape and dtype (``unbroadcast``); an integer or bool result has no
tangent. Batching puts the batch axis in front of the fill value, aligned
below it as numpy broadcasting aligns it, and binds full once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._jax import BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Tangent
from ..core.meta import is_float
from ..core.primitive import register_rules, zero_jvp
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR
from ..primitives._compose import cast, unbroadcast
from ..primitives.creation import arange_p, full_p
from ._common import align_front, bdim_to_front, linear_jvp


def _arange_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, start: float,
                  stop: float, step: float, dtype: np.dtype) -> BatchResult:
    """No operand, so nothing is batched: arange itself, unbatched."""
    return arange_p.bind(start=start, stop=stop, step=step, dtype=dtype), None


register_rules(arange_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR, batch=_arange_batch)


def _full_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
              shape: tuple[int, ...], dtype: np.dtype | None) -> JvpResult:
    """full of the tangent (``linear_jvp``); a symbolic zero for an integer or
    bool result (a float fill cast to int has no derivative)."""
    if dtype is not None and not is_float(dtype):
        return zero_jvp(full_p, primals, tangents, shape=shape, dtype=dtype)
    return linear_jvp(full_p, primals, tangents, shape=shape, dtype=dtype)


def _full_transpose(ct: Cotangent, fill_value: MaybeUndefined, *, shape: tuple[int, ...],
                    dtype: np.dtype | None) -> list[Any]:
    aval = fill_value.aval
    return [cast(unbroadcast(ct, aval), aval.dtype)]


def _full_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, shape: tuple[int, ...],
                dtype: np.dtype | None) -> BatchResult:
    """The batched fill value ``[B, *f]`` as ``[B, 1, .., 1, *f]`` (rank
    ``1 + len(shape)``), filled to ``[B, *shape]``."""
    x = align_front(bdim_to_front(args[0], dims[0]), 1 + len(shape))
    return full_p.bind(x, shape=(np.shape(x)[0],) + tuple(shape), dtype=dtype), 0


register_rules(full_p, linear=("fill_value",), jvp=_full_jvp, transpose=_full_transpose,
               batch=_full_batch)
