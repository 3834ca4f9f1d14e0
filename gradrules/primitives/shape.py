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
from ..core.args import as_array, int_tuple
from ..core.meta import check_dtype, normalize_axes, normalize_axis, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "shape"


def _aval_like(op: str, x: Any, shape: tuple[int, ...]) -> ShapedArray:
    check_dtype(op, "x", x.dtype, "any")
    return ShapedArray(tuple(shape), x.dtype, weak_type=x.weak_type)


def _array(op: str, x: Any) -> Any:
    """x as an array of a real dtype (a TypeError naming ``op`` otherwise)."""
    x = as_array(op, "x", x)
    check_dtype(op, "x", jnp.result_type(x), "any")
    return jnp.asarray(x) if isinstance(x, (bool, int, float, np.generic)) else x


# ---------------------------------------------------------------- reshape
def _reshape_infer_meta(x: Any, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    if math.prod(new_sizes) != math.prod(x.shape) or any(d < 0 for d in new_sizes):
        raise ValueError(f"{op_name('reshape')}: cannot reshape x with shape {x.shape} "
                         f"to {new_sizes}")
    return _aval_like("reshape", x, new_sizes)


def _reshape_impl(x: Array, *, new_sizes: tuple[int, ...]) -> Array:
    return lax.reshape(x, new_sizes)


reshape_p = define_primitive("reshape", family=FAMILY, operands=("x",), params=("new_sizes",),
                             infer_meta=_reshape_infer_meta, impl=_reshape_impl)


def reshape(x: ArrayLike, shape: Sequence[int] | int) -> Array:
    """``x`` with a new shape of the same size (row-major); one dim may be -1."""
    x = _array("reshape", x)
    shape = int_tuple("reshape", "shape", shape, symbolic=True)
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


register_op(OpDef(name="reshape", family=FAMILY, fn=reshape, primitives=(reshape_p,),
                  reference=jnp.reshape, operands=("x",), linear=(("x",),)))


# -------------------------------------------------------------- transpose
def _transpose_infer_meta(x: Any, *, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(len(x.shape))):
        raise ValueError(f"{op_name('transpose')}: axes {permutation} is not a permutation "
                         f"of the axes of x with shape {x.shape}")
    return _aval_like("transpose", x, tuple(x.shape[p] for p in permutation))


def _transpose_impl(x: Array, *, permutation: tuple[int, ...]) -> Array:
    return lax.transpose(x, permutation)


transpose_p = define_primitive("transpose", family=FAMILY, operands=("x",),
                               params=("permutation",), infer_meta=_transpose_infer_meta,
                               impl=_transpose_impl)


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
register_op(OpDef(name="transpose", family=FAMILY, fn=transpose, primitives=(transpose_p,),
                  reference=jnp.transpose, operands=("x",), linear=(("x",),),
                  aliases=("permute",)))


def _axis_list(x: Any, name: str, axes: int | Sequence[int], nd: int) -> list[int]:
    """``source`` / ``destination`` of moveaxis: an int or a sequence of
    distinct ints, normalised."""
    vals = [axes] if isinstance(axes, (int, np.integer)) else list(int_tuple(
        "moveaxis", name, axes))
    out = [normalize_axis("moveaxis", a, nd, name) for a in vals]
    if len(set(out)) != len(out):
        raise ValueError(f"{op_name('moveaxis')}: repeated axis in {name}={axes!r} for x with "
                         f"shape {np.shape(x)}")
    return out


def moveaxis(x: ArrayLike, source: int | Sequence[int],
             destination: int | Sequence[int]) -> Array:
    """``jnp.moveaxis``: the axes ``source`` of x moved to the positions
    ``destination`` (ints or sequences of one length), the other axes kept
    in order. An op made of the ``transpose`` primitive (one bind, none when
    nothing moves): linear, its transpose the inverse permutation."""
    x = _array("moveaxis", x)
    nd = np.ndim(x)
    if nd == 0:
        raise ValueError(f"{op_name('moveaxis')}: x must have at least one axis, got a scalar")
    src = _axis_list(x, "source", source, nd)
    dst = _axis_list(x, "destination", destination, nd)
    if len(src) != len(dst):
        raise ValueError(f"{op_name('moveaxis')}: source={source!r} and destination="
                         f"{destination!r} must name as many axes")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    if perm == list(range(nd)):
        return x if hasattr(x, "aval") or isinstance(x, jax.Array) else jnp.asarray(x)
    return transpose_p.bind(x, permutation=tuple(perm))


register_op(OpDef(name="moveaxis", family=FAMILY, fn=moveaxis, primitives=(transpose_p,),
                  reference=jnp.moveaxis, operands=("x",), linear=(("x",),)))


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


def _broadcast_in_dim_impl(x: Array, *, shape: tuple[int, ...],
                           broadcast_dimensions: tuple[int, ...]) -> Array:
    return lax.broadcast_in_dim(x, shape, broadcast_dimensions)


broadcast_in_dim_p = define_primitive(
    "broadcast_in_dim", family=FAMILY, operands=("x",), params=("shape", "broadcast_dimensions"),
    infer_meta=_broadcast_in_dim_infer_meta, impl=_broadcast_in_dim_impl)


def broadcast_in_dim(x: ArrayLike, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int]) -> Array:
    """XLA's BroadcastInDim: axis i of x becomes axis ``broadcast_dimensions[i]``."""
    x = _array("broadcast_in_dim", x)
    return broadcast_in_dim_p.bind(x, shape=int_tuple("broadcast_in_dim", "shape", shape,
                                                      symbolic=True),
                                   broadcast_dimensions=int_tuple("broadcast_in_dim",
                                                                  "broadcast_dimensions",
                                                                  broadcast_dimensions))


register_op(OpDef(name="broadcast_in_dim", family=FAMILY, fn=broadcast_in_dim,
                  primitives=(broadcast_in_dim_p,), reference=lax.broadcast_in_dim,
                  operands=("x",), linear=(("x",),)))


# ------------------------------------------------------------ broadcast_to
def _broadcast_to_infer_meta(x: Any, *, shape: tuple[int, ...]) -> ShapedArray:
    ok = len(shape) >= len(x.shape) and all(s >= 0 for s in shape) and all(
        d in (1, s) for d, s in zip(x.shape[::-1], shape[::-1]))
    if not ok:
        raise ValueError(f"{op_name('broadcast_to')}: cannot broadcast x with shape "
                         f"{tuple(x.shape)} to {shape}")
    return _aval_like("broadcast_to", x, shape)


def _broadcast_to_impl(x: Array, *, shape: tuple[int, ...]) -> Array:
    return jnp.broadcast_to(x, shape)


broadcast_to_p = define_primitive("broadcast_to", family=FAMILY, operands=("x",),
                                  params=("shape",), infer_meta=_broadcast_to_infer_meta,
                                  impl=_broadcast_to_impl)


def broadcast_to(x: ArrayLike, shape: Sequence[int]) -> Array:
    """Numpy broadcasting of ``x`` to ``shape``. Its transpose sums the copies."""
    x = _array("broadcast_to", x)
    shape = int_tuple("broadcast_to", "shape", shape, symbolic=True)
    if tuple(np.shape(x)) == shape:
        return x
    return broadcast_to_p.bind(x, shape=shape)


register_op(OpDef(name="broadcast_to", family=FAMILY, fn=broadcast_to,
                  primitives=(broadcast_to_p,), reference=jnp.broadcast_to,
                  operands=("x",), linear=(("x",),)))


# ------------------------------------------------------------- expand_dims
def _expand_dims_infer_meta(x: Any, *, axes: tuple[int, ...]) -> ShapedArray:
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return _aval_like("expand_dims", x, tuple(shape))


def _expand_dims_impl(x: Array, *, axes: tuple[int, ...]) -> Array:
    return jnp.expand_dims(x, axes)


expand_dims_p = define_primitive("expand_dims", family=FAMILY, operands=("x",), params=("axes",),
                                 infer_meta=_expand_dims_infer_meta, impl=_expand_dims_impl)


def expand_dims(x: ArrayLike, *, axis: int | Sequence[int]) -> Array:
    """Insert size-1 axes at ``axis`` (positions in the result, as numpy)."""
    x = _array("expand_dims", x)
    axis = int_tuple("expand_dims", "axis", axis)
    axes = normalize_axes("expand_dims", axis, np.ndim(x) + len(axis))
    return expand_dims_p.bind(x, axes=axes)


unsqueeze = expand_dims


def _expand_dims_reference(x: ArrayLike, *, axis: int | Sequence[int]) -> Array:
    return jnp.expand_dims(x, axis)


register_op(OpDef(name="expand_dims", family=FAMILY, fn=expand_dims,
                  primitives=(expand_dims_p,), reference=_expand_dims_reference,
                  operands=("x",), linear=(("x",),), aliases=("unsqueeze",)))


# ----------------------------------------------------------------- squeeze
def _squeeze_infer_meta(x: Any, *, axes: tuple[int, ...]) -> ShapedArray:
    bad = [a for a in axes if x.shape[a] != 1]
    if bad:
        raise ValueError(f"{op_name('squeeze')}: axis {bad} of x with shape {x.shape} "
                         "does not have size 1")
    return _aval_like("squeeze", x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def _squeeze_impl(x: Array, *, axes: tuple[int, ...]) -> Array:
    return lax.squeeze(x, axes)


squeeze_p = define_primitive("squeeze", family=FAMILY, operands=("x",), params=("axes",),
                             infer_meta=_squeeze_infer_meta, impl=_squeeze_impl)


def squeeze(x: ArrayLike, *, axis: int | Sequence[int] | None = None) -> Array:
    """Remove size-1 axes (all of them when ``axis`` is None)."""
    x = _array("squeeze", x)
    shape = np.shape(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, len(shape))
    return squeeze_p.bind(x, axes=axes)


def _squeeze_reference(x: ArrayLike, *, axis: int | Sequence[int] | None = None) -> Array:
    return jnp.squeeze(x, axis)


register_op(OpDef(name="squeeze", family=FAMILY, fn=squeeze, primitives=(squeeze_p,),
                  reference=_squeeze_reference, operands=("x",), linear=(("x",),)))
