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

from .meta import op_name

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


def strided_extent(count: Size, stride: int) -> Size:
    """How far ``count`` positions ``lo, lo + stride, ...`` reach past
    ``lo``: ``(count - 1) * stride + 1``, 0 for ``count <= 0`` (the inverse
    of ``strided_count``: the tight ``limit - lo`` of a strided slice)."""
    return max_dim((count - 1) * stride + 1, 0)


def _slice_bound(op: str, arg: str, v: Size, n: Size, lower: int | Size, upper: Size) -> Size:
    """One bound of Python's ``slice.indices(n)``: a negative ``v`` counts
    from the end, then the bound is clamped into ``[lower, upper]``. A
    symbolic ``v`` must have a sign decided for every value of the sizes."""
    if definitely_le(0, v):
        return min_dim(v, upper)
    if definitely_lt(v, 0):
        return max_dim(v + n, lower)
    raise ValueError(f"{op_name(op)}: {arg}={v} may be negative or not, depending on the "
                     f"symbolic sizes, so it is not known whether it counts from the end")


def python_slice(op: str, n: Size, start: Size | None, end: Size | None, step: int, *,
                 args: tuple[str, str] = ("start", "end")) -> tuple[Size, Size]:
    """``slice(start, end, step)`` on an axis of size ``n`` with Python's
    semantics (``slice.indices``): negative bounds count from the end, then
    clamp into ``[0, n]`` (``[-1, n - 1]`` for a negative step); ``None`` is
    the end the step walks from or to. Returns ``(start, stop)`` with the
    stop moved to the start where the walk would not reach it, so that
    ``0 <= start <= stop <= n`` for a positive step and ``-1 <= stop <=
    start <= n - 1`` for a negative one: the positions are ``start + j *
    step`` for ``j < slice_count(start, stop, step)``. Sizes and bounds may
    be symbolic; ``args`` name start and end in the error for a symbolic
    bound whose sign is not decided."""
    lower, upper = (0, n) if step > 0 else (-1, n - 1)
    first = (upper if step < 0 else lower) if start is None else _slice_bound(
        op, args[0], start, n, lower, upper)
    stop = (lower if step < 0 else upper) if end is None else _slice_bound(
        op, args[1], end, n, lower, upper)
    return first, (max_dim(stop, first) if step > 0 else min_dim(stop, first))


def slice_count(start: Size, stop: Size, step: int) -> Size:
    """How many positions ``start, start + step, ...`` lie strictly before
    ``stop`` in the direction of the step: ``strided_count(stop - start,
    step)``, or ``strided_count(start - stop, -step)`` walking backwards
    (the same expression as the size of ``slice(start, stop, step)`` on the
    reversed axis, so a transpose that slices there gives this very size)."""
    return strided_count(stop - start, step) if step > 0 else strided_count(start - stop, -step)
