"""Blockwise XLA lowerings of the attention primitives (the CPU path).

Queries are cut into blocks of ``blocks.block_q`` rows and keys into blocks
of ``blocks.block_k`` (``BlockSizes``, read from the ``implementation``
param); no array of scores larger than one ``[B, H, block_q, block_k]``
block is ever made. Heads are laid out as ``[B, Hkv, G, S, D]`` (G = H / Hkv
query heads per key/value head), so grouped-query attention never copies k
or v. Everything is accumulated in float32 (float64 for float64 input).

* ``forward``: online softmax over the key blocks of each query block;
  returns ``out`` and the log-sum-exp as the pair ``lse`` (``-inf`` for a
  row whose keys are all masked, whose output is 0), ``lse_lo`` (its
  rounding, ``core.numerics.lse_parts``).
* ``jvp``: with ``p = exp((s - lse) - lse_lo)`` known (``core.numerics.probs``),
  one pass gives ``t_lse = sum_j p ds`` and ``t_out = sum_j p (ds v + t_v) -
  t_lse out``, where for 16-bit input ``out`` is ``sum_j p v`` summed in the
  same pass in float32 (the 16-bit ``out`` residual is rounded).
* ``backward``: FlashAttention-2's backward, an outer loop over key blocks
  (dk, dv of the block in the carry) and an inner loop over query blocks
  (dq updated in place); ``g = p (do . v - delta)``, ``delta = do . out -
  ct_lse``, where for 16-bit input ``out`` is ``sum_j p v`` in float32 (a
  first, query-major pass), as in ``jvp``: the transpose of the tangent map,
  exactly. With a single key block the block holds whole rows and
  ``delta = sum_j p (do . v) - ct_lse`` is summed in it (``_block_delta``):
  no first pass, and ``out`` is not read, so that where the loss is linear
  in the output XLA drops the forward's ``p v``.
* ``backward_jvp``: the backward's tangent (the second-order path), in the
  backward's loops (``_key_major``), for 16-bit input after a first pass
  that sums ``sum_j p v`` and its tangent; with a single key block, delta
  and its tangent summed in the block, as in ``backward`` (``t_out`` not read).

With ``causal`` the key blocks a query block cannot see are skipped.

These are deliberately not the gradrules-op compositions the JVP rules of
``attention_jvp_p``, ``attention_vjp_p`` and ``attention_vjp_jvp_p``
differentiate (``_tangent_map``, ``_backward_map`` and ``_backward_jvp_map``
in ``rules/attention.py``, the same maths): those
materialise the ``[B, H, Sq, Sk]`` scores, which is fine inside a higher
derivative but not as the lowering, whose point is memory (never more than a
``[B, H, block_q, block_k]`` block of scores). The online softmax is the
library's one (``core.numerics.online_lse_step`` and
``online_softmax_finish``), which the Pallas kernels share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from ..core.numerics import (acc_dtype, finite_or_zero, online_lse_step, online_softmax_finish,
                             probs, rounded_below_acc)
from ..pallas.attention import BlockGrid, BlockSizes
from ._fused import pad_axis, sum_to

Array = jax.Array
_QK = "bhgqd,bhkd->bhgqk"     # scores of a query block against a key block
_PV = "bhgqk,bhkd->bhgqd"     # weights times values (or keys)
_PQ = "bhgqk,bhgqd->bhkd"     # weights transposed times queries (or cotangents)


# The blockwise lowerings' defaults (rows of q and of k per step), where
# ``BlockSizes`` leaves block_q / block_k None. ``backward_jvp`` keeps about
# twice as many score-sized blocks live per step and takes smaller ones
# (measured on [2, 1024, 8, 64] float32 on the CPU: 30% faster than with
# 256 x 512).
BLOCK_Q, BLOCK_K = 256, 512
BACKWARD_JVP_BLOCK_Q, BACKWARD_JVP_BLOCK_K = 128, 128


@dataclass(frozen=True)
class Geometry(BlockGrid):
    """Static sizes of one call and its block grid."""

    B: int
    Hkv: int
    G: int
    scale: float
    acc: np.dtype

    @property
    def empty(self) -> bool:
        return self.B * self.Sq * self.Hkv * self.G == 0


def geometry(q: Any, k: Any, *, causal: bool, scale: float, blocks: BlockSizes | None,
             default: tuple[int, int] = (BLOCK_Q, BLOCK_K)) -> Geometry:
    """The geometry of one call (``default``'s block sizes where ``blocks``
    gives none)."""
    B, Sq, H, _ = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    bq = blocks.block_q if blocks is not None and blocks.block_q else default[0]
    bk = blocks.block_k if blocks is not None and blocks.block_k else default[1]
    return Geometry(Sq, Sk, max(1, min(bq, Sq)), max(1, min(bk, Sk)), causal, B=B, Hkv=Hkv,
                    G=H // max(Hkv, 1), scale=scale, acc=acc_dtype(q.dtype))


# ------------------------------------------------------------- layouts
def q_layout(x: Array, g: Geometry) -> Array:
    """[B, Sq, H, D] -> [B, Hkv, G, Sq padded, D] in the accumulation dtype."""
    x = x.astype(g.acc).reshape(g.B, g.Sq, g.Hkv, g.G, x.shape[-1]).transpose(0, 2, 3, 1, 4)
    return pad_axis(x, 3, g.nq * g.bq)


def q_unlayout(x: Array, g: Geometry, dtype: Any) -> Array:
    x = x[:, :, :, :g.Sq].transpose(0, 3, 1, 2, 4)
    return x.reshape(g.B, g.Sq, g.Hkv * g.G, x.shape[-1]).astype(dtype)


def kv_layout(x: Array, g: Geometry) -> Array:
    """[B, Sk, Hkv, D] -> [B, Hkv, Sk padded, D]."""
    return pad_axis(x.astype(g.acc).transpose(0, 2, 1, 3), 2, g.nk * g.bk)


def kv_unlayout(x: Array, g: Geometry, dtype: Any) -> Array:
    return x[:, :, :g.Sk].transpose(0, 2, 1, 3).astype(dtype)


def row_layout(x: Array, g: Geometry) -> Array:
    """Per-row values [B, H, Sq] -> [B, Hkv, G, Sq padded]."""
    return pad_axis(x.astype(g.acc).reshape(g.B, g.Hkv, g.G, g.Sq), 3, g.nq * g.bq)


def row_unlayout(x: Array, g: Geometry) -> Array:
    return x[..., :g.Sq].reshape(g.B, g.Hkv * g.G, g.Sq)


def pair_layout(x: Array, g: Geometry, value: Any) -> Array:
    """A mask or bias broadcastable to [B, H, Sq, Sk] -> [b, Hkv|1, G|1, Sq|1, Sk|1]
    (padded where not 1)."""
    mb, mh, mq, mk = x.shape
    x = x.reshape((mb, g.Hkv, g.G, mq, mk) if mh != 1 else (mb, 1, 1, mq, mk))
    if mq != 1:
        x = pad_axis(x, 3, g.nq * g.bq, value)
    if mk != 1:
        x = pad_axis(x, 4, g.nk * g.bk, value)
    return x


def pair_unlayout(x: Array, g: Geometry, shape: tuple[int, ...], dtype: Any) -> Array:
    mb, mh, mq, mk = shape
    return x[:, :, :, :mq, :mk].reshape(shape).astype(dtype)


def _block(x: Array, axis: int, start: Any, size: int) -> Array:
    """Rows ``start * size ...`` of ``x`` along ``axis`` (all of a size-1 axis)."""
    if x.shape[axis] == 1:
        return x
    return lax.dynamic_slice_in_dim(x, start * size, size, axis)


def _pair_block(x: Array, i: Any, j: Any, g: Geometry) -> Array:
    return _block(_block(x, 3, i, g.bq), 4, j, g.bk)


def _scores(g: Geometry, qb: Array, kb: Array, mask: Array, bias: Array, i: Any,
            j: Any) -> tuple[Array, Array]:
    """Scaled scores of query block i against key block j, and where they count."""
    s = jnp.einsum(_QK, qb, kb) * jnp.asarray(g.scale, g.acc) + _pair_block(bias, i, j, g)
    valid = _pair_block(mask, i, j, g)
    qpos = i * g.bq + lax.broadcasted_iota(jnp.int32, (g.bq, 1), 0)
    kpos = j * g.bk + lax.broadcasted_iota(jnp.int32, (1, g.bk), 1)
    if g.Sk % g.bk:
        valid = valid & (kpos < g.Sk)
    if g.Sq % g.bq:
        valid = valid & (qpos < g.Sq)
    if g.causal:
        valid = valid & (kpos <= qpos + (g.Sk - g.Sq))
    return s, valid


def _probs(g: Geometry, qb: Array, kb: Array, mask: Array, bias: Array, lse_b: Array,
           lo_b: Array, i: Any, j: Any) -> Array:
    """Normalised attention weights of one block, from the log-sum-exp pair
    (``lse_b`` finite, ``lo_b`` its rounding) of its query rows; ``exp(-inf)
    = 0`` where a key does not count (masked inside the exponential, so that
    XLA keeps one array of weights, not the exponentials and their masked copy)."""
    s, valid = _scores(g, qb, kb, mask, bias, i, j)
    return probs(jnp.where(valid, s, -jnp.inf), lse_b[..., None], lo_b[..., None])


def _fori(lo: Any, hi: Any, body: Any, init: Any, blocks: int) -> Any:
    """``lax.fori_loop`` over blocks; with a single block, the body once (masking
    alone decides what it sees), which compiles much faster."""
    if blocks == 1:
        return body(0, init)
    return lax.fori_loop(lo, hi, body, init)


def _map_blocks(f: Any, blocks: int) -> Any:
    """``lax.map(f, arange(blocks))``, without a loop for a single block."""
    if blocks == 1:
        return jax.tree_util.tree_map(lambda x: x[None], f(0))
    return lax.map(f, jnp.arange(blocks))


def _merge_query_blocks(x: Array, g: Geometry) -> Array:
    """[nq, B, Hkv, G, bq(, D)] -> [B, Hkv, G, nq * bq(, D)]."""
    x = jnp.moveaxis(x, 0, 3)
    return x.reshape(x.shape[:3] + (g.nq * g.bq,) + x.shape[5:])


# ------------------------------------------------------------- forward
def forward(q: Array, k: Array, v: Array, mask: Array, bias: Array, *, causal: bool,
            scale: float, blocks: BlockSizes | None) -> list[Array]:
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks)
    H = g.Hkv * g.G
    if g.empty or g.Sk == 0:
        return [jnp.zeros(q.shape, q.dtype), jnp.full((g.B, H, g.Sq), -jnp.inf, g.acc),
                jnp.zeros((g.B, H, g.Sq), g.acc)]
    qs, ks, vs = q_layout(q, g), kv_layout(k, g), kv_layout(v, g)
    mask5, bias5 = pair_layout(mask, g, False), pair_layout(bias.astype(g.acc), g, 0)
    def query_block(i: Array) -> tuple[Array, Array, Array]:
        qb = _block(qs, 3, i, g.bq)
        rows = qb.shape[:4]

        def key_block(j: Array, carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
            m, l, acc = carry
            s, valid = _scores(g, qb, _block(ks, 2, j, g.bk), mask5, bias5, i, j)
            s = jnp.where(valid, s, -jnp.inf)
            m_new, alpha, p, l = online_lse_step(m, l, s)
            acc = alpha[..., None] * acc + jnp.einsum(_PV, p, _block(vs, 2, j, g.bk))
            return m_new, l, acc

        init = (jnp.full(rows, -jnp.inf, g.acc), jnp.zeros(rows, g.acc),
                jnp.zeros(qb.shape, g.acc))
        return online_softmax_finish(*_fori(0, g.key_blocks(i), key_block, init, g.nk))

    out, lse, lse_lo = _map_blocks(query_block, g.nq)
    return [q_unlayout(_merge_query_blocks(out, g), g, q.dtype),
            *(row_unlayout(_merge_query_blocks(x, g), g) for x in (lse, lse_lo))]


# ----------------------------------------------------------------- jvp
def _row_sums(g: Geometry, qb: Array, lse_b: Array, lo_b: Array, i: Any, ks: Array,
              vs: Array, mask5: Array, bias5: Array, tangents: tuple[Array, ...] | None,
              with_out: bool) -> tuple[Array | None, Array | None, Array | None]:
    """Sums over the key blocks query block i sees, ``(c, y, o)``: with
    ``tangents = (tqb, tks, tvs, tbias5)`` and ``ds = scale (tq . k + q .
    tk) + tbias``, ``c = sum_j p ds`` and ``y = sum_j p (ds v + tv)``;
    ``with_out``, ``o = sum_j p v`` (the output at the accumulation
    precision); None for what is not asked."""
    sc = jnp.asarray(g.scale, g.acc)

    def key_block(j: Array, carry: tuple[Array | None, ...]) -> tuple[Array | None, ...]:
        c, y, o = carry
        kb, vb = _block(ks, 2, j, g.bk), _block(vs, 2, j, g.bk)
        p = _probs(g, qb, kb, mask5, bias5, lse_b, lo_b, i, j)
        if tangents is not None:
            tqb, tks, tvs, tbias5 = tangents
            ds = (jnp.einsum(_QK, tqb, kb) + jnp.einsum(_QK, qb, _block(tks, 2, j, g.bk))) * sc
            pds = p * (ds + _pair_block(tbias5, i, j, g))
            y = y + jnp.einsum(_PV, pds, vb) + jnp.einsum(_PV, p, _block(tvs, 2, j, g.bk))
            c = c + pds.sum(-1)
        o = None if o is None else o + jnp.einsum(_PV, p, vb)
        return c, y, o

    zeros = jnp.zeros(qb.shape, g.acc)
    init = ((jnp.zeros(qb.shape[:4], g.acc), zeros) if tangents is not None else (None, None))
    return _fori(0, g.key_blocks(i), key_block, init + (zeros if with_out else None,), g.nk)


def _sum_pv(g: Geometry, qs: Array, ks: Array, vs: Array, mask5: Array, bias5: Array,
            lses: Array, los: Array) -> Array:
    """``o = sum_j p v`` in the accumulation dtype, laid out as ``q_layout``:
    the output that 16-bit input rounds (for the backward's delta)."""
    def query_block(i: Array) -> Array:
        return _row_sums(g, _block(qs, 3, i, g.bq), _block(lses, 3, i, g.bq),
                         _block(los, 3, i, g.bq), i, ks, vs, mask5, bias5, None, True)[2]

    return _merge_query_blocks(_map_blocks(query_block, g.nq), g)


def jvp(q: Array, k: Array, v: Array, mask: Array, bias: Array, out: Array, lse: Array,
        lse_lo: Array, tq: Array, tk: Array, tv: Array, tbias: Array, *, causal: bool,
        scale: float, blocks: BlockSizes | None) -> list[Array]:
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks)
    if g.empty or g.Sk == 0:
        return [jnp.zeros(out.shape, out.dtype), jnp.zeros(lse.shape, lse.dtype)]
    qs, tqs = q_layout(q, g), q_layout(tq, g)
    ks, tks, vs, tvs = (kv_layout(x, g) for x in (k, tk, v, tv))
    mask5, bias5 = pair_layout(mask, g, False), pair_layout(bias.astype(g.acc), g, 0)
    tbias5 = pair_layout(tbias.astype(g.acc), g, 0)
    lses, los = finite_or_zero(row_layout(lse, g)), row_layout(lse_lo, g)
    # out at the accumulation precision: the residual, else sum p v (below)
    outs = None if rounded_below_acc(out.dtype) else q_layout(out, g)

    def query_block(i: Array) -> tuple[Array, Array]:
        c, y, o = _row_sums(g, _block(qs, 3, i, g.bq), _block(lses, 3, i, g.bq),
                            _block(los, 3, i, g.bq), i, ks, vs, mask5, bias5,
                            (_block(tqs, 3, i, g.bq), tks, tvs, tbias5), outs is None)
        return y - c[..., None] * (_block(outs, 3, i, g.bq) if o is None else o), c

    t_out, t_lse = _map_blocks(query_block, g.nq)
    return [q_unlayout(_merge_query_blocks(t_out, g), g, out.dtype),
            row_unlayout(_merge_query_blocks(t_lse, g), g).astype(lse.dtype)]


# ------------------------------------------------------------ backward
def _add_block(acc: Array, blk: Array, i: Any, j: Any, g: Geometry) -> Array:
    """acc[..., block i, block j] += blk (whole axes where acc has size 1)."""
    # summed to the block's own sizes with 1 where acc has 1, not to acc.shape:
    # on its other axes acc spans every block, blk only one
    blk = sum_to(blk, tuple(1 if m == 1 else n for n, m in zip(blk.shape, acc.shape)))
    starts = [0, 0, 0, i * g.bq if acc.shape[3] != 1 else 0,
              j * g.bk if acc.shape[4] != 1 else 0]
    cur = lax.dynamic_slice(acc, starts, blk.shape)
    return lax.dynamic_update_slice(acc, cur + blk, starts)


def _key_major(g: Geometry, key_block: Any, pair: Any, dq_shape: tuple[int, ...],
               dbias_shape: tuple[int, ...]) -> tuple[Array, Array, Array, Array]:
    """The loops of the backward and of its JVP (FlashAttention-2's): an
    outer loop over key blocks j, ``key_block(j)`` giving what the inner loop
    reads of them, and an inner loop over the query blocks i that see block j
    (causal skipping), ``pair(i, j, keys)`` giving block (i, j)'s terms of
    (dk_j, dv_j, dq_i, dbias_ij): dk_j and dv_j are summed in the carry, dq
    and dbias ([B, Hkv, G, Sq padded, D] and the layout of the bias) updated
    in place. Returns (dq, dk, dv, dbias), dk and dv as [B, Hkv, Sk padded, D]."""
    def outer(carry: tuple[Array, Array], j: Array) -> tuple[Any, tuple[Array, Array]]:
        keys = key_block(j)

        def inner(i: Array, c: tuple[Array, ...]) -> tuple[Array, ...]:
            dk, dv, dq, dbias = c
            ddk, ddv, ddq, ddbias = pair(i, j, keys)
            dq_i = _block(dq, 3, i, g.bq) + ddq
            dq = lax.dynamic_update_slice_in_dim(dq, dq_i, i * g.bq, 3)
            return dk + ddk, dv + ddv, dq, _add_block(dbias, ddbias, i, j, g)

        dq, dbias = carry
        kv_shape = dq_shape[:2] + (g.bk, dq_shape[-1])
        init = (jnp.zeros(kv_shape, g.acc), jnp.zeros(kv_shape, g.acc), dq, dbias)
        dk, dv, dq, dbias = _fori(g.first_query_block(j), g.nq, inner, init, g.nq)
        return (dq, dbias), (dk, dv)

    init = (jnp.zeros(dq_shape, g.acc), jnp.zeros(dbias_shape, g.acc))
    if g.nk == 1:
        (dq, dbias), (dk, dv) = outer(init, 0)
        dk, dv = dk[None], dv[None]
    else:
        (dq, dbias), (dk, dv) = lax.scan(outer, init, jnp.arange(g.nk))

    def merge_keys(x: Array) -> Array:   # [nk, B, Hkv, bk, D] -> [B, Hkv, Sk padded, D]
        x = jnp.moveaxis(x, 0, 2)
        return x.reshape(x.shape[:2] + (g.nk * g.bk, x.shape[-1]))

    return dq, merge_keys(dk), merge_keys(dv), dbias


def _gradients(g: Geometry, dq: Array, dk: Array, dv: Array, dbias: Array, q: Array, k: Array,
               v: Array, bias: Array) -> list[Array]:
    """(dq, dk, dv, dbias) of ``_key_major`` back in the layouts and dtypes
    of (q, k, v, bias), dq and dk times the scale."""
    sc = jnp.asarray(g.scale, g.acc)
    return [q_unlayout(dq * sc, g, q.dtype), kv_unlayout(dk * sc, g, k.dtype),
            kv_unlayout(dv, g, v.dtype), pair_unlayout(dbias, g, bias.shape, bias.dtype)]


def _block_delta(g: Geometry, i: Any, delta: Array | None, ct_lses: Array, p: Array,
                 dp: Array) -> Array:
    """``delta_i = ct_i . out_i - ct_lse_i`` of query block i, ``out_i = sum_j
    p_ij v_j`` at the accumulation precision: the rows of ``delta``, or where
    that is None (a single key block: ``p`` and ``dp = ct . v`` span whole
    rows) ``sum_j p_ij dp_ij - ct_lse_i`` in the block itself."""
    if delta is None:
        return (p * dp).sum(-1) - _block(ct_lses, 3, i, g.bq)
    return _block(delta, 3, i, g.bq)


def backward(q: Array, k: Array, v: Array, mask: Array, bias: Array, out: Array, lse: Array,
             lse_lo: Array, ct_out: Array, ct_lse: Array, *, causal: bool, scale: float,
             blocks: BlockSizes | None) -> list[Array]:
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks)
    if g.empty or g.Sk == 0:
        return [jnp.zeros(x.shape, x.dtype) for x in (q, k, v, bias)]
    qs, dos = q_layout(q, g), q_layout(ct_out, g)
    ks, vs = kv_layout(k, g), kv_layout(v, g)
    mask5, bias5 = pair_layout(mask, g, False), pair_layout(bias.astype(g.acc), g, 0)
    lses, los = finite_or_zero(row_layout(lse, g)), row_layout(lse_lo, g)
    ct_lses = row_layout(ct_lse, g)
    delta = None
    if g.nk > 1:
        # out at the accumulation precision: the residual, else sum p v (as in jvp)
        outs = (_sum_pv(g, qs, ks, vs, mask5, bias5, lses, los)
                if rounded_below_acc(out.dtype) else q_layout(out, g))
        delta = (dos * outs).sum(-1) - ct_lses

    def key_block(j: Array) -> tuple[Array, Array]:
        return _block(ks, 2, j, g.bk), _block(vs, 2, j, g.bk)

    def pair(i: Array, j: Array, keys: tuple[Array, Array]) -> tuple[Array, ...]:
        kb, vb = keys
        qb, dob = _block(qs, 3, i, g.bq), _block(dos, 3, i, g.bq)
        p = _probs(g, qb, kb, mask5, bias5, _block(lses, 3, i, g.bq),
                   _block(los, 3, i, g.bq), i, j)
        dp = jnp.einsum(_QK, dob, vb)
        ds = p * (dp - _block_delta(g, i, delta, ct_lses, p, dp)[..., None])
        return (jnp.einsum(_PQ, ds, qb), jnp.einsum(_PQ, p, dob), jnp.einsum(_PV, ds, kb), ds)

    return _gradients(g, *_key_major(g, key_block, pair, qs.shape, bias5.shape), q, k, v, bias)


# ------------------------------------------------------- backward's JVP
def backward_jvp(q: Array, k: Array, v: Array, mask: Array, bias: Array, out: Array,
                 lse: Array, lse_lo: Array, ct_out: Array, ct_lse: Array, tq: Array, tk: Array,
                 tv: Array, tbias: Array, t_out: Array, t_lse: Array, *, causal: bool,
                 scale: float, blocks: BlockSizes | None) -> list[Array]:
    """The tangent of ``backward`` along (tq, tk, tv, tbias, t_out, t_lse),
    at fixed cotangents, in ``backward``'s loops. With ``dp = ct . v - delta``
    (``delta = ct . out - ct_lse``), ``ds = scale (tq . k + q . tk) + tbias``
    and ``tp = p (ds - t_lse)``: ``g = p dp``, ``tg = tp dp + p (ct . tv -
    t_delta)`` (``t_delta = ct . t_out``), and ``t_dq_i = scale sum_j (tg k +
    g tk)``, ``t_dk_j = scale sum_i (tg q + g tq)``, ``t_dv_j = sum_i tp ct``,
    ``t_dbias = tg``. For 16-bit input, out and t_out are ``o = sum_j p v``
    and its tangent ``sum_j tp v + p tv``, summed first in float32 (as in
    ``jvp``; the 16-bit out is rounded and t_out goes unused)."""
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks,
                 default=(BACKWARD_JVP_BLOCK_Q, BACKWARD_JVP_BLOCK_K))
    if g.empty or g.Sk == 0:
        return [jnp.zeros(x.shape, x.dtype) for x in (q, k, v, bias)]
    qs, dos, tqs = q_layout(q, g), q_layout(ct_out, g), q_layout(tq, g)
    ks, tks, vs, tvs = (kv_layout(x, g) for x in (k, tk, v, tv))
    mask5, bias5 = pair_layout(mask, g, False), pair_layout(bias.astype(g.acc), g, 0)
    tbias5 = pair_layout(tbias.astype(g.acc), g, 0)
    lses, los = finite_or_zero(row_layout(lse, g)), row_layout(lse_lo, g)
    tlses, ct_lses = row_layout(t_lse, g), row_layout(ct_lse, g)
    delta = t_delta = None
    if g.nk > 1:
        if rounded_below_acc(out.dtype):
            def query_block(i: Array) -> tuple[Array, Array]:
                _, y, o = _row_sums(g, _block(qs, 3, i, g.bq), _block(lses, 3, i, g.bq),
                                    _block(los, 3, i, g.bq), i, ks, vs, mask5, bias5,
                                    (_block(tqs, 3, i, g.bq), tks, tvs, tbias5), True)
                return o, y - _block(tlses, 3, i, g.bq)[..., None] * o

            outs, t_outs = (_merge_query_blocks(x, g) for x in _map_blocks(query_block, g.nq))
        else:
            outs, t_outs = q_layout(out, g), q_layout(t_out, g)
        delta = (dos * outs).sum(-1) - ct_lses
        t_delta = (dos * t_outs).sum(-1)
    sc = jnp.asarray(g.scale, g.acc)

    def key_block(j: Array) -> tuple[Array, ...]:
        return tuple(_block(x, 2, j, g.bk) for x in (ks, tks, vs, tvs))

    def pair(i: Array, j: Array, keys: tuple[Array, ...]) -> tuple[Array, ...]:
        kb, tkb, vb, tvb = keys
        qb, tqb, dob = (_block(x, 3, i, g.bq) for x in (qs, tqs, dos))
        p = _probs(g, qb, kb, mask5, bias5, _block(lses, 3, i, g.bq),
                   _block(los, 3, i, g.bq), i, j)
        ds = (jnp.einsum(_QK, tqb, kb) + jnp.einsum(_QK, qb, tkb)) * sc
        tp = p * (ds + _pair_block(tbias5, i, j, g) - _block(tlses, 3, i, g.bq)[..., None])
        ct_v, ct_tv = jnp.einsum(_QK, dob, vb), jnp.einsum(_QK, dob, tvb)
        dp = ct_v - _block_delta(g, i, delta, ct_lses, p, ct_v)[..., None]
        # t_delta_i = ct_i . t_out_i, t_out_i = sum_j tp_ij v_j + p_ij tv_j
        t_delta_b = ((tp * ct_v + p * ct_tv).sum(-1) if t_delta is None
                     else _block(t_delta, 3, i, g.bq))
        gp = p * dp
        tg = tp * dp + p * (ct_tv - t_delta_b[..., None])
        return (jnp.einsum(_PQ, tg, qb) + jnp.einsum(_PQ, gp, tqb), jnp.einsum(_PQ, tp, dob),
                jnp.einsum(_PV, tg, kb) + jnp.einsum(_PV, gp, tkb), tg)

    return _gradients(g, *_key_major(g, key_block, pair, qs.shape, bias5.shape), q, k, v, bias)
