"""Rules of comparisons (not differentiable) and where (linear in x, y)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from .. import _jax
from .._jax import Cotangent, JvpResult, MaybeUndefined, Tangent
from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE
from ..primitives._compose import unbroadcast, zeros
from ..primitives.compare import eq_p, ge_p, gt_p, le_p, lt_p, ne_p, where_p
from ._common import broadcasting_batch, instantiate, marker_rules


# comparisons ---------------------------------------------------------------
register_rules(eq_p, **marker_rules(eq_p, NOT_DIFFERENTIABLE))
register_rules(ne_p, **marker_rules(ne_p, NOT_DIFFERENTIABLE))
register_rules(lt_p, **marker_rules(lt_p, NOT_DIFFERENTIABLE))
register_rules(le_p, **marker_rules(le_p, NOT_DIFFERENTIABLE))
register_rules(gt_p, **marker_rules(gt_p, NOT_DIFFERENTIABLE))
register_rules(ge_p, **marker_rules(ge_p, NOT_DIFFERENTIABLE))


# where ---------------------------------------------------------------------
def _where_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = where(cond, t_x, t_y); cond takes no tangent."""
    cond, x, y = primals
    _, tx, ty = tangents
    out = where_p.bind(cond, x, y)
    if _jax.is_zero(tx) and _jax.is_zero(ty):
        return out, _jax.zero_tangent(out)
    return out, where_p.bind(cond, instantiate(tx, x), instantiate(ty, y))


def _where_transpose(ct: Cotangent, cond: MaybeUndefined, x: MaybeUndefined,
                     y: MaybeUndefined) -> list[Any]:
    """where(cond, ct, 0) for x and where(cond, 0, ct) for y, each summed
    down to its operand's shape."""
    z = zeros((), _jax.aval_of(ct).dtype)
    ct_x = unbroadcast(where_p.bind(cond, ct, z), x.aval) if _jax.is_undefined_primal(x) else None
    ct_y = unbroadcast(where_p.bind(cond, z, ct), y.aval) if _jax.is_undefined_primal(y) else None
    return [None, ct_x, ct_y]


register_rules(where_p, jvp=_where_jvp, transpose=_where_transpose,
               batch=partial(broadcasting_batch, where_p), linear=("x", "y"))
