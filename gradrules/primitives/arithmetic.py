"""Binary arithmetic with numpy broadcasting: add, subtract, multiply, divide,
pow, maximum, minimum, remainder, fmod, atan2, residual_add, bias_add, and the
scalar-param ops scale and div_scale."""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.meta import check_dtype, number_param, op_name, paddle_axis_shape
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._elementwise import (elementwise_op, elementwise_primitive, promote,
                           register_elementwise)

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "arithmetic"
XY = ("x", "y")


def _paddle_reference(fn: Any) -> Any:
    """A jax.numpy reference that also takes Paddle's ``axis`` argument."""
    def reference(x: ArrayLike, y: ArrayLike, *, axis: int = -1) -> Array:
        y = jnp.reshape(y, paddle_axis_shape("reference", np.shape(x), np.shape(y), axis))
        return fn(x, y)
    reference.__name__ = f"reference_{fn.__name__}"
    return reference


add_p = elementwise_primitive("add", jnp.add, family=FAMILY, operands=XY, kind="numeric")
add = elementwise_op(add_p, kind="numeric", paddle_axis=True, doc="""x + y, numpy broadcasting.

Linear in (x, y): the tangent is t_x + t_y and the transpose sends the
cotangent to both operands, summed over the axes each was broadcast along.
``axis`` is Paddle's broadcasting argument (-1: numpy rules).""")

subtract_p = elementwise_primitive("subtract", jnp.subtract, family=FAMILY, operands=XY,
                                   kind="numeric")
subtract = elementwise_op(subtract_p, kind="numeric", paddle_axis=True, doc="""x - y.

Linear in (x, y): tangent t_x - t_y; transpose (ct, -ct), unbroadcast.""")

multiply_p = elementwise_primitive("multiply", jnp.multiply, family=FAMILY, operands=XY,
                                   kind="numeric")
multiply = elementwise_op(multiply_p, kind="numeric", paddle_axis=True, doc="""x * y.

Bilinear: tangent t_x * y + x * t_y; the transpose for x is ct * y (and for y,
x * ct), summed over broadcast axes.""")

divide_p = elementwise_primitive("divide", jnp.divide, family=FAMILY, operands=XY, kind="float")
divide = elementwise_op(divide_p, kind="float", paddle_axis=True, doc="""x / y (true division).

Linear in x: d/dx = 1 / y, transpose ct / y. d/dy = -x / y**2 = -out / y.""")

pow_p = elementwise_primitive("pow", jnp.power, family=FAMILY, operands=XY, kind="float")
pow = elementwise_op(pow_p, kind="float", doc="""x ** y (Paddle's elementwise_pow).

d/dx = y * x**(y - 1) (0 where y == 0); d/dy = log(x) * x**y (0 where x == 0).""")

maximum_p = elementwise_primitive("maximum", jnp.maximum, family=FAMILY, operands=XY,
                                  kind="numeric")
maximum = elementwise_op(maximum_p, kind="numeric", doc="""max(x, y) elementwise.

d/dx = [x > y] + 0.5 [x == y], d/dy = [y > x] + 0.5 [x == y]: ties split the
gradient evenly, as the core IR and Paddle do.""")

minimum_p = elementwise_primitive("minimum", jnp.minimum, family=FAMILY, operands=XY,
                                  kind="numeric")
minimum = elementwise_op(minimum_p, kind="numeric", doc="""min(x, y) elementwise.

d/dx = [x < y] + 0.5 [x == y], d/dy = [y < x] + 0.5 [x == y] (ties split).""")

remainder_p = elementwise_primitive("remainder", jnp.remainder, family=FAMILY, operands=XY,
                                    kind="numeric")
remainder = elementwise_op(remainder_p, kind="numeric", doc="""x mod y with the sign of y
(Python's %, numpy's remainder): x - floor(x / y) * y.

d/dx = 1, d/dy = -floor(x / y) (away from the jumps).""")

fmod_p = elementwise_primitive("fmod", jnp.fmod, family=FAMILY, operands=XY, kind="numeric")
fmod = elementwise_op(fmod_p, kind="numeric", doc="""x mod y with the sign of x (C's fmod):
x - trunc(x / y) * y.

d/dx = 1, d/dy = -trunc(x / y) (away from the jumps).""")

atan2_p = elementwise_primitive("atan2", jnp.arctan2, family=FAMILY, operands=XY, kind="float")
atan2 = elementwise_op(atan2_p, kind="float", doc="""atan2(x, y): the angle of the point (y, x).

d/dx = y / (x**2 + y**2), d/dy = -x / (x**2 + y**2).""")

residual_add_p = elementwise_primitive("residual_add", jnp.add, family=FAMILY,
                                       operands=("a", "b"), kind="numeric")
residual_add = elementwise_op(residual_add_p, kind="numeric", doc="""a + b, the residual
connection of a transformer block (the trainer's residual_add). Linear.""")

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


# ------------------------------------------------------- scale / div_scale
def _scale_meta(op: str) -> Any:
    def infer_meta(x: Any, *, scale: float) -> ShapedArray:
        check_dtype(op, "x", x.dtype, "float")
        return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def _scale_impl(x: Array, *, scale: float) -> Array:
    return x * jnp.asarray(scale, x.dtype)


def _div_scale_impl(x: Array, *, scale: float) -> Array:
    return x / jnp.asarray(scale, x.dtype)


scale_p = define_primitive("scale", family=FAMILY, operands=("x",), params=("scale",),
                           infer_meta=_scale_meta("scale"), impl=_scale_impl)
div_scale_p = define_primitive("div_scale", family=FAMILY, operands=("x",), params=("scale",),
                               infer_meta=_scale_meta("div_scale"), impl=_div_scale_impl)


def scale(x: ArrayLike, *, scale: float) -> Array:
    """x * scale for a static number ``scale`` (LoRA's alpha / r). Linear;
    the transpose is scale(ct, scale=scale)."""
    (x,) = promote("scale", {"x": x}, "float")
    return scale_p.bind(x, scale=number_param("scale", "scale", scale))


def div_scale(x: ArrayLike, *, scale: float) -> Array:
    """x / scale for a static nonzero number ``scale``. Linear; the transpose
    is div_scale(ct, scale=scale)."""
    (x,) = promote("div_scale", {"x": x}, "float")
    s = number_param("div_scale", "scale", scale)
    if s == 0:
        raise ValueError(f"{op_name('div_scale')}: scale must be nonzero")
    return div_scale_p.bind(x, scale=s)


register_elementwise(add, add_p, _paddle_reference(jnp.add), linear=(XY,), order=3)
register_elementwise(subtract, subtract_p, _paddle_reference(jnp.subtract), linear=(XY,),
                     order=3)
register_elementwise(multiply, multiply_p, _paddle_reference(jnp.multiply),
                     linear=(("x",), ("y",)), order=3)
register_elementwise(divide, divide_p, _paddle_reference(jnp.divide), linear=(("x",),),
                     order=3)
register_elementwise(pow, pow_p, jnp.power)
register_elementwise(maximum, maximum_p, jnp.maximum, order=3)
register_elementwise(minimum, minimum_p, jnp.minimum, order=3)
register_elementwise(remainder, remainder_p, jnp.remainder)
register_elementwise(fmod, fmod_p, jnp.fmod)
register_elementwise(atan2, atan2_p, jnp.arctan2)
register_elementwise(residual_add, residual_add_p, jnp.add, linear=(("a", "b"),))
register_op(OpDef("bias_add", FAMILY, bias_add, (bias_add_p,), jnp.add, ("x", "bias"),
                  linear=(("x", "bias"),)))
register_op(OpDef("scale", FAMILY, scale, (scale_p,), lambda x, *, scale: x * scale, ("x",),
                  linear=(("x",),)))
register_op(OpDef("div_scale", FAMILY, div_scale, (div_scale_p,),
                  lambda x, *, scale: x / scale, ("x",), linear=(("x",),)))
