"""Rules of comparisons (not differentiable) and where (linear in x, y)."""

from __future__ import annotations

from functools import partial
from typing import Any

from .. import _jax
from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR
from ..primitives.compare import eq_p, ge_p, gt_p, le_p, lt_p, ne_p, where_p
from ._common import broadcasting_batch, instantiate, unbroadcast, zeros

for _p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    register_rules(_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
                   batch=partial(broadcasting_batch, _p))


def _where_jvp(primals: Any, tangents: Any) -> Any:
    """t_out = where(cond, t_x, t_y); cond takes no tangent."""
    cond, x, y = primals
    _, tx, ty = tangents
    out = where_p.bind(cond, x, y)
    if _jax.is_zero(tx) and _jax.is_zero(ty):
        return out, _jax.zero_tangent(out)
    return out, where_p.bind(cond, instantiate(tx, x), instantiate(ty, y))


def _where_transpose(ct: Any, cond: Any, x: Any, y: Any) -> list[Any]:
    z = zeros((), _jax.aval_of(ct).dtype)
    ct_x = unbroadcast(where_p.bind(cond, ct, z), x.aval) if _jax.is_undefined_primal(x) else None
    ct_y = unbroadcast(where_p.bind(cond, z, ct), y.aval) if _jax.is_undefined_primal(y) else None
    return [None, ct_x, ct_y]


register_rules(where_p, jvp=_where_jvp, transpose=_where_transpose,
               batch=partial(broadcasting_batch, where_p))
