"""Rules of the pool family.

avg_pool2d and adaptive_avg_pool2d are separable linear maps (rules shared
with upsample2d, see ``rules/resample.py``). max_pool2d's tangent is the input
tangent gathered at the argmax indices; window_gather and window_scatter_add
are linear in their array operand and each other's transposes.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .. import _jax
from .._jax import is_undefined_primal, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.pool import (adaptive_avg_pool2d_p, avg_pool2d_p, max_pool2d_p,
                               window_gather_p, window_scatter_add_p)
from ._common import batch_size, bdim_to_front
from .resample import register_separable, trailing_batch

register_separable(avg_pool2d_p)
register_separable(adaptive_avg_pool2d_p)


# max_pool2d ------------------------------------------------------------------
def _max_pool2d_jvp(primals: Any, tangents: Any, **params: Any) -> Any:
    """t_values = t_x at the argmax of each window; the indices take none."""
    (x,), (tx,) = primals, tangents
    values, indices = max_pool2d_p.bind(x, **params)
    t = _jax.zero_tangent(values) if is_zero(tx) else window_gather_p.bind(tx, indices)
    return [values, indices], [t, _jax.zero_tangent(indices)]


register_rules(max_pool2d_p, jvp=_max_pool2d_jvp, transpose=NOT_LINEAR,
               batch=partial(trailing_batch, max_pool2d_p))


# window_gather / window_scatter_add --------------------------------------------
def _indexed_jvp(prim: Any, primals: Any, tangents: Any, **params: Any) -> Any:
    """Linear in the array operand; the index operand takes no tangent."""
    (a, index), (ta, _) = primals, tangents
    out = prim.bind(a, index, **params)
    return out, _jax.zero_tangent(out) if is_zero(ta) else prim.bind(ta, index, **params)


def _window_gather_transpose(ct: Any, x: Any, index: Any) -> list[Any]:
    if is_undefined_primal(index):
        raise ValueError("gradrules.window_gather is not linear in index")
    return [window_scatter_add_p.bind(ct, index, size=tuple(x.aval.shape[-2:])), None]


def _window_scatter_add_transpose(ct: Any, src: Any, index: Any, *,
                                  size: tuple[int, int]) -> list[Any]:
    if is_undefined_primal(index):
        raise ValueError("gradrules.window_scatter_add is not linear in index")
    return [window_gather_p.bind(ct, index), None]


def _indexed_batch(prim: Any, args: Any, dims: Any, **params: Any) -> tuple[Any, int]:
    """Both operands get the batch axis in front (an unbatched one broadcast
    along it): one more leading axis, which the primitives accept."""
    size = batch_size(args, dims)
    return prim.bind(*[bdim_to_front(a, d, size) for a, d in zip(args, dims)], **params), 0


for _p, _t in ((window_gather_p, _window_gather_transpose),
               (window_scatter_add_p, _window_scatter_add_transpose)):
    register_rules(_p, jvp=partial(_indexed_jvp, _p), transpose=_t,
                   batch=partial(_indexed_batch, _p))
