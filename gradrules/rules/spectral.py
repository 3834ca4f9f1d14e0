"""Rules of the spectral family.

eigh and svd have the textbook JVPs (Giles, "An extended collection of
matrix derivative results", 2008; Townsend, "Differentiating the singular
value decomposition", 2016), written with matmul, multiply, add, sum and
transpose, so every part linear in the tangent is a catalog primitive with a
transpose rule, and the JVP of the JVP (second and third derivatives) is again
made of eigh / svd and those ops. The ``1 / (d_j - d_i)`` factors
(``_inverse_gaps``) are infinite on a degenerate spectrum, where the vector
derivatives are not defined. The norms' JVP is ``sum(t * g)`` over the reduced
axes with the (sub)gradient ``g`` (``norm_tangent``), 0 at x == 0. All four
batch by moving the vmapped axis to the front (or shifting the reduced axes),
binding the primitive once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import JvpResult, Tangent, aval_of, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import indicator
from ..primitives.arithmetic import add, divide, multiply, subtract
from ..primitives.compare import eq, where
from ..primitives.linalg import matmul
from ..primitives.reduction import sum_p
from ..primitives.shape import expand_dims_p, transpose_p
from ..primitives.spectral import eigh_p, matrix_norm_p, norm_p, svd_p
from ..primitives.unary import abs, neg, sign
from ._common import front_batch
from .reduction import reduction_batch


def _mT(x: Any) -> Any:
    """x with its last two axes swapped."""
    n = np.ndim(x)
    return transpose_p.bind(x, permutation=tuple(range(n - 2)) + (n - 1, n - 2))


def _column_dots(x: Any, y: Any) -> Any:
    """``diag(x^T y)`` without forming it: the sums over axis -2 of ``x * y``."""
    return sum_p.bind(multiply(x, y), axes=(np.ndim(x) - 2,), keepdims=False)


def _inverse_gaps(gaps: Any) -> Any:
    """``1 / gaps`` off the diagonal and 0 on it (``gaps[..., i, j] = d_j - d_i``
    has a zero diagonal): ``1 / (gaps + I) - I``, as JAX's own eigh / svd rules.
    Infinite where two of the ``d`` are equal (a degenerate spectrum)."""
    k = np.shape(gaps)[-1]
    eye = np.eye(k, dtype=aval_of(gaps).dtype)
    return subtract(divide(1.0, add(gaps, eye)), eye)


def _rows(d: Any) -> Any:
    """``d[..., k]`` as ``[..., k, 1]`` (``d_i`` down the rows)."""
    return expand_dims_p.bind(d, axes=(np.ndim(d),))


def _cols(d: Any) -> Any:
    """``d[..., k]`` as ``[..., 1, k]`` (``d_j`` along the columns)."""
    return expand_dims_p.bind(d, axes=(np.ndim(d) - 1,))


# eigh --------------------------------------------------------------------------
def _eigh_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """With ``P = da V`` and ``C = V^T da V``: ``dw = diag(C)`` (the column
    dots of V and P) and ``dV = V (F o (C + C^T) / 2)``, ``F_ij = 1 / (w_j - w_i)``
    (the op sees the symmetric part of a, so its tangent is that of da)."""
    (a,), (ta,) = primals, tangents
    w, v = eigh_p.bind(a)
    if is_zero(ta):
        return [w, v], [_jax.zero_tangent(w), _jax.zero_tangent(v)]
    p = matmul(ta, v)
    c = matmul(v, p, transpose_x=True)
    c_sym = multiply(add(c, _mT(c)), 0.5)
    f = _inverse_gaps(subtract(_cols(w), _rows(w)))
    return [w, v], [_column_dots(v, p), matmul(v, multiply(f, c_sym))]


register_rules(eigh_p, jvp=_eigh_jvp, transpose=NOT_LINEAR, batch=partial(front_batch, eigh_p))


# svd ---------------------------------------------------------------------------
def _svd_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """With ``V = vh^T``, ``P = u^T da V``, ``F_ij = 1 / (s_j**2 - s_i**2)``:
    ``ds = diag(P)``, ``du = u (F o (P S + S P^T))`` and
    ``dV = V (F o (S P + P^T S))``, plus ``(da V - u P) / s_j`` in du when
    m > n and ``(da^T u - V P^T) / s_j`` in dV when n > m (the parts outside
    the span of u / V). Those are written ``dav / s_j + u (P / -s_j)`` and
    ``da^T (u / s_j) + V (P / -s_i)^T``: the scale and the sign on the k x k
    P or on u, not on an m x n (n x m) product, whose scaled and negated
    copies the transpose would otherwise keep side by side."""
    (a,), (ta,) = primals, tangents
    u, s, vh = svd_p.bind(a)
    if is_zero(ta):
        return [u, s, vh], [_jax.zero_tangent(x) for x in (u, s, vh)]
    m, n = np.shape(a)[-2:]
    v = _mT(vh)
    dav = matmul(ta, v)
    p = matmul(u, dav, transpose_x=True)
    s_i, s_j = _rows(s), _cols(s)
    f = _inverse_gaps(multiply(add(s_j, s_i), subtract(s_j, s_i)))
    ps, sp = multiply(p, s_j), multiply(s_i, p)
    du = matmul(u, multiply(f, add(ps, _mT(ps))))
    dv = matmul(v, multiply(f, add(sp, _mT(sp))))
    if m > n:
        du = add(du, add(divide(dav, s_j), matmul(u, divide(p, neg(s_j)))))
    if n > m:
        dau_s = matmul(ta, divide(u, s_j), transpose_x=True)
        dv = add(dv, add(dau_s, matmul(v, divide(p, neg(s_i)), transpose_y=True)))
    return [u, s, vh], [du, _column_dots(u, dav), _mT(dv)]


register_rules(svd_p, jvp=_svd_jvp, transpose=NOT_LINEAR, batch=partial(front_batch, svd_p))


# norm / matrix_norm -------------------------------------------------------------
def reciprocal_norm(out: Any) -> Any:
    """``1 / norm``, and 0 where the norm is 0 (the reciprocal of a norm
    replaced by 1 there, ``where``): x is 0 in such a slice, so ``x / norm``
    is taken as 0, and derivatives of every order stay finite (and 0)."""
    zero = eq(out, 0.0)
    return where(zero, 0.0, divide(1.0, where(zero, 1.0, out)))


def norm_gradient(x: Any, out: Any, ord: str, axes: tuple[int, ...], keepdims: bool) -> Any:
    """The (sub)gradient of the ``ord`` norm over ``axes`` at x (``out`` is
    the norm), for "1" and "+-inf": ``sign(x)`` for "1", and for "+-inf"
    ``sign(x)`` where ``|x|`` equals the norm, divided by the number of such
    entries. (The 2-norm's, ``x / norm``, is ``norm_tangent``'s.)"""
    if ord == "1":
        return sign(x)
    nb = out if keepdims or not axes else expand_dims_p.bind(out, axes=axes)
    hits = indicator(eq(abs(x), nb), x)
    count = sum_p.bind(hits, axes=axes, keepdims=True)
    return divide(multiply(sign(x), hits), count)


def norm_tangent(x: Any, t: Any, out: Any, ord: str, axes: tuple[int, ...],
                 keepdims: bool) -> Any:
    """``sum(t * g)`` over ``axes``, ``g`` the norm's (sub)gradient at x; for
    the 2-norm ``g = x / norm``, whose per-slice factor is taken out of the
    sum: ``sum(t * x) * reciprocal_norm(norm)`` (0 where the norm is 0)."""
    if ord == "2":
        return multiply(sum_p.bind(multiply(t, x), axes=axes, keepdims=keepdims),
                        reciprocal_norm(out))
    g = norm_gradient(x, out, ord, axes, keepdims)
    return sum_p.bind(multiply(t, g), axes=axes, keepdims=keepdims)


def _norm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, ord: str,
              axes: tuple[int, ...], keepdims: bool) -> JvpResult:
    (x,), (t,) = primals, tangents
    out = norm_p.bind(x, ord=ord, axes=axes, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    return out, norm_tangent(x, t, out, ord, axes, keepdims)


register_rules(norm_p, jvp=_norm_jvp, transpose=NOT_LINEAR, batch=partial(reduction_batch, norm_p))


def _matrix_norm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                     keepdims: bool) -> JvpResult:
    """The Frobenius norm's: ``norm_tangent`` with ord "2" over the last two axes."""
    (x,), (t,) = primals, tangents
    out = matrix_norm_p.bind(x, keepdims=keepdims)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    n = np.ndim(x)
    return out, norm_tangent(x, t, out, "2", (n - 2, n - 1), keepdims)


register_rules(matrix_norm_p, jvp=_matrix_norm_jvp, transpose=NOT_LINEAR,
               batch=partial(front_batch, matrix_norm_p))
