"""Rules of the pool family.

avg_pool2d and adaptive_avg_pool2d are separable linear maps ``A x B^T`` (as
upsample2d, whose rules in ``rules/resample.py`` come from the same
``separable_rules`` and ``separable_transpose_rules``): the JVP binds the primitive on the tangent, the
transpose binds its transpose primitive (``A^T ct B``), whose transpose is
the map again. max_pool2d's (max_pool3d's) tangent is the
input tangent gathered at the argmax indices: ``take_along_axis`` on the
flattened H * W axis (``selection_jvp``), so reverse mode is take_along_axis's
own transpose, a scatter-add of the cotangent into the argmax of each window.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from .._jax import Cotangent, MaybeUndefined, Primitive, aval_of
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._separable import SEPARABLE
from ..primitives.gather import take_along_axis_p
from ..primitives.pool import (adaptive_avg_pool2d_p, adaptive_avg_pool2d_transpose_p,
                               avg_pool2d_p, avg_pool2d_transpose_p, avg_pool3d_p,
                               avg_pool3d_transpose_p, max_pool2d_p, max_pool3d_p)
from ..primitives.shape import reshape_p
from ._common import front_batch, linear_map_rules, selection_jvp


# separable linear maps -------------------------------------------------------
def _separable_transpose(prim: Primitive, ct: Cotangent, x: MaybeUndefined, **params: Any
                         ) -> list[Any]:
    """``A^T ct B``: the transpose primitive, told the input size."""
    prim_t, _, ndim = SEPARABLE[prim]
    shape = tuple(aval_of(x).shape)
    return [prim_t.bind(ct, in_size=shape[len(shape) - ndim:], **params)]


def _separable_transpose_transpose(prim: Primitive, ct: Cotangent, y: MaybeUndefined, *,
                                   in_size: tuple[int, int], **params: Any) -> list[Any]:
    """The transpose of ``A^T ct B`` is ``A x B^T`` again."""
    return [prim.bind(ct, **params)]


def separable_rules(prim: Primitive) -> dict[str, Any]:
    """A separable map's rules: linear, its JVP itself on the tangent, its
    transpose the transpose primitive."""
    return linear_map_rules(prim, partial(_separable_transpose, prim))


def separable_transpose_rules(prim: Primitive) -> dict[str, Any]:
    """The rules of ``prim``'s transpose primitive: linear, transposing back
    to ``prim``."""
    return linear_map_rules(SEPARABLE[prim][0],
                            partial(_separable_transpose_transpose, prim))


# avg_pool2d, adaptive_avg_pool2d ---------------------------------------------
register_rules(avg_pool2d_p, linear=("x",), **separable_rules(avg_pool2d_p))
register_rules(avg_pool2d_transpose_p, linear=("ct",),
               **separable_transpose_rules(avg_pool2d_p))
register_rules(avg_pool3d_p, linear=("x",), **separable_rules(avg_pool3d_p))
register_rules(avg_pool3d_transpose_p, linear=("ct",),
               **separable_transpose_rules(avg_pool3d_p))
register_rules(adaptive_avg_pool2d_p, linear=("x",), **separable_rules(adaptive_avg_pool2d_p))
register_rules(adaptive_avg_pool2d_transpose_p, linear=("ct",),
               **separable_transpose_rules(adaptive_avg_pool2d_p))


# max_pool2d ------------------------------------------------------------------
def _gather_window_argmax(t: Any, indices: Any, *, kernel_size: tuple[int, ...],
                          **window: Any) -> Any:
    """``t`` [..., H, W] at the flat indices (h * W + w) [..., oh, ow] (3-D:
    [..., D, H, W] at (d H + h) W + w): take_along_axis over the flattened
    plane (volume), reshaped back. The window params only pick the indices.
    Those are in ``[0, H W)`` by construction (``in_range``: neither the
    gather nor its transpose wraps or clips them): the primitive starts
    them at 0 and writes only positions inside the input, never padding."""
    shape, ishape = tuple(np.shape(t)), tuple(np.shape(indices))
    nd = len(kernel_size)
    lead = ishape[:len(ishape) - nd]
    flat_t = reshape_p.bind(t, new_sizes=lead + (math.prod(shape[len(shape) - nd:]),))
    flat_i = reshape_p.bind(indices, new_sizes=lead + (math.prod(ishape[len(lead):]),))
    out = take_along_axis_p.bind(flat_t, flat_i, axis=len(lead), in_range=True)
    return reshape_p.bind(out, new_sizes=ishape)


register_rules(max_pool2d_p, jvp=partial(selection_jvp, max_pool2d_p, _gather_window_argmax),
               transpose=NOT_LINEAR, batch=partial(front_batch, max_pool2d_p))
register_rules(max_pool3d_p, jvp=partial(selection_jvp, max_pool3d_p, _gather_window_argmax),
               transpose=NOT_LINEAR, batch=partial(front_batch, max_pool3d_p))
