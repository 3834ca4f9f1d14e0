"""Rules of the solve family: the textbook JVPs of cholesky, triangular_solve,
solve, inv, det, slogdet and qr, written with gradrules ops (matmul,
triangular_solve, solve, inv, triangle_part, elementwise and shape ops), so
that their own JVPs, and so every higher derivative, compose.

Every part of a JVP that is linear in the tangents is a primitive with a
transpose: ``triangle_part`` (its own transpose), ``triangular_solve`` and
``solve`` in b (the solve with the transposed matrix), matmul, add, scale,
transpose. The matrix ops map over leading axes, so a batch axis there passes
through; one in the matrix axes moves to the front.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_zero)
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import unbroadcast
from ..primitives.arithmetic import add, multiply, scale, subtract
from ..primitives.layout import concatenate
from ..primitives.linalg import matmul_p
from ..primitives.reduction import sum_p
from ..primitives.slicing import slice as gr_slice
from ..primitives.solve import (cholesky_p, det_p, inv_p, qr_p, slogdet_p, solve_p,
                                triangle_part_p, triangular_solve_p)
from ..primitives.unary import neg
from ..primitives.shape import moveaxis
from ._common import (batch_size, broadcast_like, broadcasting_batch, fold_batch, linear_jvp,
                      to_front, unfold_batch)
from .linalg import _mT


def _mm(x: Any, y: Any, transpose_x: bool = False, transpose_y: bool = False) -> Any:
    return matmul_p.bind(x, y, transpose_x=transpose_x, transpose_y=transpose_y)


def _matrix_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                  **params: Any) -> BatchResult:
    """Batching of a one-operand matrix op: a batch axis among the leading
    axes passes through; one in the last two axes moves to the front."""
    (x,), (d,) = args, dims
    assert d is not None
    if d >= np.ndim(x) - 2:
        x, d = moveaxis(x, d, 0), 0
    out = prim.bind(x, **params)
    return out, ([d] * len(out) if prim.multiple_results else d)


# triangle_part ---------------------------------------------------------------
def _triangle_part_transpose(ct: Cotangent, x: MaybeUndefined, *, lower: bool,
                             diagonal: float) -> list[Any]:
    """A mask is its own transpose."""
    return [triangle_part_p.bind(ct, lower=lower, diagonal=diagonal)]


register_rules(triangle_part_p, linear=("x",), jvp=partial(linear_jvp, triangle_part_p),
               transpose=_triangle_part_transpose, batch=partial(_matrix_batch, triangle_part_p))


# cholesky --------------------------------------------------------------------
def _cholesky_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """dL = L Phi(L^-1 dA_s L^-T), dA_s = (dA + dA^T) / 2 (the op reads the
    symmetrised a), Phi = triangle_part(., diagonal=0.5)."""
    (a,), (t,) = primals, tangents
    low = cholesky_p.bind(a)
    if is_zero(t):
        return low, _jax.zero_tangent(low)
    sym = scale(add(t, _mT(t)), scale=0.5)
    solve = partial(triangular_solve_p.bind, low, lower=True, unit_diagonal=False)
    right = solve(sym, left_side=False, transpose_a=True)          # dA_s L^-T
    inner = solve(right, left_side=True, transpose_a=False)        # L^-1 dA_s L^-T
    return low, _mm(low, triangle_part_p.bind(inner, lower=True, diagonal=0.5))


register_rules(cholesky_p, jvp=_cholesky_jvp, transpose=NOT_LINEAR,
               batch=partial(_matrix_batch, cholesky_p))


# triangular_solve --------------------------------------------------------------
def _triangular_solve_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                          left_side: bool, lower: bool, transpose_a: bool,
                          unit_diagonal: bool) -> JvpResult:
    """x = op(a)^-1 b: dx = op(a)^-1 (db + op(-da) x) (left), x = b op(a)^-1:
    dx = (db + x op(-da)) op(a)^-1 (right); da masked to the triangle the op
    reads (strict where the diagonal is unit). One solve. The sign is taken
    on da, a's shape, where it fuses into the mask both ways (the
    transpose's too), not on the product, b's shape, which the transpose
    would negate in a pass of its own between the solve and the matmul."""
    (a, b), (ta, tb) = primals, tangents
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  unit_diagonal=unit_diagonal)
    x = triangular_solve_p.bind(a, b, **params)
    rhs = tb
    if not is_zero(ta):
        minus_da = neg(triangle_part_p.bind(ta, lower=lower,
                                            diagonal=0.0 if unit_diagonal else 1.0))
        prod = _mm(minus_da, x, transpose_x=transpose_a) if left_side else _mm(
            x, minus_da, transpose_y=transpose_a)
        rhs = prod if is_zero(tb) else add(tb, prod)
    if is_zero(rhs):
        return x, _jax.zero_tangent(x)
    return x, triangular_solve_p.bind(a, rhs, **params)


def _triangular_solve_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined, *,
                                left_side: bool, lower: bool, transpose_a: bool,
                                unit_diagonal: bool) -> list[Any]:
    """In b: the solve with op(a)^T (transpose_a flipped)."""
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a,
                                          unit_diagonal=unit_diagonal)]


def _triangular_solve_batch(args: Sequence[Any], dims: Sequence[BatchDim], *,
                            left_side: bool, **params: bool) -> BatchResult:
    """An unbatched a: b's batch axis folds into its columns (left) or rows
    (right), one solve against the shared a; else both batch axes to the
    front (an unbatched b broadcast)."""
    (a, b), (da, db) = args, dims
    if da is None:
        size = batch_size(args, dims)
        axis = np.ndim(b) - (2 if left_side else 3)
        folded = fold_batch(b, db, size, axis)
        out = triangular_solve_p.bind(a, folded, left_side=left_side, **params)
        return unfold_batch(out, size, np.shape(b)[axis + (db <= axis)], axis), axis
    a, b = to_front(args, dims)
    return triangular_solve_p.bind(a, b, left_side=left_side, **params), 0


register_rules(triangular_solve_p, linear=("b",), jvp=_triangular_solve_jvp,
               transpose=_triangular_solve_transpose, batch=_triangular_solve_batch)


# solve -------------------------------------------------------------------------
def _solve_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
               transpose_a: bool) -> JvpResult:
    """x = op(a)^-1 b: dx = op(a)^-1 (db - op(da) x), one solve (with the
    forward's LU factorisation)."""
    (a, b), (ta, tb) = primals, tangents
    x = solve_p.bind(a, b, transpose_a=transpose_a)
    rhs = tb
    if not is_zero(ta):
        prod = _mm(ta, x, transpose_x=transpose_a)
        rhs = neg(prod) if is_zero(tb) else subtract(tb, prod)
    if is_zero(rhs):
        return x, _jax.zero_tangent(x)
    return x, broadcast_like(solve_p.bind(a, rhs, transpose_a=transpose_a), np.shape(x))


def _solve_transpose(ct: Cotangent, a: MaybeUndefined, b: MaybeUndefined, *,
                     transpose_a: bool) -> list[Any]:
    """In b: the solve with op(a)^T (transpose_a flipped: the same LU
    factorisation of a), summed over the batch axes b was broadcast along."""
    return [None, unbroadcast(solve_p.bind(a, ct, transpose_a=not transpose_a), aval_of(b))]


register_rules(solve_p, linear=("b",), jvp=_solve_jvp, transpose=_solve_transpose,
               batch=partial(broadcasting_batch, solve_p))


# inv ---------------------------------------------------------------------------
def _inv_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """d(a^-1) = -a^-1 da a^-1."""
    (a,), (t,) = primals, tangents
    y = inv_p.bind(a)
    if is_zero(t):
        return y, _jax.zero_tangent(y)
    return y, neg(_mm(_mm(y, t), y))


register_rules(inv_p, jvp=_inv_jvp, transpose=NOT_LINEAR, batch=partial(_matrix_batch, inv_p))


# det, slogdet --------------------------------------------------------------------
def _logdet_tangent(a: Any, t: Any) -> Any:
    """tr(a^-1 t) = sum(inv(a)^T * t) over the matrix axes: the tangent of
    log|det a| (Jacobi's formula)."""
    nd = np.ndim(t)
    return sum_p.bind(multiply(_mT(inv_p.bind(a)), t), axes=(nd - 2, nd - 1), keepdims=False)


def _det_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """d det(a) = det(a) tr(a^-1 da)."""
    (a,), (t,) = primals, tangents
    d = det_p.bind(a)
    if is_zero(t):
        return d, _jax.zero_tangent(d)
    return d, multiply(d, _logdet_tangent(a, t))


register_rules(det_p, jvp=_det_jvp, transpose=NOT_LINEAR, batch=partial(_matrix_batch, det_p))


def _slogdet_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """The sign is locally constant; d logabsdet = tr(a^-1 da)."""
    (a,), (t,) = primals, tangents
    sign, logabsdet = slogdet_p.bind(a)
    t_log = _jax.zero_tangent(logabsdet) if is_zero(t) else _logdet_tangent(a, t)
    return [sign, logabsdet], [_jax.zero_tangent(sign), t_log]


register_rules(slogdet_p, jvp=_slogdet_jvp, transpose=NOT_LINEAR,
               batch=partial(_matrix_batch, slogdet_p))


# qr ------------------------------------------------------------------------------
def _thin_qr_tangents(q: Any, r: Any, t: Any) -> tuple[Any, Any]:
    """(dq, dr) of a = q r with r square and invertible: C = q^T da r^-1,
    O = tril(C, -1) - tril(C, -1)^T, dq = q (O - C) + da r^-1, dr = (C - O) r."""
    t_rinv = triangular_solve_p.bind(r, t, left_side=False, lower=False, transpose_a=False,
                                     unit_diagonal=False)
    c = _mm(q, t_rinv, transpose_x=True)
    low = triangle_part_p.bind(c, lower=True, diagonal=0.0)
    skew = subtract(low, _mT(low))
    return add(_mm(q, subtract(skew, c)), t_rinv), _mm(subtract(c, skew), r)


def _columns(x: Any, start: int, stop: int) -> Any:
    shape = np.shape(x)
    return gr_slice(x, start=(0,) * (len(shape) - 1) + (start,), limit=shape[:-1] + (stop,))


def _qr_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """m >= n: the thin rule; m < n: a = [a1, a2] with a1 square, q and r1
    from a1 (the thin rule), r2 = q^T a2: dr2 = dq^T a2 + q^T da2."""
    (a,), (t,) = primals, tangents
    q, r = qr_p.bind(a)
    if is_zero(t):
        return [q, r], [_jax.zero_tangent(q), _jax.zero_tangent(r)]
    m, n = np.shape(a)[-2:]
    if m >= n:
        return [q, r], list(_thin_qr_tangents(q, r, t))
    dq, dr1 = _thin_qr_tangents(q, _columns(r, 0, m), _columns(t, 0, m))
    dr2 = add(_mm(dq, _columns(a, m, n), transpose_x=True),
              _mm(q, _columns(t, m, n), transpose_x=True))
    return [q, r], [dq, concatenate([dr1, dr2], axis=-1)]


register_rules(qr_p, jvp=_qr_jvp, transpose=NOT_LINEAR, batch=partial(_matrix_batch, qr_p))
