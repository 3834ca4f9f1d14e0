"""Building blocks shared by the rules of every family.

* ``chain_rule(*partials)``: the JVP of an elementwise op from named partial
  derivative functions, ``t_out = sum_i t_i * d_i(*primals, out, **params)``.
* ``linear_jvp``: the JVP of a primitive linear in all its operands (it binds
  itself on the tangents).
* ``unbroadcast``: the transpose of numpy broadcasting (sum, then reshape).
* ``broadcasting_batch``: the batching rule of every elementwise primitive.

All of them are written with gradrules primitives, so the jaxprs they produce
stay inside the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import Primitive, aval_of, is_zero
from ..primitives.reduction import sum_p
from ..primitives.shape import (broadcast_to_p, expand_dims_p, moveaxis, reshape_p)

Partial = Callable[..., Any]


def zeros(shape: Sequence[int], dtype: Any) -> Any:
    """An array of zeros made of catalog primitives (a broadcast literal)."""
    shape = tuple(shape)
    z = np.zeros((), dtype)
    return broadcast_to_p.bind(z, shape=shape) if shape else z


def instantiate(t: Any, like: Any) -> Any:
    """A symbolic zero as an array of zeros shaped like ``like``."""
    if is_zero(t):
        aval = aval_of(like)
        return zeros(aval.shape, aval.dtype)
    return t


def add_tangents(a: Any, b: Any) -> Any:
    from ..primitives.arithmetic import add
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
    """The JVP ``t_out = sum_i t_i * d_i(*primals, out, **params)`` of ``prim``.

    ``partials[i]`` is the named partial derivative with respect to operand i
    (``None``: the operand takes no tangent). A symbolic-zero tangent
    contributes nothing; if all are zero the result is a symbolic zero.
    """
    names = ", ".join(getattr(p, "__name__", "None") for p in partials)

    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        from ..primitives.arithmetic import multiply
        out = prim.bind(*primals, **params)
        t_out: Any = _jax.zero_tangent(out)
        for d, t in zip(partials, tangents):
            if d is None or is_zero(t):
                continue
            t_out = add_tangents(t_out, multiply(t, d(*primals, out, **params)))
        if not is_zero(t_out):
            t_out = broadcast_like(t_out, np.shape(out))
        return out, t_out

    jvp.__name__ = f"chain_rule({names})"
    jvp.partials = partials  # type: ignore[attr-defined]
    return jvp


def linear_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Any],
               **params: Any) -> Any:
    """JVP of a primitive linear in every operand: bind it on the tangents."""
    out = prim.bind(*primals, **params)
    if all(is_zero(t) for t in tangents):
        if prim.multiple_results:
            return out, [_jax.zero_tangent(o) for o in out]
        return out, _jax.zero_tangent(out)
    ts = [instantiate(t, p) for t, p in zip(tangents, primals)]
    return out, prim.bind(*ts, **params)


def unbroadcast(ct: Any, aval: Any) -> Any:
    """Transpose of numpy broadcasting to ``ct``'s shape: sum the copies."""
    shape = tuple(aval.shape)
    ct_shape = tuple(np.shape(ct))
    if ct_shape == shape:
        return ct
    lead = len(ct_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and ct_shape[lead + i] != 1)
    if axes:
        ct = sum_p.bind(ct, axes=axes, keepdims=False)
    if tuple(np.shape(ct)) != shape:
        ct = reshape_p.bind(ct, new_sizes=shape)
    return ct


def bdim_to_front(x: Any, d: int | None, size: int | None = None) -> Any:
    """Move the batch axis to the front; an unbatched operand is broadcast
    along a new front axis when ``size`` is given."""
    if d is None:
        if size is None:
            return x
        return broadcast_to_p.bind(x, shape=(size,) + tuple(np.shape(x)))
    return moveaxis(x, d, 0)


def batch_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    return next(np.shape(a)[d] for a, d in zip(args, dims) if d is not None)


def broadcasting_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[int | None],
                       **params: Any) -> tuple[Any, int]:
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
        a = moveaxis(a, d, 0)
        missing = rank - (np.ndim(a) - 1)
        if missing:
            a = expand_dims_p.bind(a, axes=tuple(range(1, 1 + missing)))
        moved.append(a)
    return prim.bind(*moved, **params), 0


def unary_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[int | None],
                **params: Any) -> tuple[Any, int | None]:
    """Batching of a primitive that acts on each element (or keeps the axes
    of its single operand in place): the batch axis passes through."""
    (x,), (d,) = args, dims
    return prim.bind(x, **params), d
