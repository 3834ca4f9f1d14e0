"""Comparisons (bool results, not differentiable) and where(cond, x, y)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import Primitive, ShapedArray
from ..core.meta import broadcast_shapes, check_dtype, same_dtype
from ..core.primitive import define_primitive
from ._elementwise import define_elementwise, register_elementwise
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "compare"
XY = ("x", "y")


def _comparison(name: str, fn: Callable[..., Array], symbol: str
                ) -> tuple[Primitive, Callable[..., Array]]:
    """A comparison ``x <symbol> y`` (``define_elementwise``: bool result,
    operands of any real dtype, not differentiable; ``fn`` is its reference)."""
    return define_elementwise(name, fn, f"""x {symbol} y elementwise (bool result).

Not differentiable: the tangent is a symbolic zero (float0).""", family=FAMILY, kind="any",
                              operands=XY, out_dtype=np.bool_, nondiff=XY)


eq_p, eq = _comparison("eq", jnp.equal, "==")
ne_p, ne = _comparison("ne", jnp.not_equal, "!=")
lt_p, lt = _comparison("lt", jnp.less, "<")
le_p, le = _comparison("le", jnp.less_equal, "<=")
gt_p, gt = _comparison("gt", jnp.greater, ">")
ge_p, ge = _comparison("ge", jnp.greater_equal, ">=")


def _where_infer_meta(cond: ShapedArray, x: ShapedArray, y: ShapedArray) -> ShapedArray:
    check_dtype("where", "cond", cond.dtype, "bool")
    dtype = same_dtype("where", {"x": x, "y": y})
    check_dtype("where", "x", dtype, "any")
    shape = broadcast_shapes("where", {"cond": cond.shape, "x": x.shape, "y": y.shape})
    return ShapedArray(shape, dtype, weak_type=x.weak_type and y.weak_type)


where_p = define_primitive("where", family=FAMILY, operands=("cond", "x", "y"),
                           infer_meta=_where_infer_meta, impl=jnp.where)


def where(cond: ArrayLike, x: ArrayLike, y: ArrayLike) -> Array:
    """x where cond else y, numpy broadcasting of all three.

    Linear in (x, y): tangent where(cond, t_x, t_y); the transpose sends
    where(cond, ct, 0) to x and where(cond, 0, ct) to y. ``cond`` must be
    bool and takes no tangent.
    """
    (cond,) = promote("where", {"cond": cond}, "bool")
    x, y = promote("where", {"x": x, "y": y}, "any")
    return where_p.bind(cond, x, y)


register_elementwise(where, where_p, jnp.where, linear=(XY,), nondiff=("cond",))
