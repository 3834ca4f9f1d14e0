"""Rules of the softmax family (softmax, log_softmax; three primitives each).

* forward: its JVP binds the tangent-map primitive on the output;
* tangent map and backward: transposes of each other (softmax's are the
  same map, its Jacobian being symmetric); their JVPs come from the
  reference compositions below, written in gradrules ops;
* batching: the batch axis goes to the front and ``axis`` moves by one.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .. import _jax
from .._jax import Primitive, is_zero
from ..primitives.arithmetic import multiply, subtract
from ..primitives.reduction import sum as gr_sum
from ..primitives.softmax import (log_softmax_jvp_p, log_softmax_p, log_softmax_vjp_p,
                                  softmax_jvp_p, softmax_p, softmax_vjp_p)
from ..primitives.unary import exp
from ._fused import register_fused, to_front


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
def _rows_jvp(prim: Primitive, tangent_map: Primitive, primals: Any, tangents: Any,
              **params: Any) -> Any:
    """The forward's JVP: the tangent map applied to the output and ``t``."""
    (x,), (t,) = primals, tangents
    out = prim.bind(x, **params)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    return out, tangent_map.bind(out, t, **params)


def _rows_batch(prim: Primitive, args: Any, dims: Any, *, axis: int, kernel: str
                ) -> tuple[Any, int]:
    return prim.bind(*to_front(args, dims), axis=axis + 1, kernel=kernel), 0


for _fwd, _jvp, _vjp, _jvp_ref, _vjp_ref in (
        (softmax_p, softmax_jvp_p, softmax_vjp_p, _softmax_tangent, _softmax_tangent),
        (log_softmax_p, log_softmax_jvp_p, log_softmax_vjp_p, _log_softmax_tangent,
         _log_softmax_cotangent)):
    register_fused(_fwd, _jvp, _vjp, jvp=partial(_rows_jvp, _fwd, _jvp), tangent_ref=_jvp_ref,
                   backward_ref=_vjp_ref, fixed=1, batch=_rows_batch)
