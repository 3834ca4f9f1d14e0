"""Shape primitives: reshape, transpose, broadcast_in_dim, broadcast_to,
expand_dims, squeeze. All linear; their transposes are each other."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.meta import check_dtype, int_tuple, normalize_axes, normalize_axis, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "shape"


def _aval_like(op: str, x: Any, shape: tuple[int, ...]) -> ShapedArray:
    check_dtype(op, "x", x.dtype, "any")
    return ShapedArray(tuple(shape), x.dtype, weak_type=x.weak_type)


def _array(op: str, x: Any) -> Any:
    from ._elementwise import as_array
    x = as_array(op, "x", x)
    return jnp.asarray(x) if isinstance(x, (bool, int, float, np.generic)) else x


# ---------------------------------------------------------------- reshape
def _reshape_infer_meta(x: Any, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    if math.prod(new_sizes) != math.prod(x.shape) or min(new_sizes, default=0) < 0:
        raise ValueError(f"{op_name('reshape')}: cannot reshape x with shape {x.shape} "
                         f"to {new_sizes}")
    return _aval_like("reshape", x, new_sizes)


reshape_p = define_primitive("reshape", family=FAMILY, operands=("x",), params=("new_sizes",),
                             infer_meta=_reshape_infer_meta,
                             impl=lambda x, *, new_sizes: lax.reshape(x, new_sizes))


def reshape(x: ArrayLike, shape: Sequence[int] | int) -> Array:
    """``x`` with a new shape of the same size (row-major); one dim may be -1."""
    x = _array("reshape", x)
    shape = int_tuple("reshape", "shape", shape)
    size = math.prod(np.shape(x))
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise ValueError(f"{op_name('reshape')}: invalid shape {shape}")
    if -1 in shape:
        rest = math.prod(d for d in shape if d != -1)
        if rest == 0 or size % rest:
            raise ValueError(f"{op_name('reshape')}: cannot reshape x with shape "
                             f"{np.shape(x)} to {shape}")
        shape = tuple(size // rest if d == -1 else d for d in shape)
    return reshape_p.bind(x, new_sizes=shape)


# -------------------------------------------------------------- transpose
def _transpose_infer_meta(x: Any, *, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(len(x.shape))):
        raise ValueError(f"{op_name('transpose')}: axes {permutation} is not a permutation "
                         f"of the axes of x with shape {x.shape}")
    return _aval_like("transpose", x, tuple(x.shape[p] for p in permutation))


transpose_p = define_primitive("transpose", family=FAMILY, operands=("x",),
                               params=("permutation",), infer_meta=_transpose_infer_meta,
                               impl=lambda x, *, permutation: lax.transpose(x, permutation))


def transpose(x: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """Permute the axes of ``x`` (reverse them when ``axes`` is None)."""
    x = _array("transpose", x)
    nd = np.ndim(x)
    if axes is None:
        axes = tuple(range(nd))[::-1]
    perm = tuple(normalize_axis("transpose", a, nd, "axes") for a in axes)
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"{op_name('transpose')}: axes {tuple(axes)} is not a permutation "
                         f"of the axes of x with shape {np.shape(x)}")
    return transpose_p.bind(x, permutation=perm)


permute = transpose


def moveaxis(x: ArrayLike, source: int, destination: int) -> Array:
    """Move one axis (a transpose)."""
    nd = np.ndim(x)
    s = normalize_axis("moveaxis", source, nd)
    d = normalize_axis("moveaxis", destination, nd)
    if s == d:
        return x
    perm = [i for i in range(nd) if i != s]
    perm.insert(d, s)
    return transpose(x, perm)


# -------------------------------------------------------- broadcast_in_dim
def _broadcast_in_dim_infer_meta(x: Any, *, shape: tuple[int, ...],
                                 broadcast_dimensions: tuple[int, ...]) -> ShapedArray:
    dims = broadcast_dimensions
    ok = (len(dims) == len(x.shape) and all(0 <= d < len(shape) for d in dims)
          and list(dims) == sorted(set(dims))
          and all(x.shape[i] in (1, shape[d]) for i, d in enumerate(dims)))
    if not ok:
        raise ValueError(f"{op_name('broadcast_in_dim')}: cannot broadcast x with shape "
                         f"{x.shape} to {shape} with broadcast_dimensions {dims}")
    return _aval_like("broadcast_in_dim", x, shape)


broadcast_in_dim_p = define_primitive(
    "broadcast_in_dim", family=FAMILY, operands=("x",), params=("shape", "broadcast_dimensions"),
    infer_meta=_broadcast_in_dim_infer_meta,
    impl=lambda x, *, shape, broadcast_dimensions: lax.broadcast_in_dim(x, shape,
                                                                        broadcast_dimensions))


def broadcast_in_dim(x: ArrayLike, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int]) -> Array:
    """XLA's BroadcastInDim: axis i of x becomes axis ``broadcast_dimensions[i]``."""
    x = _array("broadcast_in_dim", x)
    return broadcast_in_dim_p.bind(x, shape=int_tuple("broadcast_in_dim", "shape", shape),
                                   broadcast_dimensions=int_tuple("broadcast_in_dim",
                                                                  "broadcast_dimensions",
                                                                  broadcast_dimensions))


# ------------------------------------------------------------ broadcast_to
def _broadcast_to_infer_meta(x: Any, *, shape: tuple[int, ...]) -> ShapedArray:
    ok = len(shape) >= len(x.shape) and min(shape, default=0) >= 0 and all(
        d in (1, s) for d, s in zip(x.shape[::-1], shape[::-1]))
    if not ok:
        raise ValueError(f"{op_name('broadcast_to')}: cannot broadcast x with shape "
                         f"{tuple(x.shape)} to {shape}")
    return _aval_like("broadcast_to", x, shape)


broadcast_to_p = define_primitive("broadcast_to", family=FAMILY, operands=("x",),
                                  params=("shape",), infer_meta=_broadcast_to_infer_meta,
                                  impl=lambda x, *, shape: jnp.broadcast_to(x, shape))


def broadcast_to(x: ArrayLike, shape: Sequence[int]) -> Array:
    """Numpy broadcasting of ``x`` to ``shape``. Its transpose sums the copies."""
    x = _array("broadcast_to", x)
    shape = int_tuple("broadcast_to", "shape", shape)
    if tuple(np.shape(x)) == shape:
        return x
    return broadcast_to_p.bind(x, shape=shape)


# ------------------------------------------------------------- expand_dims
def _expand_dims_infer_meta(x: Any, *, axes: tuple[int, ...]) -> ShapedArray:
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return _aval_like("expand_dims", x, tuple(shape))


expand_dims_p = define_primitive("expand_dims", family=FAMILY, operands=("x",), params=("axes",),
                                 infer_meta=_expand_dims_infer_meta,
                                 impl=lambda x, *, axes: jnp.expand_dims(x, axes))


def expand_dims(x: ArrayLike, *, axis: int | Sequence[int]) -> Array:
    """Insert size-1 axes at ``axis`` (positions in the result, as numpy)."""
    x = _array("expand_dims", x)
    n = len(axis) if isinstance(axis, (tuple, list)) else 1
    axes = normalize_axes("expand_dims", axis, np.ndim(x) + n)
    return expand_dims_p.bind(x, axes=axes)


unsqueeze = expand_dims


# ----------------------------------------------------------------- squeeze
def _squeeze_infer_meta(x: Any, *, axes: tuple[int, ...]) -> ShapedArray:
    bad = [a for a in axes if x.shape[a] != 1]
    if bad:
        raise ValueError(f"{op_name('squeeze')}: axis {bad} of x with shape {x.shape} "
                         "does not have size 1")
    return _aval_like("squeeze", x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


squeeze_p = define_primitive("squeeze", family=FAMILY, operands=("x",), params=("axes",),
                             infer_meta=_squeeze_infer_meta,
                             impl=lambda x, *, axes: lax.squeeze(x, axes))


def squeeze(x: ArrayLike, *, axis: int | Sequence[int] | None = None) -> Array:
    """Remove size-1 axes (all of them when ``axis`` is None)."""
    x = _array("squeeze", x)
    shape = np.shape(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, len(shape))
    return squeeze_p.bind(x, axes=axes)


_LIN = (("x",),)
register_op(OpDef("reshape", FAMILY, reshape, (reshape_p,), jnp.reshape, ("x",), linear=_LIN))
register_op(OpDef("transpose", FAMILY, transpose, (transpose_p,), jnp.transpose, ("x",),
                  linear=_LIN, aliases=("permute",)))
register_op(OpDef("broadcast_in_dim", FAMILY, broadcast_in_dim, (broadcast_in_dim_p,),
                  lax.broadcast_in_dim, ("x",), linear=_LIN))
register_op(OpDef("broadcast_to", FAMILY, broadcast_to, (broadcast_to_p,), jnp.broadcast_to,
                  ("x",), linear=_LIN))
register_op(OpDef("expand_dims", FAMILY, expand_dims, (expand_dims_p,),
                  lambda x, *, axis: jnp.expand_dims(x, axis), ("x",), linear=_LIN,
                  aliases=("unsqueeze",)))
register_op(OpDef("squeeze", FAMILY, squeeze, (squeeze_p,),
                  lambda x, *, axis=None: jnp.squeeze(x, axis), ("x",), linear=_LIN))
