"""Primitives of the gated family: the gated MLP activations silu_gated
(SwiGLU, fused: forward, tangent map and backward primitives), silu_rowsplit
(gate and up as the two halves of the last axis) and gelu_gated (GeGLU).

The trainer's ``swigluLimit`` clamp (``limit``): the gate is clamped from
above at ``limit`` and ``up`` to ``[-limit, limit]`` before the product (as
in gpt-oss); the derivative of a clamp is 1 inside its range, boundary
included, and 0 outside. 16-bit input is computed in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.meta import bool_param, check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._elementwise import promote
from ._fused import (choice_param, float_array, kernel_param, matching_meta, number_param,
                     upcast, xla_lowering)

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "gated"
PARAMS = ("limit", "kernel")
ROWSPLIT_ACTIVATIONS = ("silu", "gelu", "gelu_tanh")


def _clamped(gate: Array, up: Array, limit: float | None) -> tuple[Array, Array, Any, Any]:
    """(gate, up) clamped, and the masks where each clamp passes derivatives
    (None without a limit). jax.numpy: the lowerings' helper."""
    if limit is None:
        return gate, up, None, None
    return (jnp.minimum(gate, limit), jnp.clip(up, -limit, limit), gate <= limit,
            jnp.abs(up) <= limit)


def _keep(x: Array, mask: Any) -> Array:
    return x if mask is None else jnp.where(mask, x, 0)


def _silu_parts(gate: Array, up: Array, limit: float | None) -> tuple[Array, ...]:
    g, u, mg, mu = _clamped(upcast(gate), upcast(up), limit)
    s = jax.nn.sigmoid(g)
    return u, g * s, s * (1 + g * (1 - s)), mg, mu   # up, silu, silu', masks


def _silu_gated_impl(gate: Array, up: Array, *, limit: float | None) -> Array:
    u, silu, _, _, _ = _silu_parts(gate, up, limit)
    return (silu * u).astype(gate.dtype)


def _silu_gated_jvp_impl(gate: Array, up: Array, tg: Array, tu: Array, *,
                         limit: float | None) -> Array:
    u, silu, dsilu, mg, mu = _silu_parts(gate, up, limit)
    t = _keep(dsilu * u * upcast(tg), mg) + _keep(silu * upcast(tu), mu)
    return t.astype(gate.dtype)


def _silu_gated_vjp_impl(gate: Array, up: Array, g: Array, *,
                         limit: float | None) -> list[Array]:
    u, silu, dsilu, mg, mu = _silu_parts(gate, up, limit)
    gf = upcast(g)
    return [_keep(gf * u * dsilu, mg).astype(gate.dtype), _keep(gf * silu, mu).astype(up.dtype)]


silu_gated_p = define_primitive("silu_gated", family=FAMILY, operands=("gate", "up"),
                                params=PARAMS, infer_meta=matching_meta("silu_gated", ("gate", "up")),
                                impl=xla_lowering("silu_gated", _silu_gated_impl))
silu_gated_jvp_p = define_primitive(
    "silu_gated_jvp", family=FAMILY, operands=("gate", "up", "tg", "tu"), params=PARAMS,
    infer_meta=matching_meta("silu_gated_jvp", ("gate", "up", "tg", "tu")),
    impl=xla_lowering("silu_gated_jvp", _silu_gated_jvp_impl))


def _silu_gated_vjp_meta(gate: Any, up: Any, g: Any, **params: Any) -> tuple[ShapedArray, ...]:
    out = matching_meta("silu_gated_vjp", ("gate", "up", "g"))(gate, up, g)
    return out, out


silu_gated_vjp_p = define_primitive(
    "silu_gated_vjp", family=FAMILY, operands=("gate", "up", "g"), params=PARAMS,
    infer_meta=_silu_gated_vjp_meta, impl=xla_lowering("silu_gated_vjp", _silu_gated_vjp_impl),
    multiple_results=True)


def limit_param(op: str, limit: Any) -> float | None:
    """``limit``: None, or a finite number > 0."""
    return None if limit is None else number_param(op, "limit", limit, gt=0.0)


def _pair(op: str, gate: Any, up: Any) -> list[Any]:
    gate, up = promote(op, {"gate": float_array(op, "gate", gate),
                            "up": float_array(op, "up", up)}, "float")
    if np.shape(gate) != np.shape(up):
        raise ValueError(f"{op_name(op)}: gate with shape {np.shape(gate)} and up with shape "
                         f"{np.shape(up)} must have one shape")
    return [gate, up]


def silu_gated(gate: ArrayLike, up: ArrayLike, *, limit: float | None = None) -> Array:
    """SwiGLU: ``silu(gate) * up``, ``silu(x) = x sigmoid(x)``; with ``limit``,
    ``silu(min(gate, limit)) * clip(up, -limit, limit)``.

    d/dgate = ``up silu'(gate)`` with ``silu' = s (1 + gate (1 - s))``, d/dup =
    ``silu(gate)`` (each times its clamp's mask). Three primitives:
    ``silu_gated``, ``silu_gated_jvp`` (tangent map) and ``silu_gated_vjp``
    (backward), transposes of each other.
    """
    op = "silu_gated"
    gate, up = _pair(op, gate, up)
    return silu_gated_p.bind(gate, up, limit=limit_param(op, limit), kernel=kernel_param(op))


def _silu_gated_reference(gate: ArrayLike, up: ArrayLike, *, limit: float | None = None
                          ) -> Array:
    gate, up = jnp.asarray(gate), jnp.asarray(up)
    g, u = upcast(gate), upcast(up)
    if limit is not None:
        g, u = jnp.where(g <= limit, g, limit), jnp.where(jnp.abs(u) <= limit, u,
                                                             jnp.sign(u) * limit)
    return (jax.nn.silu(g) * u).astype(gate.dtype)


# --------------------------------------------------------------- gelu_gated
def _gelu(x: Array, approximate: bool) -> Array:
    return jax.nn.gelu(x, approximate=approximate)


def _gelu_gated_impl(gate: Array, up: Array, *, approximate: bool) -> Array:
    return (_gelu(upcast(gate), approximate) * upcast(up)).astype(gate.dtype)


gelu_gated_p = define_primitive("gelu_gated", family=FAMILY, operands=("gate", "up"),
                                params=("approximate",),
                                infer_meta=matching_meta("gelu_gated", ("gate", "up")),
                                impl=_gelu_gated_impl)


def gelu_gated(gate: ArrayLike, up: ArrayLike, *, approximate: bool = False) -> Array:
    """GeGLU: ``gelu(gate) * up`` (``approximate`` picks gelu's tanh form).

    d/dgate = ``gelu'(gate) up``, d/dup = ``gelu(gate)``: the JVP is that of
    ``gelu(gate) * up`` written with the gradrules ops gelu and multiply.
    """
    op = "gelu_gated"
    gate, up = _pair(op, gate, up)
    return gelu_gated_p.bind(gate, up, approximate=bool_param(op, "approximate", approximate))


def _gelu_gated_reference(gate: ArrayLike, up: ArrayLike, *, approximate: bool = False
                          ) -> Array:
    gate = jnp.asarray(gate)
    return (_gelu(upcast(gate), approximate) * upcast(jnp.asarray(up))).astype(gate.dtype)


# ------------------------------------------------------------ silu_rowsplit
def _rowsplit_meta(x: Any, *, activation: str, limit: float | None, kernel: str
                   ) -> ShapedArray:
    op = "silu_rowsplit"
    check_dtype(op, "x", x.dtype, "float")
    if not x.shape or x.shape[-1] % 2:
        raise ValueError(f"{op_name(op)}: the last axis of x holds gate and up halves and must "
                         f"have an even size, got x with shape {tuple(x.shape)}")
    return ShapedArray(x.shape[:-1] + (x.shape[-1] // 2,), x.dtype)


def _rowsplit_impl(x: Array, *, activation: str, limit: float | None) -> Array:
    gate, up = jnp.split(x, 2, axis=-1)
    if activation == "silu":
        return _silu_gated_impl(gate, up, limit=limit)
    return _gelu_gated_impl(gate, up, approximate=activation == "gelu_tanh")


silu_rowsplit_p = define_primitive("silu_rowsplit", family=FAMILY, operands=("x",),
                                   params=("activation", "limit", "kernel"),
                                   infer_meta=_rowsplit_meta,
                                   impl=xla_lowering("silu_rowsplit", _rowsplit_impl))


def silu_rowsplit(x: ArrayLike, *, activation: str = "silu", limit: float | None = None
                  ) -> Array:
    """The gated activation of the two halves of the last axis: ``gate, up =
    x[..., :d], x[..., d:]``; ``silu_gated(gate, up, limit=limit)`` for
    ``activation="silu"``, ``gelu_gated(gate, up)`` for ``"gelu"`` (exact) and
    ``"gelu_tanh"`` (tanh form; ``limit`` applies to silu only).

    The JVP is that of the composition (split, then silu_gated or
    gelu_gated) in gradrules ops, so the silu path uses silu_gated's fused
    tangent map and backward.
    """
    op = "silu_rowsplit"
    x = float_array(op, "x", x)
    activation = choice_param(op, "activation", activation, ROWSPLIT_ACTIVATIONS)
    limit = limit_param(op, limit)
    if limit is not None and activation != "silu":
        raise ValueError(f"{op_name(op)}: limit (swigluLimit) applies to activation='silu' "
                         f"only, got activation={activation!r}")
    if np.ndim(x) < 1 or np.shape(x)[-1] % 2:
        raise ValueError(f"{op_name(op)}: the last axis of x holds gate and up halves and must "
                         f"have an even size, got x with shape {np.shape(x)}")
    return silu_rowsplit_p.bind(x, activation=activation, limit=limit, kernel=kernel_param(op))


def _silu_rowsplit_reference(x: ArrayLike, *, activation: str = "silu",
                             limit: float | None = None) -> Array:
    gate, up = jnp.split(jnp.asarray(x), 2, axis=-1)
    if activation == "silu":
        return _silu_gated_reference(gate, up, limit=limit)
    return _gelu_gated_reference(gate, up, approximate=activation == "gelu_tanh")


register_op(OpDef("silu_gated", FAMILY, silu_gated, (silu_gated_p, silu_gated_jvp_p,
                                                      silu_gated_vjp_p),
                  _silu_gated_reference, ("gate", "up")))
register_op(OpDef("gelu_gated", FAMILY, gelu_gated, (gelu_gated_p,), _gelu_gated_reference,
                  ("gate", "up")))
register_op(OpDef("silu_rowsplit", FAMILY, silu_rowsplit, (silu_rowsplit_p,),
                  _silu_rowsplit_reference, ("x",)))
