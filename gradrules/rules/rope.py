"""Rules of the rope family. rope is linear in x (``linear=("x",)``): its JVP
is rope of the tangent (``linear_jvp``), its transpose is the inverse
rotation (``inverse`` flipped), and positions take no tangent. Batching folds
the vmapped axis into the batch."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import BatchDim, BatchResult, Cotangent, MaybeUndefined
from ..core.kernels import Implementation
from ..core.primitive import register_rules
from ..primitives.rope import rope_p
from ..primitives.shape import broadcast_to_p, expand_dims_p
from ._common import batch_size, bdim_to_front, fold_batch, linear_jvp, unfold_batch


def _rope_transpose(ct: Cotangent, x: MaybeUndefined, positions: MaybeUndefined, *,
                    theta: float, inverse: bool, implementation: Implementation) -> list[Any]:
    """The inverse rotation of the cotangent; positions take none."""
    return [rope_p.bind(ct, positions, theta=theta, inverse=not inverse,
                        implementation=implementation), None]


def _rope_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, theta: float, inverse: bool,
                implementation: Implementation) -> BatchResult:
    """x [n, B, S, H, D] -> [n * B, S, H, D]; positions follow ([S] stays
    shared when unbatched, otherwise [n * B, S])."""
    (x, positions), (dx, dp) = args, dims
    n = batch_size(args, dims)
    b, s = [m for i, m in enumerate(np.shape(x)) if i != dx][:2]
    x = fold_batch(x, dx, n)
    if dp is not None or np.ndim(positions) == 2:
        positions = bdim_to_front(positions, dp, n)
        if np.ndim(positions) == 2:                # [n, S]: one row per vmapped example
            positions = expand_dims_p.bind(positions, axes=(1,))
        positions = fold_batch(broadcast_to_p.bind(positions, shape=(n, b, s)), 0, n)
    out = rope_p.bind(x, positions, theta=theta, inverse=inverse, implementation=implementation)
    return unfold_batch(out, n, b), 0


register_rules(rope_p, linear=("x",), jvp=partial(linear_jvp, rope_p),
               transpose=_rope_transpose, batch=_rope_batch)
