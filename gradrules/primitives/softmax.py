"""Primitives of the softmax family: softmax and log_softmax along any axis,
each fused as three primitives (DESIGN.md): the forward, the tangent map
(``*_jvp``) and the backward (``*_vjp``).

Both work in float32 for 16-bit input and return the input's dtype. A row
whose entries are all ``-inf`` has no distribution: softmax gives 0 there and
log_softmax ``-inf``, with finite derivatives (0 for softmax, the tangent
itself for log_softmax), in every mode.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..core.meta import normalize_axis
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._fused import float_array, kernel_param, matching_meta, upcast, xla_lowering

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "softmax"
PARAMS = ("axis", "kernel")


def row_shift(xf: Array, axis: int) -> Array:
    """The max along ``axis`` (kept), 0 for a row that is all -inf: ``exp(xf -
    shift)`` cannot overflow."""
    m = jnp.max(xf, axis, keepdims=True)
    return jnp.where(jnp.isfinite(m), m, 0.0)


def log_normalizer(xf: Array, axis: int) -> Array:
    """log sum exp along ``axis`` (kept), 0 for a row that is all -inf."""
    m = row_shift(xf, axis)
    s = jnp.sum(jnp.exp(xf - m), axis, keepdims=True)
    return jnp.where(s > 0, m + jnp.log(jnp.where(s > 0, s, 1.0)), 0.0)


# ---------------------------------------------------------------- softmax
def _softmax_impl(x: Array, *, axis: int) -> Array:
    xf = upcast(x)
    return jnp.exp(xf - log_normalizer(xf, axis)).astype(x.dtype)


def _softmax_tangent_impl(y: Array, t: Array, *, axis: int) -> Array:
    """y * (t - sum(y * t)): the Jacobian of softmax is symmetric, so this is
    both the tangent map and the backward."""
    yf, tf = upcast(y), upcast(t)
    return (yf * (tf - jnp.sum(yf * tf, axis, keepdims=True))).astype(y.dtype)


softmax_p = define_primitive("softmax", family=FAMILY, operands=("x",), params=PARAMS,
                             infer_meta=matching_meta("softmax", ("x",)),
                             impl=xla_lowering("softmax", _softmax_impl))
softmax_jvp_p = define_primitive("softmax_jvp", family=FAMILY, operands=("y", "t"),
                                 params=PARAMS, infer_meta=matching_meta("softmax_jvp", ("y", "t")),
                                 impl=xla_lowering("softmax_jvp", _softmax_tangent_impl))
softmax_vjp_p = define_primitive("softmax_vjp", family=FAMILY, operands=("y", "g"),
                                 params=PARAMS, infer_meta=matching_meta("softmax_vjp", ("y", "g")),
                                 impl=xla_lowering("softmax_vjp", _softmax_tangent_impl))


def _row_args(op: str, x: Any, axis: Any) -> tuple[Any, dict[str, Any]]:
    x = float_array(op, "x", x)
    return x, {"axis": normalize_axis(op, axis, jnp.ndim(x)), "kernel": kernel_param(op)}


def softmax(x: ArrayLike, *, axis: int = -1) -> Array:
    """``y = exp(x - lse(x))`` along ``axis`` (any axis, negative allowed).

    Three primitives: ``softmax`` (forward), ``softmax_jvp(y, t) = y * (t -
    sum(y t))`` and ``softmax_vjp(y, g) = y * (g - sum(y g))`` (the Jacobian
    ``diag(y) - y y^T`` is symmetric). A row of all ``-inf`` gives 0 with zero
    derivatives. 16-bit input is computed in float32.
    """
    x, params = _row_args("softmax", x, axis)
    return softmax_p.bind(x, **params)


def _reference_parts(x: ArrayLike, axis: int) -> tuple[Array, Array, Any]:
    """(x in float32 or wider, its log-sum-exp (0 for an all -inf row), x's
    dtype): the plain jax.numpy reference's building blocks."""
    x = jnp.asarray(x)
    xf = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    m = jax.lax.stop_gradient(jnp.max(xf, axis, keepdims=True))
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    s = jnp.sum(jnp.exp(xf - m), axis, keepdims=True)
    return xf, jnp.where(s > 0, m + jnp.log(jnp.where(s > 0, s, 1.0)), 0.0), x.dtype


def _softmax_reference(x: ArrayLike, *, axis: int = -1) -> Array:
    xf, lse, dtype = _reference_parts(x, axis)
    return jnp.exp(xf - lse).astype(dtype)


# ------------------------------------------------------------ log_softmax
def _log_softmax_impl(x: Array, *, axis: int) -> Array:
    xf = upcast(x)
    return (xf - log_normalizer(xf, axis)).astype(x.dtype)


def _log_softmax_jvp_impl(logp: Array, t: Array, *, axis: int) -> Array:
    lf, tf = upcast(logp), upcast(t)
    return (tf - jnp.sum(jnp.exp(lf) * tf, axis, keepdims=True)).astype(t.dtype)


def _log_softmax_vjp_impl(logp: Array, g: Array, *, axis: int) -> Array:
    lf, gf = upcast(logp), upcast(g)
    return (gf - jnp.exp(lf) * jnp.sum(gf, axis, keepdims=True)).astype(g.dtype)


log_softmax_p = define_primitive("log_softmax", family=FAMILY, operands=("x",), params=PARAMS,
                                 infer_meta=matching_meta("log_softmax", ("x",)),
                                 impl=xla_lowering("log_softmax", _log_softmax_impl))
log_softmax_jvp_p = define_primitive(
    "log_softmax_jvp", family=FAMILY, operands=("logp", "t"), params=PARAMS,
    infer_meta=matching_meta("log_softmax_jvp", ("logp", "t")),
    impl=xla_lowering("log_softmax_jvp", _log_softmax_jvp_impl))
log_softmax_vjp_p = define_primitive(
    "log_softmax_vjp", family=FAMILY, operands=("logp", "g"), params=PARAMS,
    infer_meta=matching_meta("log_softmax_vjp", ("logp", "g")),
    impl=xla_lowering("log_softmax_vjp", _log_softmax_vjp_impl))


def log_softmax(x: ArrayLike, *, axis: int = -1) -> Array:
    """``x - lse(x)`` along ``axis``, computed stably.

    Three primitives: ``log_softmax`` (forward), ``log_softmax_jvp(logp, t) =
    t - sum(exp(logp) t)`` and its transpose ``log_softmax_vjp(logp, g) = g -
    exp(logp) sum(g)``. A row of all ``-inf`` gives ``-inf`` (log of the 0 of
    softmax) and passes tangents through unchanged.
    """
    x, params = _row_args("log_softmax", x, axis)
    return log_softmax_p.bind(x, **params)


def _log_softmax_reference(x: ArrayLike, *, axis: int = -1) -> Array:
    xf, lse, dtype = _reference_parts(x, axis)
    return (xf - lse).astype(dtype)


register_op(OpDef("softmax", FAMILY, softmax, (softmax_p, softmax_jvp_p, softmax_vjp_p),
                  _softmax_reference, ("x",)))
register_op(OpDef("log_softmax", FAMILY, log_softmax,
                  (log_softmax_p, log_softmax_jvp_p, log_softmax_vjp_p),
                  _log_softmax_reference, ("x",)))
