"""Primitives of the gated family: the gated MLP activations silu_gated
(SwiGLU, fused: forward, tangent map and backward primitives), silu_rowsplit
(gate and up as the two halves of the last axis) and gelu_gated (GeGLU).

The trainer's ``swigluLimit`` clamp (``limit``): the gate is clamped from
above at ``limit`` and ``up`` to ``[-limit, limit]`` before the product (as
in gpt-oss); the derivative of a clamp is 1 inside its range, boundary
included, and 0 outside. 16-bit input is computed in float32.

silu_gated's tangent map and backward are written once, in gradrules ops
(``silu_gated_tangent``, ``silu_gated_cotangent``): that composition is their
XLA lowering and the function their JVP rules differentiate. The forwards are
lowered from plain jax.numpy.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray, aval_of
from ..core.args import block_sizes_param, bool_param, choice_param, float_array, number_param
from ..core.kernels import Implementation, implementation
from ..core.meta import check_dtype, op_name
from ..core.numerics import acc_dtype, gated_clamp, silu_and_slope
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import gated as kernels
from ..pallas.gated import BlockSizes
from ._compose import cast
from ._fused import matching_meta, upcast
from ._sharding import row_labels, shard_map_bind
from .activation import clamp, gelu, sigmoid, silu_slope
from .arithmetic import add, multiply
from .compare import le, where
from .convert import promote
from .slicing import split
from .unary import abs as gr_abs

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "gated"
PARAMS = ("limit",)
ROWSPLIT_ACTIVATIONS = ("silu", "gelu", "gelu_tanh")


# the public function's block_sizes argument: None or a valid BlockSizes
_blocks = partial(block_sizes_param, cls=BlockSizes,
                  public_name="gradrules.pallas.gated.BlockSizes")


def _silu_gated_impl(gate: Array, up: Array, *, limit: float | None) -> Array:
    """``silu(gate) up`` with the clamp, in jax.numpy (the formulas of
    ``core.numerics`` that the Pallas kernels use too)."""
    g, u, _, _ = gated_clamp(upcast(gate), upcast(up), limit)
    return (silu_and_slope(g)[0] * u).astype(gate.dtype)


def _silu_terms(gate: Any, up: Any, limit: float | None) -> tuple[Any, ...]:
    """(accumulation dtype, clamped up, silu(gate), silu'(gate) = s (1 + gate
    (1 - s)) with s = sigmoid(gate), and the masks where each clamp passes
    derivatives (None without a limit)), in gradrules ops. The clamps are the
    catalog clamp, whose derivative is 1 inside its range, bounds included, as
    the masks (so the JVPs of the compositions agree with them)."""
    acc = acc_dtype(aval_of(gate).dtype)
    g, u = cast(gate, acc), cast(up, acc)
    mg = mu = None
    if limit is not None:
        mg, mu = le(g, limit), le(gr_abs(u), limit)
        g, u = clamp(g, max=limit), clamp(u, min=-limit, max=limit)
    s = sigmoid(g)
    return acc, u, multiply(g, s), silu_slope(g, s), mg, mu


def _keep(x: Any, mask: Any) -> Any:
    return x if mask is None else where(mask, x, 0.0)


def silu_gated_tangent(gate: Any, up: Any, tg: Any, tu: Any, *, limit: float | None) -> Any:
    """``silu'(gate) up t_gate + silu(gate) t_up`` (each times its clamp's
    mask), in float32 for 16-bit input: silu_gated's tangent map."""
    acc, u, s, ds, mg, mu = _silu_terms(gate, up, limit)
    t = add(_keep(multiply(multiply(ds, u), cast(tg, acc)), mg),
            _keep(multiply(s, cast(tu, acc)), mu))
    return cast(t, aval_of(gate).dtype)


def silu_gated_cotangent(gate: Any, up: Any, g: Any, *, limit: float | None
                         ) -> tuple[Any, Any]:
    """``(g up silu'(gate), g silu(gate))`` (each times its clamp's mask): the
    transpose of the tangent map, silu_gated's backward."""
    acc, u, s, ds, mg, mu = _silu_terms(gate, up, limit)
    gf = cast(g, acc)
    dtype = aval_of(gate).dtype
    return (cast(_keep(multiply(multiply(gf, u), ds), mg), dtype),
            cast(_keep(multiply(gf, s), mu), dtype))


silu_gated_p = define_primitive("silu_gated", family=FAMILY, operands=("gate", "up"),
                                params=PARAMS,
                                infer_meta=matching_meta("silu_gated", ("gate", "up")),
                                implementations={"xla": _silu_gated_impl,
                                                 "pallas": kernels.forward,
                                                 "supports": kernels.supports})
silu_gated_jvp_p = define_primitive(
    "silu_gated_jvp", family=FAMILY, operands=("gate", "up", "tg", "tu"), params=PARAMS,
    infer_meta=matching_meta("silu_gated_jvp", ("gate", "up", "tg", "tu")),
    implementations={"xla": silu_gated_tangent, "pallas": kernels.jvp,
                     "supports": kernels.supports})


def _silu_gated_vjp_meta(gate: Any, up: Any, g: Any, **params: Any) -> tuple[ShapedArray, ...]:
    out = matching_meta("silu_gated_vjp", ("gate", "up", "g"))(gate, up, g)
    return out, out


silu_gated_vjp_p = define_primitive(
    "silu_gated_vjp", family=FAMILY, operands=("gate", "up", "g"), params=PARAMS,
    infer_meta=_silu_gated_vjp_meta, multiple_results=True,
    implementations={"xla": silu_gated_cotangent, "pallas": kernels.backward,
                     "supports": kernels.supports})


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


def silu_gated(gate: ArrayLike, up: ArrayLike, *, limit: float | None = None,
               block_sizes: BlockSizes | None = None) -> Array:
    """SwiGLU: ``silu(gate) * up``, ``silu(x) = x sigmoid(x)``; with ``limit``,
    ``silu(min(gate, limit)) * clip(up, -limit, limit)``.

    d/dgate = ``up silu'(gate)`` with ``silu' = s (1 + gate (1 - s))``, d/dup =
    ``silu(gate)`` (each times its clamp's mask). Three primitives:
    ``silu_gated``, ``silu_gated_jvp`` (tangent map) and ``silu_gated_vjp``
    (backward), transposes of each other, each with an XLA lowering and a
    Pallas kernel (``pallas/gated.py``). ``block_sizes``, a
    ``pallas.gated.BlockSizes``, sets the kernels' tiles (never the result).
    On a mesh the primitive is bound inside ``jax.shard_map`` over the axes
    that gate's dims are sharded on (``primitives/_sharding``).
    """
    op = "silu_gated"
    gate, up = _pair(op, gate, up)
    params = dict(limit=limit_param(op, limit),
                  implementation=implementation(_blocks(op, block_sizes)))
    labels = row_labels(np.ndim(gate), axis_label="features")
    (out,) = shard_map_bind(lambda g, u: [silu_gated_p.bind(g, u, **params)], (gate, up),
                            (labels, labels), (labels,))
    return out


def _silu_gated_reference(gate: ArrayLike, up: ArrayLike, *, limit: float | None = None
                          ) -> Array:
    gate, up = jnp.asarray(gate), jnp.asarray(up)
    g, u = upcast(gate), upcast(up)
    if limit is not None:
        g, u = jnp.where(g <= limit, g, limit), jnp.where(jnp.abs(u) <= limit, u,
                                                             jnp.sign(u) * limit)
    return (jax.nn.silu(g) * u).astype(gate.dtype)


register_op(OpDef(name="silu_gated", family=FAMILY, fn=silu_gated,
                  primitives=(silu_gated_p, silu_gated_jvp_p, silu_gated_vjp_p),
                  reference=_silu_gated_reference, operands=("gate", "up")))


# --------------------------------------------------------------- gelu_gated
def gelu_gated_composition(gate: Any, up: Any, *, approximate: bool) -> Any:
    """``gelu(gate) * up`` with the gradrules gelu, in float32 for 16-bit
    input: gelu_gated's lowering and the function its JVP differentiates."""
    dtype = aval_of(gate).dtype
    acc = acc_dtype(dtype)
    return cast(multiply(gelu(cast(gate, acc), approximate=approximate), cast(up, acc)), dtype)


gelu_gated_p = define_primitive("gelu_gated", family=FAMILY, operands=("gate", "up"),
                                params=("approximate",),
                                infer_meta=matching_meta("gelu_gated", ("gate", "up")),
                                impl=gelu_gated_composition)


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
    return (jax.nn.gelu(upcast(gate), approximate=approximate)
            * upcast(jnp.asarray(up))).astype(gate.dtype)


register_op(OpDef(name="gelu_gated", family=FAMILY, fn=gelu_gated, primitives=(gelu_gated_p,),
                  reference=_gelu_gated_reference, operands=("gate", "up")))


# ------------------------------------------------------------ silu_rowsplit
def _rowsplit_meta(x: Any, *, activation: str, limit: float | None, implementation: Implementation
                   ) -> ShapedArray:
    op = "silu_rowsplit"
    check_dtype(op, "x", x.dtype, "float")
    if not x.shape or x.shape[-1] % 2:
        raise ValueError(f"{op_name(op)}: the last axis of x holds gate and up halves and must "
                         f"have an even size, got x with shape {tuple(x.shape)}")
    return ShapedArray(x.shape[:-1] + (x.shape[-1] // 2,), x.dtype)


def silu_rowsplit_composition(x: Any, *, activation: str, limit: float | None,
                              implementation: Implementation) -> Any:
    """The halves of the last axis through silu_gated (with silu_rowsplit's
    implementation) or gelu_gated: silu_rowsplit's lowering and the function
    its JVP differentiates."""
    gate, up = split(x, indices_or_sections=2, axis=-1)
    if activation == "silu":
        return silu_gated_p.bind(gate, up, limit=limit, implementation=implementation)
    return gelu_gated_p.bind(gate, up, approximate=activation == "gelu_tanh")


silu_rowsplit_p = define_primitive("silu_rowsplit", family=FAMILY, operands=("x",),
                                   params=("activation", "limit"),
                                   infer_meta=_rowsplit_meta,
                                   implementations={"xla": silu_rowsplit_composition})


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
    return silu_rowsplit_p.bind(x, activation=activation, limit=limit,
                                implementation=implementation())


def _silu_rowsplit_reference(x: ArrayLike, *, activation: str = "silu",
                             limit: float | None = None) -> Array:
    gate, up = jnp.split(jnp.asarray(x), 2, axis=-1)
    if activation == "silu":
        return _silu_gated_reference(gate, up, limit=limit)
    return _gelu_gated_reference(gate, up, approximate=activation == "gelu_tanh")


register_op(OpDef(name="silu_rowsplit", family=FAMILY, fn=silu_rowsplit,
                  primitives=(silu_rowsplit_p,), reference=_silu_rowsplit_reference,
                  operands=("x",)))
