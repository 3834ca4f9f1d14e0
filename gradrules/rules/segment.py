"""Rules of the segment family.

segment_sum and segment_take are linear in their data and each other's
transpose; segment_mean is linear, its transpose segment_take of the
cotangent over the counts; segment_max / segment_min send each segment's
tangent to its maximal (minimal) rows, ties sharing it evenly, as the max
reduction does. The ids are the primitives' ``[n, 1]`` index arrays, and
a transpose takes the forward's (one index array for both). Batching: with unbatched ids the batch axis goes next to the
segment axis; with batched ids the batch is folded into the segment axis (the
ids of batch b offset by b * num_segments, out-of-range ids sent past the
end so they stay dropped) and the primitive is bound once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_zero)
from ..core.dims import Size
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import indicator, zeros
from ..primitives.arithmetic import add, divide, maximum, multiply
from ..primitives.compare import eq, ge, lt, where
from ..primitives.creation import iota
from ..primitives.logical import logical_and
from ..primitives.segment import (segment_counts, segment_max_p, segment_mean_p, segment_min_p,
                                  segment_sum_p, segment_take_p)
from ..primitives.shape import moveaxis, reshape_p
from ._common import batch_size, bdim_to_front, linear_jvp
from .gather import size_value


# batching ----------------------------------------------------------------------
def _offset_ids(ids: Any, size: Size, n: Size) -> Any:
    """Batched ids ``[size, k, 1]`` as ids ``[size * k, 1]`` into ``size * n``
    folded segments: id + b n for batch b; out-of-range ids become the
    dtype's largest value (past the ``size * n`` segments, so still dropped;
    ``size`` and ``n`` may be symbolic)."""
    dtype = aval_of(ids).dtype
    n_value = size_value(n, dtype)
    valid = logical_and(ge(ids, 0), lt(ids, n_value))
    offsets = reshape_p.bind(multiply(iota(dtype, size), n_value),
                             new_sizes=(size, 1, 1))
    folded = where(valid, add(ids, offsets), np.asarray(np.iinfo(dtype).max, dtype))
    return reshape_p.bind(folded, new_sizes=(size * np.shape(ids)[1], 1))


def _fold(x: Any) -> Any:
    """Merge the two leading axes."""
    shape = tuple(np.shape(x))
    return reshape_p.bind(x, new_sizes=(shape[0] * shape[1],) + shape[2:])


def _unfold(x: Any, size: int) -> Any:
    shape = tuple(np.shape(x))
    return reshape_p.bind(x, new_sizes=(size, shape[0] // size) + shape[1:])


def _segment_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim], *,
                   num_segments: int) -> BatchResult:
    """A segment reduction ``(data, ids) -> [num_segments, ...]``."""
    (data, ids), (dd, di) = args, dims
    if di is None:
        return prim.bind(moveaxis(data, dd, 1), ids, num_segments=num_segments), 1
    size = batch_size(args, dims)
    data = bdim_to_front(data, dd, size)
    out = prim.bind(_fold(data), _offset_ids(bdim_to_front(ids, di), size, num_segments),
                    num_segments=size * num_segments)
    return _unfold(out, size), 0


def _segment_take_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """segment_take ``(x [n, ...], ids [k, 1]) -> [k, ...]``."""
    (x, ids), (dx, di) = args, dims
    if di is None:
        return segment_take_p.bind(moveaxis(x, dx, 1), ids), 1
    size = batch_size(args, dims)
    x = bdim_to_front(x, dx, size)
    n = np.shape(x)[1]
    out = segment_take_p.bind(_fold(x), _offset_ids(bdim_to_front(ids, di), size, n))
    return _unfold(out, size), 0


# segment_sum -----------------------------------------------------------------
def _segment_sum_transpose(ct: Cotangent, data: MaybeUndefined, segment_ids: MaybeUndefined,
                           *, num_segments: int) -> list[Any]:
    return [segment_take_p.bind(ct, segment_ids), None]


register_rules(segment_sum_p, linear=("data",), jvp=partial(linear_jvp, segment_sum_p),
               transpose=_segment_sum_transpose, batch=partial(_segment_batch, segment_sum_p))


# segment_take ----------------------------------------------------------------
def _segment_take_transpose(ct: Cotangent, x: MaybeUndefined, segment_ids: MaybeUndefined
                            ) -> list[Any]:
    return [segment_sum_p.bind(ct, segment_ids, num_segments=x.aval.shape[0]), None]


register_rules(segment_take_p, linear=("x",), jvp=partial(linear_jvp, segment_take_p),
               transpose=_segment_take_transpose, batch=_segment_take_batch)


# segment_max (and segment_min) -------------------------------------------------
def _segment_extremum_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Tangent],
                          *, num_segments: int) -> JvpResult:
    """t_out[s] = sum of t over the rows of s equal to out[s], over their
    count (ties share evenly; 0 for an empty segment): segment sums of a
    where, linear in t."""
    (data, ids), (t, _) = primals, tangents
    out = prim.bind(data, ids, num_segments=num_segments)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    hit = eq(data, segment_take_p.bind(out, ids))
    count = segment_sum_p.bind(indicator(hit, data), ids, num_segments=num_segments)
    z = zeros((), aval_of(t).dtype)
    t_sum = segment_sum_p.bind(where(hit, t, z), ids, num_segments=num_segments)
    return out, divide(t_sum, maximum(count, 1.0))


register_rules(segment_max_p, jvp=partial(_segment_extremum_jvp, segment_max_p),
               transpose=NOT_LINEAR, batch=partial(_segment_batch, segment_max_p))


# segment_min -------------------------------------------------------------------
register_rules(segment_min_p, jvp=partial(_segment_extremum_jvp, segment_min_p),
               transpose=NOT_LINEAR, batch=partial(_segment_batch, segment_min_p))


# segment_mean ------------------------------------------------------------------
def _segment_mean_transpose(ct: Cotangent, data: MaybeUndefined, segment_ids: MaybeUndefined,
                            *, num_segments: int) -> list[Any]:
    """segment_take(ct / count): each row receives its segment's share."""
    return [segment_take_p.bind(divide(ct, segment_counts(segment_ids, num_segments, ct)),
                                segment_ids), None]


register_rules(segment_mean_p, linear=("data",), jvp=partial(linear_jvp, segment_mean_p),
               transpose=_segment_mean_transpose, batch=partial(_segment_batch, segment_mean_p))
