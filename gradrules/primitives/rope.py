"""Primitives of the rope family: rotary position embedding (the trainer's
``rope`` with ``startPos``), rotate-half convention.

Rope is linear in x, so the three fused primitives of DESIGN.md collapse into
one: ``rope_p`` is its own tangent map, and its transpose (the backward) is
``rope_p`` with the angle negated (``inverse=True``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import as_array, block_sizes_param, float_array, int_param, number_param
from ..core.kernels import Implementation, implementation
from ..core.meta import check_dtype, op_name
from ..core.numerics import acc_dtype, rope_inv_freq, rope_rotate
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import rope as kernels
from ..pallas.rope import BlockSizes
from ._fused import computed_once
from ._sharding import shard_map_bind

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "rope"
_OP = "rope"


# the public function's block_sizes argument: None or a valid BlockSizes
_blocks = partial(block_sizes_param, cls=BlockSizes,
                  public_name="gradrules.pallas.rope.BlockSizes")


def _rope_infer_meta(x: Any, positions: Any, *, theta: float, inverse: bool,
                     implementation: Implementation) -> ShapedArray:
    check_dtype(_OP, "x", x.dtype, "float")
    check_dtype(_OP, "positions", positions.dtype, "int")
    if len(x.shape) != 4 or x.shape[-1] % 2:
        raise ValueError(f"{op_name(_OP)}: argument x must be [batch, seq, heads, head_dim] "
                         f"with an even head_dim, got shape {tuple(x.shape)}")
    b, s = x.shape[:2]
    if tuple(positions.shape) not in ((s,), (b, s)):
        raise ValueError(f"{op_name(_OP)}: argument positions must have shape [seq] = ({s},) "
                         f"or [batch, seq] = ({b}, {s}) for x with shape {tuple(x.shape)}, "
                         f"got {tuple(positions.shape)}")
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)


def angles(positions: Array, head_dim: int, theta: float, dtype: Any) -> tuple[Array, Array]:
    """cos and sin of ``positions * theta ** (-2 i / head_dim)``, i < head_dim / 2,
    shaped ``[batch or 1, seq, 1, head_dim / 2]``."""
    inv_freq = rope_inv_freq(head_dim, theta)
    pos = jnp.asarray(positions).astype(dtype)
    pos = pos[None] if pos.ndim == 1 else pos
    ang = pos[:, :, None, None] * jnp.asarray(inv_freq, dtype)
    return jnp.cos(ang), jnp.sin(ang)


def _rope_impl(x: Array, positions: Array, *, theta: float, inverse: bool) -> Array:
    """Rotate each pair (x[i], x[i + D/2]) by the angle (its negative if
    ``inverse``), the angles' cos and sin tables computed once
    (``_fused.computed_once``), not once per head and batch entry."""
    acc = acc_dtype(x.dtype)
    half = x.shape[-1] // 2
    cos, sin = computed_once(*angles(positions, 2 * half, theta, acc))
    if inverse:
        sin = -sin
    x1, x2 = x[..., :half].astype(acc), x[..., half:].astype(acc)
    return jnp.concatenate(rope_rotate(x1, x2, cos, sin), -1).astype(x.dtype)


rope_p = define_primitive("rope", family=FAMILY, operands=("x", "positions"),
                          params=("theta", "inverse"), infer_meta=_rope_infer_meta,
                          implementations={"xla": _rope_impl, "pallas": kernels.rope,
                                           "supports": kernels.supports})


# the dims a mesh may shard (primitives/_sharding): all but head_dim
_X_LABELS = ("batch", "seq", "heads", None)
_POSITION_LABELS = {1: ("seq",), 2: ("batch", "seq")}


def rope(x: ArrayLike, *, positions: ArrayLike | None = None, start_pos: int = 0,
         theta: float = 10000.0, block_sizes: BlockSizes | None = None) -> Array:
    """Rotary position embedding of ``x [B, S, H, D]`` (D even), rotate-half.

    With ``f_i = theta ** (-2 i / D)`` and the angle ``a = p f_i`` of position
    ``p`` (``positions [S]`` or ``[B, S]``, integers; by default
    ``start_pos + arange(S)``), each pair ``(x_i, x_{i + D/2})`` is rotated::

        out_i = x_i cos a - x_{i+D/2} sin a,   out_{i+D/2} = x_{i+D/2} cos a + x_i sin a

    Linear in x: the tangent is rope of the tangent, and the transpose is the
    inverse rotation (rope with the angle negated). ``positions`` takes no
    tangent. 16-bit input is rotated in float32.

    One primitive, ``rope``, with an XLA lowering and a Pallas kernel
    (``pallas/rope.py``); ``block_sizes``, a ``pallas.rope.BlockSizes``, sets
    the kernel's tiles (never the result). On a mesh the primitive is bound
    inside ``jax.shard_map`` over the axes that x's batch, seq and heads are
    sharded on (``primitives/_sharding``).
    """
    x = float_array(_OP, "x", x)
    if np.ndim(x) != 4:
        raise ValueError(f"{op_name(_OP)}: argument x must be [batch, seq, heads, head_dim], "
                         f"got shape {np.shape(x)}")
    theta = number_param(_OP, "theta", theta, gt=0.0)
    start_pos = int_param(_OP, "start_pos", start_pos)
    if positions is None:
        positions = np.arange(start_pos, start_pos + np.shape(x)[1], dtype=np.int32)
    else:
        if start_pos != 0:
            raise ValueError(f"{op_name(_OP)}: give positions or start_pos, not both "
                             f"(start_pos={start_pos})")
        positions = as_array(_OP, "positions", positions)
        check_dtype(_OP, "positions", jnp.result_type(positions), "int")
        positions = jnp.asarray(positions) if np.ndim(positions) == 0 else positions
    params = dict(theta=theta, inverse=False,
                  implementation=implementation(_blocks(_OP, block_sizes)))
    (out,) = shard_map_bind(lambda x, p: [rope_p.bind(x, p, **params)], (x, positions),
                            (_X_LABELS, _POSITION_LABELS.get(np.ndim(positions), ())),
                            (_X_LABELS,))
    return out


@partial(jax.jit, static_argnames=("start_pos", "theta"))
def rope_reference(x: Array, *, positions: Array | None = None, start_pos: int = 0,
                   theta: float = 10000.0) -> Array:
    """Plain jax.numpy rope: x cos + rotate_half(x) sin (jitted, so that the
    checker's derivatives of it compile once)."""
    x = jnp.asarray(x)
    if positions is None:
        positions = jnp.arange(x.shape[1]) + start_pos
    cos, sin = angles(positions, x.shape[-1], theta, acc_dtype(x.dtype))
    cos, sin = (jnp.concatenate([c, c], -1) for c in (cos, sin))
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], -1)
    return (x * cos + rotated * sin).astype(x.dtype)


register_op(OpDef(name="rope", family=FAMILY, fn=rope, primitives=(rope_p,),
                  reference=rope_reference, operands=("x",), linear=(("x",),)))
