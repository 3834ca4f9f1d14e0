"""Primitives of the gated family: the gated MLP activations silu_gated
(SwiGLU) and gelu_gated (GeGLU), each fused as three primitives (forward,
tangent map and backward, from one factory, ``_gated_primitives``),
silu_rowsplit (gate and up as the two halves of the last axis), and jax.nn's
glu (``a * sigmoid(b)`` of the two halves of any axis).

The trainer's ``swigluLimit`` clamp (``limit``, silu_gated): the gate is
clamped from above at ``limit`` and ``up`` to ``[-limit, limit]`` before the
product (as in gpt-oss); the derivative of a clamp is 1 inside its range,
boundary included, and 0 outside. 16-bit input is computed in float32.

The tangent map and backward are written once, in gradrules ops
(``gated_tangent``, ``gated_cotangent``): that composition is their XLA
lowering and the function their JVP rules differentiate. The forwards are
lowered from plain jax.numpy (``core.numerics.gate_and_slope``, which the
kernels trace too).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import Primitive, ShapedArray, aval_of
from ..core.args import block_sizes_param, bool_param, choice_param, float_array, number_param
from ..core.kernels import Implementation, implementation
from ..core.meta import check_dtype, normalize_axis, op_name
from ..core.numerics import acc_dtype, gate_and_slope, gated_clamp
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import gated as kernels
from ..pallas.gated import BlockSizes
from ._compose import cast
from ._fused import matching_meta, upcast
from ._sharding import row_labels, shard_map_bind
from .activation import clamp, gelu, gelu_slope, sigmoid, sigmoid_and_slope, silu_slope
from .arithmetic import add, multiply
from .compare import le, where
from .convert import promote
from .slicing import split
from .unary import abs as gr_abs

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "gated"
ROWSPLIT_ACTIVATIONS = ("silu", "gelu", "gelu_tanh")


# the public function's block_sizes argument: None or a valid BlockSizes
_blocks = partial(block_sizes_param, cls=BlockSizes,
                  public_name="gradrules.pallas.gated.BlockSizes")


def _gated_impl(gate: Array, up: Array, *, activation: str, limit: float | None = None,
                approximate: bool = False) -> Array:
    """``act(gate) up`` with the clamp, in jax.numpy (the formulas of
    ``core.numerics`` that the Pallas kernels use too)."""
    g, u, _, _ = gated_clamp(upcast(gate), upcast(up), limit)
    act = gate_and_slope(activation, g, approximate=approximate)[0]
    return (act * u).astype(gate.dtype)


def _gated_terms(gate: Any, up: Any, activation: str, limit: float | None, approximate: bool
                 ) -> tuple[Any, ...]:
    """(accumulation dtype, clamped up, act(gate), act'(gate), and the masks
    where each clamp passes derivatives (None without a limit)), in gradrules
    ops: ``silu(x) = x s`` and ``silu_slope``, or ``gelu`` and
    ``gelu_slope``. silu's ``s = sigmoid(x)`` is the first output of the
    ``sigmoid_and_slope`` that ``silu_slope`` takes ``s'`` from (as silu's
    own JVP does), so the two are one exp per element, in every order; a
    separate ``sigmoid`` is a second exp, and its value a third buffer that
    XLA writes out in a Hessian-vector product (where ``s`` and ``s'``
    each feed both outputs). The clamps are the catalog clamp, whose
    derivative is 1 inside its range, bounds included, as the masks (so the
    JVPs of the compositions agree with them)."""
    acc = acc_dtype(aval_of(gate).dtype)
    g, u = cast(gate, acc), cast(up, acc)
    mg = mu = None
    if limit is not None:
        mg, mu = le(g, limit), le(gr_abs(u), limit)
        g, u = clamp(g, max=limit), clamp(u, min=-limit, max=limit)
    if activation == "silu":
        s = sigmoid_and_slope(g)[0]
        return acc, u, multiply(g, s), silu_slope(g, s), mg, mu
    return acc, u, gelu(g, approximate=approximate), gelu_slope(g, approximate), mg, mu


def _keep(x: Any, mask: Any) -> Any:
    return x if mask is None else where(mask, x, 0.0)


def gated_tangent(gate: Any, up: Any, tg: Any, tu: Any, *, activation: str,
                  limit: float | None = None, approximate: bool = False) -> Any:
    """``act'(gate) up t_gate + act(gate) t_up`` (each times its clamp's
    mask), in float32 for 16-bit input: the gated ops' tangent map."""
    acc, u, act, slope, mg, mu = _gated_terms(gate, up, activation, limit, approximate)
    t = add(_keep(multiply(multiply(slope, u), cast(tg, acc)), mg),
            _keep(multiply(act, cast(tu, acc)), mu))
    return cast(t, aval_of(gate).dtype)


def gated_cotangent(gate: Any, up: Any, g: Any, *, activation: str, limit: float | None = None,
                    approximate: bool = False) -> tuple[Any, Any]:
    """``(g up act'(gate), g act(gate))`` (each times its clamp's mask): the
    transpose of the tangent map, the gated ops' backward. ``up act'(gate)``
    is formed first, as in the tangent map: where act' is 0 (gate = -3e38)
    it is 0, where ``g up`` could overflow to inf and give inf * 0 = NaN."""
    acc, u, act, slope, mg, mu = _gated_terms(gate, up, activation, limit, approximate)
    gf = cast(g, acc)
    dtype = aval_of(gate).dtype
    return (cast(_keep(multiply(gf, multiply(u, slope)), mg), dtype),
            cast(_keep(multiply(gf, act), mu), dtype))


def _gated_primitives(name: str, activation: str, params: tuple[str, ...]
                      ) -> tuple[Primitive, Primitive, Primitive]:
    """A gated op's three primitives: ``name`` (forward), ``name_jvp``
    (tangent map, linear in tg, tu) and ``name_vjp`` (backward, linear in
    g), each lowered by its XLA entry (``_gated_impl``, ``gated_tangent``,
    ``gated_cotangent``) or its Pallas kernel, for ``activation``."""
    def table(xla: Any, pallas: Any) -> dict[str, Any]:
        return {"xla": partial(xla, activation=activation),
                "pallas": partial(pallas, activation=activation), "supports": kernels.supports}

    def vjp_meta(gate: Any, up: Any, g: Any, **params: Any) -> tuple[ShapedArray, ...]:
        out = matching_meta(f"{name}_vjp", ("gate", "up", "g"))(gate, up, g)
        return out, out

    forward = define_primitive(name, family=FAMILY, operands=("gate", "up"), params=params,
                               infer_meta=matching_meta(name, ("gate", "up")),
                               implementations=table(_gated_impl, kernels.forward))
    jvp = define_primitive(f"{name}_jvp", family=FAMILY, operands=("gate", "up", "tg", "tu"),
                           params=params,
                           infer_meta=matching_meta(f"{name}_jvp", ("gate", "up", "tg", "tu")),
                           implementations=table(gated_tangent, kernels.jvp))
    vjp = define_primitive(f"{name}_vjp", family=FAMILY, operands=("gate", "up", "g"),
                           params=params, infer_meta=vjp_meta, multiple_results=True,
                           implementations=table(gated_cotangent, kernels.backward))
    return forward, jvp, vjp


silu_gated_p, silu_gated_jvp_p, silu_gated_vjp_p = _gated_primitives("silu_gated", "silu",
                                                                      ("limit",))
gelu_gated_p, gelu_gated_jvp_p, gelu_gated_vjp_p = _gated_primitives("gelu_gated", "gelu",
                                                                      ("approximate",))


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


def _bind(prim: Primitive, gate: Array, up: Array, block_sizes: Any, **params: Any) -> Array:
    """``prim`` bound on gate and up with ``params`` and the implementation
    (``block_sizes`` checked), inside ``jax.shard_map`` over the axes that
    gate's dims are sharded on (``primitives/_sharding``)."""
    params["implementation"] = implementation(_blocks(prim.name, block_sizes))
    labels = row_labels(np.ndim(gate), axis_label="features")
    (out,) = shard_map_bind(lambda g, u: [prim.bind(g, u, **params)], (gate, up),
                            (labels, labels), (labels,))
    return out


def silu_gated(gate: ArrayLike, up: ArrayLike, *, limit: float | None = None,
               block_sizes: BlockSizes | None = None) -> Array:
    """SwiGLU: ``silu(gate) * up``, ``silu(x) = x sigmoid(x)``; with ``limit``,
    ``silu(min(gate, limit)) * clip(up, -limit, limit)``.

    d/dgate = ``up silu'(gate)`` with ``silu' = s (1 + gate sigmoid(-gate))``,
    ``s = sigmoid(gate)``; d/dup = ``silu(gate)`` (each times its clamp's
    mask). Three primitives:
    ``silu_gated``, ``silu_gated_jvp`` (tangent map) and ``silu_gated_vjp``
    (backward), transposes of each other, each with an XLA lowering and a
    Pallas kernel (``pallas/gated.py``). ``block_sizes``, a
    ``pallas.gated.BlockSizes``, sets the kernels' tiles (never the result).
    On a mesh the primitive is bound inside ``jax.shard_map`` over the axes
    that gate's dims are sharded on (``primitives/_sharding``).
    """
    op = "silu_gated"
    gate, up = _pair(op, gate, up)
    return _bind(silu_gated_p, gate, up, block_sizes, limit=limit_param(op, limit))


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
def gelu_gated(gate: ArrayLike, up: ArrayLike, *, approximate: bool = False,
               block_sizes: BlockSizes | None = None) -> Array:
    """GeGLU: ``gelu(gate) * up``; ``gelu(x) = x Phi(x)``, ``Phi(x) =
    erfc(-x / sqrt 2) / 2``, or with ``approximate`` its tanh form ``x
    sigmoid(2 u)``, ``u = sqrt(2 / pi) (x + 0.044715 x**3)``.

    d/dgate = ``up gelu'(gate)`` (``gelu'`` as ``gradrules.gelu`` states it),
    d/dup = ``gelu(gate)``. Three primitives: ``gelu_gated``,
    ``gelu_gated_jvp`` (tangent map) and ``gelu_gated_vjp`` (backward),
    transposes of each other, each with an XLA lowering and a Pallas kernel
    (``pallas/gated.py``; the exact form's erfc there is
    ``core.numerics.erfc_from_exp``, within 1.2e-7 relative). ``block_sizes``
    and meshes as for ``silu_gated``.
    """
    op = "gelu_gated"
    gate, up = _pair(op, gate, up)
    return _bind(gelu_gated_p, gate, up, block_sizes,
                 approximate=bool_param(op, "approximate", approximate))


def _gelu_gated_reference(gate: ArrayLike, up: ArrayLike, *, approximate: bool = False
                          ) -> Array:
    gate = jnp.asarray(gate)
    return (jax.nn.gelu(upcast(gate), approximate=approximate)
            * upcast(jnp.asarray(up))).astype(gate.dtype)


register_op(OpDef(name="gelu_gated", family=FAMILY, fn=gelu_gated,
                  primitives=(gelu_gated_p, gelu_gated_jvp_p, gelu_gated_vjp_p),
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
    return gelu_gated_p.bind(gate, up, approximate=activation == "gelu_tanh",
                             implementation=implementation)


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


# --------------------------------------------------------------------- glu
def _glu_meta(x: Any, *, axis: int) -> ShapedArray:
    op = "glu"
    check_dtype(op, "x", x.dtype, "float")
    if not 0 <= axis < len(x.shape) or x.shape[axis] % 2:
        raise ValueError(f"{op_name(op)}: axis {axis} of x holds the halves a and b and must "
                         f"exist and have an even size, got x with shape {tuple(x.shape)}")
    shape = tuple(x.shape)
    return ShapedArray(shape[:axis] + (shape[axis] // 2,) + shape[axis + 1:], x.dtype,
                       weak_type=x.weak_type)


def _glu_impl(x: Array, *, axis: int) -> Array:
    return jax.nn.glu(x, axis)


glu_p = define_primitive("glu", family=FAMILY, operands=("x",), params=("axis",),
                         infer_meta=_glu_meta, impl=_glu_impl)


def glu_composition(x: Any, *, axis: int) -> Any:
    """``a * sigmoid(b)`` of the halves of ``axis``, in gradrules ops (split,
    sigmoid, multiply): the function glu's JVP differentiates."""
    a, b = split(x, indices_or_sections=2, axis=axis)
    return multiply(a, sigmoid(b))


def glu(x: ArrayLike, axis: int = -1) -> Array:
    """The gated linear unit (jax.nn.glu): ``a * sigmoid(b)`` with ``a, b`` the
    first and second halves of ``x`` along ``axis``, which must have an even
    size (a ValueError naming the shape otherwise).

    d/da = sigmoid(b), d/db = a sigmoid(b) sigmoid(-b): the JVP is that of
    ``glu_composition`` in gradrules ops (split's tangent is the split
    tangent), so every order is made of catalog primitives.
    """
    x = float_array("glu", "x", x)
    if np.ndim(x) == 0:
        raise ValueError(f"{op_name('glu')}: x must have at least one axis, got a scalar")
    ax = normalize_axis("glu", axis, np.ndim(x))
    if np.shape(x)[ax] % 2:
        raise ValueError(f"{op_name('glu')}: axis {axis} of x holds the halves a and b and "
                         f"must have an even size, got x with shape {np.shape(x)}")
    return glu_p.bind(x, axis=ax)


def _glu_reference(x: ArrayLike, axis: int = -1) -> Array:
    return jax.nn.glu(jnp.asarray(x), axis)


register_op(OpDef(name="glu", family=FAMILY, fn=glu, primitives=(glu_p,),
                  reference=_glu_reference, operands=("x",)))
