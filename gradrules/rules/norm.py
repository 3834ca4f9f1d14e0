"""Rules of the norm family.

rms_norm and layer_norm (three primitives each): the forward's JVP binds the
tangent map for the output and gives the statistics' tangents in gradrules
ops (``row_stat_tangents``); the tangent
map and the backward are transposes of each other (``transpose_to``); their
JVPs differentiate the gradrules-op compositions they are lowered from
(``composite_jvp`` of ``rms_norm_tangent``, ``rms_norm_cotangent``, ...).
group_norm and batch_norm are one primitive each whose JVP is that of their
composition in gradrules ops (batch_norm drops the tangents of the running
statistics: they are buffers). Batching binds each primitive once: rows keep
the batch axis in front, the affine operands broadcast against it; group_norm
folds the batch axis into N, batch_norm into the channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .._jax import BatchDim, BatchResult, JvpResult, Primitive, Tangent, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, PRIMITIVES
from ..primitives.norm import (batch_norm_composition, batch_norm_p, channel_axis,
                               group_norm_composition, group_norm_p, layer_norm_cotangent,
                               layer_norm_jvp_p, layer_norm_p, layer_norm_tangent,
                               layer_norm_vjp_p, rms_norm_cotangent, rms_norm_jvp_p, rms_norm_p,
                               rms_norm_tangent, rms_norm_vjp_p, row_stat_tangents)
from ..primitives.shape import broadcast_to, moveaxis, reshape
from ._common import align_front, batch_size, bdim_to_front, fold_batch, unfold_batch
from ._fused import composite_jvp, forward_jvp, fused_map_rules, zero_tangents


def _norm_batch(prim: Primitive, affine: tuple[str, ...], restore: tuple[str, ...],
                args: Sequence[Any], dims: Sequence[BatchDim], **params: Any) -> BatchResult:
    """Every operand gets the batch axis in front; the ``affine`` operands
    (weights, broadcast against x) get size-1 axes after it. ``restore``
    names, for each output after the first of a backward, the affine operand
    it is the cotangent of: it takes that operand's batched shape back."""
    info = PRIMITIVES[prim]
    aligned = set(info.positions(affine))
    size = batch_size(args, dims)
    moved = [bdim_to_front(a, d, size) for a, d in zip(args, dims)]
    rank = np.ndim(moved[0])
    out = prim.bind(*[align_front(a, rank) if i in aligned else a for i, a in enumerate(moved)],
                    **params)
    if not prim.multiple_results:
        return out, 0
    shapes = [np.shape(moved[i]) for i in info.positions(restore)]
    out = [out[0], *[reshape(o, s) for o, s in zip(out[1:], shapes)], *out[1 + len(shapes):]]
    return out, [0] * len(out)


def _row_stat_tangents(primals: Sequence[Any], outs: list[Any],
                       tangents: Sequence[Tangent]) -> list[Any]:
    """``rest`` of ``forward_jvp`` for the row norms: the tangents of the
    statistics residuals (``outs[1:]``: rstd, or mean and rstd) in gradrules
    ops (``row_stat_tangents``); symbolic zeros when x's tangent is one."""
    (x, *_), (tx, *_) = primals, tangents
    return zero_tangents(outs[1:]) if is_zero(tx) else row_stat_tangents(x, outs[1:], tx)


# rms_norm --------------------------------------------------------------------
register_rules(rms_norm_p, jvp=partial(forward_jvp, rms_norm_p, rms_norm_jvp_p, ("x", "gamma"),
                                       _row_stat_tangents),
               transpose=NOT_LINEAR, batch=partial(_norm_batch, rms_norm_p, ("gamma",), ()))
register_rules(rms_norm_jvp_p, linear=("tx", "tgamma"), **fused_map_rules(
    rms_norm_jvp_p, rms_norm_vjp_p, rms_norm_tangent,
    batch=partial(_norm_batch, rms_norm_jvp_p, ("gamma", "tgamma"), ())))
register_rules(rms_norm_vjp_p, linear=("g",), **fused_map_rules(
    rms_norm_vjp_p, rms_norm_jvp_p, rms_norm_cotangent,
    batch=partial(_norm_batch, rms_norm_vjp_p, ("gamma",), ("gamma",))))


# layer_norm ------------------------------------------------------------------
register_rules(layer_norm_p, jvp=partial(forward_jvp, layer_norm_p, layer_norm_jvp_p,
                                         ("x", "weight", "bias"), _row_stat_tangents),
               transpose=NOT_LINEAR,
               batch=partial(_norm_batch, layer_norm_p, ("weight", "bias"), ()))
register_rules(layer_norm_jvp_p, linear=("tx", "tw", "tb"), **fused_map_rules(
    layer_norm_jvp_p, layer_norm_vjp_p, layer_norm_tangent,
    batch=partial(_norm_batch, layer_norm_jvp_p, ("weight", "tw", "tb"), ())))
register_rules(layer_norm_vjp_p, linear=("g",), **fused_map_rules(
    layer_norm_vjp_p, layer_norm_jvp_p, layer_norm_cotangent,
    batch=partial(_norm_batch, layer_norm_vjp_p, ("weight",), ("weight", "weight"))))


# group_norm --------------------------------------------------------------------
def _group_norm_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, num_groups: int,
                      eps: float) -> BatchResult:
    """The batch axis folds into N; a batched weight or bias is repeated
    along N so that it folds the same way."""
    size = batch_size(args, dims)
    (x, weight, bias), (dx, dw, db) = args, dims
    x = bdim_to_front(x, dx, size)
    shape = np.shape(x)

    def fold(a: Any, d: BatchDim) -> Any:
        if d is None:
            return a
        a = align_front(moveaxis(a, d, 0), len(shape))
        return fold_batch(broadcast_to(a, (size, shape[1]) + np.shape(a)[2:]), 0, size)

    out = group_norm_p.bind(fold_batch(x, 0, size), fold(weight, dw), fold(bias, db),
                            num_groups=num_groups, eps=eps)
    return unfold_batch(out, size, shape[1]), 0


register_rules(group_norm_p, jvp=partial(composite_jvp, group_norm_p, group_norm_composition),
               transpose=NOT_LINEAR, batch=_group_norm_batch)


# batch_norm --------------------------------------------------------------------
def _batch_norm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], **params: Any
                    ) -> JvpResult:
    """The composition's JVP in x, weight and bias; the running statistics are
    buffers and their tangents are dropped."""
    _, running_mean, running_var, _, _ = primals
    tx, _, _, tw, tb = tangents
    dropped = zero_tangents((running_mean, running_var))
    return composite_jvp(batch_norm_p, batch_norm_composition, primals, [tx, *dropped, tw, tb],
                         **params)


def _batch_norm_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, training: bool,
                      momentum: float, eps: float, data_format: str) -> BatchResult:
    """The batch axis joins the channel axis (B * C channels, each with its
    own statistics), bound once, and is split off again."""
    size = batch_size(args, dims)
    x, *stats = [bdim_to_front(a, d, size) for a, d in zip(args, dims)]
    ch = channel_axis(np.ndim(x) - 1, data_format)
    x = moveaxis(x, 0, ch)                      # [..., B, C, ...]
    shape = np.shape(x)
    c = shape[ch + 1]
    merged = reshape(x, shape[:ch] + (size * c,) + shape[ch + 2:])
    out, new_mean, new_var = batch_norm_p.bind(
        merged, *[reshape(s, (size * c,)) for s in stats], training=training,
        momentum=momentum, eps=eps, data_format=data_format)
    return ([moveaxis(reshape(out, shape), ch, 0), reshape(new_mean, (size, c)),
             reshape(new_var, (size, c))], [0, 0, 0])


register_rules(batch_norm_p, jvp=_batch_norm_jvp, transpose=NOT_LINEAR,
               batch=_batch_norm_batch)
