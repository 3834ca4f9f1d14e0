"""Rules of the sort family. sort and topk select elements of x: the tangent
of their values is the tangent of x gathered with their indices
(``take_along_axis``, whose transpose is a scatter-add), and their indices
take none (``selection_jvp``). argsort, argmax, argmin and nonzero are not
differentiable."""

from __future__ import annotations

from functools import partial
from collections.abc import Sequence
from typing import Any

from .._jax import BatchDim, BatchResult
from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR
from ..primitives.gather import take_along_axis_p
from ..primitives.sort import argmax_p, argmin_p, argsort_p, nonzero_p, sort_p, topk_p
from ._common import bdim_to_front, selection_jvp
from .reduction import reduction_batch
from .scan import axis_batch


def _gather_along_axis(t: Any, indices: Any, *, axis: int, **params: Any) -> Any:
    """``take_along_axis(t, indices, axis)``, the indices in ``[0, n)`` by
    construction (``in_range``: neither the gather nor its transpose, the
    scatter-add, wraps or clips them); the other params of sort / topk
    (descending, k, largest, index_dtype) only pick the indices."""
    return take_along_axis_p.bind(t, indices, axis=axis, in_range=True)


register_rules(sort_p, jvp=partial(selection_jvp, sort_p, _gather_along_axis),
               transpose=NOT_LINEAR, batch=partial(axis_batch, sort_p))
register_rules(argsort_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
               batch=partial(axis_batch, argsort_p))
register_rules(topk_p, jvp=partial(selection_jvp, topk_p, _gather_along_axis),
               transpose=NOT_LINEAR, batch=partial(axis_batch, topk_p))
register_rules(argmax_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, argmax_p))
register_rules(argmin_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
               batch=partial(reduction_batch, argmin_p))


def _nonzero_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, batch_dims: int,
                   **params: Any) -> BatchResult:
    """The batch axis to the front, one more leading axis mapped over."""
    (x,), (d,) = args, dims
    out = nonzero_p.bind(bdim_to_front(x, d), batch_dims=batch_dims + 1, **params)
    return out, [0] * len(out)


register_rules(nonzero_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR, batch=_nonzero_batch)
