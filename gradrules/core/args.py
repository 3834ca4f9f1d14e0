"""Argument helpers: what every public function runs on its arguments
before it binds a primitive, so a bad argument reads ``gradrules.<op>:
<name> must be ...`` with the value given.

Arrays: ``as_array`` (arrays and tracers pass, Python/numpy scalars too,
anything else is a TypeError naming the argument), ``float_array`` (and it
must be floating). Static params: ``number_param``, ``int_param``,
``bool_param``, ``choice_param``, ``int_tuple``, ``shape_param``, ``int_pair``,
``number_pair``, ``eps_param``.
Indices: ``index_dtype`` (the dtype index arithmetic runs in).

These do not bind primitives; the helpers that convert dtypes to do their
work (``promote``, ``index_arg``) are ``gradrules.primitives.convert``'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .meta import check_dtype, op_name


def as_array(op: str, arg: str, x: Any) -> Any:
    """Arrays and tracers pass through, and so do Python/numpy scalars."""
    if isinstance(x, (jax.Array, np.ndarray)) or hasattr(x, "aval"):
        return x
    if isinstance(x, (bool, int, float, np.generic)):
        return x
    raise TypeError(f"{op_name(op)}: argument {arg} must be an array or a scalar, "
                    f"got {type(x).__name__}")


def float_array(op: str, name: str, x: Any) -> Any:
    """An array argument that must be floating (TypeError naming it otherwise);
    a scalar becomes an array."""
    x = as_array(op, name, x)
    x = jnp.asarray(x) if isinstance(x, (bool, int, float, np.generic)) else x
    check_dtype(op, name, jnp.result_type(x), "float")
    return x


def index_dtype(dtype: Any) -> np.dtype:
    """The dtype index arithmetic runs in: ``dtype``, or int32 where ``dtype``
    is narrower (int8 + n, or a flat position, would wrap around)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int32) if dtype.itemsize < 4 else dtype


def dtype_param(op: str, name: str, value: Any, kind: str = "any") -> np.dtype:
    """``value`` as a numpy dtype of the class ``kind``
    (``core.meta.check_dtype``); a ``TypeError`` naming the op and the
    argument for anything that is not a dtype (``"float33"``, ``3``)."""
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op_name(op)}: {name} {value!r} is not a dtype") from None
    check_dtype(op, name, dtype, kind)
    return dtype


def number_param(op: str, name: str, value: Any, *, lo: float | None = None,
                 hi: float | None = None, gt: float | None = None,
                 allow_inf: bool = False) -> float:
    """A Python or numpy real number (not a bool, not NaN), finite unless
    ``allow_inf``, inside ``[lo, hi]`` and above ``gt`` where given."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op_name(op)}: {name} must be a Python number, got {value!r}")
    value = float(value)
    if math.isnan(value) or (not allow_inf and math.isinf(value)):
        raise ValueError(f"{op_name(op)}: {name} must be finite, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = f"[{lo}, " if lo is not None else "(-inf, "
        span += f"{hi}]" if hi is not None else "inf)"
        raise ValueError(f"{op_name(op)}: {name} must lie in {span}, got {value!r}")
    if gt is not None and not value > gt:
        raise ValueError(f"{op_name(op)}: {name} must be > {gt:g}, got {value!r}")
    return value


def int_param(op: str, name: str, value: Any, *, lo: int | None = None,
              symbolic: bool = False) -> int:
    """A Python or numpy int (not a bool), at least ``lo`` where given.
    ``symbolic``: a size or bound, which may also be a symbolic dimension
    (``jax.export.symbolic_shape``), kept as it is."""
    if symbolic and jax.export.is_symbolic_dim(value):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op_name(op)}: {name} must be an int, got {value!r}")
    if lo is not None and value < lo:
        raise ValueError(f"{op_name(op)}: {name} must be an int >= {lo}, got {value!r}")
    return int(value)


def block_sizes_param(op: str, value: Any, cls: type, public_name: str) -> Any:
    """A public function's ``block_sizes``: None, or a ``cls`` (a frozen
    dataclass of block sizes, known to users as ``public_name``) whose sizes
    are ints >= 1 or None."""
    if value is None:
        return None
    if not isinstance(value, cls):
        raise TypeError(f"{op_name(op)}: block_sizes must be a {public_name}, got {value!r}")
    for name, size in vars(value).items():
        if size is not None:
            int_param(op, name, size, lo=1)
    return value


def bool_param(op: str, name: str, value: Any) -> bool:
    """A Python or numpy bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op_name(op)}: {name} must be a bool, got {value!r}")
    return bool(value)


def choice_param(op: str, name: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{op_name(op)}: {name} must be one of {choices}, got {value!r}")
    return str(value)


def int_tuple(op: str, name: str, value: Any, n: int | None = None, *,
              symbolic: bool = False) -> tuple[int, ...]:
    """A tuple of Python ints from one int or a sequence of ints (not bools),
    ``n`` of them where given. ``symbolic``: a shape, whose entries may also
    be symbolic dimensions (``jax.export.symbolic_shape``), kept as they are."""
    if isinstance(value, (int, np.integer)) or symbolic and jax.export.is_symbolic_dim(value):
        vals: tuple[Any, ...] = (value,)
    else:
        try:
            vals = tuple(value)
        except TypeError:
            vals = (value,)
    dims = [symbolic and jax.export.is_symbolic_dim(v) for v in vals]
    if any(not d and (not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)))
           for v, d in zip(vals, dims)):
        raise TypeError(f"{op_name(op)}: {name} must hold ints, got {value!r}")
    if n is not None and len(vals) != n:
        raise ValueError(f"{op_name(op)}: {name} must have {n} entries, got {value!r}")
    return tuple(v if d else int(v) for v, d in zip(vals, dims))


def shape_param(op: str, value: Any, name: str = "shape") -> tuple[int, ...]:
    """A static shape: an int or a sequence of ints (not bools), each >= 0;
    a TypeError naming ``name`` for anything else (None, a string, a float,
    a negative size)."""
    dims = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        dims = tuple(dims)
    except TypeError:
        dims = (dims,)
    if any(isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0
           for d in dims):
        raise TypeError(f"{op_name(op)}: {name} must be an int or a tuple of non-negative "
                        f"ints, got {value!r}")
    return tuple(int(d) for d in dims)


def int_pair(op: str, name: str, v: Any, minimum: int = 1) -> tuple[int, int]:
    """An int or a pair of ints (each >= ``minimum``) as a pair."""
    vals = (v, v) if isinstance(v, (int, np.integer)) else tuple(v) if isinstance(
        v, (tuple, list)) else (v,)
    if len(vals) != 2 or any(isinstance(a, bool) or not isinstance(a, (int, np.integer))
                             for a in vals):
        raise TypeError(f"{op_name(op)}: {name} must be an int or a pair of ints, got {v!r}")
    if min(vals) < minimum:
        raise ValueError(f"{op_name(op)}: {name} must be >= {minimum}, got {v!r}")
    return int(vals[0]), int(vals[1])


def number_pair(op: str, name: str, v: Any, **bounds: Any) -> tuple[float, float]:
    """A number or a pair of numbers as a pair, each a ``number_param``
    (finite, inside ``bounds``: ``lo``, ``hi``, ``gt``)."""
    vals = tuple(v) if isinstance(v, (tuple, list)) or np.ndim(v) == 1 else (v, v)
    if len(vals) != 2:
        raise TypeError(f"{op_name(op)}: {name} must be a number or a pair of numbers, "
                        f"got {v!r}")
    first, second = (number_param(op, name, a, **bounds) for a in vals)
    return first, second


def eps_param(op: str, eps: Any) -> float:
    """``eps`` must be a finite Python number > 0."""
    return number_param(op, "eps", eps, gt=0.0)
