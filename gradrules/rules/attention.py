"""Rules of the attention family (three primitives, DESIGN.md).

* ``attention_p``: its JVP binds ``attention_jvp_p`` on the tangents of q, k,
  v and bias (forward mode runs the blockwise tangent kernel).
* ``attention_jvp_p``: linear in its tangents; its transpose binds
  ``attention_vjp_p`` (reverse mode runs the blockwise backward). Its JVP:
  the part linear in the tangents binds itself, the rest is the JVP of
  ``_tangent_map``, the same map written in gradrules ops.
* ``attention_vjp_p``: linear in the cotangents; its transpose binds
  ``attention_jvp_p`` back, its JVP comes from ``_backward_map`` (the linear
  transpose of ``_tangent_map``).

Batching folds the vmapped axis into the batch axis B and binds once.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax

from .._jax import aval_of, is_undefined_primal, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.attention import attention_jvp_p, attention_p, attention_vjp_p
from ..primitives.compare import eq, where
from ..primitives.linalg import einsum
from ..primitives.reduction import sum_p
from ..primitives.shape import broadcast_to_p, expand_dims, reshape, transpose
from ..primitives.unary import exp
from ._common import batch_size, bdim_to_front, instantiate, unbroadcast, zeros
from ._fused import (cast, composite_jvp, fold_batch, fused_forward_jvp, primals_and_outputs,
                     swap_transpose, unfold_batch)

_N_FIXED = 7   # q, k, v, mask, bias, out, lse


# attention_p -----------------------------------------------------------------
def _attention_tangents(primals: Any, tangents: Any) -> list[Any]:
    """(tq, tk, tv, tbias), zeros where symbolic; a zero tbias as one broadcast
    [1, 1, 1, 1] entry (the mask takes no tangent)."""
    q, k, v, _, bias = primals
    tq, tk, tv, _, tbias = tangents
    if is_zero(tbias):
        tbias = zeros((1, 1, 1, 1), aval_of(bias).dtype)
    return [*(instantiate(t, x) for t, x in ((tq, q), (tk, k), (tv, v))), tbias]


# (t_out, t_lse) = attention_jvp(q, k, v, mask, bias, out, lse, tq, tk, tv, tbias)
_attention_jvp = fused_forward_jvp(attention_p, attention_jvp_p, fixed=primals_and_outputs,
                                   linear=(0, 1, 2, 4), tangent_args=_attention_tangents)


# the tangent map in gradrules ops ---------------------------------------------
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


def _weights(q5: Any, k: Any, mask5: Any, bias5: Any, lse: Any, *, causal: bool,
             scale: float) -> Any:
    """p = exp(s - lse) where a key counts, else 0 (the inner where keeps the
    derivatives of masked entries finite)."""
    b, sq, hkv, g, _ = np.shape(q5)
    sk = np.shape(k)[1]
    s = add(multiply(einsum(_QK, q5, k), scale), bias5)
    valid = mask5
    if causal:
        valid = where(np.tril(np.ones((sq, sk), bool), sk - sq), mask5, False)
    lse = reshape(where(eq(lse, -np.inf), 0.0, lse), (b, hkv, g, sq, 1))
    return where(valid, exp(where(valid, subtract(s, lse), 0.0)), 0.0)


def _tangent_map(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any, lse: Any, tq: Any,
                 tk: Any, tv: Any, tbias: Any, *, causal: bool, scale: float, block_q: int,
                 block_k: int, kernel: str) -> list[Any]:
    """What attention_jvp_p computes, in gradrules ops (materialises the scores):
    t_lse_i = sum_j p_ij ds_ij, t_out_i = sum_j p_ij (ds_ij v_j + tv_j) - t_lse_i out_i."""
    acc = aval_of(lse).dtype
    hkv = np.shape(k)[2]
    g = np.shape(q)[2] // hkv
    q5, tq5, out5 = (_groups(cast(x, acc), hkv) for x in (q, tq, out))
    k, tk, v, tv = (cast(x, acc) for x in (k, tk, v, tv))
    p = _weights(q5, k, _pairs(mask, hkv, g), _pairs(cast(bias, acc), hkv, g), lse,
                 causal=causal, scale=scale)
    ds = add(multiply(add(einsum(_QK, tq5, k), einsum(_QK, q5, tk)), scale),
             _pairs(cast(tbias, acc), hkv, g))
    pds = multiply(p, ds)
    t_lse = einsum("bhgqk->bqhg", pds)
    t_out = subtract(add(einsum(_PV, pds, v), einsum(_PV, p, tv)),
                     multiply(expand_dims(t_lse, axis=-1), out5))
    t_lse = reshape(transpose(t_lse, (0, 2, 3, 1)), np.shape(lse))
    return [cast(reshape(t_out, np.shape(out)), aval_of(out).dtype), t_lse]


def _backward_map(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any, lse: Any,
                  ct_out: Any, ct_lse: Any, *, causal: bool, scale: float, block_q: int,
                  block_k: int, kernel: str) -> list[Any]:
    """What attention_vjp_p computes: the linear transpose of ``_tangent_map``."""
    params = dict(causal=causal, scale=scale, block_q=block_q, block_k=block_k, kernel=kernel)

    def tangent_map(tq: Any, tk: Any, tv: Any, tbias: Any) -> tuple[Any, Any]:
        t_out, t_lse = _tangent_map(q, k, v, mask, bias, out, lse, tq, tk, tv, tbias, **params)
        return t_out, t_lse

    avals = [jax.ShapeDtypeStruct(np.shape(x), aval_of(x).dtype) for x in (q, k, v, bias)]
    return list(jax.linear_transpose(tangent_map, *avals)((ct_out, ct_lse)))


# transposes ------------------------------------------------------------------
def _attention_jvp_transpose(ct: Any, q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any,
                             lse: Any, tq: Any, tk: Any, tv: Any, tbias: Any,
                             **params: Any) -> list[Any]:
    """The backward kernel on (ct_out, ct_lse); dbias summed to the shape of tbias."""
    ct_out, ct_lse = ct
    dq, dk, dv, dbias = attention_vjp_p.bind(q, k, v, mask, bias, out, lse, ct_out, ct_lse,
                                             **params)
    cts = [c if is_undefined_primal(t) else None for c, t in ((dq, tq), (dk, tk), (dv, tv))]
    cts.append(unbroadcast(dbias, tbias.aval) if is_undefined_primal(tbias) else None)
    return [None] * _N_FIXED + cts


# batching --------------------------------------------------------------------
# "b": leading axis is the batch B; "p": a mask or bias, leading axis 1 or B
_ROLES = {attention_p: "bbbpp", attention_jvp_p: "bbbppbbbbbp", attention_vjp_p: "bbbppbbbb"}


def _fold(x: Any, d: int | None, n: int, batch: int, role: str, full: bool = False) -> Any:
    """The vmapped axis (size n) folded into the leading batch axis: [n * B, ...]."""
    if role == "p" and d is None and np.shape(x)[0] == 1 and not full:
        return x                                   # broadcasts along n * B as it is
    if np.shape(x)[1 if d == 0 else 0] != batch:   # a mask or bias shared by the batch
        x = bdim_to_front(x, d, n)
        x, d = broadcast_to_p.bind(x, shape=(n, batch) + np.shape(x)[2:]), 0
    return fold_batch(x, d, n)


def _fold_all(prim: Any, args: Any, dims: Any, full_bias: bool = False
              ) -> tuple[list[Any], int, int]:
    n = batch_size(args, dims)
    q, dq = args[0], dims[0]
    batch = np.shape(q)[1 if dq == 0 else 0]
    folded = [_fold(x, d, n, batch, role, full_bias and i == 4)
              for i, (x, d, role) in enumerate(zip(args, dims, _ROLES[prim]))]
    return folded, n, batch


def _attention_batch(prim: Any, args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
    """Fold, bind once, unfold. The bias of attention_jvp_p is spread over the
    batch whenever its tangent is, so that the tangent still broadcasts to it."""
    tbias_shared = dims[-1] is None and np.shape(args[-1])[0] == 1
    folded, n, batch = _fold_all(prim, args, dims,
                                 full_bias=prim is attention_jvp_p and not tbias_shared)
    outs = prim.bind(*folded, **params)
    return [unfold_batch(o, n, batch) for o in outs], [0] * len(outs)


def _attention_vjp_batch(args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
    """As ``_attention_batch``, with the bias spread over the whole batch so that
    dbias comes out per example, then summed back where the bias was shared."""
    folded, n, batch = _fold_all(attention_vjp_p, args, dims, full_bias=True)
    outs = [unfold_batch(o, n, batch) for o in attention_vjp_p.bind(*folded, **params)]
    bias, d = args[4], dims[4]
    if np.shape(bias)[1 if d == 0 else 0] == 1 and batch != 1:
        outs[3] = sum_p.bind(outs[3], axes=(1,), keepdims=True)
    return outs, [0] * len(outs)


register_rules(attention_p, jvp=_attention_jvp, transpose=NOT_LINEAR,
               batch=partial(_attention_batch, attention_p))
register_rules(attention_jvp_p, jvp=composite_jvp(attention_jvp_p, _tangent_map, linear=4),
               transpose=_attention_jvp_transpose,
               batch=partial(_attention_batch, attention_jvp_p))
register_rules(attention_vjp_p, jvp=composite_jvp(attention_vjp_p, _backward_map, linear=2),
               transpose=swap_transpose(attention_jvp_p, _N_FIXED), batch=_attention_vjp_batch)
