"""Binary arithmetic with numpy broadcasting: add, subtract, multiply, divide,
pow, maximum, minimum, remainder, fmod, atan2, logaddexp, hypot, residual_add,
bias_add, the ternary lerp, and the scalar-param ops scale and div_scale.

The broadcasting ops are made by ``define_elementwise`` (primitive, public
function and manifest entry in one call); add, subtract, multiply and divide
also take Paddle's ``axis`` argument, and so do their jax.numpy references.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import number_param
from ..core.meta import check_dtype, op_name, paddle_axis_shape
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._elementwise import define_elementwise, elementwise_primitive
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "arithmetic"
XY = ("x", "y")


def _paddle_reference(fn: Callable[..., Array], x: ArrayLike, y: ArrayLike, *,
                      axis: int = -1) -> Array:
    """The jax.numpy reference ``fn(x, y)`` with Paddle's ``axis`` argument:
    ``y`` reshaped for it first (-1: unchanged, numpy broadcasting)."""
    return fn(x, jnp.reshape(y, paddle_axis_shape("reference", np.shape(x), np.shape(y), axis)))


# ----------------------------------------------------------------------- add
add_p, add = define_elementwise("add", jnp.add, """x + y, numpy broadcasting.

Linear in (x, y): the tangent is t_x + t_y and the transpose sends the
cotangent to both operands, summed over the axes each was broadcast along.
``axis`` is Paddle's broadcasting argument (-1: numpy rules).""",
                                family=FAMILY, kind="numeric", operands=XY, paddle_axis=True,
                                reference=partial(_paddle_reference, jnp.add), linear=(XY,),
                                order=3)


# ------------------------------------------------------------------ subtract
subtract_p, subtract = define_elementwise("subtract", jnp.subtract, """x - y.

Linear in (x, y): tangent t_x - t_y; transpose (ct, -ct), unbroadcast.""",
                                          family=FAMILY, kind="numeric", operands=XY,
                                          paddle_axis=True,
                                          reference=partial(_paddle_reference, jnp.subtract),
                                          linear=(XY,), order=3)


# ------------------------------------------------------------------ multiply
multiply_p, multiply = define_elementwise("multiply", jnp.multiply, """x * y.

Bilinear: tangent t_x * y + x * t_y; the transpose for x is ct * y (and for y,
x * ct), summed over broadcast axes.""",
                                          family=FAMILY, kind="numeric", operands=XY,
                                          paddle_axis=True,
                                          reference=partial(_paddle_reference, jnp.multiply),
                                          linear=(("x",), ("y",)), order=3)


# -------------------------------------------------------------------- divide
divide_p, divide = define_elementwise("divide", jnp.divide, """x / y (true division).

Linear in x: d/dx = 1 / y, transpose ct / y. d/dy = -x / y**2 = -out / y.""",
                                      family=FAMILY, kind="float", operands=XY,
                                      paddle_axis=True,
                                      reference=partial(_paddle_reference, jnp.divide),
                                      linear=(("x",),), order=3)


# ------------------------------------------------- nonlinear binary ops
pow_p, pow = define_elementwise("pow", jnp.power, """x ** y (Paddle's elementwise_pow).

d/dx = y * x**(y - 1) (0 where y == 0); d/dy = log(x) * x**y (0 where x == 0).""",
                                family=FAMILY, kind="float", operands=XY)

maximum_p, maximum = define_elementwise("maximum", jnp.maximum, """max(x, y) elementwise.

d/dx = [x > y] + 0.5 [x == y], d/dy = [y > x] + 0.5 [x == y]: ties split the
gradient evenly, as the core IR and Paddle do.""",
                                        family=FAMILY, kind="numeric", operands=XY, order=3)

minimum_p, minimum = define_elementwise("minimum", jnp.minimum, """min(x, y) elementwise.

d/dx = [x < y] + 0.5 [x == y], d/dy = [y < x] + 0.5 [x == y] (ties split).""",
                                        family=FAMILY, kind="numeric", operands=XY, order=3)

remainder_p, remainder = define_elementwise("remainder", jnp.remainder, """x mod y with the
sign of y (Python's %, numpy's remainder): x - floor(x / y) * y.

d/dx = 1, d/dy = -floor(x / y) (away from the jumps).""",
                                            family=FAMILY, kind="numeric", operands=XY)

fmod_p, fmod = define_elementwise("fmod", jnp.fmod, """x mod y with the sign of x (C's fmod):
x - trunc(x / y) * y.

d/dx = 1, d/dy = -trunc(x / y) (away from the jumps).""",
                                  family=FAMILY, kind="numeric", operands=XY)

atan2_p, atan2 = define_elementwise("atan2", jnp.arctan2, """atan2(x, y): the angle of the
point (y, x).

d/dx = y / (x**2 + y**2), d/dy = -x / (x**2 + y**2).""",
                                    family=FAMILY, kind="float", operands=XY)

logaddexp_p, logaddexp = define_elementwise("logaddexp", jnp.logaddexp, """log(exp(x) + exp(y)),
computed as max(x, y) + log1p(exp(-|x - y|)): no overflow, -inf where both are -inf.

d/dx = sigmoid(x - y) = exp(x - out), d/dy = sigmoid(y - x): finite for any
x and y, +-1e4 included. Where x and y are the same infinity the difference
is taken as 0 (a double where, so every higher derivative is 0 there): at
x = y = -inf both derivatives are 0, the convention of ``logsumexp`` over an
all -inf row (jnp.logaddexp gives NaN there); at x = y = +inf they are 1/2
each (ties split, as ``maximum``).""", family=FAMILY, kind="float", operands=XY)

hypot_p, hypot = define_elementwise("hypot", jnp.hypot, """sqrt(x**2 + y**2) without overflow
or underflow (jnp.hypot's scaled form).

d/dx = x / out, d/dy = y / out; at x = y = 0, where the cone has no
derivative, both are 0 (the minimum-norm subgradient), and so is every higher
derivative there (a double where: never 0 / 0).""", family=FAMILY, kind="float", operands=XY)


def _lerp_impl(x: Array, y: Array, w: Array) -> Array:
    return x + w * (y - x)


lerp_p, lerp = define_elementwise("lerp", _lerp_impl, """torch.lerp: x + w (y - x), with an
array (or scalar) weight w; x, y and w broadcast together.

Linear in (x, y) jointly for a fixed w: d/dx = 1 - w, d/dy = w, and the
transpose sends the cotangent to x as ct (1 - w) and to y as ct w (summed
over broadcast axes). d/dw = y - x.""", family=FAMILY, kind="float",
                                  operands=("x", "y", "w"), linear=(XY,))

residual_add_p, residual_add = define_elementwise("residual_add", jnp.add, """a + b, the
residual connection of a transformer block (the trainer's residual_add). Linear.""",
                                                  family=FAMILY, kind="numeric",
                                                  operands=("a", "b"), linear=(("a", "b"),))


# ------------------------------------------------------------------ bias_add
def _bias_add_infer_meta(x: Any, bias: Any) -> ShapedArray:
    check_dtype("bias_add", "x", x.dtype, "numeric")
    check_dtype("bias_add", "bias", bias.dtype, "numeric")
    if x.dtype != bias.dtype:
        raise TypeError(f"{op_name('bias_add')}: x ({x.dtype}) and bias ({bias.dtype}) must "
                        "share one dtype")
    if len(x.shape) < 1 or tuple(bias.shape) != (x.shape[-1],):
        raise ValueError(f"{op_name('bias_add')}: bias must have shape (x.shape[-1],); got x "
                         f"with shape {tuple(x.shape)} and bias with shape {tuple(bias.shape)}")
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type and bias.weak_type)


bias_add_p = define_primitive("bias_add", family=FAMILY, operands=("x", "bias"),
                              infer_meta=_bias_add_infer_meta, impl=jnp.add)


def bias_add(x: ArrayLike, bias: ArrayLike) -> Array:
    """x + bias, the bias laid along the last axis of x (shape ``(x.shape[-1],)``).

    Linear in (x, bias); the transpose for bias sums the cotangent over every
    axis but the last. A bias of any other shape is an error, not a broadcast.
    """
    x, bias = promote("bias_add", {"x": x, "bias": bias}, "numeric")
    return bias_add_p.bind(x, bias)


register_op(OpDef(name="bias_add", family=FAMILY, fn=bias_add, primitives=(bias_add_p,),
                  reference=jnp.add, operands=("x", "bias"), linear=(("x", "bias"),)))


# --------------------------------------------------------------------- scale
def _scale_impl(x: Array, *, scale: float) -> Array:
    return x * jnp.asarray(scale, x.dtype)


scale_p = elementwise_primitive("scale", _scale_impl, family=FAMILY, params=("scale",))


def scale(x: ArrayLike, *, scale: float) -> Array:
    """x * scale for a static number ``scale`` (LoRA's alpha / r). Linear;
    the transpose is scale(ct, scale=scale)."""
    (x,) = promote("scale", {"x": x}, "float")
    return scale_p.bind(x, scale=number_param("scale", "scale", scale))


def _scale_reference(x: ArrayLike, *, scale: float) -> Array:
    return x * scale


register_op(OpDef(name="scale", family=FAMILY, fn=scale, primitives=(scale_p,),
                  reference=_scale_reference, operands=("x",), linear=(("x",),)))


# ----------------------------------------------------------------- div_scale
def _div_scale_impl(x: Array, *, scale: float) -> Array:
    return x / jnp.asarray(scale, x.dtype)


div_scale_p = elementwise_primitive("div_scale", _div_scale_impl, family=FAMILY,
                                    params=("scale",))


def div_scale(x: ArrayLike, *, scale: float) -> Array:
    """x / scale for a static nonzero number ``scale``. Linear; the transpose
    is div_scale(ct, scale=scale)."""
    (x,) = promote("div_scale", {"x": x}, "float")
    s = number_param("div_scale", "scale", scale)
    if s == 0:
        raise ValueError(f"{op_name('div_scale')}: scale must be nonzero")
    return div_scale_p.bind(x, scale=s)


def _div_scale_reference(x: ArrayLike, *, scale: float) -> Array:
    return x / scale


register_op(OpDef(name="div_scale", family=FAMILY, fn=div_scale, primitives=(div_scale_p,),
                  reference=_div_scale_reference, operands=("x",), linear=(("x",),)))
