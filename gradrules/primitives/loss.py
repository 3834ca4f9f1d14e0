"""Primitives of the loss family: cross_entropy and fused_linear_cross_entropy
(fused: forward, tangent map and backward primitives each), nll_loss and
softmax_cross_entropy (optax's: labels are probabilities).

The class axis is the last one. Labels are integers (a float label array is a
TypeError; one narrower than 32 bits or unsigned is read as int32);
``ignore_index`` marks tokens that count for nothing. A label
outside ``[0, classes)`` that is not ``ignore_index`` is a ValueError when
the labels are concrete (eager calls); under ``jit`` or ``vmap`` the labels
cannot be inspected at trace time, and such a token's loss and gradient are
NaN (so the reduced loss is NaN): never a silently clipped label.

16-bit logits are accumulated in float32: the per-token losses and the
log-sum-exp residuals are float32 and the reduced loss is cast back to the
logits' dtype.

The forwards keep the log-sum-exp as a pair, ``lse`` and its rounding
``lse_lo`` (``core.numerics.lse_parts``; ``lse_lo``'s tangent is a symbolic
zero); the other primitives take both, ``p = exp((x - lse) - lse_lo)``: exact
where ``|lse|`` is large (float32 logits of 1e6, where ``exp(x - lse)``
does not sum to 1).

cross_entropy's tangent map and backward are written in gradrules ops
(``cross_entropy_tangent``, ``cross_entropy_cotangent``): the functions their
JVP rules differentiate, and (at ``h @ w``) fused_linear_cross_entropy's;
``cross_entropy_tangent`` is also the tangent map's XLA lowering. The other
lowerings are plain jax.numpy, in ``_loss_xla.py``: cross_entropy's forward
(the log-sum-exp pair from ``_fused.shifted_exp``) and backward (deliberately: it shares
the forward's ``exp(x - shift)``, see there), and fused_linear_cross_entropy's
three primitives, chunked so that the logits are never made; their block
sizes are the ``blocks`` of the ``implementation`` param
(``_loss_xla.Blocks``). The Pallas kernels of all six primitives are in
``pallas/loss.py`` (fused_linear_cross_entropy's: XLA matmuls per chunk of
tokens around cross_entropy's kernels). Both public functions bind their
forward inside ``shard_map`` over the mesh axes of the token dims. The
labels, params, per-token mask and reductions are ``_labels.py``'s.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray, aval_of
from ..core.args import block_sizes_param, choice_param, float_array, int_param
from ..core.meta import check_dtype, op_name
from ..core.numerics import acc_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import loss as kernels
from ..pallas.loss import BlockSizes
from . import _loss_xla as xla
from ._labels import (REDUCTIONS, check_labels, label_index, label_weight, labels_arg,
                      loss_params, mask_tokens, one_hot, reduce_loss)
from ._compose import cast
from ._fused import check_like
from ._sharding import row_labels, shard_map_bind
from .arithmetic import add, multiply, subtract
from .convert import promote
from .gather import IN_RANGE, take_along_axis
from .reduction import mean as gr_mean
from .reduction import sum as gr_sum
from .shape import expand_dims, reshape, squeeze
from .unary import exp, neg

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "loss"
CE_PARAMS = ("ignore_index", "label_smoothing", "z_loss")


# the public function's block_sizes argument: None or a valid BlockSizes
_blocks = partial(block_sizes_param, cls=BlockSizes,
                  public_name="gradrules.pallas.loss.BlockSizes")


# ----------------------------------------------------------- cross_entropy
def ce_meta(op: str, logits: Any, labels: Any, **params: Any
            ) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    """The per-token loss and log-sum-exp pair (``lse``, ``lse_lo``:
    ``core.numerics.lse_parts``) of a cross entropy ``op`` of ``logits [...,
    V]`` and integer ``labels [...]`` (accumulation dtype)."""
    check_dtype(op, "logits", logits.dtype, "float")
    if not logits.shape:
        raise ValueError(f"{op_name(op)}: logits must have a class axis, got a scalar")
    check_labels(op, labels, logits.shape[:-1], "logits.shape[:-1]")
    tok = ShapedArray(labels.shape, acc_dtype(logits.dtype))
    return tok, tok, tok


def _like_tokens(op: str, tok: ShapedArray, **operands: Any) -> ShapedArray:
    """``tok``, once each per-token operand (residual, cotangent) is like it."""
    for name, a in operands.items():
        check_like(op, name, a, tok.shape, tok.dtype)
    return tok


def ce_jvp_meta(op: str, logits: Any, labels: Any, lse: Any, lse_lo: Any, t: Any,
                **params: Any) -> tuple[ShapedArray, ShapedArray]:
    """The tangents of ``ce_meta``'s loss and ``lse`` (``lse_lo``'s is zero)."""
    tok = _like_tokens(f"{op}_jvp", ce_meta(op, logits, labels)[0], lse=lse, lse_lo=lse_lo)
    check_like(f"{op}_jvp", "t", t, logits.shape, logits.dtype)
    return tok, tok


def ce_vjp_meta(op: str, logits: Any, labels: Any, lse: Any, lse_lo: Any, g_loss: Any,
                g_lse: Any, **params: Any) -> ShapedArray:
    """The logits' cotangent, from those of ``ce_meta``'s loss and ``lse``."""
    _like_tokens(f"{op}_vjp", ce_meta(op, logits, labels)[0], lse=lse, lse_lo=lse_lo,
                 g_loss=g_loss, g_lse=g_lse)
    return ShapedArray(logits.shape, logits.dtype)


def token_prob_parts(x: Any, lse: Any, lse_lo: Any) -> tuple[Any, Any]:
    """``(e, q)`` with ``p = e q[..., None]``: ``e = exp(x - lse)`` per logit,
    ``q = exp(-lse_lo)`` per token (``core.numerics.probs``' ``exp((x - lse)
    - lse_lo)`` split, exact alike: ``x - lse`` is exact wherever p is not
    negligible, ``|lse_lo| <= log(V)``). q joins the other per-token factors
    (``prob_weighted_sum``, ``grouped_cotangent``): one subtraction per
    logit for p and one more for its tangent ``e (t - t_lse)``."""
    return exp(subtract(x, expand_dims(lse, axis=-1))), exp(neg(lse_lo))


def prob_weighted_sum(x: Any, lse: Any, lse_lo: Any, t: Any) -> Any:
    """``sum(p t)`` along the last axis, as ``q sum(e t)``
    (``token_prob_parts``): the tangent of the log-sum-exp along ``t``."""
    e, q = token_prob_parts(x, lse, lse_lo)
    return multiply(gr_sum(multiply(e, t), axis=-1), q)


def cross_entropy_tangent(logits: Any, labels: Any, lse: Any, lse_lo: Any, t: Any, *,
                          ignore_index: int, label_smoothing: float,
                          z_loss: float) -> list[Any]:
    """cross_entropy's tangent map, ``[t_loss, t_lse]`` along the logits'
    tangent ``t``: ``t_lse = sum(p t)``, ``t_loss = t_lse (1 + 2 z lse) -
    (1 - eps) t[label] - eps mean(t)`` (masked as the loss), computed in the
    dtype of ``lse`` (float32 for 16-bit logits). Also the tangent map's XLA
    lowering: ``t[label]`` is read with ``take_along_axis`` (a label out of
    range clips; its token is masked), never a ``[..., V]`` one-hot product."""
    acc = aval_of(lse).dtype
    x, t = cast(logits, acc), cast(t, acc)
    classes = aval_of(logits).shape[-1]
    t_lse = prob_weighted_sum(x, lse, lse_lo, t)
    v = multiply(t_lse, add(multiply(lse, 2 * z_loss), 1.0)) if z_loss else t_lse
    picked = squeeze(take_along_axis(t, expand_dims(labels, axis=-1), axis=-1), axis=-1)
    v = subtract(v, multiply(picked, 1 - label_smoothing))
    if label_smoothing:
        v = subtract(v, multiply(gr_mean(t, axis=-1), label_smoothing))
    return [mask_tokens(v, labels, classes, ignore_index), t_lse]


def cross_entropy_cotangent(logits: Any, labels: Any, lse: Any, lse_lo: Any, g_loss: Any,
                            g_lse: Any, *, ignore_index: int, label_smoothing: float,
                            z_loss: float) -> Any:
    """cross_entropy's backward, the transpose of the tangent map: the logits'
    cotangent ``g_loss (p (1 + 2 z lse) - (1 - eps) onehot(label) - eps / V) +
    g_lse p`` (``g_loss`` masked as the loss), grouped per token as ``p r -
    c ((1 - eps) onehot(label) + eps / V)`` with ``c`` the masked ``g_loss``
    and ``r = c (1 + 2 z lse) + g_lse`` (one multiply per logit, and one in
    its JVP, ``dp r``), computed in the dtype of ``lse`` and returned in the
    logits' dtype. The backward's XLA lowering is the same maths in
    jax.numpy, ``_loss_xla.ce_vjp`` (faster; see there)."""
    dtype, acc = aval_of(logits).dtype, aval_of(lse).dtype
    classes = aval_of(logits).shape[-1]
    c = mask_tokens(g_loss, labels, classes, ignore_index)
    r = add(multiply(c, add(multiply(lse, 2 * z_loss), 1.0)) if z_loss else c, g_lse)
    e, q = token_prob_parts(cast(logits, acc), lse, lse_lo)
    hot = one_hot(labels, classes, acc, ignore_index)
    return cast(grouped_cotangent(e, hot, c, r, label_smoothing, classes, q), dtype)


def grouped_cotangent(p: Any, hot: Any, c: Any, r: Any, label_smoothing: float,
                      classes: Any, q: Any = None) -> Any:
    """``p r - c ((1 - eps) hot + eps / V)`` with the per-token ``c`` and
    ``r`` broadcast along the classes: the cross-entropy cotangent grouped
    so that each logit gets one multiply by p (and its JVP one, ``dp r``),
    not one per term that multiplies p. With ``q`` (per token), ``p`` is the
    ``e`` of ``token_prob_parts`` and the probabilities are ``e q``: then
    ``e (q r)``, ``q`` joined to the per-token factor."""
    d = multiply(p, expand_dims(r if q is None else multiply(q, r), axis=-1))
    d = subtract(d, multiply(hot, expand_dims(multiply(c, 1 - label_smoothing), axis=-1)))
    if label_smoothing:
        d = subtract(d, expand_dims(multiply(c, label_smoothing / classes), axis=-1))
    return d


cross_entropy_p = define_primitive(
    "cross_entropy", family=FAMILY, operands=("logits", "labels"),
    outputs=("loss", "lse", "lse_lo"),
    params=CE_PARAMS, infer_meta=partial(ce_meta, "cross_entropy"),
    implementations={"xla": xla.ce_forward, "pallas": kernels.forward,
                     "supports": kernels.supports},
    multiple_results=True)
cross_entropy_jvp_p = define_primitive(
    "cross_entropy_jvp", family=FAMILY, operands=("logits", "labels", "lse", "lse_lo", "t"),
    params=CE_PARAMS, infer_meta=partial(ce_jvp_meta, "cross_entropy"),
    implementations={"xla": cross_entropy_tangent, "pallas": kernels.jvp,
                     "supports": kernels.supports},
    multiple_results=True)
cross_entropy_vjp_p = define_primitive(
    "cross_entropy_vjp", family=FAMILY,
    operands=("logits", "labels", "lse", "lse_lo", "g_loss", "g_lse"),
    params=CE_PARAMS, infer_meta=partial(ce_vjp_meta, "cross_entropy"),
    implementations={"xla": xla.ce_vjp, "pallas": kernels.backward,
                     "supports": kernels.supports})


def cross_entropy(logits: ArrayLike, labels: ArrayLike, *, ignore_index: int = -100,
                  label_smoothing: float = 0.0, z_loss: float = 0.0,
                  reduction: str = "mean", block_sizes: BlockSizes | None = None) -> Array:
    """Softmax cross entropy of ``logits [..., V]`` against integer ``labels [...]``.

    Per token, with ``lse = logsumexp(logits)``, ``eps = label_smoothing`` and
    ``z = z_loss``: ``lse + z lse**2 - (1 - eps) logits[label] - eps
    mean(logits)`` (the smoothed target puts ``eps / V`` on every class; the
    z-loss term is PaLM's); 0 where ``label == ignore_index``. ``reduction``:
    ``"mean"`` over the tokens not ignored (0 when every token is ignored),
    ``"sum"`` or ``"none"``.

    d loss / d logits = ``p (1 + 2 z lse) - (1 - eps) onehot(label) - eps / V``
    with ``p = softmax(logits)``. Three primitives: ``cross_entropy`` (loss and
    the ``lse``, ``lse_lo`` residuals), ``cross_entropy_jvp`` (tangents of
    the loss and lse) and
    ``cross_entropy_vjp`` (the logits' cotangent), transposes of each other.
    ``-inf`` logits (masked classes) are fine; with label smoothing they make
    the loss infinite, as in PyTorch. See the module docstring for labels.

    The Pallas kernels (``gradrules.pallas.loss``; which calls they take:
    ``supports`` there) loop over the vocabulary in blocks; ``block_sizes``
    (a ``gradrules.pallas.loss.BlockSizes``) sets their rows per program and
    vocabulary block. On a mesh the token dims stay sharded (``shard_map``).
    """
    op = "cross_entropy"
    logits = float_array(op, "logits", logits)
    if np.ndim(logits) < 1:
        raise ValueError(f"{op_name(op)}: logits must have a class axis, got a scalar")
    params = loss_params(op, ignore_index, label_smoothing, z_loss,
                         _blocks(op, block_sizes))
    choice_param(op, "reduction", reduction, REDUCTIONS)
    labels = labels_arg(op, labels, np.shape(logits)[:-1], np.shape(logits)[-1],
                        params["ignore_index"], "logits.shape[:-1]")
    rows = row_labels(np.ndim(logits) - 1, axis=None)
    loss, *_ = shard_map_bind(partial(cross_entropy_p.bind, **params), (logits, labels),
                              (rows + (None,), rows), (rows,) * 3)
    return reduce_loss(op, loss, labels, params["ignore_index"], reduction,
                       jnp.result_type(logits))


def _reference_token_loss(logits: Array, labels: Array, ignore_index: int,
                          label_smoothing: float, z_loss: float) -> Array:
    x = logits.astype(jnp.promote_types(logits.dtype, jnp.float32))
    lse = jax.nn.logsumexp(x, -1)
    lse = jnp.where(jnp.isfinite(lse), lse, 0.0)
    v = x.shape[-1]
    picked = jnp.take_along_axis(x, jnp.clip(labels, 0, v - 1)[..., None], -1)[..., 0]
    loss = lse + z_loss * lse ** 2 - (1 - label_smoothing) * picked
    if label_smoothing:
        loss = loss - label_smoothing * jnp.mean(x, -1)
    return jnp.where(labels != ignore_index, loss, 0.0)


def _reference_reduce(loss: Array, labels: Array, ignore_index: int, reduction: str,
                      dtype: Any) -> Array:
    if reduction == "sum":
        loss = jnp.sum(loss)
    elif reduction == "mean":
        loss = jnp.sum(loss) / jnp.maximum(jnp.sum(labels != ignore_index), 1)
    return loss.astype(dtype)


def cross_entropy_reference(logits: ArrayLike, labels: ArrayLike, *, ignore_index: int = -100,
                             label_smoothing: float = 0.0, z_loss: float = 0.0,
                             reduction: str = "mean") -> Array:
    logits = jnp.asarray(logits)
    loss = _reference_token_loss(logits, labels, ignore_index, label_smoothing, z_loss)
    return _reference_reduce(loss, labels, ignore_index, reduction, logits.dtype)


register_op(OpDef(name="cross_entropy", family=FAMILY, fn=cross_entropy,
                  primitives=(cross_entropy_p, cross_entropy_jvp_p, cross_entropy_vjp_p),
                  reference=cross_entropy_reference, operands=("logits", "labels"),
                  nondiff=("labels",)))


# ------------------------------------------------ fused_linear_cross_entropy
def _flce_meta(h: Any, w: Any, labels: Any, **params: Any
               ) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    op = "fused_linear_cross_entropy"
    check_dtype(op, "h", h.dtype, "float")
    if w.dtype != h.dtype:
        raise TypeError(f"{op_name(op)}: h ({h.dtype}) and w ({w.dtype}) must share one dtype")
    if len(h.shape) < 2 or len(w.shape) != len(h.shape) or w.shape[:-2] != h.shape[:-2]:
        raise ValueError(f"{op_name(op)}: expected h [..., tokens, hidden] and w [..., hidden, "
                         f"vocab] with the same leading axes, got h with shape {h.shape} and w "
                         f"with shape {w.shape}")
    if h.shape[-1] != w.shape[-2]:
        raise ValueError(f"{op_name(op)}: hidden sizes do not match: h with shape {h.shape} "
                         f"has hidden size {h.shape[-1]}, w with shape {w.shape} has "
                         f"{w.shape[-2]}")
    check_labels(op, labels, h.shape[:-1], "h.shape[:-1]")
    tok = ShapedArray(labels.shape, acc_dtype(h.dtype))
    return tok, tok, tok


def _flce_jvp_meta(h: Any, w: Any, labels: Any, lse: Any, lse_lo: Any, th: Any, tw: Any,
                   **params: Any) -> tuple[ShapedArray, ShapedArray]:
    tok = _like_tokens("fused_linear_cross_entropy_jvp", _flce_meta(h, w, labels)[0],
                       lse=lse, lse_lo=lse_lo)
    check_like("fused_linear_cross_entropy_jvp", "th", th, h.shape, h.dtype)
    check_like("fused_linear_cross_entropy_jvp", "tw", tw, w.shape, w.dtype)
    return tok, tok


def _flce_vjp_meta(h: Any, w: Any, labels: Any, lse: Any, lse_lo: Any, g_loss: Any,
                   g_lse: Any, **params: Any) -> tuple[ShapedArray, ShapedArray]:
    _like_tokens("fused_linear_cross_entropy_vjp", _flce_meta(h, w, labels)[0], lse=lse,
                 lse_lo=lse_lo, g_loss=g_loss, g_lse=g_lse)
    return ShapedArray(h.shape, h.dtype), ShapedArray(w.shape, w.dtype)


fused_linear_cross_entropy_p = define_primitive(
    "fused_linear_cross_entropy", family=FAMILY, operands=("h", "w", "labels"),
    outputs=("loss", "lse", "lse_lo"),
    params=CE_PARAMS, infer_meta=_flce_meta,
    implementations={"xla": xla.flce_forward, "pallas": kernels.flce_forward,
                     "supports": kernels.flce_supports},
    multiple_results=True)
fused_linear_cross_entropy_jvp_p = define_primitive(
    "fused_linear_cross_entropy_jvp", family=FAMILY,
    operands=("h", "w", "labels", "lse", "lse_lo", "th", "tw"), params=CE_PARAMS,
    infer_meta=_flce_jvp_meta,
    implementations={"xla": xla.flce_jvp, "pallas": kernels.flce_jvp,
                     "supports": kernels.flce_supports},
    multiple_results=True)
fused_linear_cross_entropy_vjp_p = define_primitive(
    "fused_linear_cross_entropy_vjp", family=FAMILY,
    operands=("h", "w", "labels", "lse", "lse_lo", "g_loss", "g_lse"), params=CE_PARAMS,
    infer_meta=_flce_vjp_meta,
    implementations={"xla": xla.flce_vjp, "pallas": kernels.flce_backward,
                     "supports": kernels.flce_supports},
    multiple_results=True)


def _flce_vjp_jvp_meta(h: Any, w: Any, labels: Any, lse: Any, lse_lo: Any, g_loss: Any,
                       g_lse: Any, th: Any, tw: Any, t_lse: Any, t_lse_lo: Any,
                       **params: Any) -> tuple[ShapedArray, ShapedArray]:
    op = "fused_linear_cross_entropy_vjp_jvp"
    out = _flce_vjp_meta(h, w, labels, lse, lse_lo, g_loss, g_lse)
    check_like(op, "th", th, h.shape, h.dtype)
    check_like(op, "tw", tw, w.shape, w.dtype)
    _like_tokens(op, _flce_meta(h, w, labels)[0], t_lse=t_lse, t_lse_lo=t_lse_lo)
    return out


# The backward's tangent along h, w, lse and lse_lo (g_loss, g_lse held),
# which the backward's JVP rule binds (second derivatives: Hessian-vector
# products): blockwise (``_loss_xla.flce_vjp_jvp``), where the JVP of the
# composition ``rules.loss._flce_cotangent`` would make the [tokens, vocab]
# logits. The op's fourth primitive, after the forward, tangent map and backward.
fused_linear_cross_entropy_vjp_jvp_p = define_primitive(
    "fused_linear_cross_entropy_vjp_jvp", family=FAMILY,
    operands=("h", "w", "labels", "lse", "lse_lo", "g_loss", "g_lse", "th", "tw", "t_lse",
              "t_lse_lo"), params=CE_PARAMS, infer_meta=_flce_vjp_jvp_meta,
    implementations={"xla": xla.flce_vjp_jvp}, multiple_results=True)


def fused_linear_cross_entropy(h: ArrayLike, w: ArrayLike, labels: ArrayLike, *,
                               ignore_index: int = -100, label_smoothing: float = 0.0,
                               z_loss: float = 0.0, reduction: str = "mean") -> Array:
    """``cross_entropy(h @ w, labels, ...)`` without making the logits.

    ``h [..., hidden]`` (the tokens' hidden states), ``w [hidden, vocab]`` (the
    vocabulary projection), ``labels [...]``; the parameters and the result are
    those of ``cross_entropy``, and so are the derivatives: ``dh = dlogits
    w^T``, ``dw = h^T dlogits``. On the CPU the logits are made one block of
    tokens x vocabulary entries at a time (an online log-sum-exp over
    vocabulary chunks), in the forward, the tangent map and the backward
    alike, so memory stays at one block beyond the operands and the
    gradients; the block is ``_loss_xla.DEFAULT_BLOCKS`` capped at the
    problem's sizes, bound as the ``blocks`` of the ``implementation``
    param. The Pallas path (``gradrules.pallas.loss``) takes the tokens in
    chunks of ``blocks.tokens`` (at most 2**27 logits): per chunk one matmul
    makes the float32 logits, cross_entropy's kernels their loss or
    gradient, and the backward adds two matmuls. On a mesh the token dims
    stay sharded (``shard_map``; w's gradient summed over the shards). A
    hidden size of h that differs from w's is a ValueError.
    """
    op = "fused_linear_cross_entropy"
    h, w = float_array(op, "h", h), float_array(op, "w", w)
    h, w = promote(op, {"h": h, "w": w}, "float")
    if np.ndim(h) < 1 or np.ndim(w) != 2:
        raise ValueError(f"{op_name(op)}: expected h [..., hidden] and w [hidden, vocab], got "
                         f"h with shape {np.shape(h)} and w with shape {np.shape(w)}")
    hidden, vocab = np.shape(w)
    if np.shape(h)[-1] != hidden:
        raise ValueError(f"{op_name(op)}: hidden sizes do not match: h with shape "
                         f"{np.shape(h)} has hidden size {np.shape(h)[-1]}, w with shape "
                         f"{np.shape(w)} has {hidden}")
    rows = tuple(np.shape(h)[:-1])
    params = loss_params(op, ignore_index, label_smoothing, z_loss)
    choice_param(op, "reduction", reduction, REDUCTIONS)
    labels = labels_arg(op, labels, rows, vocab, params["ignore_index"], "h.shape[:-1]")

    def bind(h: Any, w: Any, labels: Any) -> list[Any]:
        """The tokens (of this shard) flattened; the block sizes capped at them."""
        shape = np.shape(labels)
        tokens = int(np.prod(shape))
        blocks = xla.DEFAULT_BLOCKS.for_shape(tokens, vocab)
        outs = fused_linear_cross_entropy_p.bind(
            reshape(h, (tokens, hidden)), w, reshape(labels, (tokens,)),
            **dict(params, implementation=replace(params["implementation"], blocks=blocks)))
        return [reshape(o, shape) for o in outs]

    lead = row_labels(len(rows), axis=None)
    loss, *_ = shard_map_bind(bind, (h, w, labels), (lead + (None,), (None, None), lead),
                              (lead,) * 3)
    return reduce_loss(op, loss, labels, params["ignore_index"], reduction, jnp.result_type(h))


def _fused_linearcross_entropy_reference(h: ArrayLike, w: ArrayLike, labels: ArrayLike,
                                          **kwargs: Any) -> Array:
    return cross_entropy_reference(jnp.matmul(h, w, precision="highest"), labels, **kwargs)


register_op(OpDef(name="fused_linear_cross_entropy", family=FAMILY,
                  fn=fused_linear_cross_entropy,
                  primitives=(fused_linear_cross_entropy_p, fused_linear_cross_entropy_jvp_p,
                              fused_linear_cross_entropy_vjp_p,
                              fused_linear_cross_entropy_vjp_jvp_p),
                  reference=_fused_linearcross_entropy_reference,
                  operands=("h", "w", "labels"), nondiff=("labels",)))


# ---------------------------------------------------------------- nll_loss
def _nll_meta(logp: Any, index: Any, weight: Any, *, ignore_index: int) -> ShapedArray:
    op = "nll_loss"
    check_dtype(op, "logp", logp.dtype, "float")
    if not logp.shape:
        raise ValueError(f"{op_name(op)}: logp must have a class axis, got a scalar")
    check_labels(op, index, (*logp.shape[:-1], 1), "the primitive takes the labels as an "
                  "index along the class axis, logp.shape[:-1] + (1,)")
    if weight.dtype != logp.dtype:
        raise TypeError(f"{op_name(op)}: weight ({weight.dtype}) and logp ({logp.dtype}) must "
                        "share one dtype")
    if (not weight.shape or weight.shape[-1] != logp.shape[-1]
            or len(weight.shape) > len(logp.shape)
            or any(d not in (1, e) for d, e in zip(weight.shape[::-1], logp.shape[::-1]))):
        raise ValueError(f"{op_name(op)}: weight must have shape ({logp.shape[-1]},) (one "
                         f"weight per class), got {tuple(weight.shape)}")
    return ShapedArray(index.shape[:-1], logp.dtype)


def _nll_impl(logp: Array, index: Array, weight: Array, *, ignore_index: int) -> Array:
    """One gather from logp and one from the weights (aligned to logp's rank,
    not broadcast to its shape: a gather of ``[classes]``, and logp's gather
    index is not shared, so XLA fuses it in), both at the clipped label: in
    bounds, so with no range check or wrap of their own (``IN_RANGE``; JAX
    0.11's XLA left the weight gather's wrap of negatives in)."""
    classes = logp.shape[-1]
    idx = jnp.clip(index, 0, classes - 1)
    picked = jnp.take_along_axis(logp, idx, -1, **IN_RANGE)[..., 0]
    aligned = jnp.reshape(weight, (1,) * (logp.ndim - weight.ndim) + weight.shape)
    w = jnp.take_along_axis(aligned, idx, -1, **IN_RANGE)[..., 0]
    return xla.masked(-w * picked, index[..., 0], classes, ignore_index)


nll_loss_p = define_primitive("nll_loss", family=FAMILY, operands=("logp", "index", "weight"),
                              params=("ignore_index",), infer_meta=_nll_meta, impl=_nll_impl)


def nll_loss(logp: ArrayLike, labels: ArrayLike, *, weight: ArrayLike | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Array:
    """Negative log likelihood ``-weight[label] * logp[..., label]`` per token
    (``logp [..., C]`` log-probabilities, ``labels [...]`` integers), 0 on
    ignored tokens. ``reduction="mean"`` divides the sum by the total weight
    of the tokens not ignored (PyTorch's convention; 0 when that is 0).

    Bilinear in (logp, weight): the tangent is ``nll(t_logp, w) + nll(logp,
    t_w)``; the transpose puts ``-ct * weight[label]`` on the label's entry of
    logp and ``-ct * logp[label]`` on the label's class weight. The class
    weights (default 1) take a gradient like any operand.
    """
    op = "nll_loss"
    logp = float_array(op, "logp", logp)
    if np.ndim(logp) < 1:
        raise ValueError(f"{op_name(op)}: logp must have a class axis, got a scalar")
    classes = np.shape(logp)[-1]
    ignore_index = int_param(op, "ignore_index", ignore_index)
    choice_param(op, "reduction", reduction, REDUCTIONS)
    labels = labels_arg(op, labels, np.shape(logp)[:-1], classes, ignore_index,
                        "logp.shape[:-1]")
    if weight is None:
        weight = np.ones((classes,), jnp.result_type(logp))
    weight = float_array(op, "weight", weight)
    if np.shape(weight) != (classes,):
        raise ValueError(f"{op_name(op)}: weight must have shape ({classes},) (one weight per "
                         f"class), got {np.shape(weight)}")
    logp, weight = promote(op, {"logp": logp, "weight": weight}, "float")
    index = label_index(labels)
    loss = nll_loss_p.bind(logp, index, weight, ignore_index=ignore_index)
    denominator = None
    if reduction == "mean":
        denominator = gr_sum(label_weight(index, weight, np.shape(logp), ignore_index))
    return reduce_loss(op, loss, labels, ignore_index, reduction, jnp.result_type(logp),
                       denominator)


def _nll_loss_reference(logp: ArrayLike, labels: ArrayLike, *, weight: ArrayLike | None = None,
                        ignore_index: int = -100, reduction: str = "mean") -> Array:
    logp = jnp.asarray(logp)
    classes = logp.shape[-1]
    weight = jnp.ones((classes,), logp.dtype) if weight is None else jnp.asarray(weight)
    valid = labels != ignore_index
    idx = jnp.clip(labels, 0, classes - 1)
    w = jnp.where(valid, weight[idx], 0.0)
    loss = -w * jnp.take_along_axis(logp, idx[..., None], -1)[..., 0]
    if reduction == "sum":
        return jnp.sum(loss)
    if reduction == "mean":
        total = jnp.sum(w)
        return jnp.sum(loss) / jnp.where(total == 0, 1.0, total)
    return loss


register_op(OpDef(name="nll_loss", family=FAMILY, fn=nll_loss, primitives=(nll_loss_p,),
                  reference=_nll_loss_reference, operands=("logp", "labels"),
                  linear=(("logp",),), nondiff=("labels",)))


# ----------------------------------------------------------- softmax_cross_entropy
def _sce_meta(logits: Any, labels: Any) -> ShapedArray:
    op = "softmax_cross_entropy"
    check_dtype(op, "logits", logits.dtype, "float")
    if not logits.shape or labels.shape != logits.shape or labels.dtype != logits.dtype:
        raise ValueError(f"{op_name(op)}: logits and labels must share one shape [..., classes] "
                         f"and dtype, got logits {logits.dtype}{list(logits.shape)} and labels "
                         f"{labels.dtype}{list(labels.shape)}")
    return ShapedArray(logits.shape[:-1], logits.dtype)


softmax_cross_entropy_p = define_primitive(
    "softmax_cross_entropy", family=FAMILY, operands=("logits", "labels"),
    infer_meta=_sce_meta, impl=xla.sce_forward)


def softmax_cross_entropy(logits: ArrayLike, labels: ArrayLike) -> Array:
    """optax's ``softmax_cross_entropy``: ``-sum(labels * log_softmax(logits))``
    over the last (class) axis, per example, with no reduction; ``labels``
    (one-hot or probabilities) have the logits' shape. The log-softmax is
    normalised by the row maximum (huge logits are fine; 16-bit logits are
    computed in float32). A class whose logit is ``-inf`` (masked) is left
    out of the sum, so it never gives NaN (optax: ``0 * -inf``).

    Differentiable in both: d loss / d logits = ``sum(labels) softmax(logits)
    - labels``, d loss / d labels = ``-log_softmax(logits)`` (0 at the
    masked classes). Linear in the labels: the JVP binds the primitive on
    their tangent, the transpose gives ``-ct log_softmax(logits)``; the part
    in the logits is that gradient (masked classes left out) times their
    tangent, in gradrules ops (``rules.loss.softmax_cross_entropy_tangent``).
    """
    op = "softmax_cross_entropy"
    logits, labels = promote(op, {"logits": logits, "labels": labels}, "float")
    if np.ndim(logits) < 1 or np.shape(labels) != np.shape(logits):
        raise ValueError(f"{op_name(op)}: labels must have the shape of logits [..., classes] "
                         f"(one-hot or probabilities), got logits with shape "
                         f"{np.shape(logits)} and labels with shape {np.shape(labels)}")
    return softmax_cross_entropy_p.bind(logits, labels)


def _softmaxcross_entropy_reference(logits: ArrayLike, labels: ArrayLike) -> Array:
    """optax's formula."""
    return -jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1)


register_op(OpDef(name="softmax_cross_entropy", family=FAMILY, fn=softmax_cross_entropy,
                  primitives=(softmax_cross_entropy_p,),
                  reference=_softmaxcross_entropy_reference, operands=("logits", "labels"),
                  linear=(("labels",),)))
