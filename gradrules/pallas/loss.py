"""Pallas (Triton) kernels of the three cross_entropy primitives: the
forward (per-token loss and the log-sum-exp residual), the tangent map and
the backward.

The logits are read as ``[N, V]`` (the leading axes flattened: N tokens, V
classes). Every kernel has a grid over blocks of ``rows`` tokens and loops
over the vocabulary in blocks of ``vocab`` columns, holding one ``[rows,
vocab]`` float32 tile: a row of 256k logits never has to fit at once.

* ``forward``: the online log-sum-exp over vocabulary blocks
  (``core.numerics.online_lse_step``, finished by ``lse_parts`` with 0 for
  a row that is all ``-inf``, as the XLA lowering: the pair ``lse``,
  ``lse_lo``), the label's logit
  ``picked`` and (with label smoothing) the row sum; the per-token value
  ``lse + z lse**2 - (1 - eps) picked - eps mean`` (``core.numerics.ce_token_value``).
* ``jvp``: with ``p = exp((x - lse) - lse_lo)`` (``core.numerics.probs``),
  one pass over the blocks sums ``t_lse = sum p t``, ``t[label]`` and ``sum
  t``; the tangent of the loss is ``token_value`` in its tangent form.
* ``backward``: one pass writing ``c (p (1 + 2 z lse) - (1 - eps) onehot -
  eps / V) + g_lse p`` (``core.numerics.ce_dlogits``) in the logits' dtype, block by
  block: nothing beyond the logits' own shape is made.

The per-token masks (0 for an ignored token, NaN for a label out of range)
are applied outside the kernels on the ``[N]`` vectors with
``core.numerics.masked_tokens``, from the labels as given; the kernels read int32
labels that are -1 wherever the token is ignored or its label is bad.

Block sizes: ``BlockSizes`` (the caller's), else ``vocab`` = the padded
vocabulary up to 8192 and ``rows`` filling an 8192-entry tile.

fused_linear_cross_entropy (``flce_forward``, ``flce_jvp``,
``flce_backward``): tokens in chunks, per chunk the float32 logits block
``h_c @ w`` made by one XLA matmul and read by the kernels above (the loss
and lse; the tangents, with ``th_c @ w + h_c @ tw``; the logits' cotangent,
then ``dh_c = d w^T`` and ``dw += h_c^T d``): peak extra memory one chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from ..core.numerics import (ce_dlogits, ce_token_value, finite_or_zero, lse_parts,
                              masked_tokens, online_lse_step, probs, token_mask)
from ._pallas import (BlockSpec, ds, DTYPES, F32, iota, is_power_of_2, load, load_row_values,
                      next_power_of_2, program_id, store, triton_call)

Array = jax.Array
TILE = 8192               # entries of the default [rows, vocab] tile
MAX_ENTRIES = 2 ** 31     # logits the int32 offsets address


@dataclass(frozen=True)
class BlockSizes:
    """Block sizes of the cross_entropy kernels, carried by the
    ``implementation`` param: ``rows`` tokens per program, ``vocab`` columns
    per step of the vocabulary loop (powers of two), ``num_warps`` and
    ``num_stages`` of the Triton launch. None takes the default (module
    docstring). They never change the result beyond round-off; the XLA
    lowering ignores them."""

    rows: int | None = None
    vocab: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None


@dataclass(frozen=True)
class Geometry:
    """The static sizes of one launch: N tokens, V classes, blocks of R rows
    and B columns (``nv`` vocabulary blocks, the last one partial)."""

    N: int
    V: int
    R: int
    B: int
    num_warps: int
    num_stages: int

    @property
    def nr(self) -> int:
        return -(-self.N // self.R)

    @property
    def nv(self) -> int:
        return -(-self.V // self.B)


def geometry(logits: Any, blocks: BlockSizes | None) -> Geometry:
    """The blocks of one call: the caller's, else the defaults."""
    v = logits.shape[-1]
    n = math.prod(logits.shape[:-1])
    b = blocks or BlockSizes()
    bv = b.vocab or min(next_power_of_2(v), TILE)
    rows = b.rows or max(1, min(next_power_of_2(n), TILE // bv))
    warps = b.num_warps or (4 if rows * bv <= 2048 else 8 if rows * bv <= 4096 else 16)
    return Geometry(n, v, rows, bv, warps, b.num_stages or 2)


def supports(logits: Any, labels: Any, *rest: Any, blocks: Any = None,
             **params: Any) -> str | None:
    """float16, bfloat16 and float32 logits with at least one token and one
    class, fewer than 2**31 logits; any vocabulary size (looped over in
    blocks), ignore_index, label_smoothing and z_loss; block sizes powers of
    two.

    None if the kernels take the call, else why not."""
    if np.dtype(logits.dtype) not in DTYPES:
        return f"dtype {np.dtype(logits.dtype)} (the kernels take float16, bfloat16, float32)"
    if 0 in logits.shape:
        return f"empty logits {tuple(logits.shape)}"
    if math.prod(logits.shape) >= MAX_ENTRIES:
        return f"{math.prod(logits.shape)} logits (the kernels address fewer than 2**31)"
    if blocks is not None:
        for name in ("rows", "vocab"):
            size = getattr(blocks, name)
            if size is not None and not is_power_of_2(size):
                return f"{name}={size} (the kernels take powers of two)"
    return None


# ------------------------------------------------------------ in-kernel pieces
def _row_ok(r0: Any, g: Geometry) -> Array:
    return iota(r0, g.R) < g.N


def _tile_mask(r0: Any, c0: Any, g: Geometry) -> tuple[Array, Array | None]:
    """The columns of the tile at (r0, c0) and where it lies inside [N, V]
    (None when every tile is whole)."""
    cols = iota(c0, g.B)
    ok = None
    if g.N % g.R:
        ok = _row_ok(r0, g)[:, None]
    if g.V % g.B:
        in_v = (cols < g.V)[None, :]
        ok = in_v if ok is None else ok & in_v
    return cols, ok


def _load_tile(ref: Any, r0: Any, c0: Any, ok: Array | None, g: Geometry) -> Array:
    """The float32 ``[R, B]`` tile at (r0, c0), 0 outside [N, V]."""
    at = ref.at[ds(r0, g.R), ds(c0, g.B)]
    x = load(at) if ok is None else load(at, mask=ok, other=0)
    return x.astype(F32)


def _inside(x: Array, ok: Array | None, fill: float) -> Array:
    """``x`` inside [N, V], ``fill`` outside."""
    return x if ok is None else jnp.where(ok, x, jnp.full((), fill, F32))


def _picked(cols: Array, labels: Array, x: Array) -> Array:
    """``x[label]`` of each row when the label falls in this tile, else 0."""
    return jnp.sum(jnp.where(cols[None, :] == labels[:, None], x, jnp.zeros((), F32)), -1)


def _store_rows(ref: Any, r0: Any, value: Array, g: Geometry) -> None:
    store(ref.at[ds(r0, g.R)], value, mask=_row_ok(r0, g))


# ------------------------------------------------------------------ kernels
def _forward_kernel(x_ref: Any, lab_ref: Any, value_ref: Any, lse_ref: Any, lo_ref: Any, *,
                    g: Geometry, label_smoothing: float, z_loss: float) -> None:
    r0 = program_id(0) * g.R
    labels = load_row_values(lab_ref, r0, g.N, g.R)

    def block(j: Any, carry: tuple[Array, ...]) -> tuple[Array, ...]:
        m, total, picked, row_sum = carry
        cols, ok = _tile_mask(r0, j * g.B, g)
        x = _load_tile(x_ref, r0, j * g.B, ok, g)
        m, _, _, total = online_lse_step(m, total, _inside(x, ok, -jnp.inf))
        return m, total, picked + _picked(cols, labels, x), row_sum + jnp.sum(x, -1)

    zero = jnp.zeros((g.R,), F32)
    m, total, picked, row_sum = lax.fori_loop(
        0, g.nv, block, (jnp.full((g.R,), -jnp.inf, F32), zero, zero, zero))
    lse, lse_lo = lse_parts(finite_or_zero(m), total, 0.0)
    value = ce_token_value(lse, lse_lo, picked, row_sum / g.V, label_smoothing=label_smoothing,
                           z_loss=z_loss, tangent=False)
    _store_rows(value_ref, r0, value, g)
    _store_rows(lse_ref, r0, lse, g)
    _store_rows(lo_ref, r0, lse_lo, g)


def _probs(x: Array, lse: Array, lse_lo: Array, ok: Array | None) -> Array:
    """``p = exp((x - lse) - lse_lo)`` inside [N, V], 0 outside."""
    return _inside(probs(x, lse[:, None], lse_lo[:, None]), ok, 0.0)


def _jvp_kernel(x_ref: Any, lab_ref: Any, lse_ref: Any, lo_ref: Any, t_ref: Any,
                t_value_ref: Any, t_lse_ref: Any, *, g: Geometry, label_smoothing: float,
                z_loss: float) -> None:
    r0 = program_id(0) * g.R
    labels = load_row_values(lab_ref, r0, g.N, g.R)
    lse, lse_lo = (load_row_values(ref, r0, g.N, g.R) for ref in (lse_ref, lo_ref))

    def block(j: Any, carry: tuple[Array, ...]) -> tuple[Array, ...]:
        t_lse, picked, row_sum = carry
        cols, ok = _tile_mask(r0, j * g.B, g)
        p = _probs(_load_tile(x_ref, r0, j * g.B, ok, g), lse, lse_lo, ok)
        t = _load_tile(t_ref, r0, j * g.B, ok, g)
        return t_lse + jnp.sum(p * t, -1), picked + _picked(cols, labels, t), \
            row_sum + jnp.sum(t, -1)

    zero = jnp.zeros((g.R,), F32)
    t_lse, picked, row_sum = lax.fori_loop(0, g.nv, block, (zero, zero, zero))
    t_value = ce_token_value(lse, t_lse, picked, row_sum / g.V,
                             label_smoothing=label_smoothing, z_loss=z_loss, tangent=True)
    _store_rows(t_value_ref, r0, t_value, g)
    _store_rows(t_lse_ref, r0, t_lse, g)


def _backward_kernel(x_ref: Any, lab_ref: Any, lse_ref: Any, lo_ref: Any, c_ref: Any,
                     g_lse_ref: Any, dx_ref: Any, *, g: Geometry, label_smoothing: float,
                     z_loss: float) -> None:
    r0 = program_id(0) * g.R
    labels = load_row_values(lab_ref, r0, g.N, g.R)
    lse, lse_lo, c, g_lse = (load_row_values(ref, r0, g.N, g.R)
                             for ref in (lse_ref, lo_ref, c_ref, g_lse_ref))

    def block(j: Any, carry: Any) -> Any:
        c0 = j * g.B
        cols, ok = _tile_mask(r0, c0, g)
        p = _probs(_load_tile(x_ref, r0, c0, ok, g), lse, lse_lo, ok)
        onehot = (cols[None, :] == labels[:, None]).astype(F32)
        d = ce_dlogits(p, onehot, lse, c, g_lse, g.V, label_smoothing=label_smoothing,
                       z_loss=z_loss)
        at = dx_ref.at[ds(r0, g.R), ds(c0, g.B)]
        if ok is None:
            store(at, d.astype(dx_ref.dtype))
        else:
            store(at, d.astype(dx_ref.dtype), mask=ok)
        return carry

    lax.fori_loop(0, g.nv, block, 0)


# ----------------------------------------------------------------- wrappers
def _kernel_labels(labels: Array, vocab: int, ignore_index: int) -> Array:
    """int32 labels, -1 where the token is ignored or its label out of range."""
    valid, bad = token_mask(labels, vocab, ignore_index)
    return jnp.where(valid & ~bad, labels, -1).astype(jnp.int32)


def _call(kernel: Any, name: str, g: Geometry, operands: list[Array],
          outs: list[tuple[tuple[int, ...], Any]], interpret: bool) -> Any:
    """``kernel`` over the row blocks; every operand and result whole."""
    def spec(shape: tuple[int, ...]) -> BlockSpec:
        return BlockSpec(shape, lambda i: (0,) * len(shape))

    return triton_call(kernel, name=name, grid=(g.nr,),
                       in_specs=[spec(a.shape) for a in operands],
                       out_specs=[spec(shape) for shape, _ in outs],
                       out_shape=[jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in outs],
                       num_warps=g.num_warps, num_stages=g.num_stages,
                       interpret=interpret)(*operands)


def forward(logits: Array, labels: Array, *, ignore_index: int, label_smoothing: float,
            z_loss: float, blocks: BlockSizes | None, interpret: bool) -> list[Array]:
    g = geometry(logits, blocks)
    flat = labels.reshape(g.N)
    value, lse, lse_lo = _call(
        partial(_forward_kernel, g=g, label_smoothing=label_smoothing, z_loss=z_loss),
        "cross_entropy_forward", g,
        [logits.reshape(g.N, g.V), _kernel_labels(flat, g.V, ignore_index)],
        [((g.N,), F32)] * 3, interpret)
    loss = masked_tokens(value, flat, g.V, ignore_index)
    return [a.reshape(labels.shape) for a in (loss, lse, lse_lo)]


def jvp(logits: Array, labels: Array, lse: Array, lse_lo: Array, t: Array, *,
        ignore_index: int, label_smoothing: float, z_loss: float, blocks: BlockSizes | None,
        interpret: bool) -> list[Array]:
    g = geometry(logits, blocks)
    flat = labels.reshape(g.N)
    t_value, t_lse = _call(
        partial(_jvp_kernel, g=g, label_smoothing=label_smoothing, z_loss=z_loss),
        "cross_entropy_jvp", g,
        [logits.reshape(g.N, g.V), _kernel_labels(flat, g.V, ignore_index),
         lse.reshape(g.N).astype(F32), lse_lo.reshape(g.N).astype(F32),
         t.reshape(g.N, g.V)],
        [((g.N,), F32), ((g.N,), F32)], interpret)
    t_loss = masked_tokens(t_value, flat, g.V, ignore_index)
    return [t_loss.reshape(labels.shape), t_lse.reshape(labels.shape)]


def backward(logits: Array, labels: Array, lse: Array, lse_lo: Array, g_loss: Array,
             g_lse: Array, *, ignore_index: int, label_smoothing: float, z_loss: float,
             blocks: BlockSizes | None, interpret: bool) -> Array:
    g = geometry(logits, blocks)
    flat = labels.reshape(g.N)
    c = masked_tokens(g_loss.reshape(g.N), flat, g.V, ignore_index)
    (dx,) = _call(
        partial(_backward_kernel, g=g, label_smoothing=label_smoothing, z_loss=z_loss),
        "cross_entropy_backward", g,
        [logits.reshape(g.N, g.V), _kernel_labels(flat, g.V, ignore_index),
         lse.reshape(g.N).astype(F32), lse_lo.reshape(g.N).astype(F32), c.astype(F32),
         g_lse.reshape(g.N).astype(F32)],
        [((g.N, g.V), logits.dtype)], interpret)
    return dx.reshape(logits.shape)


# ------------------------------------------------- fused_linear_cross_entropy
# Tokens in chunks: per chunk the logits block ``h_c @ w`` is one matmul
# (float32 accumulation, float32 logits), which the cross-entropy kernels
# above read; the backward is two more matmuls per chunk, ``dh_c = d w^T``
# and ``dw += h_c^T d`` (``d`` the chunk's logits cotangent in the operands'
# dtype, tensor cores for 16-bit input). Peak extra memory: one chunk of
# float32 logits and its cotangent, and the float32 ``dw`` accumulator.
CHUNK_ENTRIES = 2 ** 27     # float32 logits of one chunk at most (512 MiB)


def flce_supports(h: Any, w: Any, labels: Any, *rest: Any, blocks: Any = None,
                  **params: Any) -> str | None:
    """float16, bfloat16 and float32 ``h [tokens, hidden]`` and ``w [hidden,
    vocab]`` (no leading batch axes), at least one token, hidden entry and
    class, fewer than 2**31 logits in a chunk of tokens.

    None if the kernels take the call, else why not."""
    if np.dtype(h.dtype) not in DTYPES:
        return f"dtype {np.dtype(h.dtype)} (the kernels take float16, bfloat16, float32)"
    if len(h.shape) != 2:
        return f"h with shape {tuple(h.shape)} (the kernels take [tokens, hidden])"
    if 0 in h.shape or 0 in w.shape:
        return f"empty h {tuple(h.shape)} or w {tuple(w.shape)}"
    if w.shape[1] >= MAX_ENTRIES:
        return f"vocabulary {w.shape[1]} (the kernels address fewer than 2**31 logits)"
    return None


def _chunk(tokens: int, vocab: int, blocks: Any) -> int:
    """Tokens per chunk: ``blocks.tokens`` (the XLA lowering's token block)
    when given, at most ``CHUNK_ENTRIES // vocab`` (and at least 1)."""
    given = getattr(blocks, "tokens", None) or tokens
    return max(1, min(tokens, given, CHUNK_ENTRIES // vocab))


def _chunked(arrays: list[Array], c: int, fill: list[Any]) -> list[Array]:
    """Each ``[tokens, ...]`` array padded with ``fill`` to whole chunks and
    reshaped to ``[chunks, c, ...]``."""
    tokens = arrays[0].shape[0]
    n = -(-tokens // c)
    out = []
    for a, f in zip(arrays, fill):
        a = jnp.pad(a, [(0, n * c - tokens)] + [(0, 0)] * (a.ndim - 1), constant_values=f)
        out.append(a.reshape((n, c) + a.shape[1:]))
    return out


def _unchunked(a: Array, tokens: int) -> Array:
    return a.reshape((-1,) + a.shape[2:])[:tokens]


def _matmul(a: Array, b: Array, contract: tuple[int, int] = (1, 0)) -> Array:
    """A 2-D product contracting axis ``contract[0]`` of a with ``contract[1]``
    of b, in float32 (the operands in their common dtype)."""
    dtype = jnp.promote_types(a.dtype, b.dtype)
    return lax.dot_general(a.astype(dtype), b.astype(dtype),
                           (((contract[0],), (contract[1],)), ((), ())),
                           preferred_element_type=F32)


def flce_forward(h: Array, w: Array, labels: Array, *, ignore_index: int,
                 label_smoothing: float, z_loss: float, blocks: Any,
                 interpret: bool) -> list[Array]:
    tokens, vocab = h.shape[0], w.shape[1]
    params = dict(ignore_index=ignore_index, label_smoothing=label_smoothing, z_loss=z_loss,
                  blocks=None, interpret=interpret)

    def chunk(args: list[Array]) -> list[Array]:
        h_c, l_c = args
        return forward(_matmul(h_c, w), l_c, **params)

    outs = lax.map(chunk, _chunked([h, labels], _chunk(tokens, vocab, blocks),
                                   [0, ignore_index]))
    return [_unchunked(o, tokens) for o in outs]


def flce_jvp(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array, th: Array,
             tw: Array, *, ignore_index: int, label_smoothing: float, z_loss: float,
             blocks: Any, interpret: bool) -> list[Array]:
    tokens, vocab = h.shape[0], w.shape[1]
    params = dict(ignore_index=ignore_index, label_smoothing=label_smoothing, z_loss=z_loss,
                  blocks=None, interpret=interpret)

    def chunk(args: list[Array]) -> list[Array]:
        h_c, l_c, lse_c, lo_c, th_c = args
        t = _matmul(th_c, w) + _matmul(h_c, tw)
        return jvp(_matmul(h_c, w), l_c, lse_c, lo_c, t, **params)

    c = _chunk(tokens, vocab, blocks)
    t_loss, t_lse = lax.map(chunk, _chunked([h, labels, lse, lse_lo, th], c,
                                            [0, ignore_index, 0, 0, 0]))
    return [_unchunked(t_loss, tokens), _unchunked(t_lse, tokens)]


def flce_backward(h: Array, w: Array, labels: Array, lse: Array, lse_lo: Array,
                  g_loss: Array, g_lse: Array, *, ignore_index: int, label_smoothing: float,
                  z_loss: float, blocks: Any, interpret: bool) -> list[Array]:
    tokens, vocab = h.shape[0], w.shape[1]
    params = dict(ignore_index=ignore_index, label_smoothing=label_smoothing, z_loss=z_loss,
                  blocks=None, interpret=interpret)

    def chunk(dw: Array, args: list[Array]) -> tuple[Array, Array]:
        h_c, l_c, lse_c, lo_c, g_c, gs_c = args
        d = backward(_matmul(h_c, w), l_c, lse_c, lo_c, g_c, gs_c, **params).astype(h.dtype)
        return dw + _matmul(h_c, d, (0, 0)), _matmul(d, w, (1, 1))

    c = _chunk(tokens, vocab, blocks)
    chunks = _chunked([h, labels, lse, lse_lo, g_loss, g_lse], c,
                      [0, ignore_index, 0, 0, 0, 0])
    dw, dh = lax.scan(chunk, jnp.zeros(w.shape, F32), chunks)
    return [_unchunked(dh, tokens).astype(h.dtype), dw.astype(w.dtype)]
