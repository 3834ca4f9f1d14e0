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
* ``forward_jvp(forward, tangent_map, moving, rest, primals, tangents,
  **params)``: the JVP of a fused op's forward: its tangent map on the
  forward's operands and outputs, by name, and the moving tangents.
* ``fused_map_rules``: the three rules of a tangent map or backward.
* ``all_zero`` / ``zero_tangents``: for JVP rules.
* ``linear_part(prim, primals, tangents, **params)``: the part of ``prim``'s
  JVP that comes from the operands it is linear in, for a JVP rule that
  takes the rest another way than ``composite_jvp``.
* ``backward_jvp(backward, tangent, primals, tangents, moving, **params)``:
  the JVP of a fused op's backward whose tangent in its other operands is a
  primitive of its own (``foo_vjp_jvp``, XLA only; ``backward_jvp_along``
  when those tangents are the operands' own), and
  ``dense_transpose(prim, composite, ct, *operands, **params)``: that
  primitive's transpose, ``jax.linear_transpose`` of the composition it
  computes (third order only); ``backward_tangent_rules`` registers both
  for a tangent primitive that ``backward_jvp_along`` binds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any


import jax

from .. import _jax
from .._jax import (BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive, Tangent,
                    aval_of, is_undefined_primal, is_zero)
from ..core.kernels import IMPLEMENTATION, on_xla, takes_keyword
from ..core.registry import PRIMITIVES
from ._common import add_tangents, instantiate


def _along(composite: Callable[..., Any], operands: Sequence[Any], at: Sequence[int],
           multiple: bool, **params: Any) -> Callable[..., Any]:
    """``composite(*operands, **params)`` as a function of the operands in
    the positions ``at``, the others held: what ``jax.jvp`` and
    ``jax.linear_transpose`` take (its results as a tuple where
    ``multiple``)."""
    def along(*xs: Any) -> Any:
        args = list(operands)
        for i, x in zip(at, xs):
            args[i] = x
        res = composite(*args, **params)
        return tuple(res) if multiple else res
    return along


def composite_jvp(prim: Primitive, composite: Callable[..., Any], primals: Sequence[Any],
                  tangents: Sequence[Tangent], **params: Any) -> JvpResult:
    """JVP rule of ``prim``, whose value is ``composite(*operands, **params)``
    (the ``implementation`` param only when ``composite`` takes it: a
    composition that binds fused primitives passes it on; for the others it
    only picks a lowering).

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
        kw = (params if takes_keyword(composite, IMPLEMENTATION)
              else {k: v for k, v in params.items() if k != IMPLEMENTATION})
        along = _along(composite, primals, moving, prim.multiple_results, **kw)
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


def forward_jvp(forward: Primitive, tangent_map: Primitive, moving: tuple[str, ...],
                rest: Callable[..., list[Any]] | None, primals: Sequence[Any],
                tangents: Sequence[Tangent], **params: Any) -> JvpResult:
    """The JVP rule of a fused op's forward primitive (DESIGN.md).

    ``forward`` is bound on the primals. Unless the tangents of its operands
    named in ``moving`` are all symbolic zeros, ``tangent_map`` is bound on
    its fixed operands, each the forward's operand or named output
    (``define_primitive(outputs=...)``) of the same name, then those
    tangents (zeros where symbolic): that gives the tangents of the forward's
    first outputs. ``rest(primals, outs, tangents)`` gives the tangents of
    the others (None: symbolic zeros; all of them when every moving tangent
    is one).
    """
    fwd, tmap = PRIMITIVES[forward], PRIMITIVES[tangent_map]
    out = forward.bind(*primals, **params)
    outs = list(out) if forward.multiple_results else [out]
    at = fwd.positions(moving)
    if all_zero([tangents[i] for i in at]):
        t_outs = zero_tangents(outs)
    else:
        named = {**dict(zip(fwd.operands, primals)), **dict(zip(fwd.outputs, outs))}
        linear = set(tmap.positions(tmap.joint_linear()))
        fixed = [named[n] for i, n in enumerate(tmap.operands) if i not in linear]
        moved = [instantiate(tangents[i], primals[i]) for i in at]
        t = tangent_map.bind(*fixed, *moved, **params)
        t_outs = list(t) if tangent_map.multiple_results else [t]
        t_outs += (rest(primals, outs, tangents) if rest is not None
                   else zero_tangents(outs[len(t_outs):]))
    return out, (t_outs if forward.multiple_results else t_outs[0])


def linear_part(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Tangent],
                **params: Any) -> list[Any] | None:
    """``prim`` bound on the tangents of the operands it is linear in (zeros
    where symbolic) and on its other operands: the part of its JVP those
    tangents give (by linearity); None when they are all symbolic zeros."""
    info = PRIMITIVES[prim]
    linear = set(info.positions(info.joint_linear(), len(primals)))
    if all(is_zero(tangents[i]) for i in linear):
        return None
    args = [instantiate(tangents[i], p) if i in linear else p for i, p in enumerate(primals)]
    part = prim.bind(*args, **params)
    return list(part) if prim.multiple_results else [part]


def backward_jvp(backward: Primitive, tangent: Primitive, primals: Sequence[Any],
                 tangents: Sequence[Tangent], moving: Sequence[Any] | None,
                 **params: Any) -> JvpResult:
    """JVP rule of a fused op's backward ``backward`` (linear in its
    cotangents): along the cotangents, ``backward`` itself (``linear_part``);
    along the operands it is not linear in, ``tangent`` (the backward's own
    tangent, ``foo_vjp_jvp``) bound on ``backward``'s operands followed by
    ``moving``, their tangents as ``tangent`` takes them (None: all symbolic
    zeros), on its XLA path whatever the call's kernel (it has no Pallas
    kernel: ``core.kernels.on_xla``)."""
    out = backward.bind(*primals, **params)
    outs = list(out) if backward.multiple_results else [out]
    t_out = linear_part(backward, primals, tangents, **params)
    if moving is not None:
        implementation = on_xla(params[IMPLEMENTATION])
        part = tangent.bind(*primals, *moving, **dict(params, implementation=implementation))
        parts = list(part) if tangent.multiple_results else [part]
        t_out = parts if t_out is None else [add_tangents(a, b) for a, b in zip(t_out, parts)]
    t_outs = t_out if t_out is not None else zero_tangents(outs)
    return out, (t_outs if backward.multiple_results else t_outs[0])


def backward_jvp_along(backward: Primitive, tangent: Primitive, names: tuple[str, ...],
                       primals: Sequence[Any], tangents: Sequence[Tangent],
                       **params: Any) -> JvpResult:
    """``backward_jvp`` whose ``tangent`` takes the tangents of
    ``backward``'s operands ``names``, in that order (instantiated; none
    when all are symbolic zeros)."""
    at = PRIMITIVES[backward].positions(names)
    moving = (None if all_zero([tangents[i] for i in at])
              else [instantiate(tangents[i], primals[i]) for i in at])
    return backward_jvp(backward, tangent, primals, tangents, moving, **params)


def dense_transpose(prim: Primitive, composite: Callable[..., Any], ct: Cotangent,
                    *operands: MaybeUndefined, **params: Any) -> list[Any]:
    """Transpose rule of ``prim``, linear in the operands its registration
    names, whose value is ``composite(*operands, **params)`` (without the
    ``implementation`` param): ``jax.linear_transpose`` of ``composite`` in
    those operands, the others fixed. Dense (a second-order tangent
    primitive's composition materialises what its lowering does blockwise):
    only a third-order path takes it. Symbolic-zero cotangents are
    instantiated."""
    info = PRIMITIVES[prim]
    at = info.positions(info.joint_linear(), len(operands))
    kw = {k: v for k, v in params.items() if k != IMPLEMENTATION}
    linear = _along(composite, operands, at, prim.multiple_results, **kw)
    avals = [jax.ShapeDtypeStruct(aval_of(operands[i]).shape, aval_of(operands[i]).dtype)
             for i in at]
    cts = tuple(instantiate(c, c) for c in (ct if prim.multiple_results else [ct]))
    transposed = jax.linear_transpose(linear, *avals)(cts if prim.multiple_results else cts[0])
    results = dict(zip(at, transposed))
    return [results[i] if i in results and is_undefined_primal(x) else None
            for i, x in enumerate(operands)]


def backward_tangent_rules(tangent: Primitive, backward: Primitive,
                           composite: Callable[..., Any], names: tuple[str, ...], *,
                           batch: Callable[..., BatchResult]) -> dict[str, Any]:
    """The rules of a fused op's backward tangent ``tangent`` (``foo_vjp_jvp``,
    bound by ``backward_jvp_along(backward, tangent, names, ...)``), for
    ``register_rules(tangent, **backward_tangent_rules(...))``: its operands
    are ``backward``'s followed by the tangents of its operands ``names``,
    in which it is linear, and its value is the tangent of ``composite``
    (the backward's composition) along those, the other operands held. Its
    JVP is that of this tangent (``composite_jvp``), its transpose
    ``dense_transpose`` of it, and ``batch`` its batching rule."""
    info = PRIMITIVES[backward]
    n, at = len(info.operands), info.positions(names)

    def composite_tangent(*args: Any, **params: Any) -> Any:
        operands, ts = args[:n], args[n:]
        along = _along(composite, operands, at, backward.multiple_results, **params)
        part = jax.jvp(along, tuple(operands[i] for i in at), tuple(ts))[1]
        return list(part) if backward.multiple_results else part

    return dict(linear=PRIMITIVES[tangent].operands[n:],
                jvp=partial(composite_jvp, tangent, composite_tangent),
                transpose=partial(dense_transpose, tangent, composite_tangent), batch=batch)


def all_zero(tangents: Sequence[Tangent]) -> bool:
    """Whether every tangent is a symbolic zero."""
    return all(is_zero(t) for t in tangents)


def zero_tangents(outs: Sequence[Any]) -> list[Any]:
    """Symbolic-zero tangents for each output."""
    return [_jax.zero_tangent(o) for o in outs]
