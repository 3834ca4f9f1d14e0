"""Creation ops: arange, full, full_like, zeros, ones, as jax.numpy's.

Two primitives, so that traces stay inside the catalog:

* ``arange`` has no operand: ``start``, ``stop``, ``step`` (static Python
  numbers) and ``dtype`` are its params. Not differentiable; vmap never
  batches it (nothing to batch).
* ``full(fill_value)`` broadcasts its one operand to the static ``shape``
  param in ``dtype`` (``None``: the fill value's dtype, weak type kept). It
  is linear in the fill value where the result is floating (its transpose
  sums the copies back to the fill value's shape); ``full_like``, ``zeros``
  and ``ones`` bind it too (zeros and ones with a literal 0 / 1).

Shapes and dtypes are checked in the public functions with clear errors
(``dtype="float33"`` is a TypeError naming the op and the argument).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import as_array, dtype_param, shape_param
from ..core.meta import check_broadcast_to, check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
DTypeLike = Any
FAMILY = "creation"


def _canonical(dtype: Any) -> np.dtype:
    """``dtype`` as JAX holds it (64-bit types narrowed without x64)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(dtype))


def _dtype_arg(op: str, dtype: Any, kind: str = "any") -> np.dtype | None:
    return None if dtype is None else _canonical(dtype_param(op, "dtype", dtype, kind))


# ------------------------------------------------------------------ arange
def arange_length(start: float, stop: float, step: float) -> int:
    """ceil((stop - start) / step), at least 0 (numpy's count; exact for ints,
    and for a symbolic ``stop`` with int start and step)."""
    if all(isinstance(v, int) or jax.export.is_symbolic_dim(v) for v in (start, stop, step)):
        return max(0, -((start - stop) // step))
    return max(0, math.ceil((stop - start) / step))


def _arange_infer_meta(*, start: float, stop: float, step: float, dtype: np.dtype
                       ) -> ShapedArray:
    return ShapedArray((arange_length(start, stop, step),), dtype)


def _arange_impl(*, start: float, stop: float, step: float, dtype: np.dtype) -> Array:
    """start + i * step for i = 0 .. n-1: integers in jax.numpy's default int
    (exact, then cast), floats in float32 (float64 for float64), numpy's
    values up to rounding."""
    n = arange_length(start, stop, step)
    if jnp.issubdtype(dtype, jnp.integer):
        wide = _canonical(np.int64)
    else:
        wide = np.dtype(np.float64 if dtype == np.float64 else np.float32)
    return (lax.iota(wide, n) * step + start).astype(dtype)


arange_p = define_primitive("arange", family=FAMILY, operands=(),
                            params=("start", "stop", "step", "dtype"),
                            infer_meta=_arange_infer_meta, impl=_arange_impl)


def iota(dtype: Any, size: Any) -> Array:
    """``0 .. size - 1`` in ``dtype``, an ``arange`` for the rules: ``size``
    may be a symbolic dimension (a batch size under ``jax.export``)."""
    return arange_p.bind(start=0, stop=size, step=1, dtype=np.dtype(dtype))


def _static_number(op: str, name: str, value: Any) -> int | float:
    """A static, finite Python or numpy int or float (not a bool, not a tracer)."""
    if hasattr(value, "aval") or isinstance(value, (jax.Array, np.ndarray)):
        if np.ndim(value) == 0 and not hasattr(value, "aval"):
            value = np.asarray(value).item()
        else:
            raise TypeError(f"{op_name(op)}: {name} must be a static Python number (the "
                            f"length of the result depends on it), got {value!r}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op_name(op)}: {name} must be a Python int or float, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if not math.isfinite(value):
        raise ValueError(f"{op_name(op)}: {name} must be finite, got {value!r}")
    return float(value)


def arange(start: int | float, stop: int | float | None = None, step: int | float | None = None,
           *, dtype: DTypeLike = None) -> Array:
    """Evenly spaced values ``start, start + step, ...`` below ``stop`` (above
    it for a negative ``step``), as ``jnp.arange``: ``arange(n)`` is
    ``0 .. n-1``; ceil((stop - start) / step) values (none when that is <= 0).
    ``start``, ``stop`` and ``step`` are static Python or numpy numbers;
    ``dtype`` defaults to their promoted type (Python ints: jax.numpy's
    default int; a float: its default float; numpy scalars keep their
    dtype). An integer ``dtype`` needs integer bounds and step. Not
    differentiable (nothing to differentiate: no array argument).
    """
    op = "arange"
    stop_name = "stop"
    if stop is None:   # arange(n): the one argument, start, is the stop
        start, stop, stop_name = 0, start, "start"
    given = [start, stop] + ([] if step is None else [step])
    start = _static_number(op, "start", start)
    stop = _static_number(op, stop_name, stop)
    step = _static_number(op, "step", 1 if step is None else step)
    if step == 0:
        raise ValueError(f"{op_name(op)}: step must not be 0")
    all_int = all(isinstance(v, int) for v in (start, stop, step))
    out = _dtype_arg(op, dtype, "numeric")
    if out is None:   # jax.numpy's promotion: Python ints and floats weak, numpy scalars not
        out = _canonical(jnp.result_type(*given))
    elif jnp.issubdtype(out, jnp.integer) and not all_int:
        raise TypeError(f"{op_name(op)}: start, stop and step must be ints for the integer "
                        f"dtype {out}, got {start!r}, {stop!r}, {step!r}")
    if not all_int:
        start, stop, step = float(start), float(stop), float(step)
    return arange_p.bind(start=start, stop=stop, step=step, dtype=out)


def _arange_reference(start: int | float, stop: int | float | None = None,
                      step: int | float | None = None, *, dtype: DTypeLike = None) -> Array:
    return jnp.arange(start, stop, step, dtype=dtype)


register_op(OpDef(name="arange", family=FAMILY, fn=arange, primitives=(arange_p,),
                  reference=_arange_reference, operands=()))


# -------------------------------------------------------------------- full
def _full_infer_meta(fill_value: Any, *, shape: tuple[int, ...], dtype: np.dtype | None
                     ) -> ShapedArray:
    check_broadcast_to("full", "fill_value", fill_value.shape, shape)
    check_dtype("full", "fill_value", fill_value.dtype, "any")
    if dtype is None:
        return ShapedArray(tuple(shape), fill_value.dtype, weak_type=fill_value.weak_type)
    return ShapedArray(tuple(shape), dtype)


def _full_impl(fill_value: Array, *, shape: tuple[int, ...], dtype: np.dtype | None) -> Array:
    return jnp.broadcast_to(fill_value if dtype is None else fill_value.astype(dtype), shape)


full_p = define_primitive("full", family=FAMILY, operands=("fill_value",),
                          params=("shape", "dtype"), infer_meta=_full_infer_meta,
                          impl=_full_impl)


def _fill_arg(op: str, fill_value: Any, shape: tuple[int, ...], what: str | None = None
              ) -> Any:
    """An array fill value that broadcasts to ``shape`` (``what`` describes
    it); a Python scalar stays weakly typed (as jax.numpy's)."""
    fill_value = as_array(op, "fill_value", fill_value)
    if isinstance(fill_value, (bool, int, float, np.generic)):
        return jnp.asarray(fill_value)
    check_dtype(op, "fill_value", jnp.result_type(fill_value), "any")
    check_broadcast_to(op, "fill_value", np.shape(fill_value), shape, what)
    return fill_value


def full(shape: int | Sequence[int], fill_value: ArrayLike, *, dtype: DTypeLike = None
         ) -> Array:
    """An array of shape ``shape`` filled with ``fill_value`` (a scalar, or an
    array broadcast to ``shape`` by numpy's rules), in ``dtype`` (default: the
    fill value's), as ``jnp.full``.

    Linear in ``fill_value`` where the result is floating: the tangent is
    full(shape, t), the transpose sums the copies back to the fill value's
    shape (and dtype).
    """
    op = "full"
    shape = shape_param(op, shape)
    return full_p.bind(_fill_arg(op, fill_value, shape), shape=shape,
                       dtype=_dtype_arg(op, dtype))


def _full_reference(shape: int | Sequence[int], fill_value: ArrayLike, *,
                    dtype: DTypeLike = None) -> Array:
    return jnp.full(shape, fill_value, dtype=dtype)


register_op(OpDef(name="full", family=FAMILY, fn=full, primitives=(full_p,),
                  reference=_full_reference, operands=("shape", "fill_value"),
                  linear=(("fill_value",),)))


def full_like(x: ArrayLike, fill_value: ArrayLike, *, dtype: DTypeLike = None,
              shape: int | Sequence[int] | None = None) -> Array:
    """``full(x.shape, fill_value, dtype=x.dtype)`` (``dtype`` and ``shape``
    override x's), as ``jnp.full_like``. x gives only a shape and a dtype:
    it takes no derivative; the result is linear in ``fill_value`` (the
    ``full`` primitive)."""
    op = "full_like"
    x = as_array(op, "x", x)
    check_dtype(op, "x", jnp.result_type(x), "any")
    out_shape = tuple(np.shape(x)) if shape is None else shape_param(op, shape)
    out_dtype = _canonical(jnp.result_type(x)) if dtype is None else _dtype_arg(op, dtype)
    what = f"the shape {out_shape} of x" if shape is None else None
    return full_p.bind(_fill_arg(op, fill_value, out_shape, what), shape=out_shape,
                       dtype=out_dtype)


def _full_like_reference(x: ArrayLike, fill_value: ArrayLike, *, dtype: DTypeLike = None,
                         shape: int | Sequence[int] | None = None) -> Array:
    return jnp.full_like(x, fill_value, dtype=dtype, shape=shape)


register_op(OpDef(name="full_like", family=FAMILY, fn=full_like, primitives=(full_p,),
                  reference=_full_like_reference, operands=("x", "fill_value"),
                  linear=(("fill_value",),), nondiff=("x",)))


# ------------------------------------------------------------ zeros / ones
def _filled(op: str, shape: Any, value: int, dtype: Any) -> Array:
    """``full(shape, value)`` with a literal fill in ``dtype`` (default: jax.numpy's
    default float)."""
    out = _dtype_arg(op, dtype) if dtype is not None else _canonical(np.float64)
    return full_p.bind(np.asarray(value, out), shape=shape_param(op, shape), dtype=out)


def zeros(shape: int | Sequence[int], *, dtype: DTypeLike = None) -> Array:
    """An array of zeros of shape ``shape`` in ``dtype`` (default: the
    default float), as ``jnp.zeros``: the ``full`` primitive with a literal 0.
    Not differentiable (no array argument)."""
    return _filled("zeros", shape, 0, dtype)


def _zeros_reference(shape: int | Sequence[int], *, dtype: DTypeLike = None) -> Array:
    return jnp.zeros(shape, dtype=dtype)


register_op(OpDef(name="zeros", family=FAMILY, fn=zeros, primitives=(full_p,),
                  reference=_zeros_reference, operands=()))


def ones(shape: int | Sequence[int], *, dtype: DTypeLike = None) -> Array:
    """An array of ones of shape ``shape`` in ``dtype`` (default: the default
    float), as ``jnp.ones``: the ``full`` primitive with a literal 1. Not
    differentiable (no array argument)."""
    return _filled("ones", shape, 1, dtype)


def _ones_reference(shape: int | Sequence[int], *, dtype: DTypeLike = None) -> Array:
    return jnp.ones(shape, dtype=dtype)


register_op(OpDef(name="ones", family=FAMILY, fn=ones, primitives=(full_p,),
                  reference=_ones_reference, operands=()))
