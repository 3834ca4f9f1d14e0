"""Rules of the softmax family (softmax, log_softmax; three primitives each,
and log_softmax's backward tangent).

* forward: its JVP binds the tangent-map primitive on the output (for
  log_softmax the input and the output) and the input's tangent
  (``forward_jvp``);
* tangent map and backward: transposes of each other (softmax's are the
  same map, its Jacobian being symmetric; log_softmax's both take the
  forward's ``(x, logp)``); their JVPs differentiate the gradrules-op
  compositions they are lowered from (``fused_map_rules`` of
  ``softmax_tangent`` and ``log_softmax_tangent``), but for log_softmax's
  backward, lowered from ``x`` apart from its composition
  ``log_softmax_cotangent``: its JVP is itself along ``g`` and, along
  ``x``, the primitive ``log_softmax_vjp_jvp`` (``backward_jvp_along``),
  whose own rules differentiate and transpose the tangent of that
  composition (``backward_tangent_rules``; third order);
* batching: the batch axis goes to the front and ``axis`` moves by one
  (``shifted_front_batch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from .._jax import JvpResult, Tangent
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.softmax import (log_softmax_cotangent, log_softmax_jvp_p, log_softmax_p,
                                  log_softmax_tangent, log_softmax_vjp_jvp_p, log_softmax_vjp_p,
                                  softmax_jvp_p, softmax_p, softmax_tangent, softmax_vjp_p)
from ._common import shifted_front_batch
from ._fused import (backward_jvp_along, backward_tangent_rules, forward_jvp, fused_map_rules,
                     transpose_to)

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


def _log_softmax_vjp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], **params: Any
                         ) -> JvpResult:
    """JVP of log_softmax's backward: along ``g`` (in which it is linear)
    the backward itself; along ``x`` and ``logp`` its tangent
    ``log_softmax_vjp_jvp``."""
    return backward_jvp_along(log_softmax_vjp_p, log_softmax_vjp_jvp_p, ("x", "logp"),
                              primals, tangents, **params)


register_rules(log_softmax_vjp_p, linear=("g",), jvp=_log_softmax_vjp_jvp,
               transpose=partial(transpose_to, log_softmax_vjp_p, log_softmax_jvp_p),
               batch=partial(shifted_front_batch, log_softmax_vjp_p, ("axis",)))


# log_softmax_vjp_jvp_p: the backward's tangent (second order) -------------------
register_rules(log_softmax_vjp_jvp_p, **backward_tangent_rules(
    log_softmax_vjp_jvp_p, log_softmax_vjp_p, log_softmax_cotangent, ("x", "logp"),
    batch=partial(shifted_front_batch, log_softmax_vjp_jvp_p, ("axis",))))
