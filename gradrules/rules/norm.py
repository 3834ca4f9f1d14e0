"""Rules of the norm family.

rms_norm and layer_norm (three primitives each): the forward's JVP binds the
tangent map for the output and gives the statistics' tangents in gradrules
ops (``rms_norm_rstd_tangent``, ``layer_norm_stat_tangents``); the tangent
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

from .. import _jax
from .._jax import BatchDim, BatchResult, JvpResult, Primitive, Tangent, aval_of, is_zero
from ..core.kernels import Implementation
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, PRIMITIVES
from ..primitives._compose import cast
from ..primitives._fused import acc_dtype
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.norm import (batch_norm_p, channel_axis, group_norm_p, layer_norm_cotangent,
                               layer_norm_jvp_p, layer_norm_p, layer_norm_stat_tangents,
                               layer_norm_tangent, layer_norm_vjp_p, rms_norm_cotangent,
                               rms_norm_jvp_p, rms_norm_p, rms_norm_rstd_tangent,
                               rms_norm_tangent, rms_norm_vjp_p)
from ..primitives.reduction import mean as gr_mean
from ..primitives.shape import broadcast_to, moveaxis, reshape
from ..primitives.unary import rsqrt, square
from ._common import batch_size, bdim_to_front, instantiate
from ._fused import (align_front, all_zero, composite_jvp, fold_batch, transpose_to,
                     unfold_batch, zero_tangents)


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


# rms_norm --------------------------------------------------------------------
def _rms_norm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, eps: float,
                  weight_offset: float, implementation: Implementation) -> JvpResult:
    """``t_out = rms_norm_jvp(x, gamma, rstd, tx, tgamma)``, the tangent map;
    ``t_rstd = -rstd**3 mean(x tx)`` in gradrules ops."""
    (x, gamma), (tx, tgamma) = primals, tangents
    params = dict(eps=eps, weight_offset=weight_offset, implementation=implementation)
    outs = rms_norm_p.bind(x, gamma, **params)
    if all_zero(tangents):
        return outs, zero_tangents(outs)
    out, rstd = outs
    t_out = rms_norm_jvp_p.bind(x, gamma, rstd, instantiate(tx, x), instantiate(tgamma, gamma),
                                **params)
    t_rstd = _jax.zero_tangent(rstd) if is_zero(tx) else rms_norm_rstd_tangent(x, rstd, tx)
    return outs, [t_out, t_rstd]


register_rules(rms_norm_p, jvp=_rms_norm_jvp, transpose=NOT_LINEAR,
               batch=partial(_norm_batch, rms_norm_p, ("gamma",), ()))
register_rules(rms_norm_jvp_p, linear=("tx", "tgamma"),
               jvp=partial(composite_jvp, rms_norm_jvp_p, rms_norm_tangent),
               transpose=partial(transpose_to, rms_norm_jvp_p, rms_norm_vjp_p),
               batch=partial(_norm_batch, rms_norm_jvp_p, ("gamma", "tgamma"), ()))
register_rules(rms_norm_vjp_p, linear=("g",),
               jvp=partial(composite_jvp, rms_norm_vjp_p, rms_norm_cotangent),
               transpose=partial(transpose_to, rms_norm_vjp_p, rms_norm_jvp_p),
               batch=partial(_norm_batch, rms_norm_vjp_p, ("gamma",), ("gamma",)))


# layer_norm ------------------------------------------------------------------
def _layer_norm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, eps: float,
                    implementation: Implementation) -> JvpResult:
    """``t_out = layer_norm_jvp(x, weight, mean, rstd, tx, tw, tb)``, the
    tangent map; the tangents of mean and rstd in gradrules ops."""
    (x, weight, bias), (tx, tw, tb) = primals, tangents
    outs = layer_norm_p.bind(x, weight, bias, eps=eps, implementation=implementation)
    if all_zero(tangents):
        return outs, zero_tangents(outs)
    out, mean, rstd = outs
    t_out = layer_norm_jvp_p.bind(x, weight, mean, rstd, instantiate(tx, x),
                                  instantiate(tw, weight), instantiate(tb, bias), eps=eps,
                                  implementation=implementation)
    if is_zero(tx):
        return outs, [t_out, *zero_tangents(outs[1:])]
    return outs, [t_out, *layer_norm_stat_tangents(x, mean, rstd, tx)]


register_rules(layer_norm_p, jvp=_layer_norm_jvp, transpose=NOT_LINEAR,
               batch=partial(_norm_batch, layer_norm_p, ("weight", "bias"), ()))
register_rules(layer_norm_jvp_p, linear=("tx", "tw", "tb"),
               jvp=partial(composite_jvp, layer_norm_jvp_p, layer_norm_tangent),
               transpose=partial(transpose_to, layer_norm_jvp_p, layer_norm_vjp_p),
               batch=partial(_norm_batch, layer_norm_jvp_p, ("weight", "tw", "tb"), ()))
register_rules(layer_norm_vjp_p, linear=("g",),
               jvp=partial(composite_jvp, layer_norm_vjp_p, layer_norm_cotangent),
               transpose=partial(transpose_to, layer_norm_vjp_p, layer_norm_jvp_p),
               batch=partial(_norm_batch, layer_norm_vjp_p, ("weight",), ("weight", "weight")))


# group_norm --------------------------------------------------------------------
def _group_norm_composite(x: Any, weight: Any, bias: Any, *, num_groups: int,
                          eps: float) -> Any:
    """group_norm in gradrules ops: the mean and biased variance of each
    (sample, group), then the per-channel affine map."""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    acc = acc_dtype(dtype)
    xg = reshape(cast(x, acc), tuple(shape[:1]) + (num_groups, -1))
    xc = subtract(xg, gr_mean(xg, axis=-1, keepdims=True))
    var = gr_mean(square(xc), axis=-1, keepdims=True)
    xn = reshape(multiply(xc, rsqrt(add(var, eps))), shape)
    return cast(add(multiply(xn, cast(weight, acc)), cast(bias, acc)), dtype)


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


register_rules(group_norm_p, jvp=partial(composite_jvp, group_norm_p, _group_norm_composite),
               transpose=NOT_LINEAR, batch=_group_norm_batch)


# batch_norm --------------------------------------------------------------------
def _batch_norm_composite(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any,
                          *, training: bool, momentum: float, eps: float,
                          data_format: str) -> tuple[Any, Any, Any]:
    """batch_norm in gradrules ops (see the public function)."""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    acc = acc_dtype(dtype)
    ch = channel_axis(len(shape), data_format)
    axes = tuple(a for a in range(len(shape)) if a != ch)
    lay = tuple(-1 if a == ch else 1 for a in range(len(shape)))
    xf, rm, rv = cast(x, acc), cast(running_mean, acc), cast(running_var, acc)
    if training:
        mean = gr_mean(xf, axis=axes)
        var = gr_mean(square(subtract(xf, reshape(mean, lay))), axis=axes)
        new_mean = add(multiply(rm, momentum), multiply(mean, 1 - momentum))
        new_var = add(multiply(rv, momentum), multiply(var, 1 - momentum))
    else:
        mean, var, new_mean, new_var = rm, rv, rm, rv
    scale = multiply(rsqrt(add(var, eps)), cast(weight, acc))
    out = add(multiply(subtract(xf, reshape(mean, lay)), reshape(scale, lay)),
              reshape(cast(bias, acc), lay))
    return cast(out, dtype), cast(new_mean, dtype), cast(new_var, dtype)


def _batch_norm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], **params: Any
                    ) -> JvpResult:
    """The composition's JVP in x, weight and bias; the running statistics are
    buffers and their tangents are dropped."""
    _, running_mean, running_var, _, _ = primals
    tx, _, _, tw, tb = tangents
    dropped = zero_tangents((running_mean, running_var))
    return composite_jvp(batch_norm_p, _batch_norm_composite, primals, [tx, *dropped, tw, tb],
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
