"""Primitives of the norm family: layer_norm and rms_norm over the last axis
(fused: forward, tangent map and backward primitives each, with Pallas
kernels in ``pallas/norm.py``), group_norm (NCHW) and batch_norm.

All accumulate in float32 for 16-bit input (``acc_dtype``), return x's dtype
and keep their statistics (mean, inverse rms / std) in float32. ``eps`` > 0
keeps an all-zero input finite in value and every derivative. At the
primitive level the affine operands (weight, gamma, bias) may have any shape
that broadcasts against x with the normalised axis last (for batching).

The tangent maps and backwards of rms_norm and layer_norm are written once, in
gradrules ops (``rms_norm_tangent``, ``rms_norm_cotangent``,
``layer_norm_tangent``, ``layer_norm_cotangent``; ``row_stat_tangents`` for the
statistics): their XLA lowerings and what their JVP rules differentiate, as
``group_norm_composition`` and ``batch_norm_composition`` are for those.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray, aval_of
from ..core.args import (block_sizes_param, bool_param, choice_param, eps_param, float_array,
                         int_param, number_param)
from ..core.kernels import implementation
from ..core.meta import broadcast_shapes, check_dtype, op_name
from ..core.numerics import acc_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import norm as kernels
from ._compose import cast, unbroadcast
from ._fused import check_like, upcast
from ._sharding import row_op_labels, shard_map_bind
from .arithmetic import add, multiply, subtract
from .convert import promote
from .reduction import mean as gr_mean
from .shape import expand_dims, reshape
from .unary import neg, rsqrt, square

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "norm"
_blocks = partial(block_sizes_param, cls=kernels.BlockSizes,      # a block_sizes argument
                  public_name="gradrules.pallas.norm.BlockSizes")


# ------------------------------------------------------------------ helpers
def _check_affine(op: str, x: Any, named: dict[str, Any], *, last: bool = True) -> None:
    """Affine operands share x's dtype and broadcast against it (the
    normalised axis last, where ``last``)."""
    for name, a in named.items():
        if a.dtype != x.dtype:
            raise TypeError(f"{op_name(op)}: {name} ({a.dtype}) and x ({x.dtype}) must share "
                            "one dtype")
        ok = len(a.shape) <= len(x.shape) and (not last or (a.shape and a.shape[-1] == x.shape[-1]))
        if not ok or broadcast_shapes(op, {"x": x.shape, name: a.shape}) != tuple(x.shape):
            raise ValueError(f"{op_name(op)}: {name} with shape {tuple(a.shape)} does not fit x "
                             f"with shape {tuple(x.shape)}")


def _rows_meta(op: str, x: Any) -> ShapedArray:
    check_dtype(op, "x", x.dtype, "float")
    if not x.shape:
        raise ValueError(f"{op_name(op)}: x must have at least one axis, got a scalar")
    return ShapedArray(x.shape[:-1], acc_dtype(x.dtype))


def _channel_vector(op: str, name: str, a: Any, x: Any, axis: int, fill: float | None,
                    what: str) -> Any:
    """A per-channel vector of shape ``(x.shape[axis],)`` (``what`` says which
    axis that is, in the error); ``fill`` everywhere when None, and a
    TypeError when None has no ``fill`` (a required argument)."""
    c = np.shape(x)[axis]
    if a is None:
        if fill is None:
            raise TypeError(f"{op_name(op)}: {name} is required")
        return np.full((c,), fill, jnp.result_type(x))
    a = float_array(op, name, a)
    if np.shape(a) != (c,):
        raise ValueError(f"{op_name(op)}: {name} must have shape ({c},) ({what}), got "
                         f"{np.shape(a)}")
    return a


def _affine_arg(op: str, name: str, a: Any, x: Any, fill: float) -> Any:
    """A per-channel vector of shape (x.shape[-1],); ``fill`` when None."""
    return _channel_vector(op, name, a, x, -1, fill, "x.shape[-1]")


def _rows_arg(op: str, x: Any) -> Any:
    x = float_array(op, "x", x)
    if np.ndim(x) < 1:
        raise ValueError(f"{op_name(op)}: x must have at least one axis, got a scalar")
    return x


def _promote_all(op: str, named: dict[str, Any]) -> list[Any]:
    return promote(op, {k: float_array(op, k, v) for k, v in named.items()}, "float")


# ------------------------------------------- helpers in gradrules ops
_row_mean = partial(gr_mean, axis=-1, keepdims=True)


def _centered(x: Any, mean: Any, rstd: Any) -> tuple[Any, Any, Any]:
    """(x - mean in the accumulation dtype (x itself where ``mean`` is None:
    rms_norm's), rstd with a kept axis, xhat)."""
    xc = cast(x, aval_of(rstd).dtype)
    xc = xc if mean is None else subtract(xc, expand_dims(mean, axis=-1))
    r = expand_dims(rstd, axis=-1)
    return xc, r, multiply(xc, r)


def _normalized_tangent(xc: Any, r: Any, t: Any, centered: bool) -> Any:
    """``r (t - [mean(t)] - xc r (r mean(xc t)))`` = ``r (t - [mean(t)] - xhat
    mean(xhat t))``, ``xhat = xc r``: the tangent of ``xhat`` (``mean(t)`` where
    ``centered``, layer_norm's). In xc and per-row factors (no ``r**2`` that
    overflows for a tiny eps), so that XLA writes out no full-size xhat."""
    inner = subtract(t, _row_mean(t)) if centered else t
    scaled = multiply(r, multiply(r, _row_mean(multiply(xc, t))))
    return multiply(r, subtract(inner, multiply(xc, scaled)))


def _rstd_tangent(xc: Any, rstd: Any, t: Any) -> Any:
    """d rsqrt(mean(xc**2) + eps) = -rstd**3 mean(xc t) (xc centred or not)."""
    return multiply(neg(multiply(square(rstd), rstd)), gr_mean(multiply(xc, t), axis=-1))


# ----------------------------------------------------------------- rms_norm
RMS_PARAMS = ("eps", "weight_offset")


def _rms_norm_meta(x: Any, gamma: Any, **params: Any) -> tuple[ShapedArray, ShapedArray]:
    stat = _rows_meta("rms_norm", x)
    _check_affine("rms_norm", x, {"gamma": gamma})
    return ShapedArray(x.shape, x.dtype), stat


def _rms_norm_jvp_meta(x: Any, gamma: Any, rstd: Any, tx: Any, tgamma: Any,
                       **params: Any) -> ShapedArray:
    out, stat = _rms_norm_meta(x, gamma)
    for name, a, like in (("rstd", rstd, stat), ("tx", tx, x), ("tgamma", tgamma, gamma)):
        check_like("rms_norm_jvp", name, a, like.shape, like.dtype)
    return out


def _rms_norm_vjp_meta(x: Any, gamma: Any, rstd: Any, g: Any, **params: Any
                       ) -> tuple[ShapedArray, ShapedArray]:
    out, stat = _rms_norm_meta(x, gamma)
    check_like("rms_norm_vjp", "rstd", rstd, stat.shape, stat.dtype)
    check_like("rms_norm_vjp", "g", g, x.shape, x.dtype)
    return out, ShapedArray(gamma.shape, gamma.dtype)


def _rms_norm_impl(x: Array, gamma: Array, *, eps: float, weight_offset: float) -> list[Array]:
    xf = upcast(x)
    rstd = jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + eps)
    out = xf * rstd * (upcast(gamma) + weight_offset)
    return [out.astype(x.dtype), rstd[..., 0]]


def _rms_scale(gamma: Any, acc: Any, weight_offset: float) -> Any:
    """``gamma + weight_offset`` in the accumulation dtype."""
    g = cast(gamma, acc)
    return add(g, weight_offset) if weight_offset else g


def rms_norm_tangent(x: Any, gamma: Any, rstd: Any, tx: Any, tgamma: Any, *, eps: float,
                     weight_offset: float) -> Any:
    """``rstd (t - xhat mean(xhat t)) (gamma + offset) + xhat t_gamma``, ``xhat
    = x rstd``, in float32 for 16-bit input: rms_norm's tangent map."""
    acc = aval_of(rstd).dtype
    xf, r, xhat = _centered(x, None, rstd)
    t_xhat = _normalized_tangent(xf, r, cast(tx, acc), centered=False)
    out = add(multiply(t_xhat, _rms_scale(gamma, acc, weight_offset)),
              multiply(xhat, cast(tgamma, acc)))
    return cast(out, aval_of(x).dtype)


def rms_norm_cotangent(x: Any, gamma: Any, rstd: Any, g: Any, *, eps: float,
                       weight_offset: float) -> tuple[Any, Any]:
    """``dx = rstd (gw - xhat mean(gw xhat))`` with ``gw = g (gamma +
    offset)``, ``dgamma = sum(g xhat)`` over the tokens: the transpose of the
    tangent map, rms_norm's backward."""
    acc = aval_of(rstd).dtype
    (xf, r, xhat), gf = _centered(x, None, rstd), cast(g, acc)
    gw = multiply(gf, _rms_scale(gamma, acc, weight_offset))
    dx = _normalized_tangent(xf, r, gw, centered=False)
    dgamma = unbroadcast(multiply(gf, xhat), aval_of(gamma))
    return cast(dx, aval_of(x).dtype), cast(dgamma, aval_of(gamma).dtype)


rms_norm_p = define_primitive("rms_norm", family=FAMILY, operands=("x", "gamma"),
                              outputs=("out", "rstd"),
                              params=RMS_PARAMS, infer_meta=_rms_norm_meta,
                              implementations=kernels.table("rms_norm", _rms_norm_impl),
                              multiple_results=True)
rms_norm_jvp_p = define_primitive(
    "rms_norm_jvp", family=FAMILY, operands=("x", "gamma", "rstd", "tx", "tgamma"),
    params=RMS_PARAMS, infer_meta=_rms_norm_jvp_meta,
    implementations=kernels.table("rms_norm_jvp", rms_norm_tangent))
rms_norm_vjp_p = define_primitive(
    "rms_norm_vjp", family=FAMILY, operands=("x", "gamma", "rstd", "g"), params=RMS_PARAMS,
    infer_meta=_rms_norm_vjp_meta, multiple_results=True,
    implementations=kernels.table("rms_norm_vjp", rms_norm_cotangent))


def rms_norm(x: ArrayLike, gamma: ArrayLike | None = None, *, eps: float = 1e-6,
             weight_offset: float = 0.0, block_sizes: kernels.BlockSizes | None = None
             ) -> Array:
    """``x * rstd * (gamma + weight_offset)`` over the last axis, ``rstd =
    rsqrt(mean(x**2) + eps)`` (the trainer's rmsnorm; ``weight_offset`` is its
    rmsNormWeightOffset, e.g. 1 for gamma stored as gamma - 1). ``gamma=None``
    means a scale of 1 (``weight_offset`` unused).

    With ``xhat = x rstd``: tangent ``rstd (t - xhat mean(xhat t)) (gamma +
    offset) + xhat t_gamma``; backward ``dx = rstd (gw - xhat mean(gw xhat))``
    with ``gw = g (gamma + offset)``, ``dgamma = sum(g xhat)`` over the tokens.
    Three primitives: ``rms_norm`` (out and the ``rstd`` residual),
    ``rms_norm_jvp``, ``rms_norm_vjp``; ``block_sizes`` sets their kernels'
    (``pallas.norm.BlockSizes``; never changes the result).
    """
    op = "rms_norm"
    eps = eps_param(op, eps)
    offset = number_param(op, "weight_offset", weight_offset) if gamma is not None else 0.0
    x = _rows_arg(op, x)
    x, gamma = _promote_all(op, {"x": x, "gamma": _affine_arg(op, "gamma", gamma, x, 1.0)})
    bind = partial(rms_norm_p.bind, eps=eps, weight_offset=offset,
                   implementation=implementation(_blocks(op, block_sizes)))
    return shard_map_bind(bind, (x, gamma), *row_op_labels(np.ndim(x), 1, 1))[0]


def _rms_norm_reference(x: ArrayLike, gamma: ArrayLike | None = None, *, eps: float = 1e-6,
                        weight_offset: float = 0.0) -> Array:
    x = jnp.asarray(x)
    xf = x.astype(acc_dtype(x.dtype))
    out = xf * jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + eps)
    if gamma is not None:
        out = out * (jnp.asarray(gamma).astype(xf.dtype) + weight_offset)
    return out.astype(x.dtype)


register_op(OpDef(name="rms_norm", family=FAMILY, fn=rms_norm,
                  primitives=(rms_norm_p, rms_norm_jvp_p, rms_norm_vjp_p),
                  reference=_rms_norm_reference, operands=("x", "gamma")))


# --------------------------------------------------------------- layer_norm
LN_PARAMS = ("eps",)


def _layer_norm_meta(x: Any, weight: Any, bias: Any, **params: Any
                     ) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    stat = _rows_meta("layer_norm", x)
    _check_affine("layer_norm", x, {"weight": weight, "bias": bias})
    if weight.shape != bias.shape:
        raise ValueError(f"{op_name('layer_norm')}: weight {tuple(weight.shape)} and bias "
                         f"{tuple(bias.shape)} must have one shape")
    return ShapedArray(x.shape, x.dtype), stat, stat


def _layer_norm_jvp_meta(x: Any, weight: Any, mean: Any, rstd: Any, tx: Any, tw: Any, tb: Any,
                         **params: Any) -> ShapedArray:
    out, stat, _ = _layer_norm_meta(x, weight, weight)
    for name, a, like in (("mean", mean, stat), ("rstd", rstd, stat), ("tx", tx, x),
                          ("tw", tw, weight), ("tb", tb, weight)):
        check_like("layer_norm_jvp", name, a, like.shape, like.dtype)
    return out


def _layer_norm_vjp_meta(x: Any, weight: Any, mean: Any, rstd: Any, g: Any, **params: Any
                         ) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    out, stat, _ = _layer_norm_meta(x, weight, weight)
    for name, a, like in (("mean", mean, stat), ("rstd", rstd, stat), ("g", g, x)):
        check_like("layer_norm_vjp", name, a, like.shape, like.dtype)
    w = ShapedArray(weight.shape, weight.dtype)
    return out, w, w


def _layer_norm_impl(x: Array, weight: Array, bias: Array, *, eps: float) -> list[Array]:
    xf = upcast(x)
    mean = jnp.mean(xf, -1, keepdims=True)
    xc = xf - mean
    rstd = jax.lax.rsqrt(jnp.mean(xc * xc, -1, keepdims=True) + eps)
    out = xc * rstd * upcast(weight) + upcast(bias)
    return [out.astype(x.dtype), mean[..., 0], rstd[..., 0]]


def layer_norm_tangent(x: Any, weight: Any, mean: Any, rstd: Any, tx: Any, tw: Any, tb: Any,
                       *, eps: float) -> Any:
    """``rstd (t - mean(t) - xhat mean(xhat t)) weight + xhat t_w + t_b``,
    ``xhat = (x - mean) rstd``, in float32 for 16-bit input: layer_norm's
    tangent map."""
    acc = aval_of(rstd).dtype
    xc, r, xhat = _centered(x, mean, rstd)
    t_xhat = _normalized_tangent(xc, r, cast(tx, acc), centered=True)
    out = add(add(multiply(t_xhat, cast(weight, acc)), multiply(xhat, cast(tw, acc))),
              cast(tb, acc))
    return cast(out, aval_of(x).dtype)


def layer_norm_cotangent(x: Any, weight: Any, mean: Any, rstd: Any, g: Any, *, eps: float
                         ) -> tuple[Any, Any, Any]:
    """``dx = rstd (gw - mean(gw) - xhat mean(gw xhat))`` with ``gw = g
    weight``, ``dweight = sum(g xhat)``, ``dbias = sum(g)`` over the tokens:
    the transpose of the tangent map, layer_norm's backward."""
    acc = aval_of(rstd).dtype
    xc, r, xhat = _centered(x, mean, rstd)
    gf = cast(g, acc)
    dx = _normalized_tangent(xc, r, multiply(gf, cast(weight, acc)), centered=True)
    w = aval_of(weight)
    return (cast(dx, aval_of(x).dtype), cast(unbroadcast(multiply(gf, xhat), w), w.dtype),
            cast(unbroadcast(gf, w), w.dtype))


def row_stat_tangents(x: Any, stats: Sequence[Any], tx: Any) -> list[Any]:
    """The tangents of the row statistics a norm keeps as residuals, in
    gradrules ops: for ``(rstd,)`` (rms_norm) ``-rstd**3 mean(x t)``; for
    ``(mean, rstd)`` (layer_norm) ``mean(t)`` and ``-rstd**3 mean((x - mean) t)``."""
    *mean, rstd = stats
    t = cast(tx, aval_of(rstd).dtype)
    xc = _centered(x, mean[0] if mean else None, rstd)[0]
    return [*(gr_mean(t, axis=-1) for _ in mean), _rstd_tangent(xc, rstd, t)]


layer_norm_p = define_primitive("layer_norm", family=FAMILY, operands=("x", "weight", "bias"),
                                outputs=("out", "mean", "rstd"),
                                params=LN_PARAMS, infer_meta=_layer_norm_meta,
                                implementations=kernels.table("layer_norm", _layer_norm_impl),
                                multiple_results=True)
layer_norm_jvp_p = define_primitive(
    "layer_norm_jvp", family=FAMILY, operands=("x", "weight", "mean", "rstd", "tx", "tw", "tb"),
    params=LN_PARAMS, infer_meta=_layer_norm_jvp_meta,
    implementations=kernels.table("layer_norm_jvp", layer_norm_tangent))
layer_norm_vjp_p = define_primitive(
    "layer_norm_vjp", family=FAMILY, operands=("x", "weight", "mean", "rstd", "g"),
    params=LN_PARAMS, infer_meta=_layer_norm_vjp_meta,
    implementations=kernels.table("layer_norm_vjp", layer_norm_cotangent), multiple_results=True)


def layer_norm(x: ArrayLike, weight: ArrayLike | None = None, bias: ArrayLike | None = None, *,
               eps: float = 1e-5, block_sizes: kernels.BlockSizes | None = None) -> Array:
    """``(x - mean) rstd * weight + bias`` over the last axis, ``rstd =
    rsqrt(var + eps)`` (biased variance). weight and bias have shape
    ``(x.shape[-1],)``; None means 1 and 0.

    With ``xhat = (x - mean) rstd``: tangent ``rstd (t - mean(t) - xhat
    mean(xhat t)) weight + xhat t_w + t_b``; backward ``dx = rstd (gw -
    mean(gw) - xhat mean(gw xhat))``, ``gw = g weight``, ``dweight = sum(g
    xhat)``, ``dbias = sum(g)`` over the tokens. Three primitives:
    ``layer_norm`` (out and the mean / rstd residuals), ``layer_norm_jvp``,
    ``layer_norm_vjp``; ``block_sizes`` as in rms_norm.
    """
    op = "layer_norm"
    eps = eps_param(op, eps)
    x = _rows_arg(op, x)
    x, weight, bias = _promote_all(op, {"x": x, "weight": _affine_arg(op, "weight", weight, x, 1.0),
                                        "bias": _affine_arg(op, "bias", bias, x, 0.0)})
    bind = partial(layer_norm_p.bind, eps=eps,
                   implementation=implementation(_blocks(op, block_sizes)))
    return shard_map_bind(bind, (x, weight, bias), *row_op_labels(np.ndim(x), 2, 2))[0]


def _layer_norm_reference(x: ArrayLike, weight: ArrayLike | None = None,
                          bias: ArrayLike | None = None, *, eps: float = 1e-5) -> Array:
    x = jnp.asarray(x)
    xf = x.astype(acc_dtype(x.dtype))
    mean = jnp.mean(xf, -1, keepdims=True)
    out = (xf - mean) * jax.lax.rsqrt(jnp.var(xf, -1, keepdims=True) + eps)
    if weight is not None:
        out = out * jnp.asarray(weight).astype(xf.dtype)
    if bias is not None:
        out = out + jnp.asarray(bias).astype(xf.dtype)
    return out.astype(x.dtype)


register_op(OpDef(name="layer_norm", family=FAMILY, fn=layer_norm,
                  primitives=(layer_norm_p, layer_norm_jvp_p, layer_norm_vjp_p),
                  reference=_layer_norm_reference, operands=("x", "weight", "bias")))


# --------------------------------------------------------------- group_norm
def _group_norm_meta(x: Any, weight: Any, bias: Any, *, num_groups: int, eps: float
                     ) -> ShapedArray:
    op = "group_norm"
    check_dtype(op, "x", x.dtype, "float")
    if len(x.shape) < 2 or x.shape[1] % num_groups:
        raise ValueError(f"{op_name(op)}: x must be [N, C, ...] with C divisible by "
                         f"num_groups={num_groups}, got x with shape {tuple(x.shape)}")
    _check_affine(op, x, {"weight": weight, "bias": bias}, last=False)
    return ShapedArray(x.shape, x.dtype)


def group_norm_composition(x: Any, weight: Any, bias: Any, *, num_groups: int,
                           eps: float) -> Any:
    """group_norm in gradrules ops: the mean and biased variance of each
    (sample, group), then the per-channel affine map. Its lowering, and the
    function its JVP rule differentiates."""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    acc = acc_dtype(dtype)
    xg = reshape(cast(x, acc), (shape[0], num_groups, shape[1] // num_groups, *shape[2:]))
    xc = subtract(xg, gr_mean(xg, axis=tuple(range(2, len(shape) + 1)), keepdims=True))
    var = gr_mean(square(xc), axis=tuple(range(2, len(shape) + 1)), keepdims=True)
    xn = reshape(multiply(xc, rsqrt(add(var, eps))), shape)
    return cast(add(multiply(xn, cast(weight, acc)), cast(bias, acc)), dtype)


group_norm_p = define_primitive("group_norm", family=FAMILY, operands=("x", "weight", "bias"),
                                params=("num_groups", "eps"), infer_meta=_group_norm_meta,
                                impl=group_norm_composition)


def _channel_arg(op: str, name: str, a: Any, x: Any, fill: float) -> Any:
    """A per-channel vector (C,) laid out as (C, 1, ..., 1) against [N, C, ...]."""
    a = _channel_vector(op, name, a, x, 1, fill, "x.shape[1], the channels")
    return reshape(a, np.shape(a) + (1,) * (np.ndim(x) - 2))


def group_norm(x: ArrayLike, weight: ArrayLike | None = None, bias: ArrayLike | None = None, *,
               num_groups: int, eps: float = 1e-5) -> Array:
    """Group normalisation of ``x [N, C, *spatial]`` (NCHW): the C channels
    fall into ``num_groups`` groups; each (sample, group) is normalised with
    its mean and biased variance over its channels and spatial positions, then
    ``* weight + bias`` per channel (shape (C,); None means 1 and 0).

    One primitive; its JVP is the JVP of this composition written in
    gradrules ops (so every order works), its batching folds the batch axis
    into N.
    """
    op = "group_norm"
    eps = eps_param(op, eps)
    num_groups = int_param(op, "num_groups", num_groups)
    x = float_array(op, "x", x)
    if np.ndim(x) < 2:
        raise ValueError(f"{op_name(op)}: x must be [N, C, ...], got shape {np.shape(x)}")
    if num_groups < 1 or np.shape(x)[1] % num_groups:
        raise ValueError(f"{op_name(op)}: num_groups={num_groups} must divide the "
                         f"{np.shape(x)[1]} channels of x with shape {np.shape(x)}")
    x, weight, bias = _promote_all(op, {"x": x,
                                        "weight": _channel_arg(op, "weight", weight, x, 1.0),
                                        "bias": _channel_arg(op, "bias", bias, x, 0.0)})
    return group_norm_p.bind(x, weight, bias, num_groups=num_groups, eps=eps)


def _group_norm_reference(x: ArrayLike, weight: ArrayLike | None = None,
                          bias: ArrayLike | None = None, *, num_groups: int,
                          eps: float = 1e-5) -> Array:
    x = jnp.asarray(x)
    xg = x.astype(acc_dtype(x.dtype)).reshape(x.shape[:1] + (num_groups, -1))
    xn = ((xg - xg.mean(-1, keepdims=True)) * jax.lax.rsqrt(xg.var(-1, keepdims=True) + eps))
    xn = xn.reshape(x.shape)
    lay = (-1,) + (1,) * (x.ndim - 2)
    if weight is not None:
        xn = xn * jnp.asarray(weight).astype(xn.dtype).reshape(lay)
    if bias is not None:
        xn = xn + jnp.asarray(bias).astype(xn.dtype).reshape(lay)
    return xn.astype(x.dtype)


register_op(OpDef(name="group_norm", family=FAMILY, fn=group_norm, primitives=(group_norm_p,),
                  reference=_group_norm_reference, operands=("x", "weight", "bias")))


# --------------------------------------------------------------- batch_norm
BN_PARAMS = ("training", "momentum", "eps", "data_format")


def channel_axis(ndim: int, data_format: str) -> int:
    return 1 if data_format == "NCHW" else ndim - 1


def _batch_norm_meta(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any, *,
                     training: bool, momentum: float, eps: float, data_format: str
                     ) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    op = "batch_norm"
    check_dtype(op, "x", x.dtype, "float")
    if len(x.shape) < 2:
        raise ValueError(f"{op_name(op)}: x must have a batch and a channel axis, got shape "
                         f"{tuple(x.shape)}")
    c = x.shape[channel_axis(len(x.shape), data_format)]
    for name, a in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if tuple(a.shape) != (c,) or a.dtype != x.dtype:
            raise ValueError(f"{op_name(op)}: {name} must be {x.dtype}[{c}] (one per channel "
                             f"of x with shape {tuple(x.shape)}, {data_format}), got "
                             f"{a.dtype}{list(a.shape)}")
    stat = ShapedArray((c,), x.dtype)
    return ShapedArray(x.shape, x.dtype), stat, stat


def batch_norm_composition(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any,
                           *, training: bool, momentum: float, eps: float,
                           data_format: str) -> tuple[Any, Any, Any]:
    """batch_norm in gradrules ops (see the public function): its lowering,
    and the function its JVP rule differentiates."""
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


batch_norm_p = define_primitive(
    "batch_norm", family=FAMILY, operands=("x", "running_mean", "running_var", "weight", "bias"),
    params=BN_PARAMS, infer_meta=_batch_norm_meta, impl=batch_norm_composition,
    multiple_results=True)


def batch_norm(x: ArrayLike, running_mean: ArrayLike, running_var: ArrayLike,
               weight: ArrayLike | None = None, bias: ArrayLike | None = None, *,
               training: bool, momentum: float = 0.9, eps: float = 1e-5,
               data_format: str = "NCHW") -> tuple[Array, Array, Array]:
    """Batch normalisation; returns ``(out, new_mean, new_var)``.

    ``training=True``: ``out = (x - mean) rsqrt(var + eps) weight + bias``
    with the batch statistics of each channel (mean and biased variance over
    every axis but the channel axis: 1 for ``"NCHW"``, the last for
    ``"NHWC"``), and the running statistics updated with Paddle's momentum
    convention: ``new = momentum * running + (1 - momentum) * batch``.
    ``training=False``: the running statistics normalise and are returned
    unchanged. weight and bias are per channel (None means 1 and 0).

    The running statistics are buffers: no gradient flows into
    ``running_mean`` / ``running_var`` (their tangents are dropped, as Paddle's
    batch_norm_grad has no gradient for them). Gradients flow through the batch
    statistics into x, weight and bias, and ``new_mean`` / ``new_var`` have
    their true derivative with respect to x (``(1 - momentum)`` times that of
    the batch statistics; wrap them in ``jax.lax.stop_gradient`` to detach).
    One primitive; the JVP is that of this composition in gradrules ops, so
    Paddle's batch_norm_grad and batch_norm_double_grad come out of it.
    """
    op = "batch_norm"
    training = bool_param(op, "training", training)
    eps = eps_param(op, eps)
    momentum = number_param(op, "momentum", momentum, lo=0.0, hi=1.0)
    data_format = choice_param(op, "data_format", data_format, ("NCHW", "NHWC"))
    x = float_array(op, "x", x)
    if np.ndim(x) < 2:
        raise ValueError(f"{op_name(op)}: x must have a batch and a channel axis, got shape "
                         f"{np.shape(x)}")
    ch = channel_axis(np.ndim(x), data_format)
    what = f"the channels of x with shape {np.shape(x)}, {data_format}"
    stats = {name: _channel_vector(op, name, a, x, ch, fill, what)
             for name, a, fill in (("running_mean", running_mean, None),
                                   ("running_var", running_var, None),
                                   ("weight", weight, 1.0), ("bias", bias, 0.0))}
    args = _promote_all(op, {"x": x, **stats})
    out, new_mean, new_var = batch_norm_p.bind(*args, training=training,
                                               momentum=momentum, eps=eps,
                                               data_format=data_format)
    return out, new_mean, new_var


def _batch_norm_reference(x: ArrayLike, running_mean: ArrayLike, running_var: ArrayLike,
                          weight: ArrayLike | None = None, bias: ArrayLike | None = None, *,
                          training: bool, momentum: float = 0.9, eps: float = 1e-5,
                          data_format: str = "NCHW") -> tuple[Array, Array, Array]:
    x = jnp.asarray(x)
    ch = channel_axis(x.ndim, data_format)
    axes = tuple(a for a in range(x.ndim) if a != ch)
    lay = tuple(-1 if a == ch else 1 for a in range(x.ndim))
    rm = jax.lax.stop_gradient(jnp.asarray(running_mean))
    rv = jax.lax.stop_gradient(jnp.asarray(running_var))
    if training:
        mean, var = jnp.mean(x, axes), jnp.var(x, axes)
        new_mean = momentum * rm + (1 - momentum) * mean
        new_var = momentum * rv + (1 - momentum) * var
    else:
        mean, var, new_mean, new_var = rm, rv, rm, rv
    out = (x - mean.reshape(lay)) * jax.lax.rsqrt(var + eps).reshape(lay)
    if weight is not None:
        out = out * jnp.asarray(weight).reshape(lay)
    if bias is not None:
        out = out + jnp.asarray(bias).reshape(lay)
    return out, new_mean, new_var


register_op(OpDef(name="batch_norm", family=FAMILY, fn=batch_norm, primitives=(batch_norm_p,),
                  reference=_batch_norm_reference,
                  operands=("x", "running_mean", "running_var", "weight", "bias"),
                  nondiff=("running_mean", "running_var"), order=3))
