"""Rules of the sort family. sort and topk select elements of x: the tangent
of their values is the tangent of x gathered with their indices
(``take_along_axis``, whose transpose is a scatter-add), and their indices
take none. argsort, argmax and argmin are not differentiable."""

from __future__ import annotations

from functools import partial
from typing import Any

from .. import _jax
from .._jax import is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR
from ..primitives.indexing import take_along_axis_p
from ..primitives.sort import argmax_p, argmin_p, argsort_p, sort_p, topk_p
from .reduction import reduction_batch
from .scan import axis_batch


def _selection_jvp(prim: Any, primals: Any, tangents: Any, *, axis: int, **params: Any
                   ) -> Any:
    """(values, indices) = prim(x): t_values = take_along_axis(t, indices)."""
    (x,), (t,) = primals, tangents
    values, indices = prim.bind(x, axis=axis, **params)
    t_values = (_jax.zero_tangent(values) if is_zero(t)
                else take_along_axis_p.bind(t, indices, axis=axis))
    return [values, indices], [t_values, _jax.zero_tangent(indices)]


for _p in (sort_p, topk_p):
    register_rules(_p, jvp=partial(_selection_jvp, _p), transpose=NOT_LINEAR,
                   batch=partial(axis_batch, _p))
register_rules(argsort_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
               batch=partial(axis_batch, argsort_p))
for _p in (argmax_p, argmin_p):
    register_rules(_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
                   batch=partial(reduction_batch, _p))
