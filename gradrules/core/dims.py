"""Sizes that may be symbolic (``jax.export.symbolic_shape``): the arithmetic
and comparisons infer_meta and public functions run on them.

A symbolic size ``b`` stands for every integer ``b >= 1``. Arithmetic on it
is exact (``b - 1``, ``b // 2``); ``max`` and ``min`` are JAX's
``jax.core.max_dim`` / ``min_dim`` (a symbolic ``max(b - 2, 0)`` where the
order is not decided). A comparison holds *definitely* when it holds for
every value of the symbolic sizes: a size check passes only then, so a
shape is never built on an assumption (as JAX's own shape rules, which
refuse an undecided comparison). ``==`` on sizes already means "definitely
equal" (a symbolic size is never equal to a constant).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

import jax
from jax.core import max_dim as max_dim
from jax.core import min_dim as min_dim

Size: TypeAlias = "int | Any"
"""A size: an int, or a symbolic dimension."""


def is_constant(d: Any) -> bool:
    """Whether the size ``d`` is a plain integer (not symbolic)."""
    return isinstance(d, (int, np.integer))


def definitely_equal(a: Size, b: Size) -> bool:
    """``a == b`` for every value of the symbolic sizes (what ``==`` on
    sizes already means; named so a size check reads as one)."""
    return bool(a == b)


def definitely_le(a: Size, b: Size) -> bool:
    """``a <= b`` for every value of the symbolic sizes (False where the
    order of a and b is not decided)."""
    try:
        return bool(a <= b)
    except jax.errors.InconclusiveDimensionOperation:
        return False


def definitely_lt(a: Size, b: Size) -> bool:
    """``a < b`` for every value of the symbolic sizes."""
    return definitely_le(a + 1, b)


def definitely_in(lo: Size, d: Size, hi: Size) -> bool:
    """``lo <= d <= hi`` for every value of the symbolic sizes."""
    return definitely_le(lo, d) and definitely_le(d, hi)


def strided_count(d: Size, stride: int) -> Size:
    """``ceil(d / stride)`` elements, 0 for ``d <= 0``: how many positions
    ``lo, lo + stride, ...`` lie below ``lo + d``. Written as JAX's
    ``stride_dim`` (``max((d - 1) // stride + 1, 0)``), so a symbolic count
    is the very expression lax's shape rules produce."""
    return max_dim((d - 1) // stride + 1, 0)
