"""Linear algebra, part 1: cholesky, triangular_solve, solve, inv, det,
slogdet and qr, each a primitive, all batched over leading axes; and
``triangle_part``, the masking primitive their JVPs are written with.

Matrices are the last two axes of an operand of rank >= 2. Their JVPs are the
textbook ones (``gradrules/rules/solve.py``), written with gradrules ops
(matmul, triangular_solve, solve, inv, triangle_part, elementwise and shape
ops), so that second and third derivatives come by composition;
``triangular_solve`` and ``solve`` are linear in b, with transposes.

Floating input only (an integer matrix is a TypeError, as for every float op
of the library); 16-bit input is factorised in float32 and rounded back (the
LAPACK kernels have no half precision).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import bool_param
from ..core.meta import broadcast_shapes, check_dtype, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import promote
from .shape import broadcast_to, expand_dims, squeeze

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "solve"


# ----------------------------------------------------------------- helpers
def square_meta(op: str, name: str, a: Any) -> tuple[int, ...]:
    """Check that ``a`` is a floating stack of square matrices; its shape."""
    check_dtype(op, name, a.dtype, "float")
    shape = tuple(a.shape)
    if len(shape) < 2:
        raise ValueError(f"{op_name(op)}: argument {name} must have rank >= 2 (a stack of "
                         f"matrices), got shape {shape}")
    if shape[-1] != shape[-2]:
        raise ValueError(f"{op_name(op)}: argument {name} must be square in its last two "
                         f"axes, got shape {shape}")
    return shape


def matrix_meta(op: str, name: str, a: Any) -> tuple[int, ...]:
    """Check that ``a`` is a floating stack of matrices (rank >= 2); its shape."""
    check_dtype(op, name, a.dtype, "float")
    if len(a.shape) < 2:
        raise ValueError(f"{op_name(op)}: argument {name} must have rank >= 2 (a stack of "
                         f"matrices), got shape {tuple(a.shape)}")
    return tuple(a.shape)


def in_float32(fn: Callable[..., Any], *xs: Array, **params: Any) -> Any:
    """``fn(*xs, **params)``, computed in float32 for 16-bit input and rounded
    back to its dtype (LAPACK has no half precision)."""
    dtype = xs[0].dtype
    if np.dtype(dtype).itemsize >= 4:
        return fn(*xs, **params)
    out = fn(*(x.astype(np.float32) for x in xs), **params)
    return jax.tree_util.tree_map(lambda o: o.astype(dtype), out)


def _float_matrix(op: str, a: ArrayLike) -> Array:
    (a,) = promote(op, {"a": a}, "float")
    return a


def _unary_meta(op: str, a: Any) -> ShapedArray:
    return ShapedArray(square_meta(op, "a", a), a.dtype)


# ---------------------------------------------------------- triangle_part
def _triangle_part_infer_meta(x: Any, *, lower: bool, diagonal: float) -> ShapedArray:
    return ShapedArray(matrix_meta("triangle_part", "x", x), x.dtype)


def _triangle_part_impl(x: Array, *, lower: bool, diagonal: float) -> Array:
    shape = x.shape[-2:]
    i, j = lax.broadcasted_iota(np.int32, shape, 0), lax.broadcasted_iota(np.int32, shape, 1)
    out = jnp.where(i > j if lower else i < j, x, jnp.zeros((), x.dtype))
    if diagonal == 0.0:
        return out
    return jnp.where(i == j, x if diagonal == 1.0 else x * np.asarray(diagonal, x.dtype), out)


# The strict lower (``lower``) or upper triangle of each matrix of x, plus
# ``diagonal`` times its diagonal: tril(x, -1) + diagonal * diag(x) for lower
# (``diagonal=0.5``: the Phi of the Cholesky JVP). Not a public op: a helper
# primitive of the cholesky, triangular_solve and qr JVPs, listed with them in
# the manifest. Linear (an elementwise 0 / diagonal / 1 mask from iotas in the
# lowering, no stored mask); its own transpose.
triangle_part_p = define_primitive("triangle_part", family=FAMILY, operands=("x",),
                                   params=("lower", "diagonal"),
                                   infer_meta=_triangle_part_infer_meta,
                                   impl=_triangle_part_impl)


# --------------------------------------------------------------- cholesky
def _cholesky_impl(a: Array) -> Array:
    return in_float32(jnp.linalg.cholesky, a)


cholesky_p = define_primitive("cholesky", family=FAMILY, operands=("a",),
                              infer_meta=partial(_unary_meta, "cholesky"),
                              impl=_cholesky_impl)


def cholesky(a: ArrayLike) -> Array:
    """The lower Cholesky factor L of each symmetric positive definite matrix
    of a [..., n, n]: ``a = L @ L^T`` (``jnp.linalg.cholesky``: a is
    symmetrised first, ``(a + a^T) / 2``; NaN where it is not positive
    definite).

    JVP: ``dL = L Phi(L^-1 dA_s L^-T)`` with ``dA_s = (dA + dA^T) / 2`` and
    Phi the lower triangle with its diagonal halved (``triangle_part(.,
    diagonal=0.5)``), the two solves ``triangular_solve``s with L.
    """
    return cholesky_p.bind(_float_matrix("cholesky", a))


register_op(OpDef(name="cholesky", family=FAMILY, fn=cholesky,
                  primitives=(cholesky_p, triangle_part_p), reference=jnp.linalg.cholesky,
                  operands=("a",), order=3))


# -------------------------------------------------------- triangular_solve
def triangular_solve_shape(op: str, a: tuple[int, ...], b: tuple[int, ...],
                           left_side: bool) -> None:
    """Check that b [..., m, n] (left) or [..., n, m] (right) fits a [..., m, m]
    with the same batch axes; ValueError naming the shapes otherwise."""
    m = a[-1]
    k = b[-2] if left_side else b[-1]
    if k != m:
        where = "rows" if left_side else "columns"
        raise ValueError(f"{op_name(op)}: b with shape {b} has {k} {where}, a with shape {a} "
                         f"is {m} x {m} (left_side={left_side})")
    if a[:-2] != b[:-2]:
        raise ValueError(f"{op_name(op)}: batch axes of a with shape {a} and b with shape {b} "
                         "differ")


def _triangular_solve_infer_meta(a: Any, b: Any, *, left_side: bool, lower: bool,
                                 transpose_a: bool, unit_diagonal: bool) -> ShapedArray:
    dtype = same_dtype("triangular_solve", {"a": a, "b": b})
    sa, sb = square_meta("triangular_solve", "a", a), matrix_meta("triangular_solve", "b", b)
    triangular_solve_shape("triangular_solve", sa, sb, left_side)
    return ShapedArray(sb, dtype)


def _triangular_solve_reference(a: Array, b: Array, *, left_side: bool = True,
                                lower: bool = True, transpose_a: bool = False,
                                unit_diagonal: bool = False) -> Array:
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return lax.linalg.triangular_solve(jnp.broadcast_to(a, batch + a.shape[-2:]),
                                       jnp.broadcast_to(b, batch + b.shape[-2:]),
                                       left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, unit_diagonal=unit_diagonal)


def _triangular_solve_impl(a: Array, b: Array, **params: bool) -> Array:
    return in_float32(_triangular_solve_reference, a, b, **params)


triangular_solve_p = define_primitive(
    "triangular_solve", family=FAMILY, operands=("a", "b"),
    params=("left_side", "lower", "transpose_a", "unit_diagonal"),
    infer_meta=_triangular_solve_infer_meta, impl=_triangular_solve_impl)


def broadcast_batch(op: str, a: Array, b: Array) -> tuple[Array, Array]:
    """a and b with their batch axes (all but the last two) broadcast against
    each other (``broadcast_to`` where they differ)."""
    sa, sb = tuple(np.shape(a)), tuple(np.shape(b))
    batch = broadcast_shapes(op, {"a batch axes": sa[:-2], "b batch axes": sb[:-2]})
    if sa[:-2] != batch:
        a = broadcast_to(a, batch + sa[-2:])
    if sb[:-2] != batch:
        b = broadcast_to(b, batch + sb[-2:])
    return a, b


def triangular_solve(a: ArrayLike, b: ArrayLike, *, left_side: bool = True, lower: bool = True,
                     transpose_a: bool = False, unit_diagonal: bool = False) -> Array:
    """x solving ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for a
    stack of triangular matrices a [..., m, m] and b [..., m, n] (left) or
    [..., n, m] (right), as ``lax.linalg.triangular_solve``: ``op(a)`` is a
    or a^T (``transpose_a``); only the ``lower`` (or upper) triangle of a is
    read, and not its diagonal with ``unit_diagonal`` (ones are used). Batch
    axes broadcast (``broadcast_to``).

    Linear in b; the transpose is the solve with ``op(a)^T``
    (``transpose_a`` flipped). In a: ``dx = -op(a)^-1 op(da) x`` (left) or
    ``-x op(da) op(a)^-1`` (right), da masked to the triangle that is read,
    one solve for the tangents of a and b together.
    """
    op = "triangular_solve"
    a, b = promote(op, {"a": a, "b": b}, "float")
    params = {k: bool_param(op, k, v) for k, v in (
        ("left_side", left_side), ("lower", lower), ("transpose_a", transpose_a),
        ("unit_diagonal", unit_diagonal))}
    for name, x in (("a", a), ("b", b)):
        if np.ndim(x) < 2:
            raise ValueError(f"{op_name(op)}: argument {name} must have rank >= 2 (a stack of "
                             f"matrices), got shape {tuple(np.shape(x))}")
    a, b = broadcast_batch(op, a, b)
    return triangular_solve_p.bind(a, b, **params)


register_op(OpDef(name="triangular_solve", family=FAMILY, fn=triangular_solve,
                  primitives=(triangular_solve_p, triangle_part_p),
                  reference=_triangular_solve_reference, operands=("a", "b"),
                  linear=(("b",),), order=3))


# ------------------------------------------------------------------ solve
def _solve_infer_meta(a: Any, b: Any, *, transpose_a: bool) -> ShapedArray:
    dtype = same_dtype("solve", {"a": a, "b": b})
    sa, sb = square_meta("solve", "a", a), matrix_meta("solve", "b", b)
    if sb[-2] != sa[-1]:
        raise ValueError(f"{op_name('solve')}: b with shape {sb} has {sb[-2]} rows, a with "
                         f"shape {sa} is {sa[-1]} x {sa[-1]}")
    batch = broadcast_shapes("solve", {"a batch axes": sa[:-2], "b batch axes": sb[:-2]})
    return ShapedArray(batch + sb[-2:], dtype)


def _lu_solve(a: Array, b: Array, *, transpose_a: bool) -> Array:
    """x with ``op(a) x = b`` (op: identity, or the transpose), a and b
    broadcast to their common batch axes: a's LU factorisation with partial
    pivoting ``a[perm] = L U``, then ``x = U^-1 L^-1 b[perm]``, or for the
    transpose ``x[perm] = L^-T U^-T b``: jnp.linalg.solve's maths, on the
    whole batch at once (no vmap, which would demand one sharding of a's and
    b's batch axes). The factorisation depends on a only, so the solve with
    a^T in the transpose (and the JVP's second solve) share the forward's:
    XLA computes it once."""
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    lu, _, perm = lax.linalg.lu(a)
    solve = partial(lax.linalg.triangular_solve, lu, left_side=True)
    if not transpose_a:
        b = jnp.take_along_axis(b, perm[..., None], axis=-2)
        return solve(solve(b, lower=True, unit_diagonal=True), lower=False)
    x = solve(solve(b, lower=False, transpose_a=True), lower=True, unit_diagonal=True,
              transpose_a=True)
    return jnp.take_along_axis(x, jnp.argsort(perm)[..., None], axis=-2)


def _solve_impl(a: Array, b: Array, *, transpose_a: bool) -> Array:
    return in_float32(_lu_solve, a, b, transpose_a=transpose_a)


solve_p = define_primitive("solve", family=FAMILY, operands=("a", "b"), params=("transpose_a",),
                           infer_meta=_solve_infer_meta, impl=_solve_impl)


def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """x solving ``a @ x = b``, as ``jnp.linalg.solve``: a [..., m, m]; b a
    vector [m] (x [..., m]) or a stack of matrices [..., m, n], the batch
    axes of a and b broadcasting. An LU solve with partial pivoting.

    Linear in b; the transpose is ``solve(a^T, ct)`` summed over the batch
    axes b was broadcast along: the primitive's ``transpose_a``, which solves
    with the same LU factorisation of a (``_lu_solve``), so that a gradient
    factorises a once. In a: ``dx = -a^-1 da x``, one solve for the
    tangents of a and b together (``solve(a, db - da @ x)``).
    """
    a, b = promote("solve", {"a": a, "b": b}, "float")
    sa, sb = tuple(np.shape(a)), tuple(np.shape(b))
    if len(sa) < 2:
        raise ValueError(f"{op_name('solve')}: argument a must have rank >= 2, got shape {sa}")
    if not sb:
        raise ValueError(f"{op_name('solve')}: argument b must have rank >= 1, got shape {sb}")
    if len(sb) > 1 and len(sa) == len(sb) + 1 and sa[-1] == sb[-1] != sb[-2]:
        raise ValueError(f"{op_name('solve')}: a with shape {sa} and b with shape {sb}: b is a "
                         "stack of matrices whose rows do not match a (a batch of vectors "
                         "is b[..., None], as in jnp.linalg.solve)")
    if len(sb) == 1:
        return squeeze(solve_p.bind(a, expand_dims(b, axis=-1), transpose_a=False), axis=-1)
    return solve_p.bind(a, b, transpose_a=False)


register_op(OpDef(name="solve", family=FAMILY, fn=solve, primitives=(solve_p,),
                  reference=jnp.linalg.solve, operands=("a", "b"), linear=(("b",),), order=3))


# -------------------------------------------------------------------- inv
def _inv_impl(a: Array) -> Array:
    return in_float32(jnp.linalg.inv, a)


inv_p = define_primitive("inv", family=FAMILY, operands=("a",),
                         infer_meta=partial(_unary_meta, "inv"), impl=_inv_impl)


def inv(a: ArrayLike) -> Array:
    """The inverse of each matrix of a [..., n, n] (``jnp.linalg.inv``; inf or
    NaN where a is singular).

    JVP: ``d(a^-1) = -a^-1 da a^-1`` (two matmuls with the output).
    """
    return inv_p.bind(_float_matrix("inv", a))


register_op(OpDef(name="inv", family=FAMILY, fn=inv, primitives=(inv_p,),
                  reference=jnp.linalg.inv, operands=("a",), order=3))


# -------------------------------------------------------------------- det
def _batch_meta(op: str, a: Any) -> ShapedArray:
    return ShapedArray(square_meta(op, "a", a)[:-2], a.dtype)


def _det_impl(a: Array) -> Array:
    return in_float32(jnp.linalg.det, a)


det_p = define_primitive("det", family=FAMILY, operands=("a",),
                         infer_meta=partial(_batch_meta, "det"), impl=_det_impl)


def det(a: ArrayLike) -> Array:
    """The determinant of each matrix of a [..., n, n] -> [...]
    (``jnp.linalg.det``, from an LU factorisation).

    JVP (Jacobi's formula): ``d det(a) = det(a) tr(a^-1 da)``, the trace
    written ``sum(inv(a)^T * da)``; it needs a invertible (NaN at a singular
    a, where the cofactor form of jnp.linalg.det is still finite).
    """
    return det_p.bind(_float_matrix("det", a))


register_op(OpDef(name="det", family=FAMILY, fn=det, primitives=(det_p,),
                  reference=jnp.linalg.det, operands=("a",), order=3))


# ---------------------------------------------------------------- slogdet
def _slogdet_infer_meta(a: Any) -> tuple[ShapedArray, ShapedArray]:
    out = _batch_meta("slogdet", a)
    return out, out


def _slogdet_impl(a: Array) -> list[Array]:
    return list(in_float32(jnp.linalg.slogdet, a))


slogdet_p = define_primitive("slogdet", family=FAMILY, operands=("a",),
                             infer_meta=_slogdet_infer_meta, impl=_slogdet_impl,
                             multiple_results=True, outputs=("sign", "logabsdet"))


def slogdet(a: ArrayLike) -> tuple[Array, Array]:
    """``(sign, logabsdet)`` of the determinant of each matrix of a [..., n, n]
    (``jnp.linalg.slogdet``: ``det = sign * exp(logabsdet)``; sign 0 and
    logabsdet -inf for a singular matrix).

    JVP: the sign is locally constant (zero tangent);
    ``d logabsdet = tr(a^-1 da) = sum(inv(a)^T * da)``.
    """
    sign, logabsdet = slogdet_p.bind(_float_matrix("slogdet", a))
    return sign, logabsdet


def _slogdet_reference(a: Array) -> tuple[Array, Array]:
    return tuple(jnp.linalg.slogdet(a))


register_op(OpDef(name="slogdet", family=FAMILY, fn=slogdet, primitives=(slogdet_p,),
                  reference=_slogdet_reference, operands=("a",), order=3))


# --------------------------------------------------------------------- qr
def _qr_infer_meta(a: Any) -> tuple[ShapedArray, ShapedArray]:
    shape = matrix_meta("qr", "a", a)
    *batch, m, n = shape
    k = min(m, n)
    return (ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype))


def _qr_reduced(a: Array) -> list[Array]:
    return list(jnp.linalg.qr(a, mode="reduced"))


def _qr_impl(a: Array) -> list[Array]:
    return in_float32(_qr_reduced, a)


qr_p = define_primitive("qr", family=FAMILY, operands=("a",), infer_meta=_qr_infer_meta,
                        impl=_qr_impl, multiple_results=True, outputs=("q", "r"))


def qr(a: ArrayLike) -> tuple[Array, Array]:
    """The reduced QR factorisation ``a = q @ r`` of each matrix of a [..., m, n]
    (``jnp.linalg.qr(a, mode="reduced")``, Householder): q [..., m, k] with
    orthonormal columns and r [..., k, n] upper triangular, k = min(m, n).

    JVP (a of full rank k, any shape): for m >= n, with ``C = q^T da r^-1``
    and ``O = tril(C, -1) - tril(C, -1)^T``: ``dq = q (O - C) + da r^-1``,
    ``dr = (C - O) r``. For m < n (wide) a = [a1, a2] with a1 square: q and
    the first m columns of r are a1's factors (the rule above), and the rest
    of r is ``q^T a2``, so ``dr2 = dq^T a2 + q^T da2``.
    """
    q, r = qr_p.bind(_float_matrix("qr", a))
    return q, r


def _qr_reference(a: Array) -> tuple[Array, Array]:
    return tuple(jnp.linalg.qr(a, mode="reduced"))


register_op(OpDef(name="qr", family=FAMILY, fn=qr, primitives=(qr_p, triangle_part_p),
                  reference=_qr_reference, operands=("a",), order=3))
