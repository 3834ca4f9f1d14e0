"""Rules of the pool family.

avg_pool2d and adaptive_avg_pool2d are separable linear maps (rules shared
with upsample2d, see ``rules/resample.py``). max_pool2d's tangent is the input
tangent gathered at the argmax indices: ``take_along_axis`` on the flattened
H * W axis (``selection_jvp``), so reverse mode is take_along_axis's own
transpose, a scatter-add of the cotangent into the argmax of each window.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.indexing import take_along_axis_p
from ..primitives.pool import adaptive_avg_pool2d_p, avg_pool2d_p, max_pool2d_p
from ..primitives.shape import reshape_p
from ._common import front_batch, selection_jvp
from .resample import register_separable

register_separable(avg_pool2d_p)
register_separable(adaptive_avg_pool2d_p)


# max_pool2d ------------------------------------------------------------------
def _gather_window_argmax(t: Any, indices: Any, **window: Any) -> Any:
    """``t`` [..., H, W] at the flat indices (h * W + w) [..., oh, ow]:
    take_along_axis over the flattened plane, reshaped back. The window
    params only pick the indices."""
    shape, ishape = tuple(np.shape(t)), tuple(np.shape(indices))
    lead = ishape[:-2]
    flat_t = reshape_p.bind(t, new_sizes=lead + (math.prod(shape[-2:]),))
    flat_i = reshape_p.bind(indices, new_sizes=lead + (math.prod(ishape[-2:]),))
    out = take_along_axis_p.bind(flat_t, flat_i, axis=len(lead))
    return reshape_p.bind(out, new_sizes=ishape)


register_rules(max_pool2d_p, jvp=partial(selection_jvp, max_pool2d_p, _gather_window_argmax),
               transpose=NOT_LINEAR, batch=partial(front_batch, max_pool2d_p))
