"""Rules of the pool family.

avg_pool2d and adaptive_avg_pool2d are separable linear maps ``A x B^T`` (as
upsample2d, whose rules in ``rules/resample.py`` use the same
``separable_transpose``): the JVP binds the primitive on the tangent and the
transpose is the einsum with ``A^T`` and ``B^T``. max_pool2d's tangent is the
input tangent gathered at the argmax indices: ``take_along_axis`` on the
flattened H * W axis (``selection_jvp``), so reverse mode is take_along_axis's
own transpose, a scatter-add of the cotangent into the argmax of each window.
"""

from __future__ import annotations

import math
import string
from functools import partial
from typing import Any

import numpy as np

from .._jax import Cotangent, MaybeUndefined, Primitive, aval_of
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.gather import take_along_axis_p
from ..primitives.linalg import einsum_p
from ..primitives.pool import SEPARABLE, adaptive_avg_pool2d_p, avg_pool2d_p, max_pool2d_p
from ..primitives.shape import reshape_p
from ._common import front_batch, linear_map_rules, selection_jvp


# separable linear maps -------------------------------------------------------
def separable_apply(x: Any, a: np.ndarray, b: np.ndarray) -> Any:
    """``a x b^T`` on the last two axes of x, as one einsum."""
    lead = string.ascii_uppercase[:np.ndim(x) - 2]
    dtype = aval_of(x).dtype
    return einsum_p.bind(x, np.asarray(a, dtype), np.asarray(b, dtype),
                         equation=f"{lead}hw,ih,jw->{lead}ij")


def separable_transpose(prim: Primitive, ct: Cotangent, x: MaybeUndefined, **params: Any
                        ) -> list[Any]:
    """The exact adjoint of ``prim`` (``A x B^T``): ``A^T ct B``."""
    a, b = SEPARABLE[prim](*x.aval.shape[-2:], **params)
    return [separable_apply(ct, a.T, b.T)]


# avg_pool2d ------------------------------------------------------------------
register_rules(avg_pool2d_p, linear=("x",),
               **linear_map_rules(avg_pool2d_p, partial(separable_transpose, avg_pool2d_p)))


# adaptive_avg_pool2d ---------------------------------------------------------
register_rules(adaptive_avg_pool2d_p, linear=("x",),
               **linear_map_rules(adaptive_avg_pool2d_p,
                                  partial(separable_transpose, adaptive_avg_pool2d_p)))


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
