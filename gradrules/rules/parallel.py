"""Rules of the parallel family.

vocab_parallel_cross_entropy's three primitives have cross_entropy's rules
(``rules/loss.py``): the forward's JVP binds the tangent map
(``forward_jvp``); the tangent map and the backward transpose to each other
and differentiate their compositions, ``vocab_parallel_tangent`` and
``vocab_parallel_cotangent``, gradrules ops with JAX's collectives
(``fused_map_rules``); batch axes go to the front (the class axis is last),
where the collectives act on every example at once.
"""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.parallel import (vocab_parallel_cotangent, vocab_parallel_cross_entropy_jvp_p,
                                   vocab_parallel_cross_entropy_p,
                                   vocab_parallel_cross_entropy_vjp_p, vocab_parallel_tangent)
from ._common import front_batch
from ._fused import forward_jvp, fused_map_rules

register_rules(vocab_parallel_cross_entropy_p, transpose=NOT_LINEAR,
               jvp=partial(forward_jvp, vocab_parallel_cross_entropy_p,
                           vocab_parallel_cross_entropy_jvp_p, ("logits",), None),
               batch=partial(front_batch, vocab_parallel_cross_entropy_p))
register_rules(vocab_parallel_cross_entropy_jvp_p, linear=("t",), **fused_map_rules(
    vocab_parallel_cross_entropy_jvp_p, vocab_parallel_cross_entropy_vjp_p,
    vocab_parallel_tangent, batch=partial(front_batch, vocab_parallel_cross_entropy_jvp_p)))
register_rules(vocab_parallel_cross_entropy_vjp_p, linear=("g_loss", "g_lse"), **fused_map_rules(
    vocab_parallel_cross_entropy_vjp_p, vocab_parallel_cross_entropy_jvp_p,
    vocab_parallel_cotangent, batch=partial(front_batch, vocab_parallel_cross_entropy_vjp_p)))
