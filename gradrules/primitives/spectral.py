"""Spectral linear algebra: eigh, svd, and the norms norm / matrix_norm, each
a primitive, batched over leading axes.

``eigh_p`` and ``svd_p`` lower to LAPACK (the cuSolver kernels on a GPU)
through the same ``jnp.linalg`` calls they replace, and only take float32 /
float64 (as those kernels). Their JVPs are the textbook ones, with the
``1 / (lambda_j - lambda_i)`` factors (``1 / (s_j**2 - s_i**2)`` for the SVD),
written in gradrules ops (matmul, multiply, sum, ...) so that second and third
derivatives come by composition (``gradrules/rules/spectral.py``). On a
degenerate spectrum (two equal eigenvalues, two equal or zero singular
values) the eigen / singular vectors are not unique and their derivative is
not defined: those factors are then infinite and the vector tangents inf /
NaN, as in jax.numpy and PyTorch, while the eigenvalue and singular value
tangents stay finite.

``norm_p`` is the entrywise norm of x over some axes (the 2-norm, the sum of
absolute values, the largest or smallest absolute value): with one axis a
vector norm, with two the Frobenius norm for ``ord="2"``. ``matrix_norm_p``
is the Frobenius norm over the last two axes. Their derivative at x == 0 is
the subgradient 0, finite in every mode and at every order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray, aval_of
from ..core.args import bool_param, float_array
from ..core.meta import check_dtype, normalize_axes, normalize_axis, op_name
from ..core.numerics import acc_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._compose import cast
from .convert import promote
from . import reduction, shape
from .reduction import reduced_shape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "spectral"
LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
NORM_ORDS = ("2", "1", "inf", "-inf")


def _matrix_meta(op: str, a: Any, square: bool) -> tuple[int, ...]:
    """Check a batch of matrices ``[..., m, n]`` of a LAPACK dtype; its shape."""
    check_dtype(op, "a", a.dtype, "float")
    if np.dtype(a.dtype) not in LAPACK_DTYPES:
        raise TypeError(f"{op_name(op)}: argument a must be float32 or float64 (the LAPACK "
                        f"and cuSolver kernels), got dtype {np.dtype(a.dtype).name}")
    shape = tuple(a.shape)
    if len(shape) < 2:
        raise ValueError(f"{op_name(op)}: argument a must have rank >= 2 (a matrix or a batch "
                         f"of matrices), got shape {shape}")
    if square and shape[-1] != shape[-2]:
        raise ValueError(f"{op_name(op)}: argument a must be square in its last two axes, got "
                         f"shape {shape}")
    return shape


# -------------------------------------------------------------------- eigh
def _eigh_infer_meta(a: Any) -> list[ShapedArray]:
    shape = _matrix_meta("eigh", a, square=True)
    return [ShapedArray(shape[:-1], a.dtype), ShapedArray(shape, a.dtype)]


def _eigh_impl(a: Array) -> list[Array]:
    w, v = jnp.linalg.eigh(a, symmetrize_input=True)
    return [w, v]


eigh_p = define_primitive("eigh", family=FAMILY, operands=("a",), infer_meta=_eigh_infer_meta,
                          impl=_eigh_impl, multiple_results=True,
                          outputs=("eigenvalues", "eigenvectors"))


def eigh(a: ArrayLike) -> tuple[Array, Array]:
    """``(eigenvalues, eigenvectors)`` of the symmetric matrices ``a[..., n, n]``:
    ``S = (a + a^T) / 2 = V diag(w) V^T`` with ``w`` ascending and the columns
    of ``V`` orthonormal (``jnp.linalg.eigh``, whose default also symmetrises
    the input; for a symmetric ``a`` this is the plain eigendecomposition).
    float32 / float64.

    JVP (``C = V^T dS V``, ``dS = (da + da^T) / 2``): ``dw = diag(C)`` and
    ``dV = V (F o C)`` with ``F_ij = 1 / (w_j - w_i)`` off the diagonal and 0
    on it. A degenerate spectrum (``w_i == w_j``) leaves the eigenvectors
    undetermined: ``F`` and ``dV`` are then infinite / NaN, ``dw`` stays finite.
    The sign of each eigenvector is LAPACK's (it is kept under small
    perturbations of a matrix with distinct eigenvalues).
    """
    w, v = eigh_p.bind(float_array("eigh", "a", a))
    return w, v


def _eigh_reference(a: ArrayLike) -> tuple[Array, Array]:
    w, v = jnp.linalg.eigh(a)
    return w, v


register_op(OpDef(name="eigh", family=FAMILY, fn=eigh, primitives=(eigh_p,),
                  reference=_eigh_reference, operands=("a",), order=3))


# --------------------------------------------------------------------- svd
def _svd_infer_meta(a: Any) -> list[ShapedArray]:
    shape = _matrix_meta("svd", a, square=False)
    *batch, m, n = shape
    k = min(m, n)
    return [ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k), a.dtype),
            ShapedArray((*batch, k, n), a.dtype)]


def _svd_impl(a: Array) -> list[Array]:
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return [u, s, vh]


svd_p = define_primitive("svd", family=FAMILY, operands=("a",), infer_meta=_svd_infer_meta,
                         impl=_svd_impl, multiple_results=True, outputs=("u", "s", "vh"))


def svd(a: ArrayLike) -> tuple[Array, Array, Array]:
    """``(u, s, vh)``, the reduced singular value decomposition of the
    matrices ``a[..., m, n]``: ``a = u diag(s) vh``, ``k = min(m, n)``, ``u``
    ``[..., m, k]`` and ``vh`` ``[..., k, n]`` with orthonormal columns / rows,
    ``s`` descending and >= 0 (``jnp.linalg.svd(a, full_matrices=False)``).
    float32 / float64.

    JVP (``V = vh^T``, ``P = u^T da V``, ``S = diag(s)``): ``ds = diag(P)``,
    ``du = u (F o (P S + S P^T)) + (I - u u^T) da V S^-1`` and
    ``dV = V (F o (S P + P^T S)) + (I - V V^T) da^T u S^-1`` with
    ``F_ij = 1 / (s_j**2 - s_i**2)`` off the diagonal and 0 on it (the
    projections vanish for square ``a``). Repeated or zero singular values
    leave the singular vectors undetermined: ``du`` and ``dvh`` are then
    infinite / NaN, ``ds`` stays finite. The signs of the singular vector pairs
    are LAPACK's.
    """
    u, s, vh = svd_p.bind(float_array("svd", "a", a))
    return u, s, vh


def _svd_reference(a: ArrayLike) -> tuple[Array, Array, Array]:
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return u, s, vh


register_op(OpDef(name="svd", family=FAMILY, fn=svd, primitives=(svd_p,),
                  reference=_svd_reference, operands=("a",), order=3))


# -------------------------------------------------------------------- norm
def entrywise_norm(x: Array, ord: str, axes: tuple[int, ...], keepdims: bool) -> Array:
    """The ``ord`` norm of the elements of x over ``axes`` in jax.numpy (the
    formulas of ``jnp.linalg.norm``)."""
    if ord == "2":
        return jnp.sqrt(jnp.sum(x * x, axis=axes, keepdims=keepdims))
    a = jnp.abs(x)
    fn = {"1": jnp.sum, "inf": jnp.max, "-inf": jnp.min}[ord]
    return fn(a, axis=axes, keepdims=keepdims)


def _norm_infer_meta(x: Any, *, ord: str, axes: tuple[int, ...], keepdims: bool
                     ) -> ShapedArray:
    check_dtype("norm", "x", x.dtype, "float")
    if ord not in NORM_ORDS:
        raise ValueError(f"{op_name('norm')}: ord must be one of {NORM_ORDS}, got {ord!r}")
    if ord in ("inf", "-inf") and any(x.shape[i] == 0 for i in axes):
        raise ValueError(f"{op_name('norm')}: ord={ord} over axes {axes} of x with shape "
                         f"{tuple(x.shape)}: a maximum / minimum over no elements")
    return ShapedArray(reduced_shape(tuple(x.shape), axes, keepdims), x.dtype,
                       weak_type=x.weak_type)


def _norm_impl(x: Array, *, ord: str, axes: tuple[int, ...], keepdims: bool) -> Array:
    return entrywise_norm(x, ord, axes, keepdims)


norm_p = define_primitive("norm", family=FAMILY, operands=("x",),
                          params=("ord", "axes", "keepdims"), infer_meta=_norm_infer_meta,
                          impl=_norm_impl)


def _vector_ord(ord: Any, where: str) -> str:
    """A vector ``ord`` (None, 2, 1, inf, -inf) as the primitive's param."""
    if ord is None:
        return "2"
    if not isinstance(ord, bool) and isinstance(ord, (int, float, np.integer, np.floating)):
        for name, value in (("2", 2), ("1", 1), ("inf", math.inf), ("-inf", -math.inf)):
            if float(ord) == value:
                return name
    raise ValueError(f"{op_name('norm')}: ord={ord!r} is not supported for {where}; "
                     "supported: None, 2, 1, inf, -inf")


MATRIX_ORDS = {1: "1", -1: "-1", 2: "spectral", -2: "-spectral", math.inf: "inf",
               -math.inf: "-inf"}
"""The matrix ords besides 'fro' (and 'nuc'), as ``norm`` spells them."""


def _matrix_ord(ord: Any, where: str) -> str:
    """A matrix ``ord``: "fro" (None or 'fro'), "nuc", or a ``MATRIX_ORDS`` name."""
    if ord is None or isinstance(ord, str) and ord == "fro":
        return "fro"
    if isinstance(ord, str) and ord == "nuc":
        return "nuc"
    if not isinstance(ord, (bool, str)) and isinstance(ord, (int, float, np.integer,
                                                              np.floating)):
        if float(ord) in MATRIX_ORDS:
            return MATRIX_ORDS[float(ord)]
    raise ValueError(f"{op_name('norm')}: ord={ord!r} is not supported for {where}; "
                     "supported: None, 'fro', 'nuc', 1, -1, 2, -2, inf, -inf")


def _matrix_norm_of(x: Any, ord: str, rows: int, cols: int, keepdims: bool) -> Array:
    """The matrix norms other than Frobenius, of the matrices on axes
    (rows, cols), composed of catalog ops as jnp.linalg.norm writes them:
    ord +-1 the max / min over columns of the column sums of |x| (the vector
    1-norms down the rows), ord +-inf the same over rows; 2, -2 and 'nuc'
    the largest, smallest and summed singular values."""
    if ord in ("1", "-1", "inf", "-inf"):
        down, across = (rows, cols) if ord in ("1", "-1") else (cols, rows)
        sums = norm_p.bind(x, ord="1", axes=(down,), keepdims=True)
        pick = reduction.max if ord in ("1", "inf") else reduction.min
        out = pick(sums, axis=across, keepdims=True)
    else:             # svd in float32 for 16-bit x (LAPACK has no 16-bit kernels)
        dtype = aval_of(x).dtype
        s = svd(shape.moveaxis(cast(x, acc_dtype(dtype)), (rows, cols), (-2, -1)))[1]
        pick = {"spectral": reduction.max, "-spectral": reduction.min,
                "nuc": reduction.sum}[ord]
        out = cast(shape.expand_dims(pick(s, axis=-1), axis=(rows, cols)), dtype)
    return out if keepdims else shape.squeeze(out, axis=(rows, cols))


def norm_args(x: Any, ord: Any, axis: Any) -> tuple[str, tuple[int, ...]]:
    """(the primitive's ord, the reduced axes) of ``norm(x, ord, axis)``,
    following ``jnp.linalg.norm``: ``axis=None`` with ``ord=None`` is the
    2-norm of all elements; with an ord, x must be a vector or a matrix."""
    ndim = np.ndim(x)
    if axis is None:
        if ord is None:
            return "2", tuple(range(ndim))
        if ndim not in (1, 2):
            raise ValueError(f"{op_name('norm')}: ord={ord!r} with axis=None needs a vector or "
                             f"a matrix, got x with shape {np.shape(x)}; give axis")
        axis = tuple(range(ndim))
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (int(axis),)
    if not isinstance(axis, (tuple, list)) or len(axis) not in (1, 2):
        raise ValueError(f"{op_name('norm')}: axis must be None, an int or a pair of ints, got "
                         f"{axis!r}")
    axes = normalize_axes("norm", tuple(axis), ndim)
    if len(axes) == 1:
        return _vector_ord(ord, f"a vector norm (axis={axis!r})"), axes
    matrix_ord = _matrix_ord(ord, f"a matrix norm (axis={axis!r})")
    if matrix_ord == "fro":
        return "2", axes
    return matrix_ord, tuple(normalize_axis("norm", a, ndim) for a in axis)   # (rows, cols)


def norm(x: ArrayLike, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Array:
    """The vector or matrix norm of x, as ``jnp.linalg.norm``.

    ``axis=None``: the 2-norm of all elements when ``ord`` is None, else x
    must be a vector or a matrix. One axis (an int): the vector norm with
    ``ord`` None or 2 (``sqrt(sum x**2)``), 1 (``sum |x|``), inf (``max |x|``)
    or -inf (``min |x|``). Two axes (rows, cols): the Frobenius norm (``ord``
    None or ``'fro'``), 1 / -1 (the max / min column sum of |x|), inf / -inf
    (the max / min row sum), 2 / -2 (the largest / smallest singular value)
    and ``'nuc'`` (their sum); these are compositions of ``norm``'s vector
    1-norm, max / min / sum and ``svd``, whose rules give their derivatives
    (the singular-value ones need distinct singular values, as in jnp).
    Other vector ords (0, p) raise a ValueError.

    JVP: ``sum(dx * g, axes)`` with the (sub)gradient ``g``: ``x / norm`` for
    the 2-norm, ``sign(x)`` for ord 1, and ``sign(x)`` on the entries where
    ``|x|`` attains the max / min, shared equally among ties (as jnp.max) for
    +-inf. At x == 0 the subgradient is 0: every derivative, of every order
    and in every mode, is finite there.
    """
    (x,) = promote("norm", {"x": x}, "float")
    ord_name, axes = norm_args(x, ord, axis)
    keepdims = bool_param("norm", "keepdims", keepdims)
    if len(axes) == 2 and ord_name != "2":
        return _matrix_norm_of(x, ord_name, *axes, keepdims)
    return norm_p.bind(x, ord=ord_name, axes=axes, keepdims=keepdims)


def _norm_reference(x: ArrayLike, ord: Any = None, axis: Any = None,
                    keepdims: bool = False) -> Array:
    return jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


register_op(OpDef(name="norm", family=FAMILY, fn=norm, primitives=(norm_p,),
                  reference=_norm_reference, operands=("x",), order=3))


# ------------------------------------------------------------- matrix_norm
def _matrix_norm_infer_meta(x: Any, *, keepdims: bool) -> ShapedArray:
    check_dtype("matrix_norm", "x", x.dtype, "float")
    if len(x.shape) < 2:
        raise ValueError(f"{op_name('matrix_norm')}: argument x must have rank >= 2 (a matrix "
                         f"or a batch of matrices), got shape {tuple(x.shape)}")
    axes = (len(x.shape) - 2, len(x.shape) - 1)
    return ShapedArray(reduced_shape(tuple(x.shape), axes, keepdims), x.dtype,
                       weak_type=x.weak_type)


def _matrix_norm_impl(x: Array, *, keepdims: bool) -> Array:
    return entrywise_norm(x, "2", (x.ndim - 2, x.ndim - 1), keepdims)


matrix_norm_p = define_primitive("matrix_norm", family=FAMILY, operands=("x",),
                                 params=("keepdims",), infer_meta=_matrix_norm_infer_meta,
                                 impl=_matrix_norm_impl)


def matrix_norm(x: ArrayLike, *, keepdims: bool = False) -> Array:
    """The Frobenius norm ``sqrt(sum x**2)`` over the last two axes of
    ``x[..., m, n]`` (``jnp.linalg.matrix_norm``, its default ord).

    JVP: ``sum(dx * x / norm)`` over those axes, with the subgradient 0 at a
    zero matrix (finite derivatives of every order there, as ``norm``).
    """
    (x,) = promote("matrix_norm", {"x": x}, "float")
    return matrix_norm_p.bind(x, keepdims=bool_param("matrix_norm", "keepdims", keepdims))


def _matrix_norm_reference(x: ArrayLike, *, keepdims: bool = False) -> Array:
    return jnp.linalg.matrix_norm(x, keepdims=keepdims)


register_op(OpDef(name="matrix_norm", family=FAMILY, fn=matrix_norm, primitives=(matrix_norm_p,),
                  reference=_matrix_norm_reference, operands=("x",), order=3))
