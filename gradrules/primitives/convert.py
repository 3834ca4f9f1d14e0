"""convert_element_type and copy (alias assign), and the argument helpers
that convert dtypes to do their work: ``promote`` (operands to the dtype
jax.numpy would give them), ``index_arg`` (integer indices, widened to int32
where narrower) and ``data_arg``."""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import as_array, dtype_param, index_dtype
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
    x = as_array("convert_element_type", "x", x)
    new = dtype_param("convert_element_type", "dtype", dtype)
    x = jnp.asarray(x) if isinstance(x, (bool, int, float)) else x
    return convert_element_type_p.bind(x, new_dtype=new)


def _convert_element_type_reference(x: Array, *, dtype: Any) -> Array:
    return jnp.asarray(x).astype(dtype)


register_op(OpDef(name="convert_element_type", family=FAMILY, fn=convert_element_type,
                  primitives=(convert_element_type_p,),
                  reference=_convert_element_type_reference, operands=("x",),
                  linear=(("x",),)))


def _copy_infer_meta(x: Any) -> ShapedArray:
    check_dtype("copy", "x", x.dtype, "any")
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)


def _copy_impl(x: Array) -> Array:
    return x


copy_p = define_primitive("copy", family=FAMILY, operands=("x",), infer_meta=_copy_infer_meta,
                          impl=_copy_impl)


def copy(x: jax.typing.ArrayLike) -> Array:
    """The identity, ``y = x`` (Paddle's assign). Linear; its transpose is itself."""
    x = as_array("copy", "x", x)
    return copy_p.bind(jnp.asarray(x) if isinstance(x, (bool, int, float)) else x)


def _copy_reference(x: Array) -> Array:
    return jnp.asarray(x)


register_op(OpDef(name="copy", family=FAMILY, fn=copy, primitives=(copy_p,),
                  reference=_copy_reference, operands=("x",), linear=(("x",),),
                  aliases=("assign",)))
assign = copy


# ---------------------------------------------------- argument helpers
def promote(op: str, args: dict[str, Any], kind: str) -> list[Any]:
    """The named arguments in the common dtype jax.numpy promotes them to,
    checked against the dtype class ``kind`` (``core.meta.check_dtype``).
    Python scalars stay weakly typed when every argument is one; arrays of
    another dtype are converted with ``convert_element_type``."""
    vals = {k: as_array(op, k, v) for k, v in args.items()}
    for k, v in vals.items():
        if not isinstance(v, (bool, int, float)):
            check_dtype(op, k, jnp.result_type(v), kind)
    dtype = jnp.result_type(*vals.values())
    for k, v in vals.items():
        if isinstance(v, (bool, int, float)) and len(vals) > 1:
            continue
        check_dtype(op, k, dtype, kind)
    if kind == "float" and not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"{op_name(op)}: arguments must be floating, got dtype {dtype}")
    all_scalars = all(isinstance(v, (bool, int, float)) for v in vals.values())
    out = []
    for k, v in vals.items():
        if isinstance(v, (bool, int, float)):
            if all_scalars:   # stays weakly typed, as in jax.numpy
                kind_of = float if jnp.issubdtype(dtype, jnp.floating) else (
                    bool if dtype == np.bool_ else int)
                out.append(jnp.asarray(kind_of(v)))
            else:
                out.append(jnp.asarray(v, dtype=dtype))
        elif jnp.result_type(v) != dtype:
            out.append(convert_element_type(v, dtype=dtype))
        else:
            out.append(v)
    if len(vals) == 1:
        check_dtype(op, next(iter(vals)), jnp.result_type(out[0]), kind)
    return out


def data_arg(op: str, arg: str, x: Any) -> Any:
    """An array argument of any real dtype (``promote`` of one argument)."""
    (x,) = promote(op, {arg: x}, "any")
    return x


def index_arg(op: str, arg: str, index: Any) -> Any:
    """An integer index array (Python ints are accepted; floats and bools are
    not), widened to int32 where its dtype is narrower (``index_dtype``)."""
    index = as_array(op, arg, index)
    if isinstance(index, bool) or not isinstance(index, int) and not jnp.issubdtype(
            jnp.result_type(index), jnp.integer):
        raise TypeError(f"{op_name(op)}: argument {arg} must have an integer dtype, "
                        f"got {jnp.result_type(index)}")
    if isinstance(index, int):
        return jnp.asarray(index)
    dtype = index_dtype(jnp.result_type(index))
    if jnp.result_type(index) == dtype:
        return index
    if isinstance(index, (np.ndarray, np.generic)):
        return np.asarray(index, dtype)
    return convert_element_type(index, dtype=dtype)


