"""Rules of the gated family.

silu_gated and gelu_gated (three primitives each, the same rules): the
forward's JVP binds the tangent map; the tangent map and the backward are
transposes of each other (``transpose_to``); their JVPs differentiate the
gradrules-op compositions they are lowered from (``composite_jvp`` of
``gated_tangent`` and ``gated_cotangent`` with the op's activation).
silu_rowsplit is one primitive, lowered from a composition in gradrules ops
whose JVP is its (``silu_rowsplit_composition``: ``split`` then silu_gated
or gelu_gated). glu: the JVP of its composition in gradrules ops
(``glu_composition``), batched along its axis. Batching of the others: batch
axes to the front, bound once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .._jax import Primitive
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.gated import (gated_cotangent, gated_tangent, gelu_gated_jvp_p, gelu_gated_p,
                                gelu_gated_vjp_p, glu_composition, glu_p, silu_gated_jvp_p,
                                silu_gated_p, silu_gated_vjp_p, silu_rowsplit_composition,
                                silu_rowsplit_p)
from ._common import front_batch
from ._fused import composite_jvp, forward_jvp, fused_map_rules
from .scan import axis_batch


def _forward_rules(forward: Primitive, tangent_map: Primitive) -> dict[str, Any]:
    """A gated op's forward: its JVP binds the tangent map on gate and up."""
    return dict(jvp=partial(forward_jvp, forward, tangent_map, ("gate", "up"), None),
                transpose=NOT_LINEAR, batch=partial(front_batch, forward))


def _map_rules(prim: Primitive, other: Primitive, composite: Callable[..., Any],
               activation: str) -> dict[str, Any]:
    """A gated op's tangent map or backward ``prim``: the JVP of its
    ``composite`` with the op's activation, the transpose to ``other``."""
    return fused_map_rules(prim, other, partial(composite, activation=activation),
                           batch=partial(front_batch, prim))


# silu_gated ------------------------------------------------------------------
register_rules(silu_gated_p, **_forward_rules(silu_gated_p, silu_gated_jvp_p))
register_rules(silu_gated_jvp_p, linear=("tg", "tu"),
               **_map_rules(silu_gated_jvp_p, silu_gated_vjp_p, gated_tangent, "silu"))
register_rules(silu_gated_vjp_p, linear=("g",),
               **_map_rules(silu_gated_vjp_p, silu_gated_jvp_p, gated_cotangent, "silu"))


# gelu_gated ------------------------------------------------------------------
register_rules(gelu_gated_p, **_forward_rules(gelu_gated_p, gelu_gated_jvp_p))
register_rules(gelu_gated_jvp_p, linear=("tg", "tu"),
               **_map_rules(gelu_gated_jvp_p, gelu_gated_vjp_p, gated_tangent, "gelu"))
register_rules(gelu_gated_vjp_p, linear=("g",),
               **_map_rules(gelu_gated_vjp_p, gelu_gated_jvp_p, gated_cotangent, "gelu"))


# silu_rowsplit ---------------------------------------------------------------
register_rules(silu_rowsplit_p,
               jvp=partial(composite_jvp, silu_rowsplit_p, silu_rowsplit_composition),
               transpose=NOT_LINEAR,
               batch=partial(front_batch, silu_rowsplit_p))


# glu -------------------------------------------------------------------------
register_rules(glu_p, jvp=partial(composite_jvp, glu_p, glu_composition), transpose=NOT_LINEAR,
               batch=partial(axis_batch, glu_p))
