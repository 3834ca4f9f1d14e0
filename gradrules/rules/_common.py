"""Building blocks shared by the rules of every family.

* JVPs: ``chain_rule(prim, *partials)`` (elementwise ops from named partial
  derivatives, ``t_out = sum_i t_i * d_i(*primals, out, **params)``; a
  partial ``1 / den`` returned as ``OneOver(den)`` is applied as ``t_i /
  den``) and
  ``elementwise_rules`` / ``marker_rules`` / ``linear_map_rules`` (the three
  rules of such an op, for one ``register_rules`` call), ``linear_jvp`` (bind the primitive on the
  tangents of the operands it is declared linear in), ``multilinear_jvp``
  (one tangent at a time), ``selection_jvp`` (values picked by indices).
* Tangents: ``instantiate`` (a symbolic zero as zeros), ``add_tangents``.
* Batching: ``broadcasting_batch`` (elementwise), ``unary_batch``,
  ``front_batch`` / ``shifted_front_batch`` (batch axes to the front, bind
  once), ``align_front`` (a batched operand broadcast like the unbatched
  one), ``reshape_axis_into`` / ``reshape_axis_out_of`` and ``fold_batch`` /
  ``unfold_batch`` (fold a batch axis into another axis and back).

All of them are written with gradrules primitives, so the jaxprs they produce
stay inside the catalog (array helpers: ``primitives._compose``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import BatchDim, BatchResult, JvpResult, Primitive, Tangent, aval_of, is_zero
from ..core.registry import NOT_LINEAR, PRIMITIVES
from ..primitives._compose import zeros
from ..primitives.arithmetic import add, divide, multiply
from ..primitives.shape import (broadcast_to_p, expand_dims_p, moveaxis, reshape_p,
                                transpose_p)

Partial = Callable[..., Any]


@dataclass(frozen=True)
class OneOver:
    """A partial derivative ``scale / den``, as a named partial returns it
    (log's ``OneOver(x)``, log2's ``OneOver(x, 1 / log(2))``): ``chain_rule``
    divides the tangent by ``den``, one division where ``t * (1 / den)``
    takes a division and a product (and, transposed, the cotangent is
    divided by den, as jax.numpy's rules do), then multiplies by a constant
    ``scale`` other than 1. A constant factor of the derivative goes in
    ``scale``, not ``den``: a Hessian-vector product differentiates the
    division by den, and a constant inside den costs it a product more
    (log2's and log10's HVP took 1.17x jax.numpy's FLOPs)."""

    den: Any
    scale: float = 1.0


def instantiate(t: Tangent, like: Any) -> Any:
    """A symbolic zero as an array of zeros shaped like ``like``."""
    if is_zero(t):
        aval = aval_of(like)
        return zeros(aval.shape, aval.dtype)
    return t


def add_tangents(a: Tangent, b: Tangent) -> Tangent:
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return add(a, b)


def broadcast_like(t: Any, shape: tuple[int, ...]) -> Any:
    if tuple(np.shape(t)) == tuple(shape):
        return t
    return broadcast_to_p.bind(t, shape=tuple(shape))


def chain_rule(prim: Primitive, *partials: Partial | None) -> Callable[..., Any]:
    """The JVP ``t_out = sum_i t_i * d_i(*primals, out, **params)`` of ``prim``
    (``t_i / den`` where ``d_i`` returns ``OneOver(den)``).

    ``partials[i]`` is the named partial derivative with respect to operand i
    (``None``: the operand takes no tangent). A symbolic-zero tangent
    contributes nothing; if all are zero the result is a symbolic zero.
    """
    names = ", ".join(getattr(p, "__name__", "None") for p in partials)

    def jvp(primals: Sequence[Any], tangents: Sequence[Tangent], **params: Any) -> JvpResult:
        out = prim.bind(*primals, **params)
        t_out: Tangent = _jax.zero_tangent(out)
        for d, t in zip(partials, tangents):
            if d is None or is_zero(t):
                continue
            part = d(*primals, out, **params)
            if isinstance(part, OneOver):
                term = divide(t, part.den)
                term = term if part.scale == 1.0 else multiply(term, part.scale)
            else:
                term = multiply(t, part)
            t_out = add_tangents(t_out, term)
        if not is_zero(t_out):
            t_out = broadcast_like(t_out, np.shape(out))
        return out, t_out

    jvp.__name__ = f"chain_rule({names})"
    jvp.parts = tuple(p for p in partials if p is not None)  # type: ignore[attr-defined]
    return jvp


def elementwise_batch(prim: Primitive) -> Callable[..., BatchResult]:
    """The batching rule of an elementwise primitive: ``unary_batch`` (one
    operand) or ``broadcasting_batch`` (several, numpy broadcasting)."""
    n = len(PRIMITIVES[prim].operands)
    return partial(unary_batch if n == 1 else broadcasting_batch, prim)


def elementwise_rules(prim: Primitive, *partials: Partial | None) -> dict[str, Any]:
    """The rules of a nonlinear elementwise primitive, for ``register_rules(prim,
    **elementwise_rules(prim, _d_x, _d_y))``: ``jvp=chain_rule(prim, *partials)``
    (one partial derivative per operand, in operand order; ``None``: the
    operand takes no tangent), ``transpose=NOT_LINEAR`` and
    ``elementwise_batch``."""
    n = len(PRIMITIVES[prim].operands)
    if len(partials) != n:
        raise TypeError(f"elementwise_rules({prim.name}): {len(partials)} partials "
                        f"for {n} operands")
    return dict(jvp=chain_rule(prim, *partials), transpose=NOT_LINEAR,
                batch=elementwise_batch(prim))


def marker_rules(prim: Primitive, jvp: str) -> dict[str, Any]:
    """The rules of an elementwise primitive whose JVP is a marker
    (``NOT_DIFFERENTIABLE``: comparisons, predicates, logical and bitwise ops;
    ``ZERO_DERIVATIVE``: rounding, sign), for ``register_rules(prim,
    **marker_rules(prim, NOT_DIFFERENTIABLE))``: ``transpose=NOT_LINEAR`` and
    ``elementwise_batch``."""
    return dict(jvp=jvp, transpose=NOT_LINEAR, batch=elementwise_batch(prim))


def linear_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Tangent],
               **params: Any) -> JvpResult:
    """JVP of a primitive linear in the operands its ``register_rules(...,
    linear=...)`` names (jointly; the others, e.g. integer indices, take no
    tangent): bind it on their tangents (zeros where symbolic) with the other
    operands' primal values. All of them symbolic zeros: a symbolic-zero
    result."""
    info = PRIMITIVES[prim]
    positions = set(info.positions(info.joint_linear(), len(primals)))
    out = prim.bind(*primals, **params)
    if all(is_zero(tangents[i]) for i in positions):
        if prim.multiple_results:
            return out, [_jax.zero_tangent(o) for o in out]
        return out, _jax.zero_tangent(out)
    args = [instantiate(tangents[i], p) if i in positions else p for i, p in enumerate(primals)]
    return out, prim.bind(*args, **params)


def selection_jvp(prim: Primitive, gather: Callable[..., Any], primals: Sequence[Any],
                  tangents: Sequence[Tangent], **params: Any) -> JvpResult:
    """JVP of a one-operand primitive ``(values, indices) = prim(x)`` whose
    values are elements of x picked by the indices (sort, topk, max_pool2d):
    ``t_values = gather(t_x, indices, **params)``, a gather linear in ``t_x``
    (its transpose is the gather's own, a scatter-add); the indices take no
    tangent. A symbolic-zero ``t_x`` gives a symbolic-zero ``t_values``."""
    (x,), (t,) = primals, tangents
    values, indices = prim.bind(x, **params)
    t_values = _jax.zero_tangent(values) if is_zero(t) else gather(t, indices, **params)
    return [values, indices], [t_values, _jax.zero_tangent(indices)]


def bdim_to_front(x: Any, d: BatchDim, size: int | None = None) -> Any:
    """Move the batch axis to the front; an unbatched operand is broadcast
    along a new front axis when ``size`` is given."""
    if d is None:
        if size is None:
            return x
        return broadcast_to_p.bind(x, shape=(size,) + tuple(np.shape(x)))
    return moveaxis(x, d, 0)


def batch_size(args: Sequence[Any], dims: Sequence[BatchDim]) -> int:
    return next(np.shape(a)[d] for a, d in zip(args, dims) if d is not None)


def broadcasting_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                       **params: Any) -> BatchResult:
    """Batching of an elementwise primitive with numpy broadcasting.

    Batched operands get the batch axis in front and size-1 axes after it up
    to the largest rank; unbatched ones are left alone (broadcasting aligns
    trailing axes), then the primitive is bound once.
    """
    rank = max(np.ndim(a) - (d is not None) for a, d in zip(args, dims))
    moved = []
    for a, d in zip(args, dims):
        if d is None:
            moved.append(a)
            continue
        moved.append(align_front(moveaxis(a, d, 0), rank + 1))
    return prim.bind(*moved, **params), 0


def unary_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                **params: Any) -> BatchResult:
    """Batching of a primitive that acts on each element (or keeps the axes
    of its single operand in place): the batch axis passes through, to each
    result of a primitive with several."""
    (x,), (d,) = args, dims
    out = prim.bind(x, **params)
    return out, ([d] * len(out) if prim.multiple_results else d)


def multilinear_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Tangent],
                    **params: Any) -> JvpResult:
    """The JVP of a primitive linear in each operand separately (matmul,
    einsum, convolution): t_out = sum_i prim(..., t_i, ...), the primitive
    with one tangent in place."""
    out = prim.bind(*primals, **params)
    t: Tangent = _jax.zero_tangent(out)
    for i, ti in enumerate(tangents):
        if is_zero(ti):
            continue
        ops = list(primals)
        ops[i] = ti
        t = add_tangents(t, prim.bind(*ops, **params))
    return out, t


def to_front(args: Sequence[Any], dims: Sequence[BatchDim]) -> list[Any]:
    """Batch axes to the front; unbatched operands broadcast along a new one."""
    size = batch_size(args, dims)
    return [bdim_to_front(a, d, size) for a, d in zip(args, dims)]


def shifted_front_batch(prim: Primitive, shift: tuple[str, ...], args: Sequence[Any],
                        dims: Sequence[BatchDim], **params: Any) -> BatchResult:
    """Batching of a primitive whose operands share their leading axes: all
    batch axes to the front (unbatched operands broadcast), the integer params
    named in ``shift`` (axis numbers) moved up by one, bound once."""
    params = {k: v + 1 if k in shift else v for k, v in params.items()}
    out = prim.bind(*to_front(args, dims), **params)
    return out, ([0] * len(out) if prim.multiple_results else 0)


def front_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                **params: Any) -> BatchResult:
    """``shifted_front_batch`` with no axis params: leading axes map through."""
    return shifted_front_batch(prim, (), args, dims, **params)


def linear_map_rules(prim: Primitive, transpose: Callable[..., Any],
                     batch: Callable[..., BatchResult] | None = None) -> dict[str, Any]:
    """The rules of a primitive jointly linear in its declared operands, for
    ``register_rules(prim, linear=(...), **linear_map_rules(prim, transpose))``:
    ``jvp=linear_jvp`` (the primitive on the tangents), the ``transpose``
    given, and ``batch`` (default ``front_batch``: leading axes map through)."""
    return dict(jvp=partial(linear_jvp, prim), transpose=transpose,
                batch=batch if batch is not None else partial(front_batch, prim))


def reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """Merge axis ``src`` into axis ``dst`` (numbered after ``src`` is removed),
    ``src`` becoming the major part (JAX's _reshape_axis_into)."""
    shape = list(np.shape(x))
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    if perm != list(range(len(shape))):
        x = transpose_p.bind(x, permutation=tuple(perm))
    new = [d for i, d in enumerate(shape) if i != src]
    new[dst] *= shape[src]
    return reshape_p.bind(x, new_sizes=tuple(new))


def reshape_axis_out_of(src: int, size1: int, x: Any, size2: int | None = None) -> Any:
    """Split axis ``src`` into (size1, size2) (JAX's _reshape_axis_out_of);
    ``size2`` defaults to the rest, and must be given when size1 may be 0."""
    shape = list(np.shape(x))
    shape[src:src + 1] = [size1, shape[src] // size1 if size2 is None else size2]
    return reshape_p.bind(x, new_sizes=tuple(shape))


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
