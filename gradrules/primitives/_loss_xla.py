"""XLA lowerings of the cross-entropy primitives (the CPU path), in plain
jax.numpy.

Per token, with ``lse`` the log-sum-exp of the logits ``x`` over the
vocabulary (0 for a row that is all ``-inf``), ``eps`` the label smoothing,
``z`` the z-loss weight and ``V`` the vocabulary size::

    loss   = lse + z lse**2 - (1 - eps) x[label] - eps mean(x)
    t_loss = t_lse (1 + 2 z lse) - (1 - eps) t[label] - eps mean(t),  t_lse = sum(p t)
    dx     = g_loss (p (1 + 2 z lse) - (1 - eps) onehot(label) - eps / V) + g_lse p

with ``p = exp(x - lse)``, computed as ``exp((x - lse) - lse_lo)`` from the
forward's log-sum-exp pair (``core.numerics.lse_parts``, ``probs``). Tokens
whose label is ``ignore_index`` give 0 (and no gradient); a label outside
``[0, V)`` that is not ``ignore_index`` gives NaN for its token (and its
gradient), never a silently clipped label.

``cross_entropy`` works on the whole vocabulary row: the forward with the
library's shifted exponentials (``_fused.shifted_exp``), the backward in the
maths of the gradrules-op composition ``loss.cross_entropy_cotangent``
(which its JVP rule differentiates), kept here in jax.numpy for speed (see
``ce_vjp``). The tangent map is lowered from its composition
``loss.cross_entropy_tangent`` itself.

``fused_linear_cross_entropy`` is deliberately not the composition its rules
differentiate (``cross_entropy``'s at ``h @ w``, which makes the logits): it
never makes the ``[tokens, vocab]`` logits of ``h @ w``. The forward and the
tangent map run an online log-sum-exp over vocabulary chunks of ``w`` for
each block of tokens (with ``_fused``'s ``finite_or_zero`` shift and
``lse_parts``); the backward, and its tangent (``flce_vjp_jvp``: the
Hessian-vector products), loop over vocabulary chunks (each chunk of ``dw``
written once) and, inside, over token blocks (``dh`` accumulated). No
array larger than one ``[token block, vocab chunk]`` block is made. The block
sizes come in the ``implementation`` param (``blocks=Blocks(tokens,
vocab)``). Leading batch axes (from ``vmap``) are mapped over.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ..core.numerics import (acc_dtype, ce_dlogits, ce_token_value, finite_or_zero, lse_parts,
                              online_lse_step, probs)
from ..core.numerics import masked_tokens as masked
from ._fused import log_softmax_rows, max_shift, pad_axis, shifted_exp, upcast


Array = jax.Array


@dataclass(frozen=True)
class Blocks:
    """Block sizes of fused_linear_cross_entropy's CPU path: tokens per block
    and vocabulary entries per chunk (a [tokens, vocab] block of float32 is
    4096 * 2048 * 4 bytes = 32 MiB). Frozen: it is part of the hashable
    ``implementation`` param."""

    tokens: int = 4096
    vocab: int = 2048

    def for_shape(self, tokens: int, vocab: int) -> Blocks:
        """These sizes, capped at the problem's (at least 1)."""
        return Blocks(max(1, min(tokens, self.tokens)), max(1, min(vocab, self.vocab)))


DEFAULT_BLOCKS = Blocks()


# ----------------------------------------------------------- per-token maths
def _combine(lse: Array, other: Array, picked: Array, mean: Array | None, labels: Array,
             vocab: int, *, ignore_index: int, label_smoothing: float, z_loss: float,
             tangent: bool) -> Array:
    """The loss (``tangent=False``: other is lse_lo) or its tangent (other is
    d_lse), masked (``core.numerics.ce_token_value``)."""
    v = ce_token_value(lse, other, picked, mean, label_smoothing=label_smoothing,
                       z_loss=z_loss, tangent=tangent)
    return masked(v, labels, vocab, ignore_index)


def dlogits_block(p: Array, lse: Array, labels: Array, v0: Any, vocab: int, g_loss: Array,
                  g_lse: Array, *, ignore_index: int, label_smoothing: float,
                  z_loss: float) -> Array:
    """The cotangent of a block of logits (vocabulary entries v0, v0 + 1, ...)
    whose probabilities are ``p``."""
    c = masked(g_loss, labels, vocab, ignore_index)
    cols = v0 + lax.broadcasted_iota(labels.dtype, p.shape, p.ndim - 1)
    onehot = (cols == labels[..., None]).astype(p.dtype)
    return ce_dlogits(p, onehot, lse, c, g_lse, vocab, label_smoothing=label_smoothing,
                      z_loss=z_loss)


def dlogits_tangent_block(p: Array, tx: Array, lse: Array, labels: Array, vocab: int,
                          g_loss: Array, g_lse: Array, t_lse: Array, t_lse_lo: Array, *,
                          ignore_index: int, z_loss: float) -> Array:
    """The tangent of ``dlogits_block`` (``g_loss``, ``g_lse`` held) along the
    logits' tangent ``tx`` and ``t_lse``, ``t_lse_lo``: with ``dp = p (tx -
    t_lse - t_lse_lo)``, ``dp (c (1 + 2 z lse) + g_lse) + 2 z c t_lse p``
    (``c`` the masked ``g_loss``); the one-hot and smoothing terms are
    constant."""
    c = masked(g_loss, labels, vocab, ignore_index)
    r = (c * (1 + 2 * z_loss * lse) if z_loss else c) + g_lse
    u = r[..., None] * (tx - (t_lse + t_lse_lo)[..., None])
    if z_loss:
        u = u + (2 * z_loss * c * t_lse)[..., None]
    return p * u


def _shifted_probs(x: Array, lse: Array, lse_lo: Array) -> tuple[Array, Array]:
    """``(e, q)`` with ``e q = exp((x - lse) - lse_lo)``: ``e = exp(x -
    shift)`` with the forward's shift (``_fused.max_shift``, as in its
    ``shifted_exp``) and the per-row ``q = exp((shift - lse) - lse_lo)``.
    Under jit, XLA then computes ``exp(x - shift)`` once for the forward's
    log-sum-exp and this map, one exponential per logit instead of two."""
    shift = max_shift(x, -1)
    return jnp.exp(x - shift), probs(shift, lse[..., None], lse_lo[..., None])


def _pick(x: Array, labels: Array) -> Array:
    """x[..., label] (a bad label reads entry 0; its token is NaN-masked)."""
    idx = jnp.clip(labels, 0, x.shape[-1] - 1)[..., None]
    return jnp.take_along_axis(x, idx, -1)[..., 0]


# ------------------------------------------------------------ cross_entropy
def ce_forward(logits: Array, labels: Array, *, ignore_index: int, label_smoothing: float,
               z_loss: float) -> list[Array]:
    x = upcast(logits)
    shift, _, e = shifted_exp(x, -1)
    lse, lse_lo = lse_parts(shift[..., 0], jnp.sum(e, -1), 0.0)
    mean = jnp.mean(x, -1) if label_smoothing else None
    loss = _combine(lse, lse_lo, _pick(x, labels), mean, labels, x.shape[-1],
                    ignore_index=ignore_index, label_smoothing=label_smoothing,
                    z_loss=z_loss, tangent=False)
    return [loss, lse, lse_lo]


def _add_at_label(d: Array, labels: Array, u: Array) -> Array:
    """``d[..., label] += u`` per token: a scatter-add of one entry per token
    (a bad label adds at a clipped index; its token is NaN-masked), as in the
    transpose of the reference's ``take_along_axis``, never a ``[..., V]``
    one-hot."""
    rows = math.prod(d.shape[:-1])
    flat = d.reshape((rows, d.shape[-1]))
    idx = jnp.clip(labels, 0, d.shape[-1] - 1).reshape((rows,))
    flat = flat.at[jnp.arange(rows), idx].add(u.reshape((rows,)).astype(d.dtype),
                                               mode="promise_in_bounds")
    return flat.reshape(d.shape)


# The backward is deliberately jax.numpy rather than the gradrules-op
# composition loss.cross_entropy_cotangent (the same maths, which its JVP rule
# differentiates), in the form of the reference's backward: ``_shifted_probs``
# shares ``exp(x - shift)`` with the forward's log-sum-exp (one exponential
# per logit, not two), the per-token factors multiply the logit once, and the
# label's entry is a scatter-add of one value per token. At [4096, 32000]
# float32, jit(grad) then has the reference's FLOPs and bytes (XLA's cost
# analysis: 4 FLOPs per logit, where an iota-compare one-hot, a separate
# ``g_lse p`` term and the cotangent's factors applied per logit took 10).
# The composition cannot share the exponential: with the
# shift written in gradrules ops (a ``max``) its derivatives go through max's
# tie-splitting derivative, and Hessian-vector products take twice as long.
# For the tangent map the sharing costs more than it saves (it holds the
# [tokens, vocab] exponentials until lse is known: 512 MiB of temp memory and
# ~30% more time at that size), so its lowering is its composition,
# loss.cross_entropy_tangent.
def ce_vjp(logits: Array, labels: Array, lse: Array, lse_lo: Array, g_loss: Array,
           g_lse: Array, *, ignore_index: int, label_smoothing: float, z_loss: float) -> Array:
    """cross_entropy's backward: ``dlogits_at_label`` with ``c`` the masked
    ``g_loss``."""
    c = masked(g_loss, labels, logits.shape[-1], ignore_index)
    return dlogits_at_label(logits, labels, None, lse, lse_lo, c, g_lse, logits.shape[-1],
                            label_smoothing=label_smoothing, z_loss=z_loss)


def dlogits_at_label(logits: Array, at: Array, holds: Array | None, lse: Array, lse_lo: Array,
                     c: Array, g_lse: Array, vocab: int, *, label_smoothing: float,
                     z_loss: float) -> Array:
    """``ce_dlogits`` regrouped per token, as the reference's backward: ``dx
    = e (q r) - c eps / V``, then ``- (1 - eps) c`` scattered at the label's
    entry ``at`` (where ``holds``, if given: a vocabulary shard that does not
    hold the label adds nothing), with ``e = exp(x - shift)`` (the forward's,
    ``_shifted_probs``), ``q = exp((shift - lse) - lse_lo)``, ``c`` each
    token's masked loss cotangent and ``r = c (1 + 2 z lse) + g_lse``: one
    multiply per logit (two with label smoothing). ``vocab`` is the whole
    vocabulary's size."""
    x = upcast(logits)
    r = (c * (1 + 2 * z_loss * lse) if z_loss else c) + g_lse
    e, q = _shifted_probs(x, lse, lse_lo)
    d = e * (q * r[..., None])
    if label_smoothing:
        d = d - (c * (label_smoothing / vocab))[..., None]
    u = -(1 - label_smoothing) * c
    if holds is not None:
        u = jnp.where(holds, u, jnp.zeros((), u.dtype))
    return _add_at_label(d, at, u).astype(logits.dtype)


# ------------------------------------------------- fused_linear_cross_entropy
# Deliberately plain jax.numpy with loops, not the gradrules-op composition
# ``cross_entropy(h @ w)`` that the rules differentiate: that composition makes
# the [tokens, vocab] logits (and their probabilities), which this path never
# holds more than one [token block, vocab chunk] block of.
def _over_batch(core: Callable[..., Any], batch_ndim: int) -> Callable[..., Any]:
    """``core`` mapped over ``batch_ndim`` leading axes of every operand."""
    for _ in range(batch_ndim):
        core = jax.vmap(core)
    return core


def _vocab_chunks(ws: list[Array], vc: int, body: Callable[..., Any], carry: Any) -> Any:
    """``carry = body(carry, [w[:, chunk] for w in ws], v0)`` over the
    vocabulary chunks: a loop over the full ones, the tail done after it."""
    vocab = ws[0].shape[1]
    n = vocab // vc

    def step(j: Any, c: Any) -> Any:
        return body(c, [lax.dynamic_slice_in_dim(w, j * vc, vc, axis=1) for w in ws], j * vc)

    carry = lax.fori_loop(0, n, step, carry)
    if vocab % vc:
        carry = body(carry, [w[:, n * vc:] for w in ws], n * vc)
    return carry


def _token_blocks(fn: Callable[..., Any], arrays: list[Array], tc: int) -> Any:
    """``fn`` on blocks of ``tc`` tokens (rows), outputs put back in order."""
    tokens = arrays[0].shape[0]
    nb = -(-tokens // tc)
    blocked = [pad_axis(a, 0, nb * tc).reshape((nb, tc) + a.shape[1:]) for a in arrays]
    outs = lax.map(lambda bs: fn(*bs), blocked)
    return [o.reshape((nb * tc,) + o.shape[2:])[:tokens] for o in outs]


def _dot(a: Array, b: Array, acc: Any, contract: tuple[int, int] = (1, 0)) -> Array:
    """A 2-D product contracting axis ``contract[0]`` of a with ``contract[1]``
    of b, accumulated in ``acc`` (a transposed operand is never copied)."""
    dims = (((contract[0],), (contract[1],)), ((), ()))
    dtype = jnp.promote_types(a.dtype, b.dtype)
    return lax.dot_general(a.astype(dtype), b.astype(dtype), dims, preferred_element_type=acc)


def _flce_forward_2d(h: Array, w: Array, labels: Array, *, blocks: Blocks,
                     ignore_index: int, label_smoothing: float, z_loss: float) -> list[Array]:
    acc = acc_dtype(h.dtype)
    vocab = w.shape[1]

    def one_block(hb: Array, lb: Array) -> list[Array]:
        def chunk(c: Any, w_c: list[Array], v0: Any) -> Any:
            # the online log-sum-exp over the vocabulary chunks
            m, s, picked, total = c
            x = _dot(hb, w_c[0], acc)
            m_new, _, _, s = online_lse_step(m, s, x)
            cols = v0 + lax.broadcasted_iota(lb.dtype, x.shape, 1)
            picked = picked + jnp.sum(jnp.where(cols == lb[:, None], x, 0), -1)
            return m_new, s, picked, total + jnp.sum(x, -1)

        zero = jnp.zeros(hb.shape[:1], acc)
        m, s, picked, total = _vocab_chunks([w], blocks.vocab, chunk,
                                            (jnp.full_like(zero, -jnp.inf), zero, zero, zero))
        lse, lse_lo = lse_parts(finite_or_zero(m), s, 0.0)
        loss = _combine(lse, lse_lo, picked, total / vocab, lb, vocab, ignore_index=ignore_index,
                        label_smoothing=label_smoothing, z_loss=z_loss, tangent=False)
        return [loss, lse, lse_lo]

    return _token_blocks(one_block, [h, labels], blocks.tokens)


def _flce_jvp_2d(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array, th: Array,
                 tw: Array, *, blocks: Blocks, ignore_index: int, label_smoothing: float,
                 z_loss: float) -> list[Array]:
    acc = acc_dtype(h.dtype)
    vocab = w.shape[1]

    def one_block(hb: Array, lb: Array, lseb: Array, lob: Array, thb: Array) -> list[Array]:
        def chunk(c: Any, w_c: list[Array], v0: Any) -> Any:
            t_lse, picked, total = c
            x = _dot(hb, w_c[0], acc)
            t = _dot(thb, w_c[0], acc) + _dot(hb, w_c[1], acc)
            t_lse = t_lse + jnp.sum(probs(x, lseb[:, None], lob[:, None]) * t, -1)
            cols = v0 + lax.broadcasted_iota(lb.dtype, x.shape, 1)
            picked = picked + jnp.sum(jnp.where(cols == lb[:, None], t, 0), -1)
            return t_lse, picked, total + jnp.sum(t, -1)

        zero = jnp.zeros(hb.shape[:1], acc)
        t_lse, picked, total = _vocab_chunks([w, tw], blocks.vocab, chunk, (zero, zero, zero))
        t_loss = _combine(lseb, t_lse, picked, total / vocab, lb, vocab,
                          ignore_index=ignore_index, label_smoothing=label_smoothing,
                          z_loss=z_loss, tangent=True)
        return [t_loss, t_lse]

    return _token_blocks(one_block, [h, labels, lse, lse_lo, th], blocks.tokens)


def _flce_vjp_2d(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array, g_loss: Array,
                 g_lse: Array, *, blocks: Blocks, ignore_index: int, label_smoothing: float,
                 z_loss: float) -> list[Array]:
    acc = acc_dtype(h.dtype)
    tokens, vocab = h.shape[0], w.shape[1]
    tc = blocks.tokens
    nb = -(-tokens // tc)
    hp, lp, lsep, lop = (pad_axis(a, 0, nb * tc) for a in (h, labels, lse, lse_lo))
    glp, gsp = (pad_axis(a, 0, nb * tc) for a in (g_loss, g_lse))   # padded rows: g = 0

    def chunk(c: Any, w_c: list[Array], v0: Any) -> Any:
        dh, dw = c

        def token_block(k: Any, cc: Any) -> Any:
            dh, dw_c = cc
            rows = [lax.dynamic_slice_in_dim(a, k * tc, tc)
                    for a in (hp, lp, lsep, lop, glp, gsp)]
            hb, lb, lseb, lob, gb, gsb = rows
            x = _dot(hb, w_c[0], acc)
            d = dlogits_block(probs(x, lseb[:, None], lob[:, None]), lseb, lb, v0, vocab, gb, gsb,
                              ignore_index=ignore_index, label_smoothing=label_smoothing,
                              z_loss=z_loss)
            dhb = lax.dynamic_slice_in_dim(dh, k * tc, tc) + _dot(d, w_c[0], acc, (1, 1))
            dh = lax.dynamic_update_slice_in_dim(dh, dhb, k * tc, 0)
            return dh, dw_c + _dot(hb, d, acc, (0, 0))

        dh, dw_c = lax.fori_loop(0, nb, token_block,
                                 (dh, jnp.zeros((h.shape[1], w_c[0].shape[1]), acc)))
        return dh, lax.dynamic_update_slice_in_dim(dw, dw_c.astype(w.dtype), v0, 1)

    dh, dw = _vocab_chunks([w], blocks.vocab, chunk,
                           (jnp.zeros(hp.shape, acc), jnp.zeros(w.shape, w.dtype)))
    return [dh[:tokens].astype(h.dtype), dw]


def _flce_vjp_jvp_2d(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array,
                     g_loss: Array, g_lse: Array, th: Array, tw: Array, t_lse: Array,
                     t_lse_lo: Array, *, blocks: Blocks, ignore_index: int,
                     label_smoothing: float, z_loss: float) -> list[Array]:
    """The backward's tangent, blockwise as ``_flce_vjp_2d``: per block of
    logits ``x = h w`` (tangent ``tx = th w + h tw``), their cotangent ``d``
    and its tangent ``dd`` (``dlogits_tangent_block``) give ``dh += dd w^T +
    d tw^T`` and ``dw += h^T dd + th^T d``."""
    acc = acc_dtype(h.dtype)
    tokens, vocab = h.shape[0], w.shape[1]
    tc = blocks.tokens
    nb = -(-tokens // tc)
    padded = [pad_axis(a, 0, nb * tc)    # padded rows: g = 0, so d = dd = 0
              for a in (h, th, labels, lse, lse_lo, g_loss, g_lse, t_lse, t_lse_lo)]
    kw = dict(ignore_index=ignore_index)

    def chunk(c: Any, w_c: list[Array], v0: Any) -> Any:
        dh, dw = c

        def token_block(k: Any, cc: Any) -> Any:
            dh, dw_c = cc
            hb, thb, lb, lseb, lob, gb, gsb, tlb, tlob = (
                lax.dynamic_slice_in_dim(a, k * tc, tc) for a in padded)
            p = probs(_dot(hb, w_c[0], acc), lseb[:, None], lob[:, None])
            tx = _dot(thb, w_c[0], acc) + _dot(hb, w_c[1], acc)
            d = dlogits_block(p, lseb, lb, v0, vocab, gb, gsb, label_smoothing=label_smoothing,
                              z_loss=z_loss, **kw)
            dd = dlogits_tangent_block(p, tx, lseb, lb, vocab, gb, gsb, tlb, tlob,
                                       z_loss=z_loss, **kw)
            dhb = (lax.dynamic_slice_in_dim(dh, k * tc, tc) + _dot(dd, w_c[0], acc, (1, 1))
                   + _dot(d, w_c[1], acc, (1, 1)))
            dh = lax.dynamic_update_slice_in_dim(dh, dhb, k * tc, 0)
            return dh, dw_c + _dot(hb, dd, acc, (0, 0)) + _dot(thb, d, acc, (0, 0))

        dh, dw_c = lax.fori_loop(0, nb, token_block,
                                 (dh, jnp.zeros((h.shape[1], w_c[0].shape[1]), acc)))
        return dh, lax.dynamic_update_slice_in_dim(dw, dw_c.astype(w.dtype), v0, 1)

    dh, dw = _vocab_chunks([w, tw], blocks.vocab, chunk,
                           (jnp.zeros(padded[0].shape, acc), jnp.zeros(w.shape, w.dtype)))
    return [dh[:tokens].astype(h.dtype), dw]


def sized_blocks(blocks: Blocks | None, h: Array, w: Array) -> Blocks:
    """``blocks``, or (an ``implementation`` param without block sizes) the
    defaults capped at this call's tokens and vocabulary."""
    if blocks is not None:
        return blocks
    return DEFAULT_BLOCKS.for_shape(math.prod(h.shape[:-1]), w.shape[-1])


def flce_forward(h: Array, w: Array, labels: Array, *, blocks: Blocks | None,
                 **params: Any) -> list[Array]:
    blocks = sized_blocks(blocks, h, w)
    return _over_batch(lambda *a: _flce_forward_2d(*a, blocks=blocks, **params), h.ndim - 2)(
        h, w, labels)


def flce_jvp(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array, th: Array,
             tw: Array, *, blocks: Blocks | None, **params: Any) -> list[Array]:
    blocks = sized_blocks(blocks, h, w)
    return _over_batch(lambda *a: _flce_jvp_2d(*a, blocks=blocks, **params), h.ndim - 2)(
        h, w, labels, lse, lse_lo, th, tw)


def flce_vjp(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array, g_loss: Array,
             g_lse: Array, *, blocks: Blocks | None, **params: Any) -> list[Array]:
    blocks = sized_blocks(blocks, h, w)
    return _over_batch(lambda *a: _flce_vjp_2d(*a, blocks=blocks, **params), h.ndim - 2)(
        h, w, labels, lse, lse_lo, g_loss, g_lse)


def flce_vjp_jvp(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array, g_loss: Array,
                 g_lse: Array, th: Array, tw: Array, t_lse: Array, t_lse_lo: Array, *,
                 blocks: Blocks | None, **params: Any) -> list[Array]:
    blocks = sized_blocks(blocks, h, w)
    return _over_batch(lambda *a: _flce_vjp_jvp_2d(*a, blocks=blocks, **params), h.ndim - 2)(
        h, w, labels, lse, lse_lo, g_loss, g_lse, th, tw, t_lse, t_lse_lo)


def sce_forward(logits: Array, labels: Array) -> Array:
    """softmax_cross_entropy's forward: ``-sum(labels * logp)`` over the last
    axis, ``logp`` the max-normalised log-softmax (``_fused.log_softmax_rows``,
    in float32 for 16-bit input) raised to the dtype's lowest finite value
    and taken as 0 where the logit is ``-inf`` (a masked class is left out:
    ``rules.loss.safe_log_probs`` in gradrules ops, which says where the
    two differ from plain ``labels * logp``). The mask is ``min(max(x,
    lowest) - lowest, 1)``, 0 where ``x <= lowest`` and 1 elsewhere, and the
    clamp a maximum: no compare or select, which would split XLA's one CPU
    reduction fusion of the row (``_fused.row_shift``) into passes that
    write ``logp`` out and read it back (3x the bytes)."""
    x = upcast(logits)
    lowest = jnp.finfo(x.dtype).min
    logp = jnp.maximum(log_softmax_rows(x, -1), lowest)
    kept = jnp.minimum(jnp.maximum(x, lowest) - lowest, 1)
    y = labels.astype(x.dtype)
    return (-jnp.sum(y * kept * logp, -1)).astype(logits.dtype)
