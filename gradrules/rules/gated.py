"""Rules of the gated family.

silu_gated (three primitives): the forward's JVP binds the tangent map; the
tangent map and the backward are transposes of each other
(``transpose_to``); their JVPs differentiate the gradrules-op compositions
they are lowered from (``composite_jvp`` of ``silu_gated_tangent`` and
``silu_gated_cotangent``). gelu_gated and silu_rowsplit are one primitive
each whose JVP is that of their composition in gradrules ops (``gelu(gate) *
up``; ``split`` then silu_gated or gelu_gated). Batching: batch axes to the
front, bound once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from .. import _jax
from .._jax import JvpResult, Tangent, aval_of
from ..core.kernels import Implementation
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import cast
from ..primitives._fused import acc_dtype
from ..primitives.activation import gelu
from ..primitives.arithmetic import multiply
from ..primitives.gated import (gelu_gated_p, silu_gated_cotangent, silu_gated_jvp_p,
                                silu_gated_p, silu_gated_tangent, silu_gated_vjp_p,
                                silu_rowsplit_p)
from ..primitives.slicing import split
from ._common import front_batch, instantiate
from ._fused import all_zero, composite_jvp, transpose_to


# silu_gated ------------------------------------------------------------------
def _silu_gated_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                    limit: float | None, implementation: Implementation) -> JvpResult:
    """``silu_gated_jvp(gate, up, t_gate, t_up)``, the tangent map."""
    (gate, up), (tg, tu) = primals, tangents
    out = silu_gated_p.bind(gate, up, limit=limit, implementation=implementation)
    if all_zero(tangents):
        return out, _jax.zero_tangent(out)
    return out, silu_gated_jvp_p.bind(gate, up, instantiate(tg, gate), instantiate(tu, up),
                                      limit=limit, implementation=implementation)


register_rules(silu_gated_p, jvp=_silu_gated_jvp, transpose=NOT_LINEAR,
               batch=partial(front_batch, silu_gated_p))
register_rules(silu_gated_jvp_p, linear=("tg", "tu"),
               jvp=partial(composite_jvp, silu_gated_jvp_p, silu_gated_tangent),
               transpose=partial(transpose_to, silu_gated_jvp_p, silu_gated_vjp_p),
               batch=partial(front_batch, silu_gated_jvp_p))
register_rules(silu_gated_vjp_p, linear=("g",),
               jvp=partial(composite_jvp, silu_gated_vjp_p, silu_gated_cotangent),
               transpose=partial(transpose_to, silu_gated_vjp_p, silu_gated_jvp_p),
               batch=partial(front_batch, silu_gated_vjp_p))


# gelu_gated ------------------------------------------------------------------
def _gelu_gated_composite(gate: Any, up: Any, *, approximate: bool) -> Any:
    """``gelu(gate) * up`` with the gradrules gelu."""
    dtype = aval_of(gate).dtype
    acc = acc_dtype(dtype)
    return cast(multiply(gelu(cast(gate, acc), approximate=approximate), cast(up, acc)), dtype)


register_rules(gelu_gated_p, jvp=partial(composite_jvp, gelu_gated_p, _gelu_gated_composite),
               transpose=NOT_LINEAR, batch=partial(front_batch, gelu_gated_p))


# silu_rowsplit ---------------------------------------------------------------
def _silu_rowsplit_composite(x: Any, *, activation: str, limit: float | None,
                             implementation: Implementation) -> Any:
    """The halves of the last axis through silu_gated (with silu_rowsplit's
    implementation) or gelu_gated."""
    gate, up = split(x, indices_or_sections=2, axis=-1)
    if activation == "silu":
        return silu_gated_p.bind(gate, up, limit=limit, implementation=implementation)
    return gelu_gated_p.bind(gate, up, approximate=activation == "gelu_tanh")


def _silu_rowsplit_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, activation: str,
                       limit: float | None, implementation: Implementation) -> JvpResult:
    """The JVP of ``_silu_rowsplit_composite``, which needs the
    ``implementation`` param that ``composite_jvp`` keeps from compositions."""
    return composite_jvp(silu_rowsplit_p,
                         partial(_silu_rowsplit_composite, implementation=implementation),
                         primals, tangents, activation=activation, limit=limit,
                         implementation=implementation)


register_rules(silu_rowsplit_p, jvp=_silu_rowsplit_jvp, transpose=NOT_LINEAR,
               batch=partial(front_batch, silu_rowsplit_p))
