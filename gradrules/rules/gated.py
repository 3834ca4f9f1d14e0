"""Rules of the gated family.

silu_gated (three primitives): the forward's JVP binds the tangent map; the
tangent map and the backward are transposes of each other
(``transpose_to``); their JVPs differentiate the gradrules-op compositions
they are lowered from (``composite_jvp`` of ``silu_gated_tangent`` and
``silu_gated_cotangent``). gelu_gated and silu_rowsplit are one primitive
each, lowered from a composition in gradrules ops whose JVP is theirs
(``gelu_gated_composition``: ``gelu(gate) * up``; ``silu_rowsplit_composition``:
``split`` then silu_gated or gelu_gated). Batching: batch axes to the front,
bound once.
"""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.gated import (gelu_gated_composition, gelu_gated_p, silu_gated_cotangent,
                                silu_gated_jvp_p, silu_gated_p, silu_gated_tangent,
                                silu_gated_vjp_p, silu_rowsplit_composition, silu_rowsplit_p)
from ._common import front_batch
from ._fused import composite_jvp, forward_jvp, fused_map_rules


# silu_gated ------------------------------------------------------------------
register_rules(silu_gated_p, jvp=partial(forward_jvp, silu_gated_p, silu_gated_jvp_p,
                                         ("gate", "up"), None),
               transpose=NOT_LINEAR, batch=partial(front_batch, silu_gated_p))
register_rules(silu_gated_jvp_p, linear=("tg", "tu"), **fused_map_rules(
    silu_gated_jvp_p, silu_gated_vjp_p, silu_gated_tangent,
    batch=partial(front_batch, silu_gated_jvp_p)))
register_rules(silu_gated_vjp_p, linear=("g",), **fused_map_rules(
    silu_gated_vjp_p, silu_gated_jvp_p, silu_gated_cotangent,
    batch=partial(front_batch, silu_gated_vjp_p)))


# gelu_gated ------------------------------------------------------------------
register_rules(gelu_gated_p, jvp=partial(composite_jvp, gelu_gated_p, gelu_gated_composition),
               transpose=NOT_LINEAR, batch=partial(front_batch, gelu_gated_p))


# silu_rowsplit ---------------------------------------------------------------
register_rules(silu_rowsplit_p,
               jvp=partial(composite_jvp, silu_rowsplit_p, silu_rowsplit_composition),
               transpose=NOT_LINEAR,
               batch=partial(front_batch, silu_rowsplit_p))
