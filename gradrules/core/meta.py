"""Shared infer_meta helpers: dtype classes, broadcasting, axes.

Every op validates its input through these, so an error always reads
``gradrules.<op>: <argument> ...`` with the shapes, dtypes or values involved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jax.numpy as jnp

from .._jax import ShapedArray

DTYPE_KINDS = ("float", "numeric", "int", "bool", "int_or_bool", "any")


def op_name(op: str) -> str:
    return op if op.startswith("gradrules.") else f"gradrules.{op}"


def check_dtype(op: str, arg: str, dtype: Any, kind: str) -> None:
    """Raise a TypeError unless ``dtype`` belongs to ``kind``.

    kinds: float (floating), numeric (int or float, not bool), int, bool,
    int_or_bool, any (not complex).
    """
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"{op_name(op)}: argument {arg} is complex ({dtype}); "
                        "complex input is not supported")
    is_float = jnp.issubdtype(dtype, jnp.floating)
    is_int = jnp.issubdtype(dtype, jnp.integer)
    is_bool = dtype == np.bool_
    ok = {"float": is_float, "numeric": is_float or is_int, "int": is_int,
          "bool": is_bool, "int_or_bool": is_int or is_bool,
          "any": is_float or is_int or is_bool}[kind]
    if not ok:
        want = {"float": "a floating dtype", "numeric": "an integer or floating dtype",
                "int": "an integer dtype", "bool": "bool", "int_or_bool": "an integer or bool dtype",
                "any": "a real dtype"}[kind]
        raise TypeError(f"{op_name(op)}: argument {arg} must have {want}, got {dtype}")


MAX_ELEMENTS = np.iinfo(np.int64).max
"""The most elements an array can have: XLA indexes them with int64."""


def check_size(op: str, what: str, shape: Sequence[Any], given: Callable[[], str]) -> None:
    """Raise a ValueError naming ``what`` (the output, say) and the arguments
    that set its size (``given()``, e.g. ``"stop=1e+30"``, formatted only for
    the error) when ``shape`` has more than ``MAX_ELEMENTS`` elements.
    Symbolic dimensions count as 1."""
    size = 1
    for d in shape:
        size *= d if isinstance(d, (int, np.integer)) else 1
    if size > MAX_ELEMENTS:
        raise ValueError(f"{op_name(op)}: {what} would have shape {tuple(shape)}, "
                         f"{size:.3g} elements, more than an array can hold "
                         f"({MAX_ELEMENTS}), from {given()}")


def broadcast_shapes(op: str, shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Numpy broadcasting of named shapes; ValueError naming all of them."""
    ndim = max((len(s) for s in shapes.values()), default=0)
    out = []
    for i in range(-ndim, 0):
        dims = {s[i] for s in shapes.values() if len(s) >= -i} - {1}
        if len(dims) > 1:
            desc = ", ".join(f"{k} with shape {tuple(v)}" for k, v in shapes.items())
            raise ValueError(f"{op_name(op)}: operands do not broadcast: {desc}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def check_broadcast_to(op: str, arg: str, shape: Sequence[Any], target: Sequence[Any],
                       what: str | None = None) -> None:
    """Raise a ValueError naming ``arg`` unless an array of ``shape``
    broadcasts to ``target`` by numpy's rules without growing it: no more
    axes, each trailing axis 1 or ``target``'s. ``what`` describes the
    target (default: ``shape <target>``)."""
    shape, target = tuple(shape), tuple(target)
    if len(shape) > len(target) or any(d != 1 and d != t
                                       for d, t in zip(shape[::-1], target[::-1])):
        raise ValueError(f"{op_name(op)}: {arg} with shape {shape} does not broadcast to "
                         f"{what or f'shape {target}'}")


def paddle_axis_shape(op: str, x_shape: tuple[int, ...], y_shape: tuple[int, ...],
                      axis: int) -> tuple[int, ...]:
    """The shape ``y`` takes under Paddle's ``axis`` broadcasting argument.

    ``axis=-1`` is numpy broadcasting (``y_shape`` unchanged). Otherwise y's
    dims line up with x's starting at ``axis``: x [2, 3, 4], y [3], axis=1
    gives y the shape [1, 3, 1].
    """
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{op_name(op)}: axis must be an int, got {axis!r}")
    if axis == -1:
        return tuple(y_shape)
    xr, yr = len(x_shape), len(y_shape)
    if not 0 <= axis <= xr - yr:
        raise ValueError(f"{op_name(op)}: axis={axis} does not place y with shape "
                         f"{tuple(y_shape)} inside x with shape {tuple(x_shape)}")
    return (1,) * axis + tuple(y_shape) + (1,) * (xr - yr - axis)


def normalize_axis(op: str, axis: Any, ndim: int, arg: str = "axis") -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op_name(op)}: {arg} must be an int, got {axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"{op_name(op)}: {arg}={axis} is out of range for an array "
                         f"of rank {ndim}")
    return int(axis) % max(ndim, 1)


def normalize_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``None | int | tuple`` -> sorted tuple of non-negative axes, no repeats."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axes: tuple[Any, ...] = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        raise TypeError(f"{op_name(op)}: axis must be None, an int or a tuple of ints, "
                        f"got {axis!r}")
    out = tuple(sorted(normalize_axis(op, a, ndim) for a in axes))
    if len(set(out)) != len(out):
        raise ValueError(f"{op_name(op)}: repeated axis in {axis!r}")
    return out


def same_dtype(op: str, avals: dict[str, Any]) -> np.dtype:
    dtypes = {np.dtype(a.dtype) for a in avals.values()}
    if len(dtypes) != 1:
        desc = ", ".join(f"{k}: {a.dtype}" for k, a in avals.items())
        raise TypeError(f"{op_name(op)}: operands must share one dtype, got {desc}")
    return dtypes.pop()


def elementwise_meta(op: str, names: Sequence[str], kind: str,
                     out_dtype: Any = None) -> Callable[..., ShapedArray]:
    """infer_meta of an n-ary elementwise op with numpy broadcasting
    (``elementwise_infer_meta`` with the op's names, dtype class and output
    dtype bound)."""
    return partial(elementwise_infer_meta, op, tuple(names), kind, out_dtype)


def elementwise_infer_meta(op: str, names: tuple[str, ...], kind: str, out_dtype: Any,
                           *avals: Any, **params: Any) -> ShapedArray:
    """The operands share a dtype of class ``kind``; the result has the
    broadcast shape, ``out_dtype`` (None: the operands' dtype) and is weakly
    typed when every operand is."""
    named = dict(zip(names, avals))
    dtype = same_dtype(op, named)
    for n, a in named.items():
        check_dtype(op, n, a.dtype, kind)
    shape = broadcast_shapes(op, {n: a.shape for n, a in named.items()})
    weak = all(getattr(a, "weak_type", False) for a in avals)
    return ShapedArray(shape, np.dtype(out_dtype) if out_dtype is not None else dtype,
                       weak_type=weak and out_dtype is None)


def is_float(x: Any) -> bool:
    """Whether an array, scalar or dtype is floating."""
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.floating))
