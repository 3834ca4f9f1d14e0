"""Rules of the softmax family (softmax, log_softmax; three primitives each).

* forward: its JVP binds the tangent-map primitive on the output and the
  input's tangent (``_rows_jvp``);
* tangent map and backward: transposes of each other (softmax's are the
  same map, its Jacobian being symmetric); their JVPs differentiate the
  gradrules-op compositions they are lowered from (``composite_jvp`` of
  ``softmax_tangent``, ``log_softmax_tangent``, ``log_softmax_cotangent``);
* batching: the batch axis goes to the front and ``axis`` moves by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from .. import _jax
from .._jax import BatchDim, BatchResult, JvpResult, Primitive, Tangent, is_zero
from ..core.kernels import Implementation
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.softmax import (log_softmax_cotangent, log_softmax_jvp_p, log_softmax_p,
                                  log_softmax_tangent, log_softmax_vjp_p, softmax_jvp_p,
                                  softmax_p, softmax_tangent, softmax_vjp_p)
from ._common import to_front
from ._fused import composite_jvp, transpose_to


def _rows_jvp(forward: Primitive, tangent_map: Primitive, primals: Sequence[Any],
              tangents: Sequence[Tangent], *, axis: int,
              implementation: Implementation) -> JvpResult:
    """The forward's JVP: ``tangent_map(out, t)``, the tangent map applied to
    the forward's output and the input's tangent."""
    (x,), (t,) = primals, tangents
    out = forward.bind(x, axis=axis, implementation=implementation)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    return out, tangent_map.bind(out, t, axis=axis, implementation=implementation)


def _rows_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim], *, axis: int,
                implementation: Implementation) -> BatchResult:
    """Batch axes to the front (unbatched operands broadcast), ``axis`` + 1."""
    return prim.bind(*to_front(args, dims), axis=axis + 1, implementation=implementation), 0


# softmax ---------------------------------------------------------------------
register_rules(softmax_p, jvp=partial(_rows_jvp, softmax_p, softmax_jvp_p),
               transpose=NOT_LINEAR, batch=partial(_rows_batch, softmax_p))
register_rules(softmax_jvp_p, linear=("t",),
               jvp=partial(composite_jvp, softmax_jvp_p, softmax_tangent),
               transpose=partial(transpose_to, softmax_jvp_p, softmax_vjp_p),
               batch=partial(_rows_batch, softmax_jvp_p))
register_rules(softmax_vjp_p, linear=("g",),
               jvp=partial(composite_jvp, softmax_vjp_p, softmax_tangent),
               transpose=partial(transpose_to, softmax_vjp_p, softmax_jvp_p),
               batch=partial(_rows_batch, softmax_vjp_p))


# log_softmax -------------------------------------------------------------------
register_rules(log_softmax_p, jvp=partial(_rows_jvp, log_softmax_p, log_softmax_jvp_p),
               transpose=NOT_LINEAR, batch=partial(_rows_batch, log_softmax_p))
register_rules(log_softmax_jvp_p, linear=("t",),
               jvp=partial(composite_jvp, log_softmax_jvp_p, log_softmax_tangent),
               transpose=partial(transpose_to, log_softmax_jvp_p, log_softmax_vjp_p),
               batch=partial(_rows_batch, log_softmax_jvp_p))
register_rules(log_softmax_vjp_p, linear=("g",),
               jvp=partial(composite_jvp, log_softmax_vjp_p, log_softmax_cotangent),
               transpose=partial(transpose_to, log_softmax_vjp_p, log_softmax_jvp_p),
               batch=partial(_rows_batch, log_softmax_vjp_p))
