"""Matrix structure: tril, triu, diagonal, diag and trace, each a primitive.

All of them are linear in x. Their transposes are again matrix-structure
primitives, with no dense 0/1 matrix anywhere: tril and triu are their own
transposes (masks), ``diagonal`` (a gather of the diagonal's entries, as
jnp.diagonal) and ``diag`` (the vector broadcast along the matrix and
selected on the diagonal by an iota comparison) are each other's, and the
transpose of ``trace`` is ``diag`` of the cotangent as one entry repeated
along the diagonal (a broadcast kept on the diagonal), whose transpose is
``trace`` again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec

from .. import _jax
from .._jax import ShapedArray
from ..core.args import int_param
from ..core.dims import Size, definitely_le, max_dim, min_dim
from ..core.meta import check_dtype, normalize_axis, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import data_arg, promote
from .gather import IN_RANGE
from .layout import shaped_like
from .reduction import widened_integers

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "matrix"


# ------------------------------------------------------------------ helpers
def diagonal_length(rows: Size, cols: Size, offset: int) -> Size:
    """The number of entries of diagonal ``offset`` of a [rows, cols] matrix:
    ``max(0, min(rows + min(offset, 0), cols - max(offset, 0)))`` (rows and
    cols may be symbolic; offset is an int)."""
    return max_dim(0, min_dim(rows + min(offset, 0), cols - max(offset, 0)))


def diagonal_mask(rows: Size, cols: Size, offset: int) -> Array:
    """The [rows, cols] booleans ``i + offset == j``: where diagonal ``offset``
    lies. Built on one matrix (an iota comparison) and broadcast over any
    stack of matrices by the caller, so its index arithmetic is paid once,
    not once per matrix."""
    i_plus_offset = lax.broadcast_in_dim(lax.iota(np.int32, rows) + np.int32(offset),
                                         (rows, cols), (0,))
    return i_plus_offset == lax.broadcasted_iota(np.int32, (rows, cols), 1)


def _matrix_rank(op: str, x: Any, arg: str = "x") -> None:
    if len(x.shape) < 2:
        raise ValueError(f"{op_name(op)}: {arg} must have rank >= 2 (a matrix or a stack of "
                         f"matrices), got shape {tuple(x.shape)}")


def _two_axes(op: str, x: Any, axis1: int, axis2: int) -> tuple[int, int]:
    """axis1 and axis2 normalised; a ValueError when they name one axis."""
    nd = np.ndim(x)
    if nd < 2:
        raise ValueError(f"{op_name(op)}: x must have rank >= 2, got shape {np.shape(x)}")
    a1, a2 = normalize_axis(op, axis1, nd, "axis1"), normalize_axis(op, axis2, nd, "axis2")
    if a1 == a2:
        raise ValueError(f"{op_name(op)}: axis1={axis1} and axis2={axis2} name the same axis "
                         f"of x with shape {np.shape(x)}")
    return a1, a2


def _check_axes(op: str, x: Any, axis1: int, axis2: int) -> tuple[Size, Size]:
    """infer_meta's check of (axis1, axis2): the (rows, cols) they hold."""
    _matrix_rank(op, x)
    nd = len(x.shape)
    if not (0 <= axis1 < nd and 0 <= axis2 < nd) or axis1 == axis2:
        raise ValueError(f"{op_name(op)}: axes ({axis1}, {axis2}) are not two distinct axes of "
                         f"x with shape {tuple(x.shape)}")
    return x.shape[axis1], x.shape[axis2]


def _rest(shape: tuple[Size, ...], axis1: int, axis2: int) -> tuple[Size, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in (axis1, axis2))


def diagonal_impl(x: Array, *, offset: int, axis1: int, axis2: int) -> Array:
    """The diagonal gathered as ``jnp.diagonal`` does (axis1, axis2 moved
    last, then ``x[..., i, i + offset]``), its positions an iota taken as in
    range (no table of positions in memory, no wrap of negative ones; a
    symbolic length too, ``jax.export``): XLA partitions that gather over a
    sharded matrix axis with no gather of x (the owners' entries summed into
    place). Where x's type shards a matrix axis (Explicit mesh axes), the
    result's sharding is given (the other axes', the diagonal's replicated),
    which jax.numpy leaves ambiguous."""
    rows, cols = x.shape[axis1], x.shape[axis2]
    spec = _jax.spec_of(x)
    out = (None if spec[axis1] is None and spec[axis2] is None
           else PartitionSpec(*_rest(spec, axis1, axis2), None))
    x = jnp.moveaxis(x, (axis1, axis2), (-2, -1))
    i = lax.iota(np.int32, diagonal_length(rows, cols, offset))
    j = i + np.int32(abs(offset))
    return x.at[(..., i, j) if offset >= 0 else (..., j, i)].get(out_sharding=out, **IN_RANGE)


# ------------------------------------------------------------ tril / triu
def _triangle_infer_meta(op: str, x: Any, *, k: int) -> ShapedArray:
    check_dtype(op, "x", x.dtype, "any")
    _matrix_rank(op, x)
    return shaped_like(x, x.shape)


def _tril_infer_meta(x: Any, *, k: int) -> ShapedArray:
    return _triangle_infer_meta("tril", x, k=k)


def _tril_impl(x: Array, *, k: int) -> Array:
    return jnp.tril(x, k)


tril_p = define_primitive("tril", family=FAMILY, operands=("x",), params=("k",),
                          infer_meta=_tril_infer_meta, impl=_tril_impl)


def _triangle_arg(op: str, x: ArrayLike, k: Any) -> tuple[Any, int]:
    x = data_arg(op, "x", x)
    if np.ndim(x) < 2:
        raise ValueError(f"{op_name(op)}: x must have rank >= 2 (a matrix or a stack of "
                         f"matrices), got shape {np.shape(x)}")
    return x, int_param(op, "k", k)


def tril(x: ArrayLike, k: int = 0) -> Array:
    """The lower triangle of the matrices in the last two axes of x
    (``jnp.tril``): ``out[..., i, j] = x[..., i, j]`` where ``j <= i + k``,
    else 0. Linear; a mask, so its transpose is ``tril`` itself."""
    x, k = _triangle_arg("tril", x, k)
    return tril_p.bind(x, k=k)


def _reference_tril(x: Array, k: int = 0) -> Array:
    return jnp.tril(x, k)


register_op(OpDef(name="tril", family=FAMILY, fn=tril, primitives=(tril_p,),
                  reference=_reference_tril, operands=("x",), linear=(("x",),)))


def _triu_infer_meta(x: Any, *, k: int) -> ShapedArray:
    return _triangle_infer_meta("triu", x, k=k)


def _triu_impl(x: Array, *, k: int) -> Array:
    return jnp.triu(x, k)


triu_p = define_primitive("triu", family=FAMILY, operands=("x",), params=("k",),
                          infer_meta=_triu_infer_meta, impl=_triu_impl)


def triu(x: ArrayLike, k: int = 0) -> Array:
    """The upper triangle of the matrices in the last two axes of x
    (``jnp.triu``): ``out[..., i, j] = x[..., i, j]`` where ``j >= i + k``,
    else 0. Linear; a mask, so its transpose is ``triu`` itself."""
    x, k = _triangle_arg("triu", x, k)
    return triu_p.bind(x, k=k)


def _reference_triu(x: Array, k: int = 0) -> Array:
    return jnp.triu(x, k)


register_op(OpDef(name="triu", family=FAMILY, fn=triu, primitives=(triu_p,),
                  reference=_reference_triu, operands=("x",), linear=(("x",),)))


# ---------------------------------------------------------------- diagonal
def _diagonal_infer_meta(x: Any, *, offset: int, axis1: int, axis2: int) -> ShapedArray:
    check_dtype("diagonal", "x", x.dtype, "any")
    rows, cols = _check_axes("diagonal", x, axis1, axis2)
    n = diagonal_length(rows, cols, offset)
    return shaped_like(x, _rest(tuple(x.shape), axis1, axis2) + (n,))


diagonal_p = define_primitive("diagonal", family=FAMILY, operands=("x",),
                              params=("offset", "axis1", "axis2"),
                              infer_meta=_diagonal_infer_meta, impl=diagonal_impl)


def diagonal(x: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """Diagonal ``offset`` of the matrices in axes (axis1, axis2) of x
    (``jnp.diagonal``): those two axes are removed and the diagonal, of
    ``min(rows + min(offset, 0), cols - max(offset, 0))`` entries (0 if that
    is negative), is the new last axis; ``out[..., i] = x[..., i, i + offset]``
    (for offset >= 0; ``x[..., i - offset, i]`` below the main diagonal).

    Linear. Computed as jnp.diagonal does (a gather of the diagonal's
    entries only; ``diagonal_impl``); the transpose writes the cotangent back
    onto the diagonal of a zero matrix (``diag``).
    """
    x = data_arg("diagonal", "x", x)
    a1, a2 = _two_axes("diagonal", x, axis1, axis2)
    return diagonal_p.bind(x, offset=int_param("diagonal", "offset", offset), axis1=a1,
                           axis2=a2)


def _reference_diagonal(x: Array, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    return jnp.diagonal(x, offset, axis1, axis2)


register_op(OpDef(name="diagonal", family=FAMILY, fn=diagonal, primitives=(diagonal_p,),
                  reference=_reference_diagonal, operands=("x",), linear=(("x",),)))


# -------------------------------------------------------------------- diag
def _diag_infer_meta(v: Any, *, offset: int, rows: Size, cols: Size) -> ShapedArray:
    check_dtype("diag", "v", v.dtype, "any")
    n = diagonal_length(rows, cols, offset)
    if (len(v.shape) < 1 or (v.shape[-1] != n and v.shape[-1] != 1)
            or not (definitely_le(0, rows) and definitely_le(0, cols))):
        raise ValueError(f"{op_name('diag')}: v with shape {tuple(v.shape)} does not hold "
                         f"diagonal {offset} of a [{rows}, {cols}] matrix ({n} entries, or "
                         "one repeated along it)")
    return shaped_like(v, tuple(v.shape[:-1]) + (rows, cols))


def diag_impl(v: Array, *, offset: int, rows: Size, cols: Size) -> Array:
    """The matrices with v on diagonal ``offset``, as ``jnp.diag`` builds
    them: v as a row (offset >= 0: entry i sits in row i) or a column
    index, broadcast along the other axis and kept where ``j - i == offset``
    (``diagonal_mask``, fused into the select: no 0/1 matrix in memory).
    v's n entries are first padded to that axis' length; a v of one entry,
    repeated along the diagonal (``ct * I``, the transpose of ``trace``), is
    broadcast as it is, with no pad (a pad under a transposed layout costs
    XLA's CPU a bounds check per element)."""
    nd = v.ndim
    if v.shape[-1] != 1:
        along = rows if offset >= 0 else cols
        widths = [(0, 0, 0)] * (nd - 1) + [(0, along - v.shape[-1], 0)]
        v = lax.pad(v, np.zeros((), v.dtype), widths)
    shape = v.shape[:-1] + (rows, cols)
    full = lax.broadcast_in_dim(v, shape, tuple(range(nd - 1)) + (nd - 1 + (offset < 0),))
    on_diagonal = lax.broadcast_in_dim(diagonal_mask(rows, cols, offset), shape, (nd - 1, nd))
    return lax.select(on_diagonal, full, lax.full_like(full, 0))


diag_p = define_primitive("diag", family=FAMILY, operands=("v",),
                          params=("offset", "rows", "cols"), infer_meta=_diag_infer_meta,
                          impl=diag_impl)


def diag(v: ArrayLike, k: int = 0) -> Array:
    """``jnp.diag``: for a 1-D v of n entries, the [n + |k|, n + |k|] matrix
    with v on diagonal k (above the main one for k > 0) and zeros elsewhere;
    for a 2-D v, its diagonal k (``diagonal(v, k)``).

    Linear. Building the matrix is a broadcast of v selected where
    ``j - i == k`` (an iota comparison, as jnp.diag; no 0/1 matrix in
    memory), whose transpose is ``diagonal``; the 2-D case is ``diagonal``,
    whose transpose is that select.
    """
    v = data_arg("diag", "v", v)
    k = int_param("diag", "k", k)
    if np.ndim(v) == 2:
        return diagonal_p.bind(v, offset=k, axis1=0, axis2=1)
    if np.ndim(v) != 1:
        raise ValueError(f"{op_name('diag')}: v must be 1-D (a diagonal to build a matrix "
                         f"from) or 2-D (a matrix to take a diagonal of), got shape "
                         f"{np.shape(v)}")
    size = np.shape(v)[0] + abs(k)
    return diag_p.bind(v, offset=k, rows=size, cols=size)


def _reference_diag(v: Array, k: int = 0) -> Array:
    return jnp.diag(v, k)


register_op(OpDef(name="diag", family=FAMILY, fn=diag, primitives=(diag_p, diagonal_p),
                  reference=_reference_diag, operands=("v",), linear=(("v",),)))


# ------------------------------------------------------------------- trace
def _trace_infer_meta(x: Any, *, offset: int, axis1: int, axis2: int) -> ShapedArray:
    check_dtype("trace", "x", x.dtype, "numeric")
    _check_axes("trace", x, axis1, axis2)
    return shaped_like(x, _rest(tuple(x.shape), axis1, axis2))


def _trace_impl(x: Array, *, offset: int, axis1: int, axis2: int) -> Array:
    d = diagonal_impl(x, offset=offset, axis1=axis1, axis2=axis2)
    return jnp.sum(d, axis=-1, dtype=x.dtype)


trace_p = define_primitive("trace", family=FAMILY, operands=("x",),
                           params=("offset", "axis1", "axis2"), infer_meta=_trace_infer_meta,
                           impl=_trace_impl)


def trace(x: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """``jnp.trace``: the sum of diagonal ``offset`` of the matrices in axes
    (axis1, axis2) of x, which are removed: ``out[...] = sum_i x[..., i, i +
    offset]`` (0 for an empty diagonal).

    Linear; the transpose is the cotangent times the identity (shifted by
    ``offset``) of the [rows, cols] matrices: the cotangent broadcast over
    the matrices and kept on the diagonal by ``diag`` (no dense identity).
    """
    (x,) = promote("trace", {"x": x}, "numeric")
    x = widened_integers(x)             # as jnp.trace, narrow integers summed wide
    a1, a2 = _two_axes("trace", x, axis1, axis2)
    return trace_p.bind(x, offset=int_param("trace", "offset", offset), axis1=a1, axis2=a2)


def _reference_trace(x: Array, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    return jnp.trace(x, offset, axis1, axis2)


register_op(OpDef(name="trace", family=FAMILY, fn=trace, primitives=(trace_p,),
                  reference=_reference_trace, operands=("x",), linear=(("x",),)))

