"""Rules of the rope family. rope is linear in x: its JVP is rope of the
tangent, its transpose is the inverse rotation (``inverse`` flipped), and
positions take no tangent. Batching folds the vmapped axis into the batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _jax
from .._jax import is_zero
from ..core.primitive import register_rules
from ..primitives.rope import rope_p
from ..primitives.shape import broadcast_to_p, expand_dims_p
from ._common import batch_size, bdim_to_front
from ._fused import fold_batch, unfold_batch


def _rope_jvp(primals: Any, tangents: Any, *, theta: float, inverse: bool,
              kernel: str) -> Any:
    x, positions = primals
    tx, _ = tangents
    out = rope_p.bind(x, positions, theta=theta, inverse=inverse, kernel=kernel)
    if is_zero(tx):
        return out, _jax.zero_tangent(out)
    return out, rope_p.bind(tx, positions, theta=theta, inverse=inverse, kernel=kernel)


def _rope_transpose(ct: Any, x: Any, positions: Any, *, theta: float, inverse: bool,
                    kernel: str) -> list[Any]:
    return [rope_p.bind(ct, positions, theta=theta, inverse=not inverse, kernel=kernel), None]


def _rope_batch(args: Any, dims: Any, *, theta: float, inverse: bool,
                kernel: str) -> tuple[Any, int]:
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
    out = rope_p.bind(x, positions, theta=theta, inverse=inverse, kernel=kernel)
    return unfold_batch(out, n, b), 0


register_rules(rope_p, jvp=_rope_jvp, transpose=_rope_transpose, batch=_rope_batch)
