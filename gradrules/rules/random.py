"""Rules of the random family.

dropout is linear in x for a fixed key: its tangent and its transpose are
dropout itself with the same key, so forward and reverse mode apply the very
mask of the forward pass. The samplers have a zero derivative. Batching puts
the batch axis in front of the key axes (an unbatched key or x is broadcast
along it) and binds once: a batched key draws per example, a broadcast one
draws alike for every example.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .. import _jax
from .._jax import is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, ZERO_DERIVATIVE
from ..primitives.random import dropout_p, exponential_p, normal_p, uniform_p
from ._fused import front_batch


def _dropout_jvp(primals: Any, tangents: Any, *, rate: float) -> Any:
    (key, x), (_, t) = primals, tangents
    out = dropout_p.bind(key, x, rate=rate)
    return out, (_jax.zero_tangent(out) if is_zero(t) else dropout_p.bind(key, t, rate=rate))


def _dropout_transpose(ct: Any, key: Any, x: Any, *, rate: float) -> list[Any]:
    return [None, dropout_p.bind(key, ct, rate=rate)]


register_rules(dropout_p, jvp=_dropout_jvp, transpose=_dropout_transpose,
               batch=partial(front_batch, dropout_p))
for _p in (uniform_p, normal_p, exponential_p):
    register_rules(_p, jvp=ZERO_DERIVATIVE, transpose=NOT_LINEAR, batch=partial(front_batch, _p))
