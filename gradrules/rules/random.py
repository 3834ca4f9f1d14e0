"""Rules of the random family.

dropout is linear in x for a fixed key: its tangent and its transpose are
dropout itself with the same key (``linear_jvp``, ``transpose_to``), so
forward and reverse mode apply the very mask of the forward pass. The
samplers have a zero derivative. Batching puts the batch axis in front of the
key axes (an unbatched key or x is broadcast along it) and binds once: a
batched key draws per example, a broadcast one draws alike for every example.
"""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, ZERO_DERIVATIVE
from ..primitives.random import dropout_p, exponential_p, normal_p, uniform_p
from ._common import front_batch, linear_map_rules
from ._fused import transpose_to

register_rules(dropout_p, linear=("x",),
               **linear_map_rules(dropout_p, partial(transpose_to, dropout_p, dropout_p)))
register_rules(uniform_p, jvp=ZERO_DERIVATIVE, transpose=NOT_LINEAR,
               batch=partial(front_batch, uniform_p))
register_rules(normal_p, jvp=ZERO_DERIVATIVE, transpose=NOT_LINEAR,
               batch=partial(front_batch, normal_p))
register_rules(exponential_p, jvp=ZERO_DERIVATIVE, transpose=NOT_LINEAR,
               batch=partial(front_batch, exponential_p))
