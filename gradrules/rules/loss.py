"""Rules of the loss family.

cross_entropy and fused_linear_cross_entropy (three primitives each): the
forward's JVP binds the tangent map, which gives the tangents of the loss and
of the log-sum-exp residual; the tangent map and the backward are transposes
of each other; their JVPs come from the reference compositions below, written
in gradrules ops (fused_linear_cross_entropy's as ``matmul`` + the
cross_entropy primitives). nll_loss is bilinear in (logp, weight).
Labels take no tangent. Batching: batch axes to the front (the class axis is
last), bound once; fused_linear_cross_entropy's forward and tangent map fold
the batch into the token axis instead when ``w`` is shared (never a per-example
copy of ``w``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _jax
from .._jax import aval_of, is_undefined_primal, is_zero
from ..core.primitive import register_rules
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.compare import ge, lt, ne, where
from ..primitives.linalg import matmul
from ..primitives.loss import (cross_entropy_jvp_p, cross_entropy_p, cross_entropy_vjp_p,
                               fused_linear_cross_entropy_jvp_p, fused_linear_cross_entropy_p,
                               fused_linear_cross_entropy_vjp_p, nll_loss_p, one_hot)
from ..primitives.reduction import mean as gr_mean
from ..primitives.reduction import sum as gr_sum
from ..primitives.shape import expand_dims, moveaxis
from ..primitives.unary import exp, neg
from ._common import add_tangents, batch_size, bdim_to_front, unbroadcast
from ._fused import (align_front, cast, fold_batch, front_batch, fused_forward_jvp,
                     register_fused, unfold_batch, with_residuals)


# shared pieces, in gradrules ops ---------------------------------------------
def _masked(v: Any, labels: Any, classes: int, ignore_index: int) -> Any:
    """``v`` on valid tokens, 0 on ignored ones, NaN where the label is out of
    range (the lowering's ``masked``)."""
    valid = ne(labels, ignore_index)
    bad = where(valid, where(lt(labels, 0), True, ge(labels, classes)), False)
    return where(valid, where(bad, np.nan, v), 0.0)


def _probs(x: Any, lse: Any) -> Any:
    return exp(subtract(x, expand_dims(lse, axis=-1)))


# cross_entropy -----------------------------------------------------------------
def _ce_tangent(logits: Any, labels: Any, lse: Any, t: Any, *, ignore_index: int,
                label_smoothing: float, z_loss: float, kernel: str) -> tuple[Any, Any]:
    """(t_loss, t_lse): ``t_lse = sum(p t)``, ``t_loss = t_lse (1 + 2 z lse) -
    (1 - eps) t[label] - eps mean(t)``, masked."""
    acc = aval_of(lse).dtype
    x, t = cast(logits, acc), cast(t, acc)
    classes = aval_of(logits).shape[-1]
    t_lse = gr_sum(multiply(_probs(x, lse), t), axis=-1)
    v = multiply(t_lse, add(multiply(lse, 2 * z_loss), 1.0)) if z_loss else t_lse
    picked = gr_sum(multiply(one_hot(labels, classes, acc, ignore_index), t), axis=-1)
    v = subtract(v, multiply(picked, 1 - label_smoothing))
    if label_smoothing:
        v = subtract(v, multiply(gr_mean(t, axis=-1), label_smoothing))
    return _masked(v, labels, classes, ignore_index), t_lse


def _ce_cotangent(logits: Any, labels: Any, lse: Any, g_loss: Any, g_lse: Any, *,
                  ignore_index: int, label_smoothing: float, z_loss: float, kernel: str) -> Any:
    """``g_loss (p (1 + 2 z lse) - (1 - eps) onehot - eps / V) + g_lse p``."""
    dtype, acc = aval_of(logits).dtype, aval_of(lse).dtype
    classes = aval_of(logits).shape[-1]
    p = _probs(cast(logits, acc), lse)
    scaled = multiply(p, expand_dims(add(multiply(lse, 2 * z_loss), 1.0), axis=-1)) \
        if z_loss else p
    d = subtract(scaled, multiply(one_hot(labels, classes, acc, ignore_index),
                                  1 - label_smoothing))
    if label_smoothing:
        d = subtract(d, label_smoothing / classes)
    c = expand_dims(_masked(g_loss, labels, classes, ignore_index), axis=-1)
    return cast(add(multiply(c, d), multiply(expand_dims(g_lse, axis=-1), p)), dtype)


# the forward's JVP: the tangent map at (logits, labels, lse) along t_logits
_cross_entropy_jvp = fused_forward_jvp(cross_entropy_p, cross_entropy_jvp_p,
                                       fixed=with_residuals, linear=(0,))
register_fused(cross_entropy_p, cross_entropy_jvp_p, cross_entropy_vjp_p,
               jvp=_cross_entropy_jvp, tangent_ref=_ce_tangent, backward_ref=_ce_cotangent,
               fixed=3, batch=front_batch)


# fused_linear_cross_entropy ------------------------------------------------------
def _flce_tangent(h: Any, w: Any, labels: Any, lse: Any, th: Any, tw: Any, *,
                  ignore_index: int, label_smoothing: float, z_loss: float,
                  block: tuple[int, int], kernel: str) -> Any:
    """cross_entropy's tangent map at ``h @ w`` along ``th @ w + h @ tw``."""
    t = add(matmul(th, w), matmul(h, tw))
    return cross_entropy_jvp_p.bind(matmul(h, w), labels, lse, t, ignore_index=ignore_index,
                                    label_smoothing=label_smoothing, z_loss=z_loss,
                                    kernel=kernel)


def _flce_cotangent(h: Any, w: Any, labels: Any, lse: Any, g_loss: Any, g_lse: Any, *,
                    ignore_index: int, label_smoothing: float, z_loss: float,
                    block: tuple[int, int], kernel: str) -> Any:
    """``(d w^T, h^T d)`` with ``d`` cross_entropy's backward at ``h @ w``."""
    d = cross_entropy_vjp_p.bind(matmul(h, w), labels, lse, g_loss, g_lse,
                                 ignore_index=ignore_index, label_smoothing=label_smoothing,
                                 z_loss=z_loss, kernel=kernel)
    return matmul(d, w, transpose_y=True), matmul(h, d, transpose_x=True)


# the forward's JVP: the tangent map at (h, w, labels, lse) along (t_h, t_w)
_fused_linear_cross_entropy_jvp = fused_forward_jvp(
    fused_linear_cross_entropy_p, fused_linear_cross_entropy_jvp_p, fixed=with_residuals,
    linear=(0, 1))


# operands indexed by w's axes (the rest, h th labels lse g_loss g_lse, by token)
_FLCE_WEIGHTS = {fused_linear_cross_entropy_p: (1,), fused_linear_cross_entropy_jvp_p: (1, 5)}


def _flce_batch(prim: Any, args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
    """Batching of the three fused_linear_cross_entropy primitives.

    Forward and tangent map with ``w`` (and ``tw``) unbatched: the vmapped
    axis is folded into the token axis of the token operands (``h [..., n * T,
    hidden]``, ``labels [..., n * T]``, ...), the primitive is bound once with
    ``w`` as it is, and the per-token outputs are split back: no ``[n, hidden,
    vocab]`` copy of ``w``. Otherwise (a batched ``w`` or ``tw``, or the
    backward) every operand gets the batch axis in front. The backward is
    never folded: its ``dw`` is per example under ``vmap`` (e.g.
    ``vmap(grad(f, argnums=1), in_axes=(0, None))``), which folding would sum;
    ``grad`` of a vmapped loss never batches the backward, as its forward is
    folded before it is differentiated.
    """
    weights = _FLCE_WEIGHTS.get(prim)
    if weights is None or any(dims[i] is not None for i in weights):
        return front_batch(prim, args, dims, **params)
    n = batch_size(args, dims)
    lead = np.ndim(args[1]) - 2                # leading axes shared by h and w
    tokens = [m for i, m in enumerate(np.shape(args[2])) if i != dims[2]][lead]
    folded = [a if i in weights else fold_batch(a, d, n, lead)
              for i, (a, d) in enumerate(zip(args, dims))]
    outs = prim.bind(*folded, **params)
    return [unfold_batch(o, n, tokens, lead) for o in outs], [lead] * len(outs)


register_fused(fused_linear_cross_entropy_p, fused_linear_cross_entropy_jvp_p,
               fused_linear_cross_entropy_vjp_p, jvp=_fused_linear_cross_entropy_jvp,
               tangent_ref=_flce_tangent, backward_ref=_flce_cotangent, fixed=4,
               batch=_flce_batch)


# nll_loss --------------------------------------------------------------------------
def _nll_loss_jvp(primals: Any, tangents: Any, *, ignore_index: int) -> Any:
    """Bilinear: ``nll(t_logp, labels, weight) + nll(logp, labels, t_weight)``."""
    (logp, labels, weight), (t_logp, _, t_weight) = primals, tangents
    out = nll_loss_p.bind(logp, labels, weight, ignore_index=ignore_index)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(t_logp):
        t = nll_loss_p.bind(t_logp, labels, weight, ignore_index=ignore_index)
    if not is_zero(t_weight):
        t = add_tangents(t, nll_loss_p.bind(logp, labels, t_weight, ignore_index=ignore_index))
    return out, t


def _nll_loss_transpose(ct: Any, logp: Any, labels: Any, weight: Any, *,
                        ignore_index: int) -> list[Any]:
    """``-ct`` times the other operand, put on the label's entry (NaN rows for
    out-of-range labels, as the forward)."""
    classes = aval_of(logp).shape[-1]
    minus_ct = expand_dims(neg(_masked(ct, labels, classes, ignore_index)), axis=-1)
    hot = one_hot(labels, classes, np.bool_, ignore_index)
    other = weight if is_undefined_primal(logp) else logp
    out = where(hot, multiply(minus_ct, other), multiply(minus_ct, 0.0))
    if is_undefined_primal(logp):
        return [out, None, None]
    return [None, None, unbroadcast(out, weight.aval)]


def _nll_loss_batch(args: Any, dims: Any, *, ignore_index: int) -> tuple[Any, int]:
    (logp, labels, weight), (d_logp, d_labels, d_weight) = args, dims
    size = batch_size(args, dims)
    logp, labels = bdim_to_front(logp, d_logp, size), bdim_to_front(labels, d_labels, size)
    if d_weight is not None:
        weight = align_front(moveaxis(weight, d_weight, 0), np.ndim(logp))
    return nll_loss_p.bind(logp, labels, weight, ignore_index=ignore_index), 0


register_rules(nll_loss_p, jvp=_nll_loss_jvp, transpose=_nll_loss_transpose,
               batch=_nll_loss_batch)
