"""Pallas (Triton) kernels of the three attention primitives: FlashAttention-2
forward, backward and a forward-mode (JVP) kernel.

Every kernel has a grid over (block, batch, head) and loops over the blocks
of the other sequence inside, holding one ``[block_q, block_k]`` tile of
scores in float32; q, k, v are read in their own dtype (tensor-core products
for 16-bit input, ``_pallas.dot``) and ``[B, S, H, D]`` layout, so nothing is
transposed or repeated in memory. The float32 weights of a tile (``p``, ``p
ds``, ``g`` below) multiply 16-bit operands in the jvp and backward kernels
through ``_pallas.split_dot`` (3 bfloat16 / 2 float16 tensor-core products,
float32-accurate), so that their 16-bit results are one rounding of the
exact ones; the forward's ``p v`` rounds ``p`` to 16 bits (FlashAttention's).
With ``G = H / Hkv`` query heads per key/value head, the kernel of query
head h reads kv head ``h // G`` by index.

* ``forward``: grid ``(Sq blocks, B, H)``; online softmax over key blocks
  (``core.numerics.online_lse_step``), the output and the log-sum-exp pair
  ``lse, lse_lo [B, H, Sq]`` (``core.numerics.lse_parts``; ``-inf`` and 0 for
  a row whose keys are all masked, whose output is 0).
* ``jvp``: grid ``(Sq blocks, B, H)``; with ``p = exp((s - lse) - lse_lo)``
  known (``core.numerics.probs``, as in the backward), one pass over key
  blocks computes the scores and their tangent
  ``ds = scale (tq k + q tk) + tbias`` together:
  ``t_lse = sum_j p ds``, ``t_out = sum_j p (ds v + tv) - t_lse out``, where
  for 16-bit input ``out`` is ``sum_j p v`` in float32 from the same pass
  (the ``out`` residual is rounded).
* ``backward``: three kernels. ``delta = rowsum(ct_out * out) - ct_lse``
  (grid ``(Sq blocks, B, H)``), where for 16-bit input ``out = sum_j p v`` in
  float32 (the ``out`` residual is rounded; as ``rules.attention``'s
  ``_backward_map``): ``delta = sum_j p_ij (ct_out_i . v_j) - ct_lse_i``
  over the key blocks, two products per tile; dk, dv with grid ``(Sk
  blocks, B, Hkv)``, looping over the G query heads of the kv head and the
  query blocks that see the key block; dq and dbias with grid ``(Sq blocks, B, H)`` looping
  over key blocks. With ``g = p (ct_out . v - delta)``: ``dq = scale g k``,
  ``dk = scale g^T q``, ``dv = p^T ct_out``, ``dbias = g``.

Causal masking (aligned to the end, ``j <= i + Sk - Sq``) bounds every key
loop and every query loop, so fully masked blocks are never visited. The
mask (as int8) and the bias are read with their broadcast axes as size-1
blocks. Partial blocks at the ends of Sq and Sk are masked loads and
stores; a head_dim that is not a power of two >= 16 is zero-padded in the
wrapper. dbias comes out per (batch, head), with the broadcast query axis
per query block, and is summed to the bias's shape in XLA.

Block sizes: ``BlockSizes`` (the caller's), else the tables ``FORWARD`` and
``BACKWARD`` below by head_dim, with half the query block for float32.
``supports`` says which calls the kernels take; the others run the XLA
lowering under ``kernel="auto"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from ..core.numerics import (finite_or_zero, online_lse_step, online_softmax_finish, probs,
                             rounded_below_acc)
from ._pallas import (BlockSpec, dot, ds, DTYPES, F32, first, iota, is_power_of_2, load,
                      load_row_values, load_rows, next_power_of_2, program_id, split_dot, store,
                      triton_call, whole)

Array = jax.Array
MAX_HEAD_DIM = 256
MIN_BLOCK = 16          # the smallest side of a Triton dot


@dataclass(frozen=True)
class BlockSizes:
    """Block sizes of attention, carried by the ``implementation`` param.

    ``block_q`` / ``block_k``: rows of q and of k per step; the blockwise XLA
    lowering reads these two (default 256 and 512), the Pallas forward and
    JVP kernels too. ``block_q_bwd`` / ``block_k_bwd``: the backward
    kernels' (default: ``block_q`` / ``block_k`` when given). ``num_warps``
    and ``num_stages``: the Triton launch. None takes the default of the
    path that runs (``FORWARD`` / ``BACKWARD`` for the kernels, by head_dim
    and dtype). They never change the result.
    """

    block_q: int | None = None
    block_k: int | None = None
    block_q_bwd: int | None = None
    block_k_bwd: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None


# The kernels' defaults, by head_dim (padded to a power of two):
#   head_dim: (block_q, block_k, num_warps, num_stages); float32 halves block_q
FORWARD = {64: (128, 64, 4, 3), 128: (128, 64, 8, 3), 256: (64, 32, 8, 2)}
BACKWARD = {64: (64, 64, 4, 2), 128: (64, 64, 8, 2), 256: (32, 32, 8, 1)}


@dataclass(frozen=True)
class BlockGrid:
    """Sequence lengths, block sizes and causality: ``nq`` query and ``nk``
    key blocks (the last ones partial), and which of them a causal mask
    (aligned to the end: key j counts for query i when ``j <= i + Sk - Sq``)
    lets meet. Shared with the blockwise XLA lowering."""

    Sq: int
    Sk: int
    bq: int
    bk: int
    causal: bool

    @property
    def nq(self) -> int:
        return -(-self.Sq // self.bq)

    @property
    def nk(self) -> int:
        return -(-self.Sk // self.bk)

    def key_blocks(self, i: Any) -> Any:
        """How many key blocks query block ``i`` sees (causal: up to its last row)."""
        if not self.causal:
            return self.nk
        seen = jnp.maximum(jnp.minimum(i * self.bq + self.bq, self.Sq) + (self.Sk - self.Sq), 0)
        return jnp.minimum(_floor_div(seen + self.bk - 1, self.bk), self.nk)

    def first_query_block(self, j: Any) -> Any:
        """The first query block that sees key block ``j``."""
        if not self.causal:
            return 0
        first_row = jnp.maximum(j * self.bk - (self.Sk - self.Sq), 0)
        return jnp.minimum(_floor_div(first_row, self.bq), self.nq)


def _floor_div(x: Any, n: int) -> Array:
    """``x // n`` for ``x >= 0``, in ``x``'s integer dtype (``lax.div``, which
    the Triton lowering takes)."""
    x = jnp.asarray(x)
    return lax.div(x, jnp.asarray(n, x.dtype))


@dataclass(frozen=True)
class Geometry(BlockGrid):
    """The static sizes of one kernel launch."""

    G: int
    D: int              # head_dim, padded
    scale: float
    num_warps: int
    num_stages: int


def _padded(n: int) -> int:
    """``n`` rounded up to a power of two >= 16 (a head_dim, a block bound)."""
    return max(MIN_BLOCK, next_power_of_2(n))


def geometry(q: Any, k: Any, *, causal: bool, scale: float, blocks: BlockSizes | None,
             backward: bool = False) -> Geometry:
    """The blocks of one call: the caller's, else the table's (capped at the
    padded sequence lengths)."""
    _, sq, h, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    dp = _padded(d)
    bq, bk, warps, stages = (BACKWARD if backward else FORWARD)[max(64, dp)]
    if np.dtype(q.dtype).itemsize == 4:
        bq //= 2
    b = blocks or BlockSizes()
    given_q = (b.block_q_bwd or b.block_q) if backward else b.block_q
    given_k = (b.block_k_bwd or b.block_k) if backward else b.block_k
    bq = min(given_q or bq, _padded(sq))
    bk = min(given_k or bk, _padded(sk))
    return Geometry(sq, sk, bq, bk, causal, G=h // hkv, D=dp, scale=float(scale),
                    num_warps=b.num_warps or warps, num_stages=b.num_stages or stages)


def supports(q: Any, k: Any, v: Any, mask: Any, bias: Any, *rest: Any, blocks: Any = None,
             **params: Any) -> str | None:
    """float16, bfloat16 and float32; head_dim up to 256; non-empty q, k, v;
    block sizes powers of two >= 16; any Sq, Sk, GQA/MQA, mask, bias, causal.

    None if the kernels take the call, else why not."""
    if np.dtype(q.dtype) not in DTYPES:
        return f"dtype {np.dtype(q.dtype)} (the kernels take float16, bfloat16, float32)"
    if q.shape[-1] > MAX_HEAD_DIM:
        return f"head_dim {q.shape[-1]} > {MAX_HEAD_DIM}"
    if 0 in q.shape or 0 in k.shape:
        return f"empty q {tuple(q.shape)} or k {tuple(k.shape)}"
    if blocks is not None:
        for name in ("block_q", "block_k", "block_q_bwd", "block_k_bwd"):
            size = getattr(blocks, name)
            if size is not None and (size < MIN_BLOCK or not is_power_of_2(size)):
                return f"{name}={size} (the kernels take powers of two >= {MIN_BLOCK})"
    return None


# ------------------------------------------------------------ in-kernel pieces
@dataclass(frozen=True)
class Pair:
    """How a mask or bias ``[b, h, mq, mk]`` broadcasts: which of its axes
    are full (not 1)."""

    batch: bool
    heads: bool
    rows: bool
    cols: bool

    @staticmethod
    def of(x: Any) -> Pair:
        return Pair(*(d != 1 for d in x.shape))


def _pair_spec(pair: Pair, x: Any, heads_per_program: int) -> BlockSpec:
    shape = (None, heads_per_program if pair.heads else 1, x.shape[2], x.shape[3])
    return BlockSpec(shape, lambda blk, b, h: (b if pair.batch else 0,
                                               h if pair.heads else 0, 0, 0))


def _load_pair(ref: Any, pair: Pair, head: Any, r0: Any, c0: Any, g: Geometry) -> Array:
    """The ``[bq|1, bk|1]`` block of a mask or bias at rows r0, columns c0
    (0 outside Sq and Sk)."""
    rows = ds(r0, g.bq) if pair.rows else first(1)
    cols = ds(c0, g.bk) if pair.cols else first(1)
    ok = None
    if pair.rows:
        ok = (iota(r0, g.bq) < g.Sq)[:, None]
    if pair.cols:
        in_k = (iota(c0, g.bk) < g.Sk)[None, :]
        ok = in_k if ok is None else ok & in_k
    head = head if pair.heads else 0
    head = jnp.int32(head) if isinstance(head, int) else head   # an index array, not an int
    if ok is None:
        return load(ref.at[head, rows, cols])
    return load(ref.at[head, rows, cols], mask=ok, other=0)


def _scores(q: Array, k: Array, mask_ref: Any, bias_ref: Any, mask: Pair, bias: Pair,
            head: Any, r0: Any, c0: Any, g: Geometry) -> tuple[Array, Array]:
    """The float32 scores ``scale q k^T + bias`` of the tile at rows r0,
    columns c0 (of ``head`` where mask and bias have several per program) and
    where they count (the mask, inside Sq and Sk, causal)."""
    rows, cols = iota(r0, g.bq), iota(c0, g.bk)
    s = dot(q, k, trans_b=True) * g.scale
    s = s + _load_pair(bias_ref, bias, head, r0, c0, g).astype(F32)
    valid = _load_pair(mask_ref, mask, head, r0, c0, g) != 0
    if g.Sk % g.bk:
        valid = valid & (cols < g.Sk)[None, :]
    if g.Sq % g.bq:
        valid = valid & (rows < g.Sq)[:, None]
    if g.causal:
        valid = valid & (cols[None, :] <= rows[:, None] + (g.Sk - g.Sq))
    return s, jnp.broadcast_to(valid, s.shape)


def _probs(s: Array, valid: Array, lse: Array, lse_lo: Array) -> Array:
    """``p = exp((s - lse) - lse_lo)`` where a key counts, else 0 (``lse``
    finite, ``lse_lo`` its rounding)."""
    return jnp.where(valid, probs(s, lse[:, None], lse_lo[:, None]), jnp.zeros((), F32))


def _load_lse(lse_ref: Any, lse_lo_ref: Any, r0: Any, g: Geometry, *head: Any
              ) -> tuple[Array, Array]:
    """The log-sum-exp pair of the query rows at r0 (of ``head`` where the refs
    hold several), ``lse`` made finite (0 for a row that sees no key)."""
    return (finite_or_zero(load_row_values(lse_ref, r0, g.Sq, g.bq, *head)),
            load_row_values(lse_lo_ref, r0, g.Sq, g.bq, *head))


# ------------------------------------------------------------------ kernels
def _forward_kernel(q_ref: Any, k_ref: Any, v_ref: Any, mask_ref: Any, bias_ref: Any,
                    out_ref: Any, lse_ref: Any, lse_lo_ref: Any, *, g: Geometry, mask: Pair,
                    bias: Pair) -> None:
    i = program_id(0)
    r0 = i * g.bq
    rows = iota(r0, g.bq)
    q = load_rows(q_ref, r0, g.Sq, g.bq)

    def key_block(j: Any, carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        m, total, acc = carry
        c0 = j * g.bk
        s, valid = _scores(q, load_rows(k_ref, c0, g.Sk, g.bk), mask_ref, bias_ref, mask,
                           bias, 0, r0, c0, g)
        m, alpha, p, total = online_lse_step(m, total, jnp.where(valid, s, -jnp.inf))
        v = load_rows(v_ref, c0, g.Sk, g.bk)
        return m, total, alpha[:, None] * acc + dot(p.astype(v.dtype), v)

    init = (jnp.full((g.bq,), -jnp.inf, F32), jnp.zeros((g.bq,), F32),
            jnp.zeros((g.bq, g.D), F32))
    out, lse, lse_lo = online_softmax_finish(*lax.fori_loop(0, g.key_blocks(i), key_block,
                                                            init))
    store(out_ref.at[ds(r0, g.bq), whole(out_ref)], out.astype(out_ref.dtype),
          mask=(rows < g.Sq)[:, None])
    store(lse_ref.at[ds(r0, g.bq)], lse, mask=rows < g.Sq)
    store(lse_lo_ref.at[ds(r0, g.bq)], lse_lo, mask=rows < g.Sq)


def _jvp_kernel(q_ref: Any, k_ref: Any, v_ref: Any, mask_ref: Any, bias_ref: Any,
                out_ref: Any, lse_ref: Any, lse_lo_ref: Any, tq_ref: Any, tk_ref: Any,
                tv_ref: Any, tbias_ref: Any, t_out_ref: Any, t_lse_ref: Any, *, g: Geometry,
                mask: Pair, bias: Pair, tbias: Pair, own_out: bool) -> None:
    """``own_out``: sum ``p v`` here in float32 instead of reading the
    (rounded, 16-bit) ``out``."""
    i = program_id(0)
    r0 = i * g.bq
    rows = iota(r0, g.bq)
    q, tq = load_rows(q_ref, r0, g.Sq, g.bq), load_rows(tq_ref, r0, g.Sq, g.bq)
    lse, lse_lo = _load_lse(lse_ref, lse_lo_ref, r0, g)

    def key_block(j: Any, carry: tuple[Array, ...]) -> tuple[Array, ...]:
        t_lse, acc, *out = carry
        c0 = j * g.bk
        k, tk = load_rows(k_ref, c0, g.Sk, g.bk), load_rows(tk_ref, c0, g.Sk, g.bk)
        s, valid = _scores(q, k, mask_ref, bias_ref, mask, bias, 0, r0, c0, g)
        p = _probs(s, valid, lse, lse_lo)
        t_s = ((dot(tq, k, trans_b=True) + dot(q, tk, trans_b=True)) * g.scale
               + _load_pair(tbias_ref, tbias, 0, r0, c0, g).astype(F32))
        pts = p * t_s
        v, tv = load_rows(v_ref, c0, g.Sk, g.bk), load_rows(tv_ref, c0, g.Sk, g.bk)
        acc = acc + split_dot(pts, v) + split_dot(p, tv)
        return (t_lse + pts.sum(-1), acc, *(o + split_dot(p, v) for o in out))

    zeros = jnp.zeros((g.bq, g.D), F32)
    init = (jnp.zeros((g.bq,), F32), zeros) + ((zeros,) if own_out else ())
    t_lse, acc, *out = lax.fori_loop(0, g.key_blocks(i), key_block, init)
    out = out[0] if own_out else load_rows(out_ref, r0, g.Sq, g.bq).astype(F32)
    t_out = acc - t_lse[:, None] * out
    store(t_out_ref.at[ds(r0, g.bq), whole(t_out_ref)], t_out.astype(t_out_ref.dtype),
          mask=(rows < g.Sq)[:, None])
    store(t_lse_ref.at[ds(r0, g.bq)], t_lse, mask=rows < g.Sq)


def _delta_kernel(out_ref: Any, ct_out_ref: Any, ct_lse_ref: Any, delta_ref: Any, *,
                  g: Geometry) -> None:
    """``delta = rowsum(ct_out * out) - ct_lse``."""
    r0 = program_id(0) * g.bq
    prod = (load_rows(out_ref, r0, g.Sq, g.bq).astype(F32)
            * load_rows(ct_out_ref, r0, g.Sq, g.bq).astype(F32))
    delta = prod.sum(-1) - load_row_values(ct_lse_ref, r0, g.Sq, g.bq)
    store(delta_ref.at[ds(r0, g.bq)], delta, mask=iota(r0, g.bq) < g.Sq)


def _delta_of_probs_kernel(q_ref: Any, k_ref: Any, v_ref: Any, mask_ref: Any, bias_ref: Any,
                           lse_ref: Any, lse_lo_ref: Any, ct_out_ref: Any, ct_lse_ref: Any,
                           delta_ref: Any, *, g: Geometry, mask: Pair, bias: Pair) -> None:
    """``delta = sum_j p_ij (ct_out_i . v_j) - ct_lse_i``: ``rowsum(ct_out *
    out)`` with ``out = sum_j p v`` in float32 (for 16-bit input, whose
    ``out`` residual is rounded), over the key blocks the query block sees."""
    i = program_id(0)
    r0 = i * g.bq
    q, ct = load_rows(q_ref, r0, g.Sq, g.bq), load_rows(ct_out_ref, r0, g.Sq, g.bq)
    lse, lse_lo = _load_lse(lse_ref, lse_lo_ref, r0, g)

    def key_block(j: Any, total: Array) -> Array:
        c0 = j * g.bk
        s, valid = _scores(q, load_rows(k_ref, c0, g.Sk, g.bk), mask_ref, bias_ref, mask, bias,
                           0, r0, c0, g)
        ct_v = dot(ct, load_rows(v_ref, c0, g.Sk, g.bk), trans_b=True)
        return total + (_probs(s, valid, lse, lse_lo) * ct_v).sum(-1)

    total = lax.fori_loop(0, g.key_blocks(i), key_block, jnp.zeros((g.bq,), F32))
    delta = total - load_row_values(ct_lse_ref, r0, g.Sq, g.bq)
    store(delta_ref.at[ds(r0, g.bq)], delta, mask=iota(r0, g.bq) < g.Sq)


def _dkdv_kernel(q_ref: Any, k_ref: Any, v_ref: Any, mask_ref: Any, bias_ref: Any,
                 lse_ref: Any, lse_lo_ref: Any, ct_out_ref: Any, delta_ref: Any, dk_ref: Any,
                 dv_ref: Any, *, g: Geometry, mask: Pair, bias: Pair) -> None:
    """dk and dv of one key block of one kv head: the G query heads that read
    it, each over the query blocks that see the block."""
    j = program_id(0)
    c0 = j * g.bk
    cols = iota(c0, g.bk)
    k, v = load_rows(k_ref, c0, g.Sk, g.bk), load_rows(v_ref, c0, g.Sk, g.bk)

    def query_block(head: Any, i: Any, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        dk, dv = carry
        r0 = i * g.bq
        q = load_rows(q_ref, r0, g.Sq, g.bq, head)
        ct = load_rows(ct_out_ref, r0, g.Sq, g.bq, head)
        s, valid = _scores(q, k, mask_ref, bias_ref, mask, bias, head, r0, c0, g)
        p = _probs(s, valid, *_load_lse(lse_ref, lse_lo_ref, r0, g, head))
        dv = dv + split_dot(p, ct, trans_a=True)
        delta = load_row_values(delta_ref, r0, g.Sq, g.bq, head)
        ds_ = p * (dot(ct, v, trans_b=True) - delta[:, None])
        return dk + split_dot(ds_, q, trans_a=True), dv

    def query_head(head: Any, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        return lax.fori_loop(g.first_query_block(j), g.nq, partial(query_block, head), carry)

    zeros = jnp.zeros((g.bk, g.D), F32)
    dk, dv = lax.fori_loop(0, g.G, query_head, (zeros, zeros))
    in_k = (cols < g.Sk)[:, None]
    store(dk_ref.at[ds(c0, g.bk), whole(dk_ref)], (dk * g.scale).astype(dk_ref.dtype), mask=in_k)
    store(dv_ref.at[ds(c0, g.bk), whole(dv_ref)], dv.astype(dv_ref.dtype), mask=in_k)


def _dq_kernel(q_ref: Any, k_ref: Any, v_ref: Any, mask_ref: Any, bias_ref: Any,
               lse_ref: Any, lse_lo_ref: Any, ct_out_ref: Any, delta_ref: Any, dq_ref: Any,
               dbias_ref: Any, *, g: Geometry, mask: Pair, bias: Pair) -> None:
    """dq of one query block over the key blocks it sees, and dbias: the tile
    ``g`` itself where the bias is full, summed over its broadcast rows
    (one row per query block) or columns."""
    i = program_id(0)
    r0 = i * g.bq
    rows = iota(r0, g.bq)
    in_q = rows < g.Sq
    q = load_rows(q_ref, r0, g.Sq, g.bq)
    ct = load_rows(ct_out_ref, r0, g.Sq, g.bq)
    lse, lse_lo = _load_lse(lse_ref, lse_lo_ref, r0, g)
    delta = load_row_values(delta_ref, r0, g.Sq, g.bq)
    db_rows = ds(r0, g.bq) if bias.rows else ds(i, 1)

    def store_dbias(c0: Any, tile: Array) -> None:        # bias.cols: [bq|1, bk]
        ok = (iota(c0, g.bk) < g.Sk)[None, :]
        store(dbias_ref.at[db_rows, ds(c0, g.bk)], tile,
              mask=ok & in_q[:, None] if bias.rows else ok)

    def key_block(j: Any, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        dq, db = carry
        c0 = j * g.bk
        k, v = load_rows(k_ref, c0, g.Sk, g.bk), load_rows(v_ref, c0, g.Sk, g.bk)
        s, valid = _scores(q, k, mask_ref, bias_ref, mask, bias, 0, r0, c0, g)
        ds_ = _probs(s, valid, lse, lse_lo) * (dot(ct, v, trans_b=True) - delta[:, None])
        if bias.cols:
            store_dbias(c0, ds_ if bias.rows else ds_.sum(0, keepdims=True))
        else:
            db = db + ds_.sum(-1)
        return dq + split_dot(ds_, k), db

    init = (jnp.zeros((g.bq, g.D), F32), jnp.zeros((g.bq,), F32))
    seen = g.key_blocks(i)
    dq, db = lax.fori_loop(0, seen, key_block, init)
    store(dq_ref.at[ds(r0, g.bq), whole(dq_ref)], (dq * g.scale).astype(dq_ref.dtype),
          mask=in_q[:, None])
    if bias.cols:       # the key blocks this query block does not see: dbias 0
        zero = jnp.zeros((g.bq if bias.rows else 1, g.bk), F32)

        def unseen(j: Any, carry: Any) -> Any:
            store_dbias(j * g.bk, zero)
            return carry
        lax.fori_loop(seen, g.nk, unseen, 0)
    elif bias.rows:
        store(dbias_ref.at[ds(r0, g.bq), first(1)], db[:, None], mask=in_q[:, None])
    else:
        store(dbias_ref.at[ds(i, 1), first(1)], jnp.sum(db, keepdims=True)[:, None])


# ----------------------------------------------------------------- wrappers
def _pad_head(x: Array, d: int) -> Array:
    """``[B, S, H, head_dim]`` zero-padded to head_dim ``d``."""
    extra = d - x.shape[-1]
    return x if extra == 0 else jnp.pad(x, [(0, 0)] * 3 + [(0, extra)])


def _unpad_head(x: Array, d: int) -> Array:
    return x if x.shape[-1] == d else x[..., :d]


def _seq_spec(x: Any, g: Geometry, heads: int | None = None, kv: bool = False) -> BlockSpec:
    """A ``[B, S, H, D]`` operand: the whole sequence of one batch entry and
    one head (``heads=None``), of the kv head a query head reads (``kv``), or
    of ``heads`` consecutive heads (the G query heads of one kv head)."""
    if kv:
        return BlockSpec((None, x.shape[1], None, g.D),
                         lambda blk, b, h: (b, 0, lax.div(h, jnp.int32(g.G)), 0))
    return BlockSpec((None, x.shape[1], heads, g.D), lambda blk, b, h: (b, 0, h, 0))


def _row_spec(sq: int, heads: int | None = None) -> BlockSpec:
    """A ``[B, H, Sq]`` operand (lse, delta) for one head or ``heads`` of them."""
    return BlockSpec((None, heads, sq), lambda blk, b, h: (b, h, 0))


def _call(kernel: Any, name: str, g: Geometry, grid: tuple[int, ...], in_specs: list[BlockSpec],
          outs: list[tuple[BlockSpec, tuple[int, ...], Any]], interpret: bool) -> Any:
    return triton_call(kernel, name=name, grid=grid, in_specs=in_specs,
                       out_specs=[spec for spec, _, _ in outs],
                       out_shape=[jax.ShapeDtypeStruct(shape, dtype) for _, shape, dtype in outs],
                       num_warps=g.num_warps, num_stages=g.num_stages, interpret=interpret)


def forward(q: Array, k: Array, v: Array, mask: Array, bias: Array, *, causal: bool,
            scale: float, blocks: BlockSizes | None, interpret: bool) -> list[Array]:
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks)
    B, Sq, H, D = q.shape
    q, k, v = (_pad_head(x, g.D) for x in (q, k, v))
    mask8 = mask.astype(jnp.int8)
    pm, pb = Pair.of(mask), Pair.of(bias)
    lse_shape = (B, H, Sq)
    out, lse, lse_lo = _call(
        partial(_forward_kernel, g=g, mask=pm, bias=pb), "attention_forward", g, (g.nq, B, H),
        [_seq_spec(q, g), _seq_spec(k, g, kv=True), _seq_spec(v, g, kv=True),
         _pair_spec(pm, mask, 1), _pair_spec(pb, bias, 1)],
        [(_seq_spec(q, g), q.shape, q.dtype),
         (_row_spec(Sq), lse_shape, F32), (_row_spec(Sq), lse_shape, F32)],
        interpret)(q, k, v, mask8, bias)
    return [_unpad_head(out, D), lse, lse_lo]


def jvp(q: Array, k: Array, v: Array, mask: Array, bias: Array, out: Array, lse: Array,
        lse_lo: Array, tq: Array, tk: Array, tv: Array, tbias: Array, *, causal: bool,
        scale: float, blocks: BlockSizes | None, interpret: bool) -> list[Array]:
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks)
    B, Sq, H, D = q.shape
    q, k, v, out, tq, tk, tv = (_pad_head(x, g.D) for x in (q, k, v, out, tq, tk, tv))
    mask8 = mask.astype(jnp.int8)
    pm, pb, pt = Pair.of(mask), Pair.of(bias), Pair.of(tbias)
    qs, kvs = _seq_spec(q, g), _seq_spec(k, g, kv=True)
    rows = _row_spec(Sq)
    t_out, t_lse = _call(
        partial(_jvp_kernel, g=g, mask=pm, bias=pb, tbias=pt,
                own_out=rounded_below_acc(out.dtype)), "attention_jvp", g, (g.nq, B, H),
        [qs, kvs, kvs, _pair_spec(pm, mask, 1), _pair_spec(pb, bias, 1), qs, rows, rows,
         qs, kvs, kvs, _pair_spec(pt, tbias, 1)],
        [(qs, out.shape, out.dtype), (rows, lse.shape, lse.dtype)],
        interpret)(q, k, v, mask8, bias, out, lse, lse_lo, tq, tk, tv, tbias)
    return [_unpad_head(t_out, D), t_lse]


def backward(q: Array, k: Array, v: Array, mask: Array, bias: Array, out: Array, lse: Array,
             lse_lo: Array, ct_out: Array, ct_lse: Array, *, causal: bool, scale: float,
             blocks: BlockSizes | None, interpret: bool) -> list[Array]:
    g = geometry(q, k, causal=causal, scale=scale, blocks=blocks, backward=True)
    B, Sq, H, D = q.shape
    Hkv = k.shape[2]
    q, k, v, out, ct_out = (_pad_head(x, g.D) for x in (q, k, v, out, ct_out))
    mask8 = mask.astype(jnp.int8)
    pm, pb = Pair.of(mask), Pair.of(bias)
    qs, kvs, rows = _seq_spec(q, g), _seq_spec(k, g, kv=True), _row_spec(Sq)
    if rounded_below_acc(out.dtype):        # out = sum_j p v in float32, not the rounded out
        (delta,) = _call(
            partial(_delta_of_probs_kernel, g=g, mask=pm, bias=pb), "attention_delta", g,
            (g.nq, B, H), [qs, kvs, kvs, _pair_spec(pm, mask, 1), _pair_spec(pb, bias, 1), rows,
                           rows, qs, rows], [(rows, lse.shape, F32)],
            interpret)(q, k, v, mask8, bias, lse, lse_lo, ct_out, ct_lse)
    else:
        (delta,) = _call(partial(_delta_kernel, g=g), "attention_delta", g, (g.nq, B, H),
                         [qs, qs, rows], [(rows, lse.shape, F32)], interpret)(out, ct_out, ct_lse)

    group, group_rows, own_kv = _seq_spec(q, g, heads=g.G), _row_spec(Sq, g.G), _seq_spec(k, g)
    dk, dv = _call(
        partial(_dkdv_kernel, g=g, mask=pm, bias=pb), "attention_dkdv", g, (g.nk, B, Hkv),
        [group, own_kv, own_kv, _pair_spec(pm, mask, g.G), _pair_spec(pb, bias, g.G),
         group_rows, group_rows, group, group_rows],
        [(own_kv, k.shape, k.dtype), (own_kv, v.shape, v.dtype)],
        interpret)(q, k, v, mask8, bias, lse, lse_lo, ct_out, delta)

    db_shape = (B, H, Sq if pb.rows else g.nq, g.Sk if pb.cols else 1)
    db_spec = BlockSpec((None, None) + db_shape[2:], lambda blk, b, h: (b, h, 0, 0))
    dq, dbias = _call(
        partial(_dq_kernel, g=g, mask=pm, bias=pb), "attention_dq", g, (g.nq, B, H),
        [qs, kvs, kvs, _pair_spec(pm, mask, 1), _pair_spec(pb, bias, 1), rows, rows, qs, rows],
        [(qs, q.shape, q.dtype), (db_spec, db_shape, F32)],
        interpret)(q, k, v, mask8, bias, lse, lse_lo, ct_out, delta)
    summed = tuple(a for a, full in ((0, pb.batch), (1, pb.heads), (2, pb.rows)) if not full)
    dbias = jnp.sum(dbias, summed, keepdims=True) if summed else dbias
    return [_unpad_head(dq, D), _unpad_head(dk, D), _unpad_head(dv, D),
            dbias.astype(bias.dtype)]
