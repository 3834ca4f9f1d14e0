"""Primitives of the parallel family: ops for tensor parallelism, called inside
``jax.shard_map`` on one shard of an array split over a mesh axis, whose
results combine the shards with collectives over that axis.

vocab_parallel_cross_entropy is Megatron's vocab-parallel cross entropy
(Paddle's ``c_softmax_with_cross_entropy``): the logits are split over the
vocabulary, shard ``r`` of ``n`` holding entries ``[r V_s, (r + 1) V_s)`` of
the ``V = n V_s`` classes (as ``c_embedding``'s table rows), and no device
ever holds a whole ``[tokens, V]`` row. Like cross_entropy it is three
primitives, transposes of each other where linear:

* ``vocab_parallel_cross_entropy`` (loss and the log-sum-exp pair ``lse``,
  ``lse_lo`` of ``core.numerics.lse_parts``, per token, the same on every
  shard): from the shards' ``pmax`` of their maxima and ``psum`` of their
  sums of ``exp(x - own max)`` rescaled to the row's (``_vpce_forward``); the
  label's logit from the shard holding it (``psum``); the smoothing mean
  from a ``psum``;
* ``vocab_parallel_cross_entropy_jvp``, the tangent map
  (``vocab_parallel_tangent``, also its lowering): ``t_lse = psum(sum(p t))``
  and the label's and mean's tangents the same way;
* ``vocab_parallel_cross_entropy_vjp``, the backward
  (``vocab_parallel_cotangent``): each shard's slice of cross_entropy's
  ``g_loss (p - (1 - eps) onehot(label) - eps / V) + g_lse p``, with no
  collective; lowered as cross_entropy's backward (``_vpce_vjp``: the
  label's entry a scatter of one value per token, the exponentials the
  forward's), the same maths.

The collectives are JAX's own (``lax.psum``, ``pmax``, ``axis_index``): the
compositions are gradrules ops and those, so every derivative order is made
of them. The per-token results do not vary over the vocabulary axis
(``define_primitive(invariant_over="axis_name")``); the backward's varies
like the logits. The operands are bound as they vary (labels, the ``lse``
pair and the per-token cotangents the same on every shard), so that each transpose
gives a cotangent of its operand's type. z-loss is not offered.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import aval_of
from ..core.args import choice_param, float_array, int_param, number_param
from ..core.meta import op_name
from ..core.numerics import ce_token_value, finite_or_zero, lse_parts, masked_tokens
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._compose import cast
from ._fused import shifted_exp, upcast
from ._loss_xla import dlogits_at_label
from .arithmetic import add, multiply, subtract
from .compare import ge, lt, where
from .gather import one_hot, take_along_axis
from ._labels import REDUCTIONS, labels_arg, mask_tokens, reduce_loss
from .loss import (ce_jvp_meta, ce_meta, ce_vjp_meta, cross_entropy_reference,
                   grouped_cotangent, prob_weighted_sum, token_prob_parts)
from .reduction import sum as gr_sum
from .shape import expand_dims, squeeze

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "parallel"
OP = "vocab_parallel_cross_entropy"
VPCE_PARAMS = ("axis_name", "ignore_index", "label_smoothing")


def shard_vocab(axis_name: str, shard_size: int) -> tuple[Array, int]:
    """``(start, V)``: this shard's first vocabulary entry (``axis_index``
    times ``shard_size``) and the whole vocabulary's size."""
    return lax.axis_index(axis_name) * shard_size, shard_size * lax.axis_size(axis_name)


def shard_label_value(x: Any, labels: Any, start: Any) -> Any:
    """``x[..., label - start]`` on the shard that holds each token's label,
    0 on the others: the ``psum`` over the shards is ``x[..., label]``."""
    shard_size = aval_of(x).shape[-1]
    local = subtract(labels, cast(start, aval_of(labels).dtype))
    holds = where(ge(local, 0), lt(local, shard_size), False)
    picked = take_along_axis(x, expand_dims(where(holds, local, 0), axis=-1), axis=-1)
    return where(holds, squeeze(picked, axis=-1), 0.0)


def _vpce_forward(logits: Array, labels: Array, *, axis_name: str, ignore_index: int,
                  label_smoothing: float) -> list[Array]:
    """The forward's lowering: cross_entropy's ``ce_forward`` with each
    vocabulary sum and max taken over the shards. Each shard sums ``exp(x -
    m_s)`` with its own shift ``m_s`` (``_fused.shifted_exp``, as the
    backward's ``_shifted_probs``: under jit, XLA computes one exponential
    per logit for both) and rescales its sum by ``exp(m_s - m)`` to the
    shift ``m`` of the whole row (at most 1: a shard whose row is all
    ``-inf`` has ``m_s = 0`` and adds 0)."""
    x = upcast(logits)
    start, vocab = shard_vocab(axis_name, x.shape[-1])
    own, _, e = shifted_exp(x, -1)
    shift = finite_or_zero(lax.pmax(jnp.max(x, -1), axis_name))
    scale = jnp.exp(jnp.minimum(own[..., 0] - shift, 0))
    total = lax.psum(jnp.sum(e, -1) * scale, axis_name)
    lse, lse_lo = lse_parts(shift, total, 0.0)
    picked = lax.psum(shard_label_value(x, labels, start), axis_name)
    mean = lax.psum(jnp.sum(x, -1), axis_name) / vocab if label_smoothing else None
    loss = ce_token_value(lse, lse_lo, picked, mean, label_smoothing=label_smoothing, z_loss=0.0,
                          tangent=False)
    return [masked_tokens(loss, labels, vocab, ignore_index), lse, lse_lo]


def vocab_parallel_tangent(logits: Any, labels: Any, lse: Any, lse_lo: Any, t: Any, *,
                           axis_name: str, ignore_index: int,
                           label_smoothing: float) -> list[Any]:
    """The tangent map, ``[t_loss, t_lse]`` along the shard's logit tangent
    ``t``: ``t_lse = psum(sum(p t))``, ``t_loss = t_lse - (1 - eps) t[label]
    - eps psum(sum(t)) / V`` (masked as the loss), in the dtype of ``lse``."""
    acc = aval_of(lse).dtype
    x, t = cast(logits, acc), cast(t, acc)
    start, vocab = shard_vocab(axis_name, aval_of(logits).shape[-1])
    t_lse = lax.psum(prob_weighted_sum(x, lse, lse_lo, t), axis_name)
    picked = lax.psum(shard_label_value(t, labels, start), axis_name)
    v = subtract(t_lse, multiply(picked, 1 - label_smoothing))
    if label_smoothing:
        v = subtract(v, multiply(lax.psum(gr_sum(t, axis=-1), axis_name),
                                 label_smoothing / vocab))
    return [mask_tokens(v, labels, vocab, ignore_index), t_lse]


def vocab_parallel_cotangent(logits: Any, labels: Any, lse: Any, lse_lo: Any, g_loss: Any,
                             g_lse: Any, *, axis_name: str, ignore_index: int,
                             label_smoothing: float) -> Any:
    """The backward, the transpose of the tangent map: the shard's slice of
    ``g_loss (p - (1 - eps) onehot(label) - eps / V) + g_lse p`` (``g_loss``
    masked as the loss), with ``onehot`` zero on the shards that do not hold
    the label; grouped as ``p (c + g_lse) - c ((1 - eps) onehot + eps / V)``
    (``grouped_cotangent``: one multiply by p per logit, and one in its
    JVP); computed in the dtype of ``lse``, returned in the logits'."""
    dtype, acc = aval_of(logits).dtype, aval_of(lse).dtype
    shard_size = aval_of(logits).shape[-1]
    start, vocab = shard_vocab(axis_name, shard_size)
    e, q = token_prob_parts(cast(logits, acc), lse, lse_lo)
    local = subtract(labels, cast(start, aval_of(labels).dtype))
    hot = one_hot(local, num_classes=shard_size, dtype=acc)     # 0 rows off the shard
    c = mask_tokens(g_loss, labels, vocab, ignore_index)
    return cast(grouped_cotangent(e, hot, c, add(c, g_lse), label_smoothing, vocab, q), dtype)


def _vpce_vjp(logits: Array, labels: Array, lse: Array, lse_lo: Array, g_loss: Array,
              g_lse: Array, *, axis_name: str, ignore_index: int,
              label_smoothing: float) -> Array:
    """The backward's lowering: cross_entropy's (``_loss_xla.dlogits_at_label``,
    the maths of ``vocab_parallel_cotangent`` with the label's entry a
    scatter of one value per token, not an iota-compare one-hot) at the
    label's entry in this shard, where it holds it."""
    shard_size = logits.shape[-1]
    start, vocab = shard_vocab(axis_name, shard_size)
    local = labels - start.astype(labels.dtype)
    holds = (local >= 0) & (local < shard_size)
    c = masked_tokens(g_loss, labels, vocab, ignore_index)
    return dlogits_at_label(logits, local, holds, lse, lse_lo, c, g_lse, vocab,
                            label_smoothing=label_smoothing, z_loss=0.0)


vocab_parallel_cross_entropy_p = define_primitive(
    OP, family=FAMILY, operands=("logits", "labels"), outputs=("loss", "lse", "lse_lo"),
    params=VPCE_PARAMS, infer_meta=partial(ce_meta, OP), impl=_vpce_forward,
    multiple_results=True, invariant_over="axis_name")
vocab_parallel_cross_entropy_jvp_p = define_primitive(
    f"{OP}_jvp", family=FAMILY, operands=("logits", "labels", "lse", "lse_lo", "t"),
    params=VPCE_PARAMS, infer_meta=partial(ce_jvp_meta, OP), impl=vocab_parallel_tangent,
    multiple_results=True, invariant_over="axis_name")
vocab_parallel_cross_entropy_vjp_p = define_primitive(
    f"{OP}_vjp", family=FAMILY, operands=("logits", "labels", "lse", "lse_lo", "g_loss", "g_lse"),
    params=VPCE_PARAMS, infer_meta=partial(ce_vjp_meta, OP), impl=_vpce_vjp,
    vary_operands=False)


def _shards(axis_name: Any) -> int:
    """The size of the manual mesh axis ``axis_name`` (a ValueError outside a
    ``shard_map`` over it)."""
    if not isinstance(axis_name, str):
        raise TypeError(f"{op_name(OP)}: axis_name must be a mesh axis name (a str), got "
                        f"{axis_name!r}")
    try:
        return int(lax.axis_size(axis_name))
    except NameError:
        raise ValueError(f"{op_name(OP)}: axis_name {axis_name!r} is not an axis of an "
                         "enclosing jax.shard_map; call it inside one, on the shard of the "
                         "logits split over that axis") from None


def vocab_parallel_cross_entropy(logits_shard: ArrayLike, labels: ArrayLike, *,
                                 axis_name: str, ignore_index: int = -100,
                                 label_smoothing: float = 0.0,
                                 reduction: str = "mean") -> Array:
    """cross_entropy of logits split over the vocabulary, inside ``jax.shard_map``.

    ``logits_shard [..., V_s]`` is this shard's slice of the logits ``[...,
    V]``, ``V = n V_s`` over the ``n`` shards of the mesh axis ``axis_name``
    (shard ``r`` holds classes ``[r V_s, (r + 1) V_s)``); ``labels [...]`` are
    the global class ids, the same on every shard. The result is
    ``cross_entropy(logits, labels, ...)`` of the whole logits, the same on
    every shard: per token, with ``lse = log sum_shards sum exp(x)`` (a
    ``pmax`` and a ``psum``), ``lse - (1 - eps) x[label] - eps mean(x)``, 0
    where ``label == ignore_index``; ``reduction`` as cross_entropy's (over
    the tokens given: inside a data-parallel ``shard_map``, average the
    shards' results yourself).

    d loss / d logits_shard = this shard's slice of ``p - (1 - eps)
    onehot(label) - eps / V``, ``p = exp((x - lse) - lse_lo)``: no collective in the
    backward. Three primitives (forward, tangent map, backward), as
    cross_entropy; labels take no tangent.
    """
    logits = float_array(OP, "logits_shard", logits_shard)
    if np.ndim(logits) < 1 or np.shape(logits)[-1] < 1:
        raise ValueError(f"{op_name(OP)}: logits_shard must have a class axis of size >= 1, "
                         f"got shape {np.shape(logits)}")
    n = _shards(axis_name)
    params = {"axis_name": axis_name,
              "ignore_index": int_param(OP, "ignore_index", ignore_index),
              "label_smoothing": number_param(OP, "label_smoothing", label_smoothing, lo=0.0,
                                              hi=1.0)}
    choice_param(OP, "reduction", reduction, REDUCTIONS)
    labels = labels_arg(OP, labels, np.shape(logits)[:-1], np.shape(logits)[-1] * n,
                        params["ignore_index"], "logits_shard.shape[:-1]")
    loss, *_ = vocab_parallel_cross_entropy_p.bind(logits, labels, **params)
    return reduce_loss(OP, loss, labels, params["ignore_index"], reduction,
                       jnp.result_type(logits))


def _vocab_parallel_cross_entropy_reference(logits: ArrayLike, labels: ArrayLike, *,
                                            ignore_index: int = -100,
                                            label_smoothing: float = 0.0,
                                            reduction: str = "mean") -> Array:
    """The unsharded cross entropy of the whole logits (the checker calls the
    op inside ``shard_map`` on them: ``testing.samples.parallel``)."""
    return cross_entropy_reference(logits, labels, ignore_index=ignore_index,
                                   label_smoothing=label_smoothing, reduction=reduction)


register_op(OpDef(name=OP, family=FAMILY, fn=vocab_parallel_cross_entropy,
                  primitives=(vocab_parallel_cross_entropy_p, vocab_parallel_cross_entropy_jvp_p,
                              vocab_parallel_cross_entropy_vjp_p),
                  reference=_vocab_parallel_cross_entropy_reference,
                  operands=("logits_shard", "labels"), nondiff=("labels",)))
