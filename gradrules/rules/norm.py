"""Rules of the norm family.

rms_norm and layer_norm (three primitives each): the forward's JVP binds the
tangent map for the output and gives the statistics' tangents in gradrules
ops; the tangent map and the backward are transposes of each other; their
JVPs come from the reference compositions below. group_norm and batch_norm
are one primitive each whose JVP is that of their composition in gradrules
ops (batch_norm drops the tangents of the running statistics: they are
buffers). Batching binds each primitive once: rows keep the batch axis in
front, the affine operands broadcast against it; group_norm folds the batch
axis into N, batch_norm into the channels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _jax
from .._jax import Primitive, aval_of, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._fused import acc_dtype
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.norm import (batch_norm_p, channel_axis, group_norm_p, layer_norm_jvp_p,
                               layer_norm_p, layer_norm_vjp_p, rms_norm_jvp_p, rms_norm_p,
                               rms_norm_vjp_p)
from ..primitives.reduction import mean as gr_mean
from ..primitives.shape import broadcast_to, expand_dims, moveaxis, reshape
from ..primitives.unary import neg, rsqrt, square
from ._common import batch_size, bdim_to_front, unbroadcast
from ._fused import (align_front, cast, composite_jvp, fold_batch, fused_forward_jvp,
                     register_fused, unfold_batch, with_residuals)


def _row_mean(x: Any) -> Any:
    return gr_mean(x, axis=-1, keepdims=True)


def _normalized_tangent(xhat: Any, r: Any, t: Any, centered: bool) -> Any:
    """``r (t - [mean(t)] - xhat mean(xhat t))``: the tangent of ``xhat``."""
    inner = subtract(t, multiply(xhat, _row_mean(multiply(xhat, t))))
    if centered:
        inner = subtract(inner, _row_mean(t))
    return multiply(r, inner)


def _rstd_tangent(xc: Any, rstd: Any, t: Any) -> Any:
    """d rsqrt(mean(xc**2) + eps) = -rstd**3 mean(xc t) (xc centred or not)."""
    return multiply(neg(multiply(square(rstd), rstd)), gr_mean(multiply(xc, t), axis=-1))


# rms_norm --------------------------------------------------------------------
def _rms_scale(gamma: Any, acc: Any, weight_offset: float) -> Any:
    g = cast(gamma, acc)
    return add(g, weight_offset) if weight_offset else g


def _rms_norm_tangent(x: Any, gamma: Any, rstd: Any, tx: Any, tgamma: Any, *, eps: float,
                      weight_offset: float, kernel: str) -> Any:
    acc = aval_of(rstd).dtype
    r = expand_dims(rstd, axis=-1)
    xhat = multiply(cast(x, acc), r)
    t_xhat = _normalized_tangent(xhat, r, cast(tx, acc), centered=False)
    out = add(multiply(t_xhat, _rms_scale(gamma, acc, weight_offset)),
              multiply(xhat, cast(tgamma, acc)))
    return cast(out, aval_of(x).dtype)


def _rms_norm_cotangent(x: Any, gamma: Any, rstd: Any, g: Any, *, eps: float,
                        weight_offset: float, kernel: str) -> tuple[Any, Any]:
    acc = aval_of(rstd).dtype
    r = expand_dims(rstd, axis=-1)
    xhat, gf = multiply(cast(x, acc), r), cast(g, acc)
    gw = multiply(gf, _rms_scale(gamma, acc, weight_offset))
    dx = _normalized_tangent(xhat, r, gw, centered=False)
    dgamma = unbroadcast(multiply(gf, xhat), aval_of(gamma))
    return cast(dx, aval_of(x).dtype), cast(dgamma, aval_of(gamma).dtype)


def _rms_norm_stat_tangents(primals: Any, outs: list[Any], tangents: Any) -> list[Any]:
    """The tangent of rstd (in gradrules ops; a symbolic zero when tx is)."""
    (x, _), (_, rstd), (tx, _) = primals, outs, tangents
    if is_zero(tx):
        return [_jax.zero_tangent(rstd)]
    acc = aval_of(rstd).dtype
    return [_rstd_tangent(cast(x, acc), rstd, cast(tx, acc))]


# t_out from the tangent map rms_norm_jvp(x, gamma, rstd, tx, tgamma); t_rstd in gradrules ops
_rms_norm_jvp = fused_forward_jvp(rms_norm_p, rms_norm_jvp_p, fixed=with_residuals,
                                  linear=(0, 1), rest=_rms_norm_stat_tangents)


# layer_norm ------------------------------------------------------------------
def _centered(x: Any, mean: Any, rstd: Any) -> tuple[Any, Any, Any]:
    """(x - mean in acc, rstd with a kept axis, xhat)."""
    acc = aval_of(rstd).dtype
    xc = subtract(cast(x, acc), expand_dims(mean, axis=-1))
    r = expand_dims(rstd, axis=-1)
    return xc, r, multiply(xc, r)


def _layer_norm_tangent(x: Any, weight: Any, mean: Any, rstd: Any, tx: Any, tw: Any, tb: Any,
                        *, eps: float, kernel: str) -> Any:
    acc = aval_of(rstd).dtype
    _, r, xhat = _centered(x, mean, rstd)
    t_xhat = _normalized_tangent(xhat, r, cast(tx, acc), centered=True)
    out = add(add(multiply(t_xhat, cast(weight, acc)), multiply(xhat, cast(tw, acc))),
              cast(tb, acc))
    return cast(out, aval_of(x).dtype)


def _layer_norm_cotangent(x: Any, weight: Any, mean: Any, rstd: Any, g: Any, *, eps: float,
                          kernel: str) -> tuple[Any, Any, Any]:
    acc = aval_of(rstd).dtype
    _, r, xhat = _centered(x, mean, rstd)
    gf = cast(g, acc)
    dx = _normalized_tangent(xhat, r, multiply(gf, cast(weight, acc)), centered=True)
    w = aval_of(weight)
    return (cast(dx, aval_of(x).dtype), cast(unbroadcast(multiply(gf, xhat), w), w.dtype),
            cast(unbroadcast(gf, w), w.dtype))


def _layer_norm_fixed(primals: Any, outs: list[Any]) -> list[Any]:
    """(x, weight, mean, rstd): the leading operands of layer_norm_jvp."""
    return [primals[0], primals[1], *outs[1:]]


def _layer_norm_stat_tangents(primals: Any, outs: list[Any], tangents: Any) -> list[Any]:
    """The tangents of mean and rstd (in gradrules ops; symbolic zeros when tx is)."""
    (x, _, _), (_, mean, rstd), tx = primals, outs, tangents[0]
    if is_zero(tx):
        return [_jax.zero_tangent(mean), _jax.zero_tangent(rstd)]
    xc, _, _ = _centered(x, mean, rstd)
    t = cast(tx, aval_of(rstd).dtype)
    return [gr_mean(t, axis=-1), _rstd_tangent(xc, rstd, t)]


# t_out from the tangent map layer_norm_jvp(x, weight, mean, rstd, tx, tw, tb); the
# statistics' tangents in gradrules ops
_layer_norm_jvp = fused_forward_jvp(layer_norm_p, layer_norm_jvp_p, fixed=_layer_norm_fixed,
                                    linear=(0, 1, 2), rest=_layer_norm_stat_tangents)


# batching of the fused norms ---------------------------------------------------
_NORM_BATCH = {  # primitive -> (affine operands, backward outputs shaped like an operand)
    rms_norm_p: ((1,), {}), rms_norm_jvp_p: ((1, 4), {}), rms_norm_vjp_p: ((1,), {1: 1}),
    layer_norm_p: ((1, 2), {}), layer_norm_jvp_p: ((1, 5, 6), {}),
    layer_norm_vjp_p: ((1,), {1: 1, 2: 1}),
}


def _norm_batch(prim: Primitive, args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
    """Every operand gets the batch axis in front; the affine operands
    (weights, broadcast against x) get size-1 axes after it; outputs that are
    cotangents of an affine operand take that operand's batched shape back."""
    affine, restore = _NORM_BATCH[prim]
    size = batch_size(args, dims)
    moved = [bdim_to_front(a, d, size) for a, d in zip(args, dims)]
    rank = np.ndim(moved[0])
    out = prim.bind(*[align_front(a, rank) if i in affine else a for i, a in enumerate(moved)],
                    **params)
    if not prim.multiple_results:
        return out, 0
    out = [reshape(o, np.shape(moved[restore[i]])) if i in restore else o
           for i, o in enumerate(out)]
    return out, [0] * len(out)


register_fused(rms_norm_p, rms_norm_jvp_p, rms_norm_vjp_p, jvp=_rms_norm_jvp,
               tangent_ref=_rms_norm_tangent, backward_ref=_rms_norm_cotangent, fixed=3,
               batch=_norm_batch)
register_fused(layer_norm_p, layer_norm_jvp_p, layer_norm_vjp_p, jvp=_layer_norm_jvp,
               tangent_ref=_layer_norm_tangent, backward_ref=_layer_norm_cotangent, fixed=4,
               batch=_norm_batch)


# group_norm --------------------------------------------------------------------
def _group_norm_composite(x: Any, weight: Any, bias: Any, *, num_groups: int,
                          eps: float) -> Any:
    """group_norm in gradrules ops: the mean and biased variance of each
    (sample, group), then the per-channel affine map."""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    acc = acc_dtype(dtype)
    xg = reshape(cast(x, acc), tuple(shape[:1]) + (num_groups, -1))
    xc = subtract(xg, _row_mean(xg))
    xn = reshape(multiply(xc, rsqrt(add(_row_mean(square(xc)), eps))), shape)
    return cast(add(multiply(xn, cast(weight, acc)), cast(bias, acc)), dtype)


def _group_norm_batch(args: Any, dims: Any, *, num_groups: int, eps: float
                      ) -> tuple[Any, int]:
    """The batch axis folds into N; a batched weight or bias is repeated
    along N so that it folds the same way."""
    size = batch_size(args, dims)
    (x, weight, bias), (dx, dw, db) = args, dims
    x = bdim_to_front(x, dx, size)
    shape = np.shape(x)

    def fold(a: Any, d: int | None) -> Any:
        if d is None:
            return a
        a = align_front(moveaxis(a, d, 0), len(shape))
        return fold_batch(broadcast_to(a, (size, shape[1]) + np.shape(a)[2:]), 0, size)

    out = group_norm_p.bind(fold_batch(x, 0, size), fold(weight, dw), fold(bias, db),
                            num_groups=num_groups, eps=eps)
    return unfold_batch(out, size, shape[1]), 0


register_rules(group_norm_p, jvp=composite_jvp(group_norm_p, _group_norm_composite, linear=0),
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


_batch_norm_composite_jvp = composite_jvp(batch_norm_p, _batch_norm_composite, linear=0)


def _batch_norm_jvp(primals: Any, tangents: Any, **params: Any) -> Any:
    """The composition's JVP in x, weight and bias; the running statistics are
    buffers and their tangents are dropped."""
    tx, t_mean, t_var, tw, tb = tangents
    dropped = [_jax.zero_tangent(p) for p in primals[1:3]]
    return _batch_norm_composite_jvp(primals, [tx, *dropped, tw, tb], **params)


def _batch_norm_batch(args: Any, dims: Any, *, training: bool, momentum: float, eps: float,
                      data_format: str) -> tuple[Any, Any]:
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
