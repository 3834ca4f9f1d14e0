"""Reductions. ``sum`` lives here from the start: the transposes of every
broadcasting op reduce with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.meta import check_dtype, normalize_axes
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
Axis = int | Sequence[int] | None
FAMILY = "reduction"


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
                  ) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduction_meta(op: str, kind: str) -> Any:
    """infer_meta of a reduction over ``axes`` with ``keepdims``."""
    def infer_meta(x: Any, *, axes: tuple[int, ...], keepdims: bool) -> ShapedArray:
        check_dtype(op, "x", x.dtype, kind)
        normalize_axes(op, axes, len(x.shape))
        return ShapedArray(reduced_shape(x.shape, axes, keepdims), x.dtype,
                           weak_type=x.weak_type)
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def reduction_args(op: str, x: Any, axis: Axis, keepdims: bool, kind: str) -> tuple[Any, dict]:
    """Validate a reduction call; returns the array and the primitive params."""
    from ._elementwise import promote
    (x,) = promote(op, {"x": x}, kind)
    if not isinstance(keepdims, bool):
        raise TypeError(f"gradrules.{op}: keepdims must be a bool, got {keepdims!r}")
    return x, {"axes": normalize_axes(op, axis, np.ndim(x)), "keepdims": keepdims}


sum_p = define_primitive("sum", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("sum", "numeric"),
                         impl=lambda x, *, axes, keepdims: jnp.sum(x, axes, dtype=x.dtype, keepdims=keepdims))


def sum(x: ArrayLike, *, axis: Axis = None, keepdims: bool = False) -> Array:  # noqa: A001
    """``sum_{i in axis} x_i``. Linear; its transpose broadcasts the cotangent
    back over the reduced axes."""
    x, params = reduction_args("sum", x, axis, keepdims, "numeric")
    return sum_p.bind(x, **params)


register_op(OpDef("sum", FAMILY, sum, (sum_p,),
                  lambda x, *, axis=None, keepdims=False: jnp.sum(x, axis, keepdims=keepdims),
                  ("x",), linear=(("x",),)))
