"""convert_element_type and copy (alias assign)."""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
FAMILY = "convert"


def _convert_infer_meta(x: Any, *, new_dtype: np.dtype) -> ShapedArray:
    check_dtype("convert_element_type", "x", x.dtype, "any")
    return ShapedArray(x.shape, new_dtype)


def _convert_impl(x: Array, *, new_dtype: np.dtype) -> Array:
    return lax.convert_element_type(x, new_dtype)


convert_element_type_p = define_primitive(
    "convert_element_type", family=FAMILY, operands=("x",), params=("new_dtype",),
    infer_meta=_convert_infer_meta, impl=_convert_impl)


def convert_element_type(x: jax.typing.ArrayLike, *, dtype: Any) -> Array:
    """Cast ``x`` to ``dtype`` (numpy casting; float -> int truncates).

    Linear between floating dtypes: the tangent and cotangent are cast the same
    way. A cast to or from an integer or bool dtype has a zero derivative.
    """
    from ._elementwise import as_array
    x = as_array("convert_element_type", "x", x)
    try:
        new = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op_name('convert_element_type')}: dtype {dtype!r} is not a dtype") from None
    check_dtype("convert_element_type", "dtype", new, "any")
    x = jnp.asarray(x) if isinstance(x, (bool, int, float)) else x
    return convert_element_type_p.bind(x, new_dtype=new)


def _copy_infer_meta(x: Any) -> ShapedArray:
    check_dtype("copy", "x", x.dtype, "any")
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)


copy_p = define_primitive("copy", family=FAMILY, operands=("x",), infer_meta=_copy_infer_meta,
                          impl=lambda x: x)


def copy(x: jax.typing.ArrayLike) -> Array:
    """The identity, ``y = x`` (Paddle's assign). Linear; its transpose is itself."""
    from ._elementwise import as_array
    x = as_array("copy", "x", x)
    return copy_p.bind(jnp.asarray(x) if isinstance(x, (bool, int, float)) else x)


def _copy_reference(x: Array) -> Array:
    return jnp.asarray(x)


register_op(OpDef("convert_element_type", FAMILY, convert_element_type, (convert_element_type_p,),
                  reference=lambda x, *, dtype: jnp.asarray(x).astype(dtype),
                  operands=("x",), linear=(("x",),)))
register_op(OpDef("copy", FAMILY, copy, (copy_p,), reference=_copy_reference, operands=("x",),
                  linear=(("x",),), aliases=("assign",)))
assign = copy
