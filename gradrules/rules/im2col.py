"""Rules of the im2col family: unfold and fold are linear and each other's
transpose (unfold's transpose is fold to the image's size; fold's is unfold
with the same block params), so their JVPs are the ops on the tangents and
batching moves the batch axis in front (both take any leading axes)."""

from __future__ import annotations

from typing import Any

from .._jax import Cotangent, MaybeUndefined, aval_of
from ..core.primitive import register_rules
from ..primitives.im2col import fold_p, unfold_p
from ._common import linear_map_rules


def _unfold_transpose(ct: Cotangent, x: MaybeUndefined, **params: Any) -> list[Any]:
    """col2im of the cotangent to the input's size."""
    shape = tuple(aval_of(x).shape)
    return [fold_p.bind(ct, output_size=shape[len(shape) - 2:], **params)]


def _fold_transpose(ct: Cotangent, x: MaybeUndefined, *, output_size: tuple[int, ...],
                    **params: Any) -> list[Any]:
    """im2col of the cotangent, the same blocks."""
    return [unfold_p.bind(ct, **params)]


register_rules(unfold_p, linear=("x",), **linear_map_rules(unfold_p, _unfold_transpose))
register_rules(fold_p, linear=("x",), **linear_map_rules(fold_p, _fold_transpose))
