"""Rules of the reduction family."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ..core.primitive import register_rules
from ..primitives.reduction import sum_p
from ..primitives.shape import broadcast_to_p, expand_dims_p
from ._common import linear_jvp


def restore_reduced(ct: Any, shape: tuple[int, ...], axes: tuple[int, ...],
                    keepdims: bool) -> Any:
    """Broadcast a reduced array back to the operand's ``shape``."""
    if not keepdims and axes:
        ct = expand_dims_p.bind(ct, axes=axes)
    return broadcast_to_p.bind(ct, shape=tuple(shape)) if np.shape(ct) != tuple(shape) else ct


def reduction_batch(prim: Any, args: Any, dims: Any, *, axes: tuple[int, ...],
                    keepdims: bool, **params: Any) -> tuple[Any, int | None]:
    """Batching of any ``axes``/``keepdims`` reduction: shift the axes around
    the batch axis, which stays where it is."""
    (x,), (d,) = args, dims
    new_axes = tuple(a if a < d else a + 1 for a in axes)
    out = prim.bind(x, axes=new_axes, keepdims=keepdims, **params)
    out_d = d if keepdims else d - sum(a < d for a in axes)
    return out, out_d


def _sum_transpose(ct: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> list[Any]:
    return [restore_reduced(ct, tuple(x.aval.shape), axes, keepdims)]


register_rules(sum_p, jvp=partial(linear_jvp, sum_p), transpose=_sum_transpose,
               batch=partial(reduction_batch, sum_p))
