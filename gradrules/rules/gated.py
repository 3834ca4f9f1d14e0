"""Rules of the gated family.

silu_gated (three primitives): the forward's JVP binds the tangent map; the
tangent map and the backward are transposes of each other; their JVPs come
from the reference compositions below (gradrules silu, its derivative
``activation._silu_dx`` and the catalog clamp, whose derivative at the
bounds is the one silu_gated's clamp has). gelu_gated and silu_rowsplit are one primitive each whose JVP
is that of their composition in gradrules ops (``gelu(gate) * up``; ``split``
then silu_gated or gelu_gated). Batching: batch axes to the front, bound once.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .._jax import aval_of
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._fused import acc_dtype
from ..primitives.activation import clamp, gelu, silu
from ..primitives.arithmetic import add, multiply
from ..primitives.compare import le, where
from ..primitives.gated import (gelu_gated_p, silu_gated_jvp_p, silu_gated_p, silu_gated_vjp_p,
                                silu_rowsplit_p)
from ..primitives.layout import split
from ..primitives.unary import abs as gr_abs
from .activation import _silu_dx
from ._fused import (cast, composite_jvp, front_batch, fused_forward_jvp, primals_only,
                     register_fused)


# silu_gated ------------------------------------------------------------------
def _clamp(gate: Any, up: Any, limit: float | None) -> tuple[Any, Any, Any, Any]:
    """(min(gate, limit), clip(up, -limit, limit), and where each passes
    derivatives), in gradrules ops. The values are the catalog clamp, whose
    derivative is 1 inside its range, bounds included, as silu_gated's clamp
    (so the JVPs of the compositions agree with the masks)."""
    if limit is None:
        return gate, up, None, None
    mg, mu = le(gate, limit), le(gr_abs(up), limit)
    return clamp(gate, max=limit), clamp(up, min=-limit, max=limit), mg, mu


def _keep(x: Any, mask: Any) -> Any:
    return x if mask is None else where(mask, x, 0.0)


def _silu_terms(gate: Any, up: Any, limit: float | None) -> tuple[Any, ...]:
    """(acc dtype, clamped up, silu(gate), silu'(gate), the two clamp masks)."""
    acc = acc_dtype(aval_of(gate).dtype)
    g, u, mg, mu = _clamp(cast(gate, acc), cast(up, acc), limit)
    return acc, u, silu(g), _silu_dx(g, None), mg, mu


def _silu_gated_tangent(gate: Any, up: Any, tg: Any, tu: Any, *, limit: float | None,
                        kernel: str) -> Any:
    """``silu'(gate) up t_gate + silu(gate) t_up`` (times the clamp masks)."""
    acc, u, s, ds, mg, mu = _silu_terms(gate, up, limit)
    t = add(_keep(multiply(multiply(ds, u), cast(tg, acc)), mg),
            _keep(multiply(s, cast(tu, acc)), mu))
    return cast(t, aval_of(gate).dtype)


def _silu_gated_cotangent(gate: Any, up: Any, g: Any, *, limit: float | None,
                          kernel: str) -> tuple[Any, Any]:
    """``(g up silu'(gate), g silu(gate))`` (times the clamp masks)."""
    acc, u, s, ds, mg, mu = _silu_terms(gate, up, limit)
    gf = cast(g, acc)
    dtype = aval_of(gate).dtype
    return (cast(_keep(multiply(multiply(gf, u), ds), mg), dtype),
            cast(_keep(multiply(gf, s), mu), dtype))


_silu_gated_jvp = fused_forward_jvp(silu_gated_p, silu_gated_jvp_p, fixed=primals_only,
                                   linear=(0, 1))
register_fused(silu_gated_p, silu_gated_jvp_p, silu_gated_vjp_p, jvp=_silu_gated_jvp,
               tangent_ref=_silu_gated_tangent, backward_ref=_silu_gated_cotangent, fixed=2,
               batch=front_batch)


# gelu_gated ------------------------------------------------------------------
def _gelu_gated_composite(gate: Any, up: Any, *, approximate: bool) -> Any:
    """``gelu(gate) * up`` with the gradrules gelu."""
    dtype = aval_of(gate).dtype
    acc = acc_dtype(dtype)
    return cast(multiply(gelu(cast(gate, acc), approximate=approximate), cast(up, acc)), dtype)


register_rules(gelu_gated_p, jvp=composite_jvp(gelu_gated_p, _gelu_gated_composite, linear=0),
               transpose=NOT_LINEAR, batch=partial(front_batch, gelu_gated_p))


# silu_rowsplit ---------------------------------------------------------------
def _silu_rowsplit_composite(x: Any, *, activation: str, limit: float | None,
                             kernel: str) -> Any:
    """The halves of the last axis through silu_gated or gelu_gated."""
    gate, up = split(x, indices_or_sections=2, axis=-1)
    if activation == "silu":
        return silu_gated_p.bind(gate, up, limit=limit, kernel=kernel)
    return gelu_gated_p.bind(gate, up, approximate=activation == "gelu_tanh")


register_rules(silu_rowsplit_p,
               jvp=composite_jvp(silu_rowsplit_p, _silu_rowsplit_composite, linear=0),
               transpose=NOT_LINEAR, batch=partial(front_batch, silu_rowsplit_p))
