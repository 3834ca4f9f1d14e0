"""Rules of the softmax family (softmax, log_softmax; three primitives each).

* forward: its JVP binds the tangent-map primitive on the output;
* tangent map and backward: transposes of each other (softmax's are the
  same map, its Jacobian being symmetric); their JVPs come from the
  reference compositions below, written in gradrules ops;
* batching: the batch axis goes to the front and ``axis`` moves by one.
"""

from __future__ import annotations

from typing import Any

from .._jax import Primitive
from ..primitives.arithmetic import multiply, subtract
from ..primitives.reduction import sum as gr_sum
from ..primitives.softmax import (log_softmax_jvp_p, log_softmax_p, log_softmax_vjp_p,
                                  softmax_jvp_p, softmax_p, softmax_vjp_p)
from ..primitives.unary import exp
from ._fused import fused_forward_jvp, outputs_only, register_fused, to_front


# reference compositions of the tangent maps and backwards -------------------
def _softmax_tangent(y: Any, t: Any, *, axis: int, kernel: str) -> Any:
    """``y * (t - sum(y t))``: softmax's tangent map and backward alike."""
    return multiply(y, subtract(t, gr_sum(multiply(y, t), axis=axis, keepdims=True)))


def _log_softmax_tangent(logp: Any, t: Any, *, axis: int, kernel: str) -> Any:
    """``t - sum(exp(logp) t)``."""
    return subtract(t, gr_sum(multiply(exp(logp), t), axis=axis, keepdims=True))


def _log_softmax_cotangent(logp: Any, g: Any, *, axis: int, kernel: str) -> Any:
    """``g - exp(logp) sum(g)``."""
    return subtract(g, multiply(exp(logp), gr_sum(g, axis=axis, keepdims=True)))


# rules shared by both ops -----------------------------------------------------
def _rows_batch(prim: Primitive, args: Any, dims: Any, *, axis: int, kernel: str
                ) -> tuple[Any, int]:
    return prim.bind(*to_front(args, dims), axis=axis + 1, kernel=kernel), 0


for _fwd, _jvp, _vjp, _jvp_ref, _vjp_ref in (
        (softmax_p, softmax_jvp_p, softmax_vjp_p, _softmax_tangent, _softmax_tangent),
        (log_softmax_p, log_softmax_jvp_p, log_softmax_vjp_p, _log_softmax_tangent,
         _log_softmax_cotangent)):
    # the forward's JVP: the tangent map applied to the output and ``t``
    register_fused(_fwd, _jvp, _vjp,
                   jvp=fused_forward_jvp(_fwd, _jvp, fixed=outputs_only, linear=(0,)),
                   tangent_ref=_jvp_ref,
                   backward_ref=_vjp_ref, fixed=1, batch=_rows_batch)
