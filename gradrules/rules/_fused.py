"""Rule builders shared by the fused ops (three primitives each, DESIGN.md).

* ``composite_jvp(prim, composite, linear=n)``: the JVP rule of a tangent-map
  or backward primitive, which is linear in its last ``n`` operands. The part
  linear in those binds ``prim`` itself on their tangents (so it transposes
  through ``prim``'s own transpose rule); the part that comes from the other
  operands is the JVP of ``composite``, the primitive's reference composition
  written in gradrules ops, so every derivative order is made of catalog
  primitives.
* ``swap_transpose(other, n)``: the transpose of a tangent map (or backward)
  that is linear in the operands after its first ``n``: bind ``other``, the
  backward (or tangent map), on the cotangents.
* ``register_fused``: the rules of the three primitives of a fused op at once.
* ``to_front`` / ``front_batch``: the batching step every fused rule starts
  with: batch axes to the front, unbatched operands broadcast along it;
  ``align_front`` lines a batched operand up with a higher-rank one
  under numpy broadcasting.
* ``fold_batch`` / ``unfold_batch``: the vmapped axis merged into one of the
  operand's own axes (batch-major) and split off it again, for rules that
  bind once on a bigger batch (attention, group_norm, rope, the fused linear
  cross entropy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jax

from .. import _jax
from .._jax import Primitive, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, PRIMITIVES
from ..primitives.convert import convert_element_type
from ..primitives.shape import broadcast_to_p, expand_dims_p
from ._common import (add_tangents, front_batch, instantiate,  # noqa: F401
                      reshape_axis_into, reshape_axis_out_of, to_front)


def composite_jvp(prim: Primitive, composite: Callable[..., Any], *, linear: int
                  ) -> Callable[..., Any]:
    """JVP rule of ``prim``, linear in its last ``linear`` operands.

    ``composite(*operands, **params)`` computes what ``prim`` computes, with
    gradrules ops. Operands with a symbolic-zero tangent (labels, indices,
    constants) are held fixed.
    """
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        out = prim.bind(*primals, **params)
        outs = list(out) if prim.multiple_results else [out]
        n = len(primals) - linear
        t_out: list[Any] = [None] * len(outs)
        t_lin = tangents[n:]
        if not all(is_zero(t) for t in t_lin):
            lin = [instantiate(t, p) for t, p in zip(t_lin, primals[n:])]
            part = prim.bind(*primals[:n], *lin, **params)
            t_out = list(part) if prim.multiple_results else [part]
        moving = [i for i in range(n) if not is_zero(tangents[i])]
        if moving:
            def along(*xs: Any) -> Any:
                args = list(primals)
                for i, x in zip(moving, xs):
                    args[i] = x
                res = composite(*args, **params)
                return tuple(res) if prim.multiple_results else res
            _, part = jax.jvp(along, tuple(primals[i] for i in moving),
                              tuple(tangents[i] for i in moving))
            part = list(part) if prim.multiple_results else [part]
            t_out = [add_tangents(a, b) for a, b in zip(t_out, part)]
        t_out = [_jax.zero_tangent(o) if t is None or is_zero(t) else t
                 for t, o in zip(t_out, outs)]
        return out, (t_out if prim.multiple_results else t_out[0])

    jvp.__name__ = f"_{prim.name}_jvp"
    jvp.composite = composite  # type: ignore[attr-defined]
    return jvp


def swap_transpose(other: Primitive, n_fixed: int) -> Callable[..., Any]:
    """Transpose rule of a primitive linear in its operands after the first
    ``n_fixed``: ``other(*fixed, *cotangents)``, one result per linear operand."""
    def transpose(ct: Any, *operands: Any, **params: Any) -> list[Any]:
        cts = list(ct) if isinstance(ct, (list, tuple)) else [ct]
        out = other.bind(*operands[:n_fixed], *cts, **params)
        return [None] * n_fixed + (list(out) if other.multiple_results else [out])

    transpose.__name__ = f"transpose_to_{other.name}"
    return transpose


def register_fused(forward: Primitive, tangent_map: Primitive, backward: Primitive, *,
                   jvp: Callable[..., Any], tangent_ref: Callable[..., Any],
                   backward_ref: Callable[..., Any], fixed: int,
                   batch: Callable[..., Any]) -> None:
    """Register the rules of a fused op's three primitives (DESIGN.md).

    ``forward``: the JVP rule ``jvp`` (which binds ``tangent_map``), not
    linear. ``tangent_map`` and ``backward`` take the same ``fixed`` leading
    operands (primals and residuals) and are linear in the rest: each one's
    transpose binds the other, and each one's JVP is ``composite_jvp`` of its
    reference composition (``tangent_ref``, ``backward_ref``). ``batch(prim,
    args, dims, **params)`` is the batching rule of all three.
    """
    register_rules(forward, jvp=jvp, transpose=NOT_LINEAR, batch=partial(batch, forward))
    for prim, other, ref in ((tangent_map, backward, tangent_ref),
                             (backward, tangent_map, backward_ref)):
        linear = len(PRIMITIVES[prim].operands) - fixed
        register_rules(prim, jvp=composite_jvp(prim, ref, linear=linear),
                       transpose=swap_transpose(other, fixed), batch=partial(batch, prim))


def cast(x: Any, dtype: Any) -> Any:
    """``x`` as ``dtype`` (a gradrules convert_element_type when it differs)."""
    if np.dtype(_jax.aval_of(x).dtype) == np.dtype(dtype):
        return x
    return convert_element_type(x, dtype=dtype)


def align_front(x: Any, rank: int) -> Any:
    """A batched operand (batch axis in front) with size-1 axes inserted after
    the batch axis up to ``rank``, so that it broadcasts like the unbatched one
    against an operand of rank ``rank``."""
    missing = rank - np.ndim(x)
    return expand_dims_p.bind(x, axes=tuple(range(1, 1 + missing))) if missing > 0 else x


def fold_batch(x: Any, d: int | None, size: int, axis: int = 0) -> Any:
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


def fused_forward_jvp(forward: Primitive, tangent_map: Primitive, *,
                      fixed: Callable[[Sequence[Any], list[Any]], Sequence[Any]],
                      linear: Sequence[int],
                      tangent_args: Callable[[Sequence[Any], Sequence[Any]], Sequence[Any]]
                      | None = None,
                      rest: Callable[[Sequence[Any], list[Any], Sequence[Any]], Sequence[Any]]
                      | None = None) -> Callable[..., Any]:
    """The JVP rule of a fused op's forward primitive (DESIGN.md).

    ``forward`` is bound on the primals; if the tangents of the operands
    numbered in ``linear`` are all symbolic zeros, every output's tangent is a
    symbolic zero. Otherwise ``tangent_map`` is bound on ``fixed(primals,
    outs)`` (primals and residuals) followed by the tangents:
    ``tangent_args(primals, tangents)``, by default those of ``linear`` with
    symbolic zeros instantiated. Its results are the tangents of the first
    outputs; ``rest(primals, outs, tangents)`` gives those of the others
    (default: symbolic zeros).
    """
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        out = forward.bind(*primals, **params)
        outs = list(out) if forward.multiple_results else [out]
        if all(is_zero(tangents[i]) for i in linear):
            t_outs = [_jax.zero_tangent(o) for o in outs]
        else:
            ts = (tangent_args(primals, tangents) if tangent_args is not None
                  else [instantiate(tangents[i], primals[i]) for i in linear])
            t = tangent_map.bind(*fixed(primals, outs), *ts, **params)
            t_outs = list(t) if tangent_map.multiple_results else [t]
            t_outs += (list(rest(primals, outs, tangents)) if rest is not None
                       else [_jax.zero_tangent(o) for o in outs[len(t_outs):]])
        return out, (t_outs if forward.multiple_results else t_outs[0])

    jvp.__name__ = f"_{forward.name}_jvp"
    return jvp


def with_residuals(primals: Sequence[Any], outs: list[Any]) -> list[Any]:
    """``fixed`` of ``fused_forward_jvp`` for a tangent map that takes the
    primals, then the forward's residual outputs (all but the first)."""
    return [*primals, *outs[1:]]


def primals_only(primals: Sequence[Any], outs: list[Any]) -> list[Any]:
    """``fixed`` of ``fused_forward_jvp`` for a tangent map that takes the primals."""
    return list(primals)


def outputs_only(primals: Sequence[Any], outs: list[Any]) -> list[Any]:
    """``fixed`` of ``fused_forward_jvp`` for a tangent map that takes the outputs."""
    return list(outs)


def primals_and_outputs(primals: Sequence[Any], outs: list[Any]) -> list[Any]:
    """``fixed`` of ``fused_forward_jvp`` for a tangent map that takes the
    primals, then every output of the forward."""
    return [*primals, *outs]
