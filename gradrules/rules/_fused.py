"""Rule builders shared by the fused ops (three primitives each, DESIGN.md),
and by other primitives whose JVP is that of a reference composition.

* ``composite_jvp(prim, composite, primals, tangents, **params)``: the JVP of
  a primitive whose value is ``composite(*operands, **params)``, a
  composition of gradrules ops (for a fused op's tangent map and backward,
  the very function it is lowered from). The part linear in the operands
  ``prim`` is declared linear in binds ``prim`` itself on their tangents (so
  it transposes through ``prim``'s own transpose rule); the part that comes
  from the other operands is the JVP of ``composite``, so every derivative
  order is made of catalog primitives.
* ``transpose_to(prim, other, ct, *operands, **params)``: the transpose of a
  tangent map (or backward) ``prim``: bind ``other``, the backward (or
  tangent map), on ``prim``'s fixed operands followed by the cotangents.
  Register them with ``functools.partial``:
  ``jvp=partial(composite_jvp, softmax_vjp_p, softmax_tangent)``,
  ``transpose=partial(transpose_to, softmax_vjp_p, softmax_jvp_p)``.
* ``all_zero`` / ``zero_tangents``: for the forward primitives' JVP rules.
* ``align_front``, ``fold_batch`` / ``unfold_batch``: batching helpers (the
  vmapped axis merged into one of the operand's own axes and split off it
  again, for rules that bind once on a bigger batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jax

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive, Tangent,
                    is_undefined_primal, is_zero)
from ..core.kernels import IMPLEMENTATION
from ..core.registry import PRIMITIVES
from ..primitives.shape import broadcast_to_p, expand_dims_p
from ._common import add_tangents, instantiate, reshape_axis_into, reshape_axis_out_of


def composite_jvp(prim: Primitive, composite: Callable[..., Any], primals: Sequence[Any],
                  tangents: Sequence[Tangent], **params: Any) -> JvpResult:
    """JVP rule of ``prim``, whose value is ``composite(*operands, **params)``
    (without the ``implementation`` param, which only picks a lowering).

    Operands with a symbolic-zero tangent (labels, indices, constants) are
    held fixed.
    """
    info = PRIMITIVES[prim]
    linear = set(info.positions(info.joint_linear(), len(primals)))
    out = prim.bind(*primals, **params)
    outs = list(out) if prim.multiple_results else [out]
    t_out: list[Any] = [None] * len(outs)
    if any(not is_zero(tangents[i]) for i in linear):
        args = [instantiate(tangents[i], p) if i in linear else p for i, p in enumerate(primals)]
        part = prim.bind(*args, **params)
        t_out = list(part) if prim.multiple_results else [part]
    moving = [i for i in range(len(primals)) if i not in linear and not is_zero(tangents[i])]
    if moving:
        kw = {k: v for k, v in params.items() if k != IMPLEMENTATION}

        def along(*xs: Any) -> Any:
            args = list(primals)
            for i, x in zip(moving, xs):
                args[i] = x
            res = composite(*args, **kw)
            return tuple(res) if prim.multiple_results else res

        _, part = jax.jvp(along, tuple(primals[i] for i in moving),
                          tuple(tangents[i] for i in moving))
        part = list(part) if prim.multiple_results else [part]
        t_out = [add_tangents(a, b) for a, b in zip(t_out, part)]
    t_out = [_jax.zero_tangent(o) if t is None or is_zero(t) else t for t, o in zip(t_out, outs)]
    return out, (t_out if prim.multiple_results else t_out[0])


def transpose_to(prim: Primitive, other: Primitive, ct: Cotangent, *operands: MaybeUndefined,
                 **params: Any) -> list[Any]:
    """Transpose rule of ``prim`` (linear in the operands its registration
    names, which come last): ``other(*fixed, *cotangents)``, one result per
    linear operand; cotangents that are symbolic zeros are instantiated."""
    info = PRIMITIVES[prim]
    linear = set(info.positions(info.joint_linear(), len(operands)))
    cts = list(ct) if prim.multiple_results else [ct]
    cts = [instantiate(c, c) for c in cts]
    fixed = [x for i, x in enumerate(operands) if i not in linear]
    out = other.bind(*fixed, *cts, **params)
    results = iter(list(out) if other.multiple_results else [out])
    cotangents: list[Any] = []
    for i, x in enumerate(operands):
        r = next(results) if i in linear else None
        cotangents.append(r if is_undefined_primal(x) else None)
    return cotangents


def fused_map_rules(prim: Primitive, other: Primitive, composite: Callable[..., Any],
                    batch: Callable[..., BatchResult]) -> dict[str, Any]:
    """The rules of a fused op's tangent map or backward ``prim``, for
    ``register_rules(prim, linear=(...), **fused_map_rules(prim, other,
    composite, batch))``: the JVP of ``composite`` (the gradrules-op function
    ``prim`` computes; ``composite_jvp``), the transpose to ``other`` (its
    backward or tangent map; ``transpose_to``) and ``batch``."""
    return dict(jvp=partial(composite_jvp, prim, composite),
                transpose=partial(transpose_to, prim, other), batch=batch)


def all_zero(tangents: Sequence[Tangent]) -> bool:
    """Whether every tangent is a symbolic zero."""
    return all(is_zero(t) for t in tangents)


def zero_tangents(outs: Sequence[Any]) -> list[Any]:
    """Symbolic-zero tangents for each output."""
    return [_jax.zero_tangent(o) for o in outs]


def align_front(x: Any, rank: int) -> Any:
    """A batched operand (batch axis in front) with size-1 axes inserted after
    the batch axis up to ``rank``, so that it broadcasts like the unbatched one
    against an operand of rank ``rank``."""
    missing = rank - np.ndim(x)
    return expand_dims_p.bind(x, axes=tuple(range(1, 1 + missing))) if missing > 0 else x


def fold_batch(x: Any, d: BatchDim, size: int, axis: int = 0) -> Any:
    """The vmapped axis ``d`` of ``x`` (size ``size``; ``None``: unbatched,
    broadcast along a new one) merged into axis ``axis`` of the unbatched
    operand, batch-major: ``[..., A, ...] -> [..., size * A, ...]``."""
    if d is None:
        x = broadcast_to_p.bind(x, shape=(size,) + tuple(np.shape(x)))
        d = 0
    return reshape_axis_into(d, axis, x)


def unfold_batch(x: Any, size: int, length: int, axis: int = 0) -> Any:
    """The inverse of ``fold_batch``: axis ``axis`` (of ``size * length``
    entries) split into ``(size, length)``; the vmapped axis is then ``axis``."""
    return reshape_axis_out_of(axis, size, x, length)
