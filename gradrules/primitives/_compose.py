"""Small compositions of catalog primitives that the gradrules-op
compositions of the fused ops (their tangent maps and backwards, which are
also their lowerings) and the rules share. Everything here binds gradrules
primitives, so traces stay inside the catalog.

* ``cast(x, dtype)``: a ``convert_element_type`` where the dtype differs;
* ``unbroadcast(ct, aval)``: the transpose of numpy broadcasting (sum the copies);
* ``full`` / ``zeros``: a broadcast literal;
* ``indicator(mask, like)``: a bool mask as 1 / 0 in the dtype of ``like``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._jax import Array, aval_of
from .convert import convert_element_type
from .reduction import sum_p
from .shape import broadcast_to_p, reshape_p


def cast(x: Any, dtype: Any) -> Any:
    """``x`` as ``dtype`` (a gradrules convert_element_type when it differs)."""
    if np.dtype(aval_of(x).dtype) == np.dtype(dtype):
        return x
    return convert_element_type(x, dtype=dtype)


def unbroadcast(ct: Any, aval: Any) -> Any:
    """Transpose of numpy broadcasting to ``ct``'s shape: sum the copies down
    to the shape of ``aval``."""
    shape = tuple(aval.shape)
    ct_shape = tuple(np.shape(ct))
    if ct_shape == shape:
        return ct
    lead = len(ct_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and ct_shape[lead + i] != 1)
    if axes:
        ct = sum_p.bind(ct, axes=axes, keepdims=False)
    if tuple(np.shape(ct)) != shape:
        ct = reshape_p.bind(ct, new_sizes=shape)
    return ct


def full(shape: Sequence[int], value: Any, dtype: Any) -> Array:
    """An array filled with ``value`` (a broadcast literal)."""
    shape = tuple(shape)
    v = np.asarray(value, dtype)
    return broadcast_to_p.bind(v, shape=shape) if shape else v


def zeros(shape: Sequence[int], dtype: Any) -> Array:
    """An array of zeros (a broadcast literal)."""
    return full(shape, 0, dtype)


def indicator(mask: Any, like: Any) -> Any:
    """A bool mask as 1 / 0 in the dtype of ``like`` (a convert_element_type)."""
    return convert_element_type(mask, dtype=aval_of(like).dtype)
