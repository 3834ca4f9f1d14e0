"""Rules of the softmax family (softmax, log_softmax; three primitives each).

* forward: its JVP binds the tangent-map primitive on the output (for
  log_softmax the input and the output) and the input's tangent
  (``forward_jvp``);
* tangent map and backward: transposes of each other (softmax's are the
  same map, its Jacobian being symmetric; log_softmax's both take the
  forward's ``(x, logp)``); their JVPs differentiate the gradrules-op
  compositions ``softmax_tangent``, ``log_softmax_tangent`` and
  ``log_softmax_cotangent`` (``fused_map_rules``), which are their XLA
  lowerings but for log_softmax's backward, lowered from ``x``;
* batching: the batch axis goes to the front and ``axis`` moves by one
  (``shifted_front_batch``).
"""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.softmax import (log_softmax_cotangent, log_softmax_jvp_p, log_softmax_p,
                                  log_softmax_tangent, log_softmax_vjp_p, softmax_jvp_p,
                                  softmax_p, softmax_tangent, softmax_vjp_p)
from ._common import shifted_front_batch
from ._fused import forward_jvp, fused_map_rules

# softmax ---------------------------------------------------------------------
register_rules(softmax_p, jvp=partial(forward_jvp, softmax_p, softmax_jvp_p, ("x",), None),
               transpose=NOT_LINEAR, batch=partial(shifted_front_batch, softmax_p, ("axis",)))
register_rules(softmax_jvp_p, linear=("t",), **fused_map_rules(
    softmax_jvp_p, softmax_vjp_p, softmax_tangent,
    batch=partial(shifted_front_batch, softmax_jvp_p, ("axis",))))
register_rules(softmax_vjp_p, linear=("g",), **fused_map_rules(
    softmax_vjp_p, softmax_jvp_p, softmax_tangent,
    batch=partial(shifted_front_batch, softmax_vjp_p, ("axis",))))


# log_softmax -------------------------------------------------------------------
register_rules(log_softmax_p,
               jvp=partial(forward_jvp, log_softmax_p, log_softmax_jvp_p, ("x",), None),
               transpose=NOT_LINEAR,
               batch=partial(shifted_front_batch, log_softmax_p, ("axis",)))
register_rules(log_softmax_jvp_p, linear=("t",), **fused_map_rules(
    log_softmax_jvp_p, log_softmax_vjp_p, log_softmax_tangent,
    batch=partial(shifted_front_batch, log_softmax_jvp_p, ("axis",))))
register_rules(log_softmax_vjp_p, linear=("g",), **fused_map_rules(
    log_softmax_vjp_p, log_softmax_jvp_p, log_softmax_cotangent,
    batch=partial(shifted_front_batch, log_softmax_vjp_p, ("axis",))))
