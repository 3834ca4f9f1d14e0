"""Rules of the loss family.

cross_entropy and fused_linear_cross_entropy (three primitives each):

* forward: its JVP binds the tangent map at the operands and the forward's
  log-sum-exp residuals (``lse`` and its rounding ``lse_lo``), along the
  tangents of the differentiable operands (``forward_jvp``); it gives the
  tangents of the loss and of ``lse`` (``lse_lo``'s is a symbolic zero);
* tangent map and backward: transposes of each other (``transpose_to``);
  their JVPs differentiate gradrules-op compositions (``composite_jvp``):
  ``cross_entropy_tangent`` / ``cross_entropy_cotangent`` (the maths of
  their jax.numpy lowerings), and for fused_linear_cross_entropy, whose
  lowering is chunked, those same compositions at ``h @ w``
  (``_flce_tangent``, ``_flce_cotangent``), except the backward's JVP in
  ``h``, ``w`` and the residuals (Hessian-vector products), which binds the
  blockwise ``fused_linear_cross_entropy_vjp_jvp`` (``_flce_vjp_jvp``), so
  that second derivatives never make the ``[tokens, vocab]`` logits either;
  that primitive's JVP differentiates the tangent of ``_flce_cotangent``
  and its transpose is that composition's (``backward_tangent_rules``;
  dense: third derivatives only);
* batching: batch axes to the front (the class axis is last), bound once;
  fused_linear_cross_entropy's forward and tangent map fold the batch into
  the token axis instead when ``w`` (and ``tw``) is shared (never a
  per-example copy of ``w``).

nll_loss is bilinear in (logp, weight): its JVP is one bind per moving
operand, its transpose puts ``-ct`` times the other operand on the label's
entry. Labels take no tangent.

softmax_cross_entropy is linear in its (probability) labels: its JVP binds
it on their tangent and adds ``softmax_cross_entropy_tangent`` (the
gradient in the logits times their tangent, in gradrules ops) along the
logits; the transpose is ``-ct safe_log_probs(logits)``; batch axes to the
front.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_undefined_primal, is_zero, zero_tangent)
from ..core.numerics import acc_dtype
from ..core.kernels import Implementation
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, PRIMITIVES
from ..primitives._compose import cast, unbroadcast
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.compare import le, where
from ..primitives.linalg import matmul
from ..primitives._labels import label_inside, label_weight, mask_tokens, one_hot
from ..primitives.loss import (cross_entropy_cotangent, cross_entropy_jvp_p, cross_entropy_p,
                               cross_entropy_tangent, cross_entropy_vjp_p,
                               fused_linear_cross_entropy_jvp_p, fused_linear_cross_entropy_p,
                               fused_linear_cross_entropy_vjp_jvp_p,
                               fused_linear_cross_entropy_vjp_p, nll_loss_p,
                               softmax_cross_entropy_p)
from ..primitives.reduction import sum as gr_sum
from ..primitives.scatter import scatter_add_p
from ..primitives.shape import broadcast_to, expand_dims, moveaxis, squeeze
from ..primitives.softmax import log_softmax
from ..primitives.unary import exp, neg
from ._common import (add_tangents, align_front, batch_size, bdim_to_front, fold_batch,
                      front_batch, multilinear_jvp, unfold_batch)
from ._fused import (backward_jvp_along, backward_tangent_rules, forward_jvp, fused_map_rules,
                     linear_part)


# cross_entropy -----------------------------------------------------------------
register_rules(cross_entropy_p, transpose=NOT_LINEAR,
               jvp=partial(forward_jvp, cross_entropy_p, cross_entropy_jvp_p, ("logits",), None),
               batch=partial(front_batch, cross_entropy_p))
register_rules(cross_entropy_jvp_p, linear=("t",), **fused_map_rules(
    cross_entropy_jvp_p, cross_entropy_vjp_p, cross_entropy_tangent,
    batch=partial(front_batch, cross_entropy_jvp_p)))
register_rules(cross_entropy_vjp_p, linear=("g_loss", "g_lse"), **fused_map_rules(
    cross_entropy_vjp_p, cross_entropy_jvp_p, cross_entropy_cotangent,
    batch=partial(front_batch, cross_entropy_vjp_p)))


# fused_linear_cross_entropy ------------------------------------------------------
def _flce_batch(prim: Primitive, shared: tuple[str, ...], args: Sequence[Any],
                dims: Sequence[BatchDim], *, ignore_index: int, label_smoothing: float,
                z_loss: float, implementation: Implementation) -> BatchResult:
    """Batching of fused_linear_cross_entropy's forward and tangent map.

    With the operands named in ``shared`` (``w``, and ``tw``) unbatched: the
    vmapped axis is folded into the token axis of the token operands (``h
    [..., n * T, hidden]``, ``labels [..., n * T]``, ...), the primitive is
    bound once with ``w`` as it is, and the per-token outputs are split back:
    no ``[n, hidden, vocab]`` copy of ``w``. Otherwise every operand gets the
    batch axis in front. The backward is never folded (it batches with
    ``front_batch``): its ``dw`` is per example under ``vmap`` (e.g.
    ``vmap(grad(f, argnums=1), in_axes=(0, None))``), which folding would
    sum; ``grad`` of a vmapped loss never batches the backward, as its
    forward is folded before it is differentiated.
    """
    params = {"ignore_index": ignore_index, "label_smoothing": label_smoothing,
              "z_loss": z_loss, "implementation": implementation}
    info = PRIMITIVES[prim]
    weights = info.positions(shared)
    if any(dims[i] is not None for i in weights):
        return front_batch(prim, args, dims, **params)
    w_at, labels_at = info.positions(("w", "labels"))
    n = batch_size(args, dims)
    lead = np.ndim(args[w_at]) - 2                # leading axes shared by h and w
    tokens = [m for i, m in enumerate(np.shape(args[labels_at])) if i != dims[labels_at]][lead]
    folded = [a if i in weights else fold_batch(a, d, n, lead)
              for i, (a, d) in enumerate(zip(args, dims))]
    outs = prim.bind(*folded, **params)
    return [unfold_batch(o, n, tokens, lead) for o in outs], [lead] * len(outs)


register_rules(fused_linear_cross_entropy_p, transpose=NOT_LINEAR,
               jvp=partial(forward_jvp, fused_linear_cross_entropy_p,
                           fused_linear_cross_entropy_jvp_p, ("h", "w"), None),
               batch=partial(_flce_batch, fused_linear_cross_entropy_p, ("w",)))


def _flce_tangent(h: Any, w: Any, labels: Any, lse: Any, lse_lo: Any, th: Any, tw: Any, *,
                  ignore_index: int, label_smoothing: float, z_loss: float) -> list[Any]:
    """cross_entropy's tangent map at ``h @ w`` along ``th @ w + h @ tw``."""
    return cross_entropy_tangent(matmul(h, w), labels, lse, lse_lo,
                                 add(matmul(th, w), matmul(h, tw)), ignore_index=ignore_index,
                                 label_smoothing=label_smoothing, z_loss=z_loss)


register_rules(fused_linear_cross_entropy_jvp_p, linear=("th", "tw"), **fused_map_rules(
    fused_linear_cross_entropy_jvp_p, fused_linear_cross_entropy_vjp_p, _flce_tangent,
    batch=partial(_flce_batch, fused_linear_cross_entropy_jvp_p, ("w", "tw"))))


def _flce_cotangent(h: Any, w: Any, labels: Any, lse: Any, lse_lo: Any, g_loss: Any,
                    g_lse: Any, *, ignore_index: int, label_smoothing: float,
                    z_loss: float) -> list[Any]:
    """``[d w^T, h^T d]`` with ``d`` cross_entropy's backward at ``h @ w``."""
    d = cross_entropy_cotangent(matmul(h, w), labels, lse, lse_lo, g_loss, g_lse,
                                ignore_index=ignore_index, label_smoothing=label_smoothing,
                                z_loss=z_loss)
    return [matmul(d, w, transpose_y=True), matmul(h, d, transpose_x=True)]


def _flce_vjp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], **params: Any
                  ) -> JvpResult:
    """JVP of fused_linear_cross_entropy's backward (``backward_jvp``): along
    ``g_loss``, ``g_lse`` (in which it is linear) the backward itself; along
    ``h``, ``w``, ``lse``, ``lse_lo`` its blockwise tangent
    ``fused_linear_cross_entropy_vjp_jvp`` (the JVP of ``_flce_cotangent``,
    without its [tokens, vocab] logits)."""
    return backward_jvp_along(fused_linear_cross_entropy_vjp_p,
                              fused_linear_cross_entropy_vjp_jvp_p, ("h", "w", "lse", "lse_lo"),
                              primals, tangents, **params)


register_rules(fused_linear_cross_entropy_vjp_p, linear=("g_loss", "g_lse"),
               **dict(fused_map_rules(
                   fused_linear_cross_entropy_vjp_p, fused_linear_cross_entropy_jvp_p,
                   _flce_cotangent, batch=partial(front_batch, fused_linear_cross_entropy_vjp_p)),
                      jvp=_flce_vjp_jvp))


register_rules(fused_linear_cross_entropy_vjp_jvp_p, **backward_tangent_rules(
    fused_linear_cross_entropy_vjp_jvp_p, fused_linear_cross_entropy_vjp_p, _flce_cotangent,
    ("h", "w", "lse", "lse_lo"),
    batch=partial(front_batch, fused_linear_cross_entropy_vjp_jvp_p)))


# nll_loss --------------------------------------------------------------------------
def _nll_loss_transpose(ct: Cotangent, logp: MaybeUndefined, index: MaybeUndefined,
                        weight: MaybeUndefined, *, ignore_index: int) -> list[Any]:
    """``-ct`` times the other operand, put on the label's entry (NaN rows for
    out-of-range labels, as the forward): for logp ``-ct weight[label]``
    (``label_weight``: one gathered weight per token, 0 on ignored tokens)
    scatter-added at the forward's gather index, the label clipped into
    range (``label_inside``: the reference's transpose, with no wrap of its own),
    for the weight the one-hot rows summed over the tokens."""
    shape = aval_of(logp).shape
    if is_undefined_primal(logp):
        update = expand_dims(neg(multiply(ct, label_weight(index, weight, shape, ignore_index))),
                             axis=-1)
        zeros = broadcast_to(multiply(update, 0.0), shape)
        return [scatter_add_p.bind(zeros, label_inside(index, shape[-1]), update,
                                   axis=len(shape) - 1, in_range=True), None, None]
    labels = squeeze(index, axis=-1)
    minus_ct = expand_dims(neg(mask_tokens(ct, labels, shape[-1], ignore_index)), axis=-1)
    hot = one_hot(labels, shape[-1], np.bool_, ignore_index)
    out = where(hot, multiply(minus_ct, logp), multiply(minus_ct, 0.0))
    return [None, None, unbroadcast(out, weight.aval)]


def _nll_loss_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                    ignore_index: int) -> BatchResult:
    """logp and labels with the batch axis in front; a batched weight too,
    with size-1 axes after it so that it broadcasts against logp."""
    (logp, index, weight), (d_logp, d_index, d_weight) = args, dims
    size = batch_size(args, dims)
    logp, index = bdim_to_front(logp, d_logp, size), bdim_to_front(index, d_index, size)
    if d_weight is not None:
        weight = align_front(moveaxis(weight, d_weight, 0), np.ndim(logp))
    return nll_loss_p.bind(logp, index, weight, ignore_index=ignore_index), 0


register_rules(nll_loss_p, linear=(("logp",), ("weight",)),
               jvp=partial(multilinear_jvp, nll_loss_p),
               transpose=_nll_loss_transpose, batch=_nll_loss_batch)


# softmax_cross_entropy -------------------------------------------------------------
def _unmasked(x: Any, v: Any) -> Any:
    """``v`` where the logit ``x`` (in its accumulation dtype) is a class
    that counts, 0 where it is ``-inf`` (a masked class, left out of the
    loss) or the dtype's lowest finite value (the forward's mask,
    ``_loss_xla.sce_forward``, is arithmetic and cannot tell the two apart)."""
    return where(le(x, float(np.finfo(aval_of(x).dtype).min)), 0.0, v)


def safe_log_probs(logits: Any) -> Any:
    """``log_softmax(logits)`` over the last axis, in float32 for 16-bit
    logits, with 0 at the masked classes (``_unmasked``). A finite logit
    whose log-probability overflows to ``-inf`` (logits more than 3.4e38
    apart) still counts: here as ``-inf``, in the forward as ``lowest`` (a
    loss of ``label * 3.4e38`` where its label is not 0, and 0 where it
    is)."""
    dtype = acc_dtype(aval_of(logits).dtype)
    x = cast(logits, dtype)
    return _unmasked(x, log_softmax(x, axis=-1))


def softmax_cross_entropy_tangent(logits: Any, labels: Any, t: Any) -> Any:
    """The loss's tangent along the logits' tangent ``t``, ``sum((s p - y)
    t) = s sum(p t) - sum(y t)`` per example: ``y`` the labels of the
    classes that count (``_unmasked``), ``s = sum(y)`` and ``p =
    exp(log_softmax(logits))`` (the log-softmax of ``safe_log_probs``, the
    labels' cotangent, which XLA computes once), in float32 for 16-bit
    logits. Its transpose is ``ct (s p - y)``, the logits' gradient (0 at
    the masked classes, ``-y`` where a log-probability overflowed), and a
    Hessian-vector product differentiates that in one pass over ``p``; the
    JVP of ``-sum(labels * safe_log_probs(logits))`` went, transposed,
    through log_softmax's backward with masked labels and cotangent, ~10%
    more FLOPs. The per-example ``sum(p t)`` is scaled by ``s``, not ``p``
    by ``s`` per class: no ``[..., classes]`` product in the tangent."""
    dtype = acc_dtype(aval_of(logits).dtype)
    x, t = cast(logits, dtype), cast(t, dtype)
    y = _unmasked(x, cast(labels, dtype))
    p = exp(log_softmax(x, axis=-1))
    return subtract(multiply(gr_sum(multiply(p, t), axis=-1), gr_sum(y, axis=-1)),
                    gr_sum(multiply(y, t), axis=-1))


def _softmax_cross_entropy_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]
                               ) -> JvpResult:
    """The primitive on the labels' tangent (it is linear in them,
    ``linear_part``) plus ``softmax_cross_entropy_tangent`` along the
    logits' tangent."""
    (logits, labels), (t_logits, _) = primals, tangents
    out = softmax_cross_entropy_p.bind(logits, labels)
    part = linear_part(softmax_cross_entropy_p, primals, tangents)
    t_out = None if part is None else part[0]
    if not is_zero(t_logits):
        t = softmax_cross_entropy_tangent(logits, labels, t_logits)
        t_out = add_tangents(t_out, cast(t, aval_of(out).dtype))
    return out, (zero_tangent(out) if t_out is None else t_out)


def _softmax_cross_entropy_transpose(ct: Cotangent, logits: MaybeUndefined,
                                     labels: MaybeUndefined) -> list[Any]:
    """The labels' cotangent ``-ct[..., None] * safe_log_probs(logits)``."""
    logp = safe_log_probs(logits)
    out = neg(multiply(expand_dims(cast(ct, aval_of(logp).dtype), axis=-1), logp))
    return [None, cast(out, aval_of(logits).dtype)]


register_rules(softmax_cross_entropy_p, linear=("labels",),
               jvp=_softmax_cross_entropy_jvp,
               transpose=_softmax_cross_entropy_transpose,
               batch=partial(front_batch, softmax_cross_entropy_p))
