"""Products of jax.numpy: dot, outer, kron and cross, each a primitive.

All four are bilinear: linear in each operand with the other held fixed.
Their JVPs bind the primitive once per nonzero tangent; their transposes are
products again (see ``gradrules/rules/products.py``): dot's and outer's are
dots, kron's sum the cotangent times the other factor over that factor's
axes, cross's are cross products (``ct_a = b x ct``, ``ct_b = ct x a``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.meta import broadcast_shapes, check_dtype, normalize_axis, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .arithmetic import multiply
from .convert import promote
from .layout import pad
from .shape import broadcast_to, moveaxis, reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "products"
HIGHEST = lax.Precision.HIGHEST


def _pair_meta(op: str, a: Any, b: Any) -> Any:
    dtype = same_dtype(op, {"a": a, "b": b})
    check_dtype(op, "a", dtype, "numeric")
    return dtype


def _aval(dtype: Any, shape: tuple[int, ...], a: Any, b: Any) -> ShapedArray:
    return ShapedArray(tuple(shape), dtype,
                       weak_type=a.weak_type and b.weak_type)


# --------------------------------------------------------------------- dot
def dot_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``jnp.dot``'s result shape for operands of rank >= 1: the last axis of
    a contracts with b's only axis (1-D b) or its second-to-last."""
    if len(b) == 1:
        return tuple(a[:-1])
    return tuple(a[:-1]) + tuple(b[:-2]) + tuple(b[-1:])


def _dot_infer_meta(a: Any, b: Any) -> ShapedArray:
    dtype = _pair_meta("dot", a, b)
    if not a.shape or not b.shape:
        raise ValueError(f"{op_name('dot')}: the primitive takes operands of rank >= 1, got "
                         f"a with shape {tuple(a.shape)} and b with shape {tuple(b.shape)}")
    k = b.shape[0] if len(b.shape) == 1 else b.shape[-2]
    if a.shape[-1] != k:
        axis = "its only axis" if len(b.shape) == 1 else "its second-to-last axis"
        raise ValueError(f"{op_name('dot')}: the last axis of a (shape {tuple(a.shape)}) has "
                         f"{a.shape[-1]} entries but b (shape {tuple(b.shape)}) has {k} along "
                         f"{axis}")
    return _aval(dtype, dot_shape(tuple(a.shape), tuple(b.shape)), a, b)


def _dot_impl(a: Array, b: Array) -> Array:
    return jnp.dot(a, b, precision=HIGHEST, preferred_element_type=a.dtype)


dot_p = define_primitive("dot", family=FAMILY, operands=("a", "b"), infer_meta=_dot_infer_meta,
                         impl=_dot_impl)


def dot(a: ArrayLike, b: ArrayLike) -> Array:
    """``jnp.dot``: a scalar operand multiplies; two vectors give their inner
    product; otherwise the sum over the last axis of a and the only axis of
    a 1-D b, or the second-to-last axis of b:
    ``out[i..., j..., n] = sum_k a[i..., k] b[j..., k, n]`` (shape
    ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]``: no batch broadcasting,
    unlike ``matmul``).

    Bilinear: the tangent is ``dot(ta, b) + dot(a, tb)``; the transposes are
    dots of the cotangent with the other operand (reshaped to matrices), and
    under vmap the batch axis becomes a free axis of a or b (one dot), or,
    both batched, the batch axis of one ``bmm``.
    """
    a, b = promote("dot", {"a": a, "b": b}, "numeric")
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return multiply(a, b)
    return dot_p.bind(a, b)


def _reference_dot(a: Array, b: Array) -> Array:
    return jnp.dot(a, b, precision=HIGHEST)


register_op(OpDef(name="dot", family=FAMILY, fn=dot, primitives=(dot_p,),
                  reference=_reference_dot, operands=("a", "b"), linear=(("a",), ("b",))))


# ------------------------------------------------------------------- outer
def _outer_infer_meta(a: Any, b: Any) -> ShapedArray:
    dtype = _pair_meta("outer", a, b)
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise ValueError(f"{op_name('outer')}: the primitive takes 1-D operands, got a with "
                         f"shape {tuple(a.shape)} and b with shape {tuple(b.shape)}")
    return _aval(dtype, (a.shape[0], b.shape[0]), a, b)


def _outer_impl(a: Array, b: Array) -> Array:
    return a[:, None] * b[None, :]


outer_p = define_primitive("outer", family=FAMILY, operands=("a", "b"),
                           infer_meta=_outer_infer_meta, impl=_outer_impl)


def outer(a: ArrayLike, b: ArrayLike) -> Array:
    """``jnp.outer``: ``out[i, j] = a.ravel()[i] * b.ravel()[j]`` (operands
    of any rank are flattened first).

    Bilinear: the tangent is ``outer(ta, b) + outer(a, tb)``; the transposes
    are the matrix-vector products ``dot(ct, b)`` for a and ``dot(a, ct)``
    for b (reshaped back to the operands' shapes).
    """
    a, b = promote("outer", {"a": a, "b": b}, "numeric")
    flat = [x if np.ndim(x) == 1 else reshape(x, (-1,)) for x in (a, b)]
    return outer_p.bind(*flat)


def _reference_outer(a: Array, b: Array) -> Array:
    return jnp.outer(a, b)


register_op(OpDef(name="outer", family=FAMILY, fn=outer, primitives=(outer_p,),
                  reference=_reference_outer, operands=("a", "b"), linear=(("a",), ("b",))))


# -------------------------------------------------------------------- kron
def _kron_infer_meta(a: Any, b: Any) -> ShapedArray:
    dtype = _pair_meta("kron", a, b)
    if len(a.shape) != len(b.shape):
        raise ValueError(f"{op_name('kron')}: the primitive takes operands of one rank, got "
                         f"a with shape {tuple(a.shape)} and b with shape {tuple(b.shape)}")
    return _aval(dtype, tuple(m * n for m, n in zip(a.shape, b.shape)), a, b)


def kron_impl(a: Array, b: Array) -> Array:
    """a with a unit axis after each of its axes, times b with one before
    each of its axes (a broadcast multiply), the axis pairs merged."""
    r = a.ndim
    a2 = lax.expand_dims(a, tuple(range(1, 2 * r, 2)))
    b2 = lax.expand_dims(b, tuple(range(0, 2 * r, 2)))
    return lax.reshape(a2 * b2, tuple(m * n for m, n in zip(a.shape, b.shape)))


kron_p = define_primitive("kron", family=FAMILY, operands=("a", "b"),
                          infer_meta=_kron_infer_meta, impl=kron_impl)


def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """``jnp.kron``: the Kronecker product, the operand of lower rank given
    leading unit axes first; along each axis ``out[i * nb + j] = a[i] * b[j]``
    (shape ``a.shape * b.shape``, entrywise).

    Bilinear: the tangent is ``kron(ta, b) + kron(a, tb)``; the transposes
    contract the cotangent, viewed as ``[ma, nb, ma', nb', ...]``, with the
    other operand (a multiply fused into a sum over its axes).
    """
    a, b = promote("kron", {"a": a, "b": b}, "numeric")
    r = max(np.ndim(a), np.ndim(b))
    a, b = [x if np.ndim(x) == r else reshape(x, (1,) * (r - np.ndim(x)) + np.shape(x))
            for x in (a, b)]
    return kron_p.bind(a, b)


def _reference_kron(a: Array, b: Array) -> Array:
    return jnp.kron(a, b)


register_op(OpDef(name="kron", family=FAMILY, fn=kron, primitives=(kron_p,),
                  reference=_reference_kron, operands=("a", "b"), linear=(("a",), ("b",))))


# ------------------------------------------------------------------- cross
def _cross_infer_meta(a: Any, b: Any) -> ShapedArray:
    dtype = _pair_meta("cross", a, b)
    if tuple(a.shape) != tuple(b.shape) or not a.shape or a.shape[-1] not in (2, 3):
        raise ValueError(f"{op_name('cross')}: the primitive takes operands of one shape "
                         f"[..., 2] or [..., 3], got a with shape {tuple(a.shape)} and b with "
                         f"shape {tuple(b.shape)}")
    shape = tuple(a.shape) if a.shape[-1] == 3 else tuple(a.shape[:-1])
    return _aval(dtype, shape, a, b)


def _cross_impl(a: Array, b: Array) -> Array:
    if a.shape[-1] == 2:   # the z component (jnp.cross deprecates 2-vectors in JAX 0.11)
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return jnp.cross(a, b)


cross_p = define_primitive("cross", family=FAMILY, operands=("a", "b"),
                           infer_meta=_cross_infer_meta, impl=_cross_impl)


def _vectors(a: Any, b: Any, axisa: int, axisb: int, names: tuple[str, str]
             ) -> tuple[Any, Any]:
    """a and b with their vector axes last, a 2-vector beside a 3-vector
    given a zero third entry, broadcast to one shape. ``names``: the
    arguments that gave ``axisa`` and ``axisb``."""
    moved = []
    for name, x, ax, arg in (("a", a, axisa, names[0]), ("b", b, axisb, names[1])):
        if np.ndim(x) == 0:
            raise ValueError(f"{op_name('cross')}: {name} must have a vector axis, got a "
                             "scalar")
        axis = normalize_axis("cross", ax, np.ndim(x), arg)
        n = np.shape(x)[axis]
        if n not in (2, 3):
            raise ValueError(f"{op_name('cross')}: {name} with shape {np.shape(x)} has {n} "
                             f"entries along {arg}={ax}; cross products need vectors "
                             "of 2 or 3 entries")
        moved.append(moveaxis(x, axis, -1) if axis != np.ndim(x) - 1 else x)
    a, b = moved
    if np.shape(a)[-1] != np.shape(b)[-1]:
        widen = [((0, 0),) * (np.ndim(x) - 1) + ((0, 1),) for x in (a, b)]
        a, b = [pad(x, w) if np.shape(x)[-1] == 2 else x for x, w in zip((a, b), widen)]
    shape = broadcast_shapes("cross", {"a": np.shape(a)[:-1], "b": np.shape(b)[:-1]})
    shape += np.shape(a)[-1:]
    return broadcast_to(a, shape), broadcast_to(b, shape)


def cross(a: ArrayLike, b: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Array:
    """``jnp.cross``: the cross product of the vectors along ``axisa`` of a
    and ``axisb`` of b (``axis`` sets all three axes), the other axes
    broadcast; the result's vector axis is ``axisc``. For 3-vectors
    ``c = (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)``; two 2-vectors give
    the scalar ``a0 b1 - a1 b0`` (no vector axis), and a 2-vector beside a
    3-vector has a third entry of 0 (as jnp.cross, which deprecates
    2-vectors in JAX 0.11; here they stay). Other lengths are a ValueError.

    Bilinear: the tangent is ``cross(ta, b) + cross(a, tb)``; by the scalar
    triple product the transposes are ``ct_a = b x ct`` and ``ct_b = ct x a``
    (for 2-vectors ``ct * (b1, -b0)`` and ``ct * (-a1, a0)``).
    """
    a, b = promote("cross", {"a": a, "b": b}, "numeric")
    names = ("axisa", "axisb", "axisc")
    if axis is not None:
        axisa = axisb = axisc = axis
        names = ("axis",) * 3
    a, b = _vectors(a, b, axisa, axisb, names[:2])
    out = cross_p.bind(a, b)
    if np.shape(a)[-1] == 2:
        return out
    c = normalize_axis("cross", axisc, np.ndim(out), names[2])
    return out if c == np.ndim(out) - 1 else moveaxis(out, -1, c)


def reference_cross(a: Array, b: Array, axisa: int = -1, axisb: int = -1, axisc: int = -1,
                    axis: int | None = None) -> Array:
    """``jnp.cross`` with 2-vectors given a third entry of 0 first (JAX 0.11
    deprecates them in jnp.cross), the z component for two 2-vectors."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = jnp.moveaxis(jnp.asarray(a), axisa, -1), jnp.moveaxis(jnp.asarray(b), axisb, -1)
    planar = a.shape[-1] == b.shape[-1] == 2
    a, b = [jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, 3 - x.shape[-1])]) for x in (a, b)]
    out = jnp.cross(a, b)
    return out[..., 2] if planar else jnp.moveaxis(out, -1, axisc)


register_op(OpDef(name="cross", family=FAMILY, fn=cross, primitives=(cross_p,),
                  reference=reference_cross, operands=("a", "b"), linear=(("a",), ("b",))))
