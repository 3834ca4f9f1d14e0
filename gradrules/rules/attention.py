"""Rules of the attention family (three primitives, DESIGN.md).

* ``attention_p``: its JVP binds ``attention_jvp_p`` on the tangents of q, k,
  v and bias (forward mode runs the blockwise tangent kernel); ``lse`` takes
  the log-sum-exp's tangent, ``lse_lo`` (the rounding of ``lse``, a
  constant locally) a symbolic zero.
* ``attention_jvp_p``: linear in its tangents ``tq, tk, tv, tbias``; its
  transpose binds ``attention_vjp_p`` (reverse mode runs the blockwise
  backward). Its JVP: the part linear in the tangents binds itself, the rest
  is the JVP of ``_tangent_map``, the same map written in gradrules ops.
* ``attention_vjp_p``: linear in the cotangents ``ct_out, ct_lse``; its
  transpose binds ``attention_jvp_p`` back. Its JVP: the part linear in the
  cotangents binds itself, the rest (the tangents of q, k, v, bias, out and
  lse) binds ``attention_vjp_jvp_p``, so a Hessian-vector product runs
  blockwise too.
* ``attention_vjp_jvp_p``: linear in ``tq, tk, tv, tbias, t_out, t_lse``;
  its value is ``_backward_jvp_map``, the JVP of ``_backward_map`` (the
  linear transpose of ``_tangent_map``), whose JVP (third order) and linear
  transpose give its own.

``_tangent_map``, ``_backward_map`` and ``_backward_jvp_map`` materialise
the ``[B, H, Sq, Sk]`` scores; the lowerings of the primitives
(``primitives/_attention_xla``) are deliberately separate, blockwise,
jax.numpy code with the same maths, so that the first and second
derivatives never hold more than a block of scores.

Batching folds the vmapped axis into the batch axis B and binds once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax

from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_undefined_primal, is_zero)
from ..core.kernels import Implementation
from ..core.numerics import rounded_below_acc
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, PRIMITIVES
from ..primitives._compose import cast, unbroadcast, zeros
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.attention import (attention_jvp_p, attention_p, attention_vjp_jvp_p,
                                    attention_vjp_p)
from ..primitives.compare import eq, where
from ..primitives.linalg import einsum
from ..primitives.reduction import sum_p
from ..primitives.shape import broadcast_to, broadcast_to_p, expand_dims, reshape, transpose
from ..primitives.unary import exp
from ._common import (add_tangents, batch_size, bdim_to_front, fold_batch, instantiate,
                      unfold_batch)
from ._fused import (all_zero, backward_jvp, composite_jvp, dense_transpose, transpose_to,
                     zero_tangents)


# batching (all four) ---------------------------------------------------------
# mask, bias and tbias have a leading axis of 1 or B; every other operand's is B
_PAIR_OPERANDS = ("mask", "bias", "tbias")


def _fold(x: Any, d: BatchDim, n: int, batch: int, pair: bool, full: bool = False) -> Any:
    """The vmapped axis (size n) folded into the leading batch axis: [n * B, ...]."""
    if pair and d is None and np.shape(x)[0] == 1 and not full:
        return x                                   # broadcasts along n * B as it is
    if np.shape(x)[1 if d == 0 else 0] != batch:   # a mask or bias shared by the batch
        x = bdim_to_front(x, d, n)
        x, d = broadcast_to_p.bind(x, shape=(n, batch) + np.shape(x)[2:]), 0
    return fold_batch(x, d, n)


def _fold_all(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
              full_bias: bool = False) -> tuple[list[Any], int, int]:
    """Every operand folded; ``full_bias``: the bias spread over the whole
    batch even where it is shared and unbatched."""
    info = PRIMITIVES[prim]
    pairs = set(info.positions(n for n in _PAIR_OPERANDS if n in info.operands))
    (bias_at,) = info.positions(("bias",))
    n = batch_size(args, dims)
    q, dq = args[0], dims[0]
    batch = np.shape(q)[1 if dq == 0 else 0]
    folded = [_fold(x, d, n, batch, i in pairs, full_bias and i == bias_at)
              for i, (x, d) in enumerate(zip(args, dims))]
    return folded, n, batch


def _attention_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                     **params: Any) -> BatchResult:
    """Fold, bind once, unfold. The bias of attention_jvp_p is spread over the
    batch whenever its tangent is, so that the tangent still broadcasts to it."""
    full_bias = False
    if prim is attention_jvp_p:
        (at,) = PRIMITIVES[prim].positions(("tbias",))
        full_bias = not (dims[at] is None and np.shape(args[at])[0] == 1)
    folded, n, batch = _fold_all(prim, args, dims, full_bias=full_bias)
    outs = prim.bind(*folded, **params)
    return [unfold_batch(o, n, batch) for o in outs], [0] * len(outs)


# attention_p -----------------------------------------------------------------
def _attention_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, causal: bool,
                   scale: float, implementation: Implementation) -> JvpResult:
    """``(t_out, t_lse) = attention_jvp(q, k, v, mask, bias, out, lse, lse_lo,
    tq, tk, tv, tbias)``: the tangent map on the forward's outputs, with zeros
    for symbolic-zero tangents; the mask takes no tangent, ``lse_lo`` a
    symbolic zero (as ``forward_jvp``'s outputs beyond the tangent map's).
    Not ``forward_jvp``: a zero tbias is one broadcast ``[1, 1, 1, 1]``
    entry, never zeros shaped like a full ``[B, H, Sq, Sk]`` bias."""
    params = dict(causal=causal, scale=scale, implementation=implementation)
    outs = attention_p.bind(*primals, **params)
    q, k, v, _, bias = primals
    tq, tk, tv, _, tbias = tangents
    if all_zero((tq, tk, tv, tbias)):
        return outs, zero_tangents(outs)
    if is_zero(tbias):
        tbias = zeros((1, 1, 1, 1), aval_of(bias).dtype)
    ts = [instantiate(t, x) for t, x in ((tq, q), (tk, k), (tv, v))]
    t_outs = attention_jvp_p.bind(*primals, *outs, *ts, tbias, **params)
    return outs, [*t_outs, *zero_tangents(outs[len(t_outs):])]


register_rules(attention_p, jvp=_attention_jvp, transpose=NOT_LINEAR,
               batch=partial(_attention_batch, attention_p))


# attention_jvp_p: the tangent map in gradrules ops ----------------------------
_QK = "bqhgd,bkhd->bhgqk"      # scores, from q [B, Sq, Hkv, G, D] and k [B, Sk, Hkv, D]
_PV = "bhgqk,bkhd->bqhgd"      # weights times values, back in the layout of q


def _groups(x: Any, hkv: int) -> Any:
    """[B, S, H, D] -> [B, S, Hkv, G, D] (query head h = kv head h // G)."""
    b, s, h, d = np.shape(x)
    return reshape(x, (b, s, hkv, h // hkv, d))


def _pairs(x: Any, hkv: int, g: int) -> Any:
    """A mask or bias [b, h, Sq, Sk] (h in {1, H}) -> [b, Hkv|1, G|1, Sq, Sk]."""
    mb, mh, mq, mk = np.shape(x)
    return reshape(x, (mb, hkv, g, mq, mk) if mh != 1 else (mb, 1, 1, mq, mk))


def _weights(q5: Any, k: Any, mask5: Any, bias5: Any, lse: Any, lse_lo: Any, *,
             causal: bool, scale: float) -> Any:
    """p = exp((s - lse) - lse_lo) where a key counts, else 0 (the inner where
    keeps the derivatives of masked entries finite): ``core.numerics.probs``
    in gradrules ops, the log-sum-exp pair as the lowerings take it."""
    b, sq, hkv, g, _ = np.shape(q5)
    sk = np.shape(k)[1]
    s = add(multiply(einsum(_QK, q5, k), scale), bias5)
    valid = mask5
    if causal:
        valid = where(np.tril(np.ones((sq, sk), bool), sk - sq), mask5, False)
    lse = reshape(where(eq(lse, -np.inf), 0.0, lse), (b, hkv, g, sq, 1))
    shifted = subtract(subtract(s, lse), reshape(lse_lo, (b, hkv, g, sq, 1)))
    return where(valid, exp(where(valid, shifted, 0.0)), 0.0)


def _tangent_map(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any, lse: Any,
                 lse_lo: Any, tq: Any, tk: Any, tv: Any, tbias: Any, *, causal: bool,
                 scale: float) -> list[Any]:
    """What attention_jvp_p computes, in gradrules ops (materialises the scores,
    unlike the blockwise lowering ``_attention_xla.jvp``):
    t_lse_i = sum_j p_ij ds_ij, t_out_i = sum_j p_ij (ds_ij v_j + tv_j) - t_lse_i out_i,
    with out_i = sum_j p_ij v_j for 16-bit input (its ``out`` is rounded),
    as in the lowering."""
    acc = aval_of(lse).dtype
    hkv = np.shape(k)[2]
    g = np.shape(q)[2] // hkv
    q5, tq5, out5 = (_groups(cast(x, acc), hkv) for x in (q, tq, out))
    k, tk, v, tv = (cast(x, acc) for x in (k, tk, v, tv))
    p = _weights(q5, k, _pairs(mask, hkv, g), _pairs(cast(bias, acc), hkv, g), lse, lse_lo,
                 causal=causal, scale=scale)
    if rounded_below_acc(aval_of(out).dtype):       # not the rounded 16-bit out
        out5 = einsum(_PV, p, v)
    ds = add(multiply(add(einsum(_QK, tq5, k), einsum(_QK, q5, tk)), scale),
             _pairs(cast(tbias, acc), hkv, g))
    pds = multiply(p, ds)
    t_lse = einsum("bhgqk->bqhg", pds)
    t_out = subtract(add(einsum(_PV, pds, v), einsum(_PV, p, tv)),
                     multiply(expand_dims(t_lse, axis=-1), out5))
    t_lse = reshape(transpose(t_lse, (0, 2, 3, 1)), np.shape(lse))
    return [cast(reshape(t_out, np.shape(out)), aval_of(out).dtype), t_lse]


def _attention_jvp_transpose(ct: Cotangent, q: MaybeUndefined, k: MaybeUndefined,
                             v: MaybeUndefined, mask: MaybeUndefined, bias: MaybeUndefined,
                             out: MaybeUndefined, lse: MaybeUndefined, lse_lo: MaybeUndefined,
                             tq: MaybeUndefined, tk: MaybeUndefined, tv: MaybeUndefined,
                             tbias: MaybeUndefined, **params: Any) -> list[Any]:
    """The backward kernel on (ct_out, ct_lse) (either may be a symbolic zero,
    instantiated by ``transpose_to``); dbias, which comes out in the shape of
    bias, summed to the shape of tbias (which only broadcasts to it)."""
    *cts, dbias = transpose_to(attention_jvp_p, attention_vjp_p, ct, q, k, v, mask, bias, out,
                               lse, lse_lo, tq, tk, tv, tbias, **params)
    return [*cts, unbroadcast(dbias, tbias.aval) if is_undefined_primal(tbias) else None]


register_rules(attention_jvp_p, linear=("tq", "tk", "tv", "tbias"),
               jvp=partial(composite_jvp, attention_jvp_p, _tangent_map),
               transpose=_attention_jvp_transpose,
               batch=partial(_attention_batch, attention_jvp_p))


# attention_vjp_p -------------------------------------------------------------
def _backward_map(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any, lse: Any,
                  lse_lo: Any, ct_out: Any, ct_lse: Any, *, causal: bool,
                  scale: float) -> list[Any]:
    """What attention_vjp_p computes: the linear transpose of ``_tangent_map``
    (materialises the scores, unlike the blockwise ``_attention_xla.backward``)."""
    def tangent_map(tq: Any, tk: Any, tv: Any, tbias: Any) -> tuple[Any, Any]:
        t_out, t_lse = _tangent_map(q, k, v, mask, bias, out, lse, lse_lo, tq, tk, tv, tbias,
                                    causal=causal, scale=scale)
        return t_out, t_lse

    avals = [jax.ShapeDtypeStruct(np.shape(x), aval_of(x).dtype) for x in (q, k, v, bias)]
    return list(jax.linear_transpose(tangent_map, *avals)((ct_out, ct_lse)))


def _attention_vjp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], **params: Any
                       ) -> JvpResult:
    """``(dq, dk, dv, dbias)`` are linear in ``(ct_out, ct_lse)``, whose
    tangents go through ``attention_vjp_p`` itself; those of ``q, k, v,
    bias, out, lse`` through ``attention_vjp_jvp_p`` (``backward_jvp``;
    ``lse_lo`` enters only ``p = exp((s - lse) - lse_lo)``, beside ``lse``:
    its tangent is added to ``lse``'s; the mask takes none). A zero tbias is
    one broadcast entry."""
    q, k, v, _, bias, out, lse, _, _, _ = primals
    tq, tk, tv, _, tbias, t_out, t_lse, t_lo, _, _ = tangents
    t_lse = add_tangents(t_lse, t_lo)
    moving = None
    if not all_zero((tq, tk, tv, tbias, t_out, t_lse)):
        if is_zero(tbias):
            tbias = zeros((1, 1, 1, 1), aval_of(bias).dtype)
        moving = [instantiate(t, x) for t, x in ((tq, q), (tk, k), (tv, v))]
        moving += [tbias, instantiate(t_out, out), instantiate(t_lse, lse)]
    return backward_jvp(attention_vjp_p, attention_vjp_jvp_p, primals, tangents, moving,
                        **params)


def _attention_vjp_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                         **params: Any) -> BatchResult:
    """As ``_attention_batch``, with the bias spread over the whole batch so that
    dbias (the last result) comes out per example, then summed back where the
    bias was shared."""
    folded, n, batch = _fold_all(prim, args, dims, full_bias=True)
    *grads, dbias = (unfold_batch(o, n, batch) for o in prim.bind(*folded, **params))
    (at,) = PRIMITIVES[prim].positions(("bias",))
    if np.shape(args[at])[1 if dims[at] == 0 else 0] == 1 and batch != 1:
        dbias = sum_p.bind(dbias, axes=(1,), keepdims=True)
    return [*grads, dbias], [0] * (len(grads) + 1)


register_rules(attention_vjp_p, linear=("ct_out", "ct_lse"), jvp=_attention_vjp_jvp,
               transpose=partial(transpose_to, attention_vjp_p, attention_jvp_p),
               batch=partial(_attention_vjp_batch, attention_vjp_p))


# attention_vjp_jvp_p: the backward's tangent (second order) --------------------
def _backward_jvp_map(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any, lse: Any,
                      lse_lo: Any, ct_out: Any, ct_lse: Any, tq: Any, tk: Any, tv: Any,
                      tbias: Any, t_out: Any, t_lse: Any, *, causal: bool,
                      scale: float) -> list[Any]:
    """What attention_vjp_jvp_p computes: the JVP of ``_backward_map`` in
    ``q, k, v, bias, out, lse`` along ``tq, tk, tv, tbias`` (broadcast to
    the bias), ``t_out, t_lse`` (materialises the scores, unlike the
    blockwise ``_attention_xla.backward_jvp``)."""
    def backward(q: Any, k: Any, v: Any, bias: Any, out: Any, lse: Any) -> tuple[Any, ...]:
        return tuple(_backward_map(q, k, v, mask, bias, out, lse, lse_lo, ct_out, ct_lse,
                                   causal=causal, scale=scale))

    ts = (tq, tk, tv, broadcast_to(tbias, np.shape(bias)), t_out, t_lse)
    return list(jax.jvp(backward, (q, k, v, bias, out, lse), ts)[1])


register_rules(attention_vjp_jvp_p, linear=("tq", "tk", "tv", "tbias", "t_out", "t_lse"),
               jvp=partial(composite_jvp, attention_vjp_jvp_p, _backward_jvp_map),
               transpose=partial(dense_transpose, attention_vjp_jvp_p, _backward_jvp_map),
               batch=partial(_attention_vjp_batch, attention_vjp_jvp_p))
