"""Rules of the products family. dot, outer, kron and cross are bilinear:
their JVP binds the primitive once per nonzero tangent (``multilinear_jvp``)
and their transposes are products of the cotangent with the other operand:
dot's and outer's are dots (operands reshaped to matrices), kron's a
multiply and a sum over the cotangent viewed as ``[ma, nb, ma', nb', ...]``,
cross's cross products again (written out entry by entry). Under vmap a
batched operand's batch axis becomes a free axis of the product (one bind of
the primitive); with both batched it is the batch axis of a bmm (dot) or of
a broadcast multiply (outer, kron)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import (BatchDim, BatchResult, Cotangent, MaybeUndefined, aval_of,
                    is_undefined_primal)
from ..core.primitive import register_rules
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.layout import flip_p
from ..primitives.linalg import bmm_p
from ..primitives.products import cross_p, dot_p, kron_p, outer_p
from ..primitives.reduction import sum_p
from ..primitives.shape import expand_dims_p, moveaxis, reshape_p, transpose_p
from ..primitives.slicing import select_p
from ._common import batch_size, front_batch, multilinear_jvp
from .layout import pad_axis


def _reshaped(x: Any, shape: tuple[int, ...]) -> Any:
    return x if tuple(np.shape(x)) == tuple(shape) else reshape_p.bind(x, new_sizes=shape)


def _swap(x: Any, order: Sequence[int]) -> Any:
    order = tuple(order)
    return x if order == tuple(range(len(order))) else transpose_p.bind(x, permutation=order)


# --------------------------------------------------------------------- dot
def _b_matrix(b: Any) -> Any:
    """b [B..., k, n] as the matrix [B... n, k] (1-D b [k]: [1, k])."""
    bs = tuple(np.shape(b))
    if len(bs) == 1:
        return _reshaped(b, (1, bs[0]))
    nd = len(bs)
    order = list(range(nd - 2)) + [nd - 1, nd - 2]
    return _reshaped(_swap(b, order), (math.prod(bs[:-2]) * bs[-1], bs[-2]))


def _dot_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined) -> list[Any]:
    """a: ``dot(ct [A..., B... n], b as [B... n, k])``; b: ``dot(a as
    [k, A...]^T, ct [A..., B... n])`` reshaped to [k, B..., n] with k moved
    to its place (1-D b: ``dot(ct [A...], a [A..., k])``)."""
    as_, bs = tuple(aval_of(a).shape), tuple(aval_of(b).shape)
    lead = as_[:-1]
    if is_undefined_primal(a):
        free = 1 if len(bs) == 1 else math.prod(bs[:-2]) * bs[-1]
        return [dot_p.bind(_reshaped(ct, lead + (free,)), _b_matrix(b)), None]
    rows = math.prod(lead)
    a2 = _reshaped(a, (rows, as_[-1]))
    if len(bs) == 1:
        return [None, dot_p.bind(_reshaped(ct, (rows,)), a2)]
    g = dot_p.bind(_swap(a2, (1, 0)), _reshaped(ct, (rows, math.prod(bs[:-2]) * bs[-1])))
    g = _reshaped(g, (bs[-2],) + bs[:-2] + bs[-1:])
    nb = len(bs) - 2
    return [None, _swap(g, list(range(1, nb + 1)) + [0, nb + 1])]


def _dot_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """a alone batched: its batch axis first, a leading axis of the result;
    b alone: a free axis of b (its first, or the column axis of a 1-D b);
    both: one bmm of a [s, A..., k] and b [s, k, B... n]."""
    (a, b), (da, db) = args, dims
    an = np.ndim(a) - (da is not None)
    bn = np.ndim(b) - (db is not None)
    if db is None:
        return dot_p.bind(moveaxis(a, da, 0), b), 0
    if da is None:
        return dot_p.bind(a, moveaxis(b, db, 1 if bn == 1 else 0)), an - 1
    s = batch_size(args, dims)
    a = moveaxis(a, da, 0)
    b = moveaxis(b, db, 0)
    lead = tuple(np.shape(a)[1:-1])
    a3 = _reshaped(a, (s, math.prod(lead), np.shape(a)[-1]))
    if bn == 1:
        out = bmm_p.bind(a3, _reshaped(b, tuple(np.shape(b)) + (1,)))
        return _reshaped(out, (s,) + lead), 0
    bs = tuple(np.shape(b))
    order = [0, len(bs) - 2] + list(range(1, len(bs) - 2)) + [len(bs) - 1]
    b3 = _reshaped(_swap(b, order), (s, bs[-2], math.prod(bs[1:-2]) * bs[-1]))
    out = bmm_p.bind(a3, b3)
    return _reshaped(out, (s,) + lead + bs[1:-2] + bs[-1:]), 0


register_rules(dot_p, linear=(("a",), ("b",)), jvp=partial(multilinear_jvp, dot_p),
               transpose=_dot_transpose, batch=_dot_batch)


# ------------------------------------------------------------------- outer
def _outer_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined) -> list[Any]:
    """a: ``dot(ct, b)``; b: ``dot(a, ct)``."""
    if is_undefined_primal(a):
        return [dot_p.bind(ct, b), None]
    return [None, dot_p.bind(a, ct)]


def _outer_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """One batched operand: its batch axis folded into its own (an outer of
    [s m] and [n], split after); both: a broadcast multiply."""
    (a, b), (da, db) = args, dims
    s = batch_size(args, dims)
    if db is None:
        m = np.shape(a)[1 - da]
        out = outer_p.bind(_reshaped(moveaxis(a, da, 0), (s * m,)), b)
        return _reshaped(out, (s, m, np.shape(b)[0])), 0
    if da is None:
        n = np.shape(b)[1 - db]
        out = outer_p.bind(a, _reshaped(moveaxis(b, db, 0), (s * n,)))
        return _reshaped(out, (np.shape(a)[0], s, n)), 1
    a = expand_dims_p.bind(moveaxis(a, da, 0), axes=(2,))
    b = expand_dims_p.bind(moveaxis(b, db, 0), axes=(1,))
    return multiply(a, b), 0


register_rules(outer_p, linear=(("a",), ("b",)), jvp=partial(multilinear_jvp, outer_p),
               transpose=_outer_transpose, batch=_outer_batch)


# -------------------------------------------------------------------- kron
def _kron_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined) -> list[Any]:
    """ct viewed as [ma, nb, ma', nb', ...], times the other operand
    broadcast along the axes of this one, summed over the other's axes (a
    multiply fused into the reduction, as jnp.kron's own transpose)."""
    as_, bs = tuple(aval_of(a).shape), tuple(aval_of(b).shape)
    r = len(as_)
    ct = _reshaped(ct, tuple(d for pair in zip(as_, bs) for d in pair))
    a_axes, b_axes = tuple(range(0, 2 * r, 2)), tuple(range(1, 2 * r, 2))
    if is_undefined_primal(a):
        prod = multiply(ct, expand_dims_p.bind(b, axes=a_axes))
        return [_summed_to(prod, b_axes, as_), None]
    prod = multiply(ct, expand_dims_p.bind(a, axes=b_axes))
    return [None, _summed_to(prod, a_axes, bs)]


def _summed_to(x: Any, axes: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """x summed over ``axes`` into ``shape``."""
    return _reshaped(sum_p.bind(x, axes=axes, keepdims=False), shape)


def _kron_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """One batched operand: the other gets a leading unit axis and the
    batch axis is the leading axis of the kron (``s * 1`` entries); both: a
    broadcast multiply of the interleaved operands, reshaped."""
    (a, b), (da, db) = args, dims
    if db is None:
        return kron_p.bind(moveaxis(a, da, 0), expand_dims_p.bind(b, axes=(0,))), 0
    if da is None:
        return kron_p.bind(expand_dims_p.bind(a, axes=(0,)), moveaxis(b, db, 0)), 0
    a, b = moveaxis(a, da, 0), moveaxis(b, db, 0)
    r = np.ndim(a) - 1
    prod = multiply(expand_dims_p.bind(a, axes=tuple(range(2, 2 * r + 1, 2))),
                    expand_dims_p.bind(b, axes=tuple(range(1, 2 * r, 2))))
    shape = tuple(m * n for m, n in zip(np.shape(a), np.shape(b)))
    return _reshaped(prod, (np.shape(a)[0],) + shape[1:]), 0


register_rules(kron_p, linear=(("a",), ("b",)), jvp=partial(multilinear_jvp, kron_p),
               transpose=_kron_transpose, batch=_kron_batch)


# ------------------------------------------------------------------- cross
def _swapped_pair(x: Any, signs: tuple[float, float]) -> Any:
    """``(signs[0] x1, signs[1] x0)`` along the last axis of 2-vectors x."""
    flipped = flip_p.bind(x, axes=(np.ndim(x) - 1,))
    return multiply(flipped, np.asarray(signs, aval_of(x).dtype))


def _cross_by_entries(a: Any, b: Any) -> Any:
    """``a x b`` of 3-vectors, entry k ``a_i b_j - a_j b_i`` ((k, i, j)
    cyclic) padded into place along the last axis and the three added. The
    transposes take this form rather than bind cross_p: XLA's CPU backend
    writes jnp.cross's stacked entries transposed and copies them back when
    two such products leave one computation (both halves of a gradient),
    2.7x the time of jax.numpy's gradient, which is this sum of pads."""
    last = np.ndim(a) - 1

    def entry(x: Any, i: int) -> Any:
        return select_p.bind(x, axis=last, index=i)

    out = None
    for k in range(3):
        i, j = (k + 1) % 3, (k + 2) % 3
        c = subtract(multiply(entry(a, i), entry(b, j)), multiply(entry(a, j), entry(b, i)))
        placed = pad_axis(expand_dims_p.bind(c, axes=(last,)), last, k, 2 - k)
        out = placed if out is None else add(out, placed)
    return out


def _cross_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined) -> list[Any]:
    """3-vectors: ``ct_a = b x ct``, ``ct_b = ct x a`` (the scalar triple
    product ``ct . (a x b) = a . (b x ct) = b . (ct x a)``); 2-vectors:
    ``ct_a = ct (b1, -b0)``, ``ct_b = ct (-a1, a0)``."""
    if aval_of(a).shape[-1] == 3:
        if is_undefined_primal(a):
            return [_cross_by_entries(b, ct), None]
        return [None, _cross_by_entries(ct, a)]
    col = expand_dims_p.bind(ct, axes=(np.ndim(ct),))
    if is_undefined_primal(a):
        return [multiply(col, _swapped_pair(b, (1.0, -1.0))), None]
    return [None, multiply(col, _swapped_pair(a, (-1.0, 1.0)))]


register_rules(cross_p, linear=(("a",), ("b",)), jvp=partial(multilinear_jvp, cross_p),
               transpose=_cross_transpose, batch=partial(front_batch, cross_p))
