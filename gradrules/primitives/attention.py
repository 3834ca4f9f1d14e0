"""Primitives of the attention family: scaled dot-product attention with
grouped-query heads, causal masking, a boolean mask and an additive bias.

Fused as three primitives (DESIGN.md), each lowered blockwise to XLA by
``_attention_xla`` (online softmax over key blocks; no ``[Sq, Sk]`` array
beyond one block) and by a Pallas kernel (``pallas/attention.py``; which
calls it takes: ``pallas.attention.supports``), with the kernel choice and
block sizes (``BlockSizes``) in the one ``implementation`` param; their
params are ``causal`` and ``scale``:

* ``attention_p(q, k, v, mask, bias) -> (out, lse, lse_lo)``: the forward;
  ``lse`` is the log-sum-exp of each row's scores ``[B, H, Sq]`` (``-inf``
  for a row whose keys are all masked) and ``lse_lo`` the part of it that
  rounding ``lse`` drops (``core.numerics.lse_parts``; 0 there), kept as the
  residuals of the other two, which take ``p = exp((s - lse) - lse_lo)``
  (``core.numerics.probs``: right where ``|lse|`` is large). ``lse_lo``'s
  tangent is a symbolic zero (``lse``'s is the log-sum-exp's);
* ``attention_jvp_p(q, k, v, mask, bias, out, lse, lse_lo, tq, tk, tv, tbias)
  -> (t_out, t_lse)``: the tangent map, linear in ``tq, tk, tv, tbias``;
* ``attention_vjp_p(q, k, v, mask, bias, out, lse, lse_lo, ct_out, ct_lse)
  -> (dq, dk, dv, dbias)``: its transpose, the fused backward;
* ``attention_vjp_jvp_p(q, k, v, mask, bias, out, lse, lse_lo, ct_out,
  ct_lse, tq, tk, tv, tbias, t_out, t_lse) -> (t_dq, t_dk, t_dv, t_dbias)``:
  the backward's tangent along those of its operands at fixed cotangents,
  linear in them: the second-order path (a Hessian-vector product), lowered
  blockwise with causal block skipping by ``_attention_xla.backward_jvp``; no
  Pallas kernel (the rules bind it with ``kernel="xla"`` when the call asks
  for one), and not one of the op's three primitives in the manifest.

``mask`` and ``bias`` are always operands, of rank 4 and broadcastable to
``[B, H, Sq, Sk]``; the public function passes a ``(1, 1, 1, 1)`` True mask
and zero bias when none is given.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import as_array, block_sizes_param, bool_param, int_param, number_param
from ..core.kernels import implementation
from ..core.meta import check_broadcast_to, check_dtype, op_name
from ..core.numerics import acc_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import attention as kernels
from ..pallas.attention import BlockSizes
from . import _attention_xla as xla
from ._sharding import shard_map_bind
from .convert import convert_element_type, promote
from .logical import logical_and
from .shape import reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "attention"
OPERANDS = ("q", "k", "v", "mask", "bias")
RESIDUALS = ("out", "lse", "lse_lo")
PARAMS = ("causal", "scale")
_OP = "attention"


# ---------------------------------------------------------- infer_meta
def _check_qkv(q: Any, k: Any, v: Any) -> tuple[int, int, int, int, int]:
    """(B, Sq, H, Sk, Hkv) of valid q, k, v; errors name the argument."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_dtype(_OP, name, x.dtype, "float")
        if len(x.shape) != 4:
            raise ValueError(f"{op_name(_OP)}: argument {name} must have rank 4 [batch, seq, "
                             f"heads, head_dim], got shape {tuple(x.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"{op_name(_OP)}: q, k and v must share one dtype, got {q.dtype}, "
                        f"{k.dtype} and {v.dtype}")
    B, Sq, H, D = q.shape
    if tuple(k.shape) != tuple(v.shape) or k.shape[0] != B or k.shape[3] != D:
        raise ValueError(f"{op_name(_OP)}: arguments k and v must have shape [batch, seq_k, "
                         f"kv_heads, head_dim] with the batch and head_dim of q; got q "
                         f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    Sk, Hkv = k.shape[1], k.shape[2]
    if Hkv == 0 or H % Hkv:
        raise ValueError(f"{op_name(_OP)}: the {H} heads of q are not a multiple of the "
                         f"{Hkv} heads of k and v (argument k with shape {tuple(k.shape)})")
    return B, Sq, H, Sk, Hkv


def _check_pair(name: str, x: Any, kind: str, full: tuple[int, ...]) -> None:
    """A mask or bias: rank 4, each axis 1 or that of [B, H, Sq, Sk]."""
    check_dtype(_OP, name, x.dtype, kind)
    if len(x.shape) != 4 or any(d not in (1, f) for d, f in zip(x.shape, full)):
        raise ValueError(f"{op_name(_OP)}: argument {name} with shape {tuple(x.shape)} does "
                         f"not broadcast to [batch, heads, seq_q, seq_k] = {full}")


def _same(name: str, x: Any, like: Any) -> None:
    if tuple(x.shape) != tuple(like.shape) or x.dtype != like.dtype:
        raise ValueError(f"{op_name(_OP)}: operand {name} must be {like.dtype}"
                         f"{list(like.shape)}, got {x.dtype}{list(x.shape)}")


def _outputs(q: Any, k: Any, v: Any, mask: Any, bias: Any) -> list[ShapedArray]:
    B, Sq, H, Sk, _ = _check_qkv(q, k, v)
    _check_pair("mask", mask, "bool", (B, H, Sq, Sk))
    _check_pair("bias", bias, "float", (B, H, Sq, Sk))
    if bias.dtype != q.dtype:
        raise TypeError(f"{op_name(_OP)}: bias ({bias.dtype}) must have the dtype of q "
                        f"({q.dtype})")
    rows = ShapedArray((B, H, Sq), acc_dtype(q.dtype))
    return [ShapedArray(q.shape, q.dtype), rows, rows]


def _attention_infer_meta(q: Any, k: Any, v: Any, mask: Any, bias: Any,
                          **params: Any) -> list[ShapedArray]:
    return _outputs(q, k, v, mask, bias)


def _residuals(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any, lse: Any,
               lse_lo: Any) -> list[ShapedArray]:
    """The forward's avals, which ``out``, ``lse`` and ``lse_lo`` must have."""
    avals = _outputs(q, k, v, mask, bias)
    for name, x, aval in zip(RESIDUALS, (out, lse, lse_lo), avals):
        _same(name, x, aval)
    return avals


def _attention_jvp_infer_meta(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any,
                              lse: Any, lse_lo: Any, tq: Any, tk: Any, tv: Any, tbias: Any,
                              **params: Any) -> list[ShapedArray]:
    avals = _residuals(q, k, v, mask, bias, out, lse, lse_lo)[:2]
    _tangents((("tq", tq, q), ("tk", tk, k), ("tv", tv, v)), tbias, bias)
    return avals


def _tangents(named: tuple[tuple[str, Any, Any], ...], tbias: Any, bias: Any) -> None:
    """Each ``(name, tangent, primal)`` of the same aval; ``tbias`` of the
    dtype of ``bias``, broadcasting to it."""
    for name, t, x in named:
        _same(name, t, x)
    if tbias.dtype != bias.dtype or len(tbias.shape) != 4 or any(
            d not in (1, b) for d, b in zip(tbias.shape, bias.shape)):
        raise ValueError(f"{op_name(_OP)}: tangent tbias {tbias.dtype}{list(tbias.shape)} "
                         f"must broadcast to bias {bias.dtype}{list(bias.shape)}")


def _attention_vjp_infer_meta(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any,
                              lse: Any, lse_lo: Any, ct_out: Any, ct_lse: Any,
                              **params: Any) -> list[ShapedArray]:
    avals = _residuals(q, k, v, mask, bias, out, lse, lse_lo)
    _same("ct_out", ct_out, avals[0])
    _same("ct_lse", ct_lse, avals[1])
    return [ShapedArray(x.shape, x.dtype) for x in (q, k, v, bias)]


def _attention_vjp_jvp_infer_meta(q: Any, k: Any, v: Any, mask: Any, bias: Any, out: Any,
                                  lse: Any, lse_lo: Any, ct_out: Any, ct_lse: Any, tq: Any,
                                  tk: Any, tv: Any, tbias: Any, t_out: Any, t_lse: Any,
                                  **params: Any) -> list[ShapedArray]:
    avals = _attention_vjp_infer_meta(q, k, v, mask, bias, out, lse, lse_lo, ct_out, ct_lse)
    _tangents((("tq", tq, q), ("tk", tk, k), ("tv", tv, v), ("t_out", t_out, out),
               ("t_lse", t_lse, lse)), tbias, bias)
    return avals


attention_p = define_primitive(
    "attention", family=FAMILY, operands=OPERANDS, outputs=RESIDUALS, params=PARAMS,
    multiple_results=True,
    infer_meta=_attention_infer_meta,
    implementations={"xla": xla.forward, "pallas": kernels.forward, "supports": kernels.supports})
attention_jvp_p = define_primitive(
    "attention_jvp", family=FAMILY, operands=OPERANDS + RESIDUALS + ("tq", "tk", "tv", "tbias"),
    params=PARAMS, multiple_results=True, infer_meta=_attention_jvp_infer_meta,
    implementations={"xla": xla.jvp, "pallas": kernels.jvp, "supports": kernels.supports})
attention_vjp_p = define_primitive(
    "attention_vjp", family=FAMILY, operands=OPERANDS + RESIDUALS + ("ct_out", "ct_lse"),
    params=PARAMS, multiple_results=True, infer_meta=_attention_vjp_infer_meta,
    implementations={"xla": xla.backward, "pallas": kernels.backward,
                     "supports": kernels.supports})
attention_vjp_jvp_p = define_primitive(
    "attention_vjp_jvp", family=FAMILY,
    operands=OPERANDS + RESIDUALS + ("ct_out", "ct_lse", "tq", "tk", "tv", "tbias", "t_out",
                                     "t_lse"),
    params=PARAMS, multiple_results=True, infer_meta=_attention_vjp_jvp_infer_meta,
    implementations={"xla": xla.backward_jvp})


# ------------------------------------------------------ public function
def _pair_arg(op: str, name: str, x: Any, kind: str, q: Any, k: Any) -> Any:
    """A user mask or bias of rank <= 4 that broadcasts to ``[batch, heads,
    seq_q, seq_k]`` of the rank-4 q and k, as a rank-4 array (leading 1s);
    errors name ``op``."""
    x = as_array(op, name, x)
    x = jnp.asarray(x) if isinstance(x, (bool, int, float, np.generic)) else x
    check_dtype(op, name, jnp.result_type(x), kind)
    if np.ndim(x) > 4:
        raise ValueError(f"{op_name(op)}: argument {name} must have rank <= 4 (broadcastable "
                         f"to [batch, heads, seq_q, seq_k]), got shape {np.shape(x)}")
    if kind == "float" and jnp.result_type(x) != jnp.result_type(q):
        x = convert_element_type(x, dtype=jnp.result_type(q))
    if np.ndim(x) < 4:
        x = reshape(x, (1,) * (4 - np.ndim(x)) + tuple(np.shape(x)))
    (b, sq, h), sk = np.shape(q)[:3], np.shape(k)[1]
    check_broadcast_to(op, f"argument {name}", np.shape(x), (b, h, sq, sk),
                       f"[batch, heads, seq_q, seq_k] = {(b, h, sq, sk)}")
    return x


# the dims a mesh may shard (primitives/_sharding): batch and heads
_QKV_LABELS = ("batch", None, "heads", None)
_PAIR_LABELS = ("batch", "heads", None, None)
_LABELS = (_QKV_LABELS,) * 3 + (_PAIR_LABELS,) * 2
_OUT_LABELS = (_QKV_LABELS,) + (("batch", "heads", None),) * 2     # out, lse, lse_lo


def _block_param(name: str, value: Any) -> int | None:
    if value is None:
        return None
    value = int_param(_OP, name, value)
    if value < 1:
        raise ValueError(f"{op_name(_OP)}: {name} must be >= 1, got {value}")
    return value


def _blocks(block_q: Any, block_k: Any, block_sizes: Any) -> BlockSizes:
    """The ``BlockSizes`` of a call: ``block_sizes``, or one of ``block_q`` / ``block_k``."""
    if block_sizes is None:
        return BlockSizes(block_q=_block_param("block_q", block_q),
                          block_k=_block_param("block_k", block_k))
    if block_q is not None or block_k is not None:
        raise ValueError(f"{op_name(_OP)}: give block_sizes or block_q / block_k, not both")
    return block_sizes_param(_OP, block_sizes, BlockSizes, "gradrules.pallas.attention.BlockSizes")


def attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: bool = False,
              scale: float | None = None, mask: ArrayLike | None = None,
              bias: ArrayLike | None = None, block_q: int | None = None,
              block_k: int | None = None, block_sizes: BlockSizes | None = None) -> Array:
    """Scaled dot-product attention, ``[batch, seq, heads, head_dim]`` layout.

    ``q [B, Sq, H, D]``, ``k, v [B, Sk, Hkv, D]`` with ``H`` a multiple of
    ``Hkv`` (grouped-query: query head h reads key/value head ``h // (H/Hkv)``).
    With ``s_ij = scale * q_i . k_j + bias_ij`` (``scale`` defaults to
    ``D ** -0.5``) over the keys j where ``mask_ij`` is True (and, with
    ``causal``, ``j <= i + Sk - Sq``: the causal mask is aligned
    bottom-right, to the end, as in decoding, where the queries are the
    last Sq positions. ``jax.nn.dot_product_attention(is_causal=True)``
    aligns it top-left, ``j <= i``, when Sq != Sk: ``dot_product_attention``
    is that one, with jax.nn's alignment)::

        out_i = sum_j p_ij v_j,   p_ij = exp(s_ij - lse_i),   lse_i = log sum_j exp(s_ij)

    A row whose keys are all masked gives ``out_i = 0``, with zero (finite)
    derivatives. ``mask`` (bool, True = attend) and ``bias`` broadcast to
    ``[B, H, Sq, Sk]``. ``block_q`` / ``block_k`` set the block sizes of the
    blockwise XLA lowering (default 256 and 512) and of the Pallas kernels
    (default: by head_dim, ``pallas.attention.FORWARD`` / ``BACKWARD``),
    bound as ``implementation=implementation(BlockSizes(block_q, block_k))``;
    they never change the result. ``block_sizes``, a
    ``pallas.attention.BlockSizes``, sets them all (the backward kernels'
    and the Triton launch too) instead. On a mesh the primitive is bound inside
    ``jax.shard_map`` over the axes of the batch and heads
    (``primitives/_sharding``), so the kernels stay sharded.

    Derivatives: with ``ds_ij = scale (tq_i . k_j + q_i . tk_j) + tbias_ij``
    the tangent is ``t_out_i = sum_j p_ij (ds_ij (v_j - out_i) + tv_j)``
    (``attention_jvp_p``); its transpose, with ``g_ij = p_ij (ct_i . v_j -
    ct_i . out_i)``, gives ``dq_i = scale sum_j g_ij k_j``, ``dk_j = scale
    sum_i g_ij q_i``, ``dv_j = sum_i p_ij ct_i``, ``dbias_ij = g_ij``
    (``attention_vjp_p``). The JVP of that backward (a Hessian-vector
    product) is ``attention_vjp_jvp_p``, blockwise too; higher orders come
    from the JVP rules of those three.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        if np.ndim(as_array(_OP, name, x)) != 4:
            raise ValueError(f"{op_name(_OP)}: argument {name} must have rank 4 [batch, seq, "
                             f"heads, head_dim], got shape {np.shape(x)}")
    q, k, v = promote(_OP, {"q": q, "k": k, "v": v}, "float")
    causal = bool_param(_OP, "causal", causal)
    head_dim = np.shape(q)[-1]
    if scale is None:
        if head_dim == 0:
            raise ValueError(f"{op_name(_OP)}: head_dim is 0, so the default scale "
                             "head_dim ** -0.5 is undefined; pass scale")
        scale = head_dim ** -0.5
    scale = number_param(_OP, "scale", scale)
    mask = (np.ones((1, 1, 1, 1), bool) if mask is None
            else _pair_arg(_OP, "mask", mask, "bool", q, k))
    bias = (np.zeros((1, 1, 1, 1), jnp.result_type(q)) if bias is None
            else _pair_arg(_OP, "bias", bias, "float", q, k))
    blocks = _blocks(block_q, block_k, block_sizes)
    params = dict(causal=causal, scale=scale, implementation=implementation(blocks))
    out, _, _ = shard_map_bind(partial(attention_p.bind, **params), (q, k, v, mask, bias),
                               _LABELS, _OUT_LABELS)
    return out


@partial(jax.jit, static_argnames=("causal", "scale", "block_q", "block_k"))
def attention_reference(q: Array, k: Array, v: Array, *, causal: bool = False,
                        scale: float | None = None, mask: Array | None = None,
                        bias: Array | None = None, block_q: int | None = None,
                        block_k: int | None = None) -> Array:
    """Plain jax.numpy attention (materialises the scores), safe at fully
    masked rows: output 0 and zero derivatives there. Jitted, so that the
    checker's derivatives of it compile once. Written apart from the
    lowerings on purpose (its own shifted max: the checker's oracle);
    ``block_q`` / ``block_k`` are accepted and ignored, as the samples pass
    them to both."""
    q, k, v = (jnp.asarray(x) for x in (q, k, v))
    _, Sq, H, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    acc = acc_dtype(q.dtype)
    scale = D ** -0.5 if scale is None else scale
    group = H // Hkv
    k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=acc) * scale
    if bias is not None:
        s = s + jnp.asarray(bias, acc)
    valid = jnp.ones(s.shape, bool) if mask is None else jnp.broadcast_to(mask, s.shape)
    if causal:
        valid = valid & jnp.asarray(np.tril(np.ones((Sq, Sk), bool), Sk - Sq))
    m = lax.stop_gradient(jnp.where(valid, s, -jnp.inf).max(-1, keepdims=True, initial=-jnp.inf))
    m = jnp.where(jnp.isfinite(m), m, 0)
    e = jnp.where(valid, jnp.exp(jnp.where(valid, s, m) - m), 0)
    l = e.sum(-1, keepdims=True)
    p = e / jnp.where(l > 0, l, 1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v.astype(acc)).astype(q.dtype)


register_op(OpDef(name="attention", family=FAMILY, fn=attention,
                  primitives=(attention_p, attention_jvp_p, attention_vjp_p,
                              attention_vjp_jvp_p),
                  reference=attention_reference, operands=("q", "k", "v")))


# ------------------------------------------------------ dot_product_attention
_DPA = "dot_product_attention"


def dot_product_attention(query: ArrayLike, key: ArrayLike, value: ArrayLike,
                          bias: ArrayLike | None = None, mask: ArrayLike | None = None, *,
                          scale: float | None = None, is_causal: bool = False) -> Array:
    """``jax.nn.dot_product_attention`` (its name, these arguments, its
    layout): ``query [B, T, N, H]``, ``key, value [B, S, K, H]`` with N a
    multiple of K (grouped-query heads as jax.nn's: query head n reads
    key/value head ``n // (N / K)``), or the unbatched ``[T, N, H]`` and
    ``[S, K, H]``; ``bias`` and ``mask`` (bool, True = attend) broadcast to
    ``[B, N, T, S]`` (``[N, T, S]`` unbatched; leading 1s added). Returns
    ``softmax(scale q k^T + bias) v`` per head, query's shape, ``scale``
    defaulting to ``H ** -0.5``.

    ``is_causal`` aligns the causal mask top-left as jax.nn does: query i
    attends to keys ``j <= i`` also when T != S. (``attention(causal=True)``
    aligns it bottom-right, ``j <= i + S - T``, for decoding; the two agree
    when T == S, where this binds ``causal=True``; otherwise the top-left
    mask is built and combined with ``mask``.)

    A composition over ``attention``'s primitives: one formula, its kernels
    and rules. One difference from jax.nn: a query row whose keys are all
    masked out gives 0 with zero derivatives (jax.nn's large negative
    logits give the mean of the values there); rows with a key left, as
    every causal row, agree.
    """
    arrays = {"query": query, "key": key, "value": value}
    ranks = {n: np.ndim(as_array(_DPA, n, x)) for n, x in arrays.items()}
    if ranks["query"] not in (3, 4) or len(set(ranks.values())) != 1:
        raise ValueError(f"{op_name(_DPA)}: query, key and value must all have rank 4 "
                         "[batch, seq, heads, head_dim] or all rank 3 [seq, heads, head_dim], "
                         f"got shapes {[np.shape(x) for x in arrays.values()]}")
    q, k, v = promote(_DPA, arrays, "float")
    unbatched = ranks["query"] == 3
    if unbatched:
        q, k, v = (reshape(x, (1,) + tuple(np.shape(x))) for x in (q, k, v))
    (_, t, heads, d), (_, s, kv_heads, dk) = np.shape(q), np.shape(k)
    if np.shape(k) != np.shape(v) or d != dk or np.shape(q)[0] != np.shape(k)[0] or (
            kv_heads == 0 or heads % kv_heads):
        raise ValueError(f"{op_name(_DPA)}: expected query [B, T, N, H] and key, value "
                         f"[B, S, K, H] with N a multiple of K, got query {np.shape(query)}, "
                         f"key {np.shape(key)}, value {np.shape(value)}")
    is_causal = bool_param(_DPA, "is_causal", is_causal)
    scale = None if scale is None else number_param(_DPA, "scale", scale)
    if bias is not None:
        bias = _pair_arg(_DPA, "bias", bias, "float", q, k)
    if mask is not None:
        mask = _pair_arg(_DPA, "mask", mask, "bool", q, k)
    if is_causal and t != s:
        causal = np.tril(np.ones((t, s), bool))[None, None]
        mask = causal if mask is None else logical_and(mask, causal)
    out = attention(q, k, v, causal=is_causal and t == s, scale=scale, mask=mask, bias=bias)
    return reshape(out, np.shape(out)[1:]) if unbatched else out


def _dot_product_attention_reference(query: Array, key: Array, value: Array,
                                     bias: Array | None = None, mask: Array | None = None, *,
                                     scale: float | None = None, is_causal: bool = False
                                     ) -> Array:
    """jax.nn.dot_product_attention's maths (its top-left causal mask) in
    the input's precision: ``attention_reference`` with that mask. (jax.nn
    itself takes the softmax in float32 whatever the input;
    tests/test_attention.py compares with it at float32 tolerance.)"""
    unbatched = jnp.ndim(query) == 3
    q, k, v = (jnp.asarray(x)[None] if unbatched else jnp.asarray(x) for x in (query, key, value))
    if is_causal:
        causal = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
        mask = causal if mask is None else jnp.logical_and(mask, causal)
    out = attention_reference(q, k, v, scale=scale, mask=mask, bias=bias)
    return out[0] if unbatched else out


register_op(OpDef(name=_DPA, family=FAMILY, fn=dot_product_attention,
                  primitives=(attention_p, attention_jvp_p, attention_vjp_p,
                              attention_vjp_jvp_p),
                  reference=_dot_product_attention_reference,
                  operands=("query", "key", "value", "bias")))
