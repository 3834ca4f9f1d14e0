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
from ..core.args import as_array, float_array, int_param, number_param
from ..core.kernels import Implementation, implementation
from ..core.meta import check_dtype, op_name
from ..core.numerics import acc_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "rope"
_OP = "rope"


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
    inv_freq = theta ** (-np.arange(0, head_dim // 2, dtype=np.float64) * 2.0 / head_dim)
    pos = jnp.asarray(positions).astype(dtype)
    pos = pos[None] if pos.ndim == 1 else pos
    ang = pos[:, :, None, None] * jnp.asarray(inv_freq, dtype)
    return jnp.cos(ang), jnp.sin(ang)


def _rope_impl(x: Array, positions: Array, *, theta: float, inverse: bool) -> Array:
    """Rotate each pair (x[i], x[i + D/2]) by the angle (its negative if ``inverse``)."""
    acc = acc_dtype(x.dtype)
    half = x.shape[-1] // 2
    cos, sin = angles(positions, 2 * half, theta, acc)
    if inverse:
        sin = -sin
    x1, x2 = x[..., :half].astype(acc), x[..., half:].astype(acc)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).astype(x.dtype)


rope_p = define_primitive("rope", family=FAMILY, operands=("x", "positions"),
                          params=("theta", "inverse"), infer_meta=_rope_infer_meta,
                          implementations={"xla": _rope_impl})


def rope(x: ArrayLike, *, positions: ArrayLike | None = None, start_pos: int = 0,
         theta: float = 10000.0) -> Array:
    """Rotary position embedding of ``x [B, S, H, D]`` (D even), rotate-half.

    With ``f_i = theta ** (-2 i / D)`` and the angle ``a = p f_i`` of position
    ``p`` (``positions [S]`` or ``[B, S]``, integers; by default
    ``start_pos + arange(S)``), each pair ``(x_i, x_{i + D/2})`` is rotated::

        out_i = x_i cos a - x_{i+D/2} sin a,   out_{i+D/2} = x_{i+D/2} cos a + x_i sin a

    Linear in x: the tangent is rope of the tangent, and the transpose is the
    inverse rotation (rope with the angle negated). ``positions`` takes no
    tangent. 16-bit input is rotated in float32.
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
    return rope_p.bind(x, positions, theta=theta, inverse=False,
                       implementation=implementation())


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
