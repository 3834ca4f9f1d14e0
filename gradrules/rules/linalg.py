"""Rules of the linalg family.

matmul and einsum are multilinear: their JVP binds the primitive once per
nonzero tangent, their transposes are matmuls / einsums of the cotangent with
the other operands, and batching binds them once with the batch axis moved to
the front (matmul) or given a letter of its own (einsum). mm and bmm are
multilinear too; vmap folds the batch axis into m, n or bmm's batch axis, so
one mm or bmm is bound. addmm and linear are jointly linear in the bias and
one factor: their JVPs bind themselves with the bias tangent riding on the
first product, their transposes are mm / linear of the cotangent. Under vmap
they fold the batch axis like mm when one factor is batched; otherwise (both
factors, or the bias alone) they are bmm or mm plus the broadcast bias.
fused_gemm_epilogue differentiates through matmul, add and the derivative of
its activation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial, reduce
from typing import Any

import numpy as np

import jax

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_undefined_primal, is_zero)
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives._compose import unbroadcast
from ..primitives.arithmetic import add, multiply, scale
from ..primitives.linalg import (addmm_p, bmm_p, einsum_p, fresh_letters, fused_gemm_epilogue_p,
                                 linear_p, matmul_p, mm_p, parse_equation)
from ..primitives.shape import (broadcast_in_dim_p, expand_dims_p, moveaxis, reshape_p,
                                squeeze_p, transpose_p)
from ._common import (add_tangents, batch_size, bdim_to_front, broadcast_like,
                      broadcasting_batch, multilinear_jvp, reshape_axis_into, reshape_axis_out_of)
from .activation import _gelu_dx, _relu_dx


# matmul --------------------------------------------------------------------
def _as_matrix(a: Any, is_x: bool) -> Any:
    """A 1-D operand as the row (x) or column (y) matrix matmul treats it as."""
    if np.ndim(a) != 1:
        return a
    n = np.shape(a)[0]
    return reshape_p.bind(a, new_sizes=(1, n) if is_x else (n, 1))


def _matrix_shape(shape: tuple[int, ...], is_x: bool) -> tuple[int, ...]:
    if len(shape) != 1:
        return tuple(shape)
    return (1, shape[0]) if is_x else (shape[0], 1)


def _matmul_transpose(ct: Cotangent, x: MaybeUndefined, y: MaybeUndefined, *,
                      transpose_x: bool, transpose_y: bool) -> list[Any]:
    """x: ct @ op(y)^T (or op(y) @ ct^T when x is transposed); y: op(x)^T @ ct
    (or ct^T @ op(x)); for an operand broadcast along batch axes of ct, one
    einsum that contracts them too; 1-D operands restored."""
    xs, ys = tuple(aval_of(x).shape), tuple(aval_of(y).shape)
    tx, ty = transpose_x and len(xs) > 1, transpose_y and len(ys) > 1
    ct_shape = tuple(np.shape(ct))
    batch = ct_shape[:len(ct_shape) - (len(xs) > 1) - (len(ys) > 1)]
    m = _matrix_shape(xs, True)[-1 if tx else -2]
    n = _matrix_shape(ys, False)[-2 if ty else -1]
    ct = reshape_p.bind(ct, new_sizes=batch + (m, n)) if ct_shape != batch + (m, n) else ct
    if is_undefined_primal(x):
        y, mat = _as_matrix(y, False), _matrix_shape(xs, True)
        if mat[:-2] != batch:
            g = _batch_contracting_transpose(ct, y, mat, "km" if tx else "mk",
                                             "nk" if ty else "kn")
        elif tx:
            g = matmul_p.bind(y, ct, transpose_x=ty, transpose_y=True)
        else:
            g = matmul_p.bind(ct, y, transpose_x=False, transpose_y=not ty)
        return [_as_operand(g, xs), None]
    x, mat = _as_matrix(x, True), _matrix_shape(ys, False)
    if mat[:-2] != batch:
        g = _batch_contracting_transpose(ct, x, mat, "nk" if ty else "kn",
                                         "km" if tx else "mk")
    elif ty:
        g = matmul_p.bind(ct, x, transpose_x=True, transpose_y=tx)
    else:
        g = matmul_p.bind(x, ct, transpose_x=not tx, transpose_y=False)
    return [None, _as_operand(g, ys)]


def _batch_contracting_transpose(ct: Any, other: Any, mat: tuple[int, ...], own: str,
                                 other_axes: str) -> Any:
    """The cotangent, of matrix shape ``mat``, of a matmul operand that ct
    [batch..., m, n] broadcasts along some batch axes: sum_b op(x_b)^T ct_b
    (or ct_b op(y_b)^T) as one einsum of ct and the other operand that
    contracts those batch axes with m (n), as dot_general's transpose does,
    not a product per batch element summed after. ``own`` and ``other_axes``
    name the matrix axes of the operand and of ``other`` (as stored) with the
    letters m, n, k; a size-1 batch axis broadcast against ct takes a letter
    of its own (summed), and comes back as a unit axis of ``mat``."""
    batch = tuple(np.shape(ct)[:-2])
    letters = fresh_letters("mnk", 2 * len(batch))
    shared, spare = letters[:len(batch)], letters[len(batch):]

    def batch_term(shape: tuple[int, ...]) -> str:
        lead = len(batch) - len(shape)
        return "".join(shared[lead + i] if d == batch[lead + i] else spare[lead + i]
                       for i, d in enumerate(shape))
    out = "".join(c for c in batch_term(mat[:-2]) if c in shared) + own
    g = einsum_p.bind(ct, other, equation=f"{shared}mn,{batch_term(np.shape(other)[:-2])}"
                                          f"{other_axes}->{out}")
    return reshape_p.bind(g, new_sizes=mat) if tuple(np.shape(g)) != mat else g


def _as_operand(g: Any, shape: tuple[int, ...]) -> Any:
    """A matrix cotangent in the operand's shape (a 1-D operand drops its
    unit matrix axis)."""
    return reshape_p.bind(g, new_sizes=tuple(shape)) if tuple(np.shape(g)) != tuple(shape) else g


def _matmul_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, transpose_x: bool,
                  transpose_y: bool) -> BatchResult:
    """Batch axis to the front of each batched operand (a batched 1-D operand
    becomes a one-row / one-column matrix), batch ranks padded with unit axes
    so the batch axes line up, one matmul; unit matrix axes squeezed after."""
    (x, y), (dx, dy) = args, dims
    xnd, ynd = np.ndim(x) - (dx is not None), np.ndim(y) - (dy is not None)
    x, y = bdim_to_front(x, dx), bdim_to_front(y, dy)
    x_row = xnd == 1 and dx is not None
    y_col = ynd == 1 and dy is not None
    if x_row:
        x = expand_dims_p.bind(x, axes=(1,))
    if y_col:
        y = expand_dims_p.bind(y, axes=(2,))
    tx, ty = transpose_x and not x_row, transpose_y and not y_col
    rank = max(max(xnd, 2) - 2, max(ynd, 2) - 2)
    ops = []
    for a, d, nd in ((x, dx, xnd), (y, dy, ynd)):
        missing = rank - (max(nd, 2) - 2)
        if d is not None and missing:
            a = expand_dims_p.bind(a, axes=tuple(range(1, 1 + missing)))
        ops.append(a)
    out = matmul_p.bind(*ops, transpose_x=tx, transpose_y=ty)
    y_has_n = ynd > 1 or y_col
    squeeze = ([np.ndim(out) - 1] if y_col else []) + (
        [np.ndim(out) - 1 - y_has_n] if x_row else [])
    if squeeze:
        out = squeeze_p.bind(out, axes=tuple(sorted(squeeze)))
    return out, 0


register_rules(matmul_p, linear=(("x",), ("y",)),
               jvp=partial(multilinear_jvp, matmul_p), transpose=_matmul_transpose,
               batch=_matmul_batch)


# mm, bmm, addmm, linear ----------------------------------------------------
def _mT(a: Any) -> Any:
    """``a`` with its last two axes swapped."""
    perm = tuple(range(np.ndim(a) - 2)) + (np.ndim(a) - 1, np.ndim(a) - 2)
    return transpose_p.bind(a, permutation=perm)


def _scaled(a: Any, s: float) -> Any:
    return a if s == 1.0 else scale(a, scale=s)


def _product_transpose(prim: Primitive, ct: Cotangent, x: MaybeUndefined, y: MaybeUndefined
                       ) -> list[Any]:
    """The transpose of ``prim(x, y)`` (mm or bmm) in its one undefined
    operand: ``prim(ct, y^T) = prim(y, ct^T)^T`` for x, ``prim(x^T, ct) =
    prim(ct^T, x)^T`` for y, in the form that transposes fewer elements
    (``_transposes_factor``)."""
    if is_undefined_primal(x):
        if _transposes_factor(y, ct, aval_of(x)):
            return [prim.bind(ct, _mT(y)), None]
        return [_mT(prim.bind(y, _mT(ct))), None]
    if _transposes_factor(x, ct, aval_of(y)):
        return [None, prim.bind(_mT(x), ct)]
    return [None, _mT(prim.bind(_mT(ct), x))]


def _transposes_factor(factor: Any, ct: Any, result: Any) -> bool:
    """Whether a product's transpose swaps the axes of the primal ``factor``
    rather than those of ``ct`` and of the result: whichever copies fewer
    elements. XLA folds a transposed operand into a matrix-matrix product
    but not into the loop it makes of a matrix-vector one, where a copy of
    the large factor would cost more than the product itself. The factor
    where a size is symbolic (``jax.export``)."""
    sizes = (np.size(factor), np.size(ct), math.prod(result.shape))
    if any(jax.export.is_symbolic_dim(d) for d in sizes):
        return True
    return sizes[0] <= sizes[1] + sizes[2]


def _core_shape(a: Any, d: int | None) -> tuple[int, ...]:
    """The shape of ``a`` without its batch axis ``d``."""
    return tuple(s for i, s in enumerate(np.shape(a)) if i != d)


def _fold_batch(x: Any, y: Any, dx: int | None, dy: int | None,
                nb: int) -> tuple[Any, Any, tuple[int, int, int]]:
    """Fold a vmap axis into a matrix product with ``nb`` leading batch axes
    (0: mm, 1: bmm): into m when only x is batched, into n when only y is,
    into the batch axis when both are (nb = 1). Returns the folded operands
    and (the axis of the product that holds the fold, the two sizes merged
    there)."""
    if dy is None:
        x2 = reshape_axis_into(dx, nb, x)
        return x2, y, (nb, np.shape(x)[dx], _core_shape(x, dx)[nb])
    if dx is None:
        return x, reshape_axis_into(dy, np.ndim(y) - 2, y), (-1, np.shape(y)[dy],
                                                              _core_shape(y, dy)[-1])
    return (reshape_axis_into(dx, 0, x), reshape_axis_into(dy, 0, y),
            (0, np.shape(x)[dx], _core_shape(x, dx)[0]))


def _unfold(out: Any, fold: tuple[int, int, int]) -> tuple[Any, int]:
    """Split the folded axis of a product into (batch, rest): (out, out_dim)."""
    axis, size, rest = fold
    axis %= np.ndim(out)
    return reshape_axis_out_of(axis, size, out, rest), axis


def _mm_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """One mm with the batch axis folded into m or n; both batched: one bmm."""
    (x, y), (dx, dy) = args, dims
    if dx is not None and dy is not None:
        return bmm_p.bind(moveaxis(x, dx, 0), moveaxis(y, dy, 0)), 0
    x, y, fold = _fold_batch(x, y, dx, dy, 0)
    return _unfold(mm_p.bind(x, y), fold)


register_rules(mm_p, linear=(("x",), ("y",)), jvp=partial(multilinear_jvp, mm_p),
               transpose=partial(_product_transpose, mm_p), batch=_mm_batch)


def _bmm_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """One bmm with the batch axis folded into m, n or the bmm batch axis."""
    (x, y), (dx, dy) = args, dims
    x, y, fold = _fold_batch(x, y, dx, dy, 1)
    return _unfold(bmm_p.bind(x, y), fold)


register_rules(bmm_p, linear=(("x",), ("y",)), jvp=partial(multilinear_jvp, bmm_p),
               transpose=partial(_product_transpose, bmm_p), batch=_bmm_batch)


def _broadcast_batched(a: Any, d: int | None, size: int, shape: tuple[int, ...],
                       axis: int) -> Any:
    """``a`` (numpy-broadcastable to ``shape`` once its batch axis ``d`` is
    taken out) broadcast to ``shape`` with a batch axis of ``size`` at ``axis``."""
    rank = np.ndim(a) - (d is not None)
    dims = [len(shape) - rank + i for i in range(rank)]
    dims = [j + (j >= axis) for j in dims]
    if d is not None:
        a = moveaxis(a, d, sum(j < axis for j in dims))
        dims = sorted(dims + [axis])
    full = shape[:axis] + (size,) + shape[axis:]
    return broadcast_in_dim_p.bind(a, shape=full, broadcast_dimensions=tuple(dims))


def _affine_tangent(term: Callable[..., Any], tb: Tangent,
                    products: Sequence[tuple[Tangent, tuple[Any, Any]]]) -> Any:
    """The tangent of ``product(a, c) + bias`` for a bilinear product: one
    ``term(tb, a, c)`` per nonzero product tangent, the bias tangent riding on
    the first of them (so each term is one primitive, jointly linear in the
    bias and one factor); ``term(tb, None, None)`` if only the bias moves."""
    tb = None if is_zero(tb) else tb
    terms = []
    for tangent, (a, c) in products:
        if not is_zero(tangent):
            terms.append(term(tb, a, c))
            tb = None
    if tb is not None:
        terms.append(term(tb, None, None))
    return reduce(add, terms) if terms else None


def _addmm_term(tb: Any, a: Any, c: Any, *, beta: float, alpha: float) -> Any:
    """beta tb + alpha a @ c, either part possibly absent (None)."""
    if a is None:
        return _scaled(tb, beta)
    if tb is None:
        return _scaled(mm_p.bind(a, c), alpha)
    return addmm_p.bind(tb, a, c, beta=beta, alpha=alpha)


def _addmm_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *, beta: float,
               alpha: float) -> JvpResult:
    """t_out = addmm(tb, tx, y) + alpha mm(x, ty)."""
    (bias, x, y), (tb, tx, ty) = primals, tangents
    out = addmm_p.bind(bias, x, y, beta=beta, alpha=alpha)
    t = _affine_tangent(partial(_addmm_term, beta=beta, alpha=alpha), tb,
                        ((tx, (tx, y)), (ty, (x, ty))))
    return out, _jax.zero_tangent(out) if t is None else broadcast_like(t, np.shape(out))


def _addmm_transpose(ct: Cotangent, bias: MaybeUndefined, x: MaybeUndefined,
                     y: MaybeUndefined, *, beta: float, alpha: float) -> list[Any]:
    """bias: beta ct summed over its broadcast axes; x: alpha mm(ct, y^T);
    y: alpha mm(x^T, ct)."""
    cts: list[Any] = [None, None, None]
    if is_undefined_primal(bias):
        cts[0] = unbroadcast(_scaled(ct, beta), bias.aval)
    if is_undefined_primal(x) or is_undefined_primal(y):
        cts[1:] = _product_transpose(mm_p, _scaled(ct, alpha), x, y)
    return cts


def _addmm_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, beta: float,
                 alpha: float) -> BatchResult:
    """One addmm with the batch axis folded into m (x batched) or n (y
    batched), the bias broadcast to match; with x and y both batched or
    neither (only the bias), beta bias + alpha (bmm or mm)."""
    (bias, x, y), (db, dx, dy) = args, dims
    size = batch_size(args, dims)
    m, n = _core_shape(x, dx)[0], _core_shape(y, dy)[1]
    if (dx is None) != (dy is None):
        axis = 0 if dy is None else 1
        bias = reshape_axis_into(axis, axis, _broadcast_batched(bias, db, size, (m, n), axis))
        x, y, fold = _fold_batch(x, y, dx, dy, 0)
        return _unfold(addmm_p.bind(bias, x, y, beta=beta, alpha=alpha), fold)
    prod = mm_p.bind(x, y) if dx is None else bmm_p.bind(moveaxis(x, dx, 0), moveaxis(y, dy, 0))
    bias = _broadcast_batched(bias, db, size, (m, n), 0)
    return add(_scaled(bias, beta), _scaled(prod, alpha)), 0


register_rules(addmm_p, linear=(("bias", "x"), ("bias", "y")),
               jvp=_addmm_jvp, transpose=_addmm_transpose, batch=_addmm_batch)


def _linear_term(tb: Any, a: Any, c: Any) -> Any:
    """linear(a, c, tb), either part possibly absent (None)."""
    if a is None:
        return tb
    return linear_p.bind(a, c, *([] if tb is None else [tb]))


def _linear_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = linear(tx, w, tb) + linear(x, tw)."""
    (x, w, *b), (tx, tw, *tb) = primals, tangents
    out = linear_p.bind(x, w, *b)
    t = _affine_tangent(_linear_term, tb[0] if tb else _jax.zero_tangent(out),
                        ((tx, (tx, w)), (tw, (x, tw))))
    return out, _jax.zero_tangent(out) if t is None else broadcast_like(t, np.shape(out))


def _linear_transpose(ct: Cotangent, x: MaybeUndefined, w: MaybeUndefined,
                      *b: MaybeUndefined) -> list[Any]:
    """x: linear(ct, w^T); w: mm(x^T, ct) with the leading axes of x and ct
    flattened; b: ct summed over every axis but the last."""
    cts: list[Any] = [None] * (2 + len(b))
    if b and is_undefined_primal(b[0]):
        cts[2] = unbroadcast(ct, b[0].aval)
    if is_undefined_primal(x):
        cts[0] = linear_p.bind(ct, _mT(w))
    elif is_undefined_primal(w):
        (k, n), rows = aval_of(w).shape, math.prod(np.shape(x)[:-1])
        cts[1] = mm_p.bind(_mT(reshape_p.bind(x, new_sizes=(rows, k))),
                           reshape_p.bind(ct, new_sizes=(rows, n)))
    return cts


def _linear_batch(args: Sequence[Any], dims: Sequence[BatchDim]) -> BatchResult:
    """x alone batched: the batch axis is one more leading axis of x. w
    batched, x not: folded into the output features. Otherwise (x and w
    batched, or the bias alone): bmm or linear, plus the broadcast bias."""
    (x, w, *b), (dx, dw, *db) = args, dims
    db_ = db[0] if db else None
    size = batch_size(args, dims)
    if dw is None and db_ is None:
        return linear_p.bind(moveaxis(x, dx, 0), w, *b), 0
    if dx is None and dw is not None:
        n = _core_shape(w, dw)[1]
        b = [reshape_axis_into(0, 0, _broadcast_batched(b[0], db_, size, (n,), 0))] if b else []
        x, w, fold = _fold_batch(x, w, None, dw, 0)
        return _unfold(linear_p.bind(x, w, *b), fold)
    if dw is None:
        prod = linear_p.bind(x if dx is None else moveaxis(x, dx, 0), w)
        lead = np.shape(prod)[1 if dx is not None else 0:-1]
    else:
        x, w = moveaxis(x, dx, 0), moveaxis(w, dw, 0)
        lead = np.shape(x)[1:-1]
        x = reshape_p.bind(x, new_sizes=(size, math.prod(lead), np.shape(x)[-1]))
        prod = reshape_p.bind(bmm_p.bind(x, w), new_sizes=(size,) + lead + (np.shape(w)[-1],))
    if not b:
        return prod, 0
    n = np.shape(prod)[-1]
    return add(prod, _broadcast_batched(b[0], db_, size, lead + (n,), 0)), 0


register_rules(linear_p, linear=(("x", "b"), ("w", "b")),
               jvp=_linear_jvp, transpose=_linear_transpose, batch=_linear_batch)


# einsum --------------------------------------------------------------------
def _einsum_transpose(ct: Cotangent, *operands: MaybeUndefined, equation: str) -> list[Any]:
    """The cotangent of the one undefined operand k: the einsum of the other
    operands and ct to k's indices. A repeated index of k (a diagonal) takes
    a fresh letter tied to the first by an identity matrix; indices only k
    has are summed in the forward, so the result is broadcast along them."""
    undefined = [i for i, o in enumerate(operands) if is_undefined_primal(o)]
    if len(undefined) != 1:
        raise ValueError("gradrules.einsum is linear in one operand at a time, not jointly "
                         f"in operands {undefined}")
    (k,) = undefined
    ins, out = parse_equation(equation)
    shape = tuple(operands[k].aval.shape)
    dtype = operands[k].aval.dtype
    terms = [t for i, t in enumerate(ins) if i != k] + [out]
    ops = [o for i, o in enumerate(operands) if i != k] + [ct]
    target, spare = "", fresh_letters(equation, len(ins[k]))
    for j, c in enumerate(ins[k]):
        if c in target:
            terms.append(c + spare[j])
            ops.append(np.eye(shape[j], dtype=dtype))
            c = spare[j]
        target += c
    avail = "".join(terms)
    kept = "".join(c for c in target if c in avail)
    g = einsum_p.bind(*ops, equation=",".join(terms) + "->" + kept)
    if kept != target:
        g = broadcast_in_dim_p.bind(g, shape=shape, broadcast_dimensions=tuple(
            j for j, c in enumerate(target) if c in avail))
    cts: list[Any] = [None] * len(operands)
    cts[k] = g
    return cts


def _einsum_batch(args: Sequence[Any], dims: Sequence[BatchDim], *, equation: str
                  ) -> BatchResult:
    """A fresh letter for the batch axis, in front of each batched operand's
    indices and of the output's; one einsum."""
    ins, out = parse_equation(equation)
    b = fresh_letters(equation, 1)
    ops, terms = [], []
    for a, d, term in zip(args, dims, ins):
        ops.append(bdim_to_front(a, d))
        terms.append(term if d is None else b + term)
    return einsum_p.bind(*ops, equation=",".join(terms) + "->" + b + out), 0


register_rules(einsum_p, linear=(("*operands",),),
               jvp=partial(multilinear_jvp, einsum_p), transpose=_einsum_transpose,
               batch=_einsum_batch)


# fused_gemm_epilogue -------------------------------------------------------
# the activation's derivative at z, shared with gradrules.relu / gelu (tanh form)
_ACTIVATION_DZ = {"relu": partial(_relu_dx, out=None),
                  "gelu": partial(_gelu_dx, out=None, approximate=True)}


def _fused_gemm_epilogue_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                             trans_x: bool, trans_y: bool, activation: str) -> JvpResult:
    """t_out = act'(z) * (matmul(tx, y) + matmul(x, ty) + tb), z = x @ y + bias."""
    (x, y, bias), (tx, ty, tb) = primals, tangents
    out = fused_gemm_epilogue_p.bind(x, y, bias, trans_x=trans_x, trans_y=trans_y,
                                     activation=activation)
    prod, t = multilinear_jvp(matmul_p, (x, y), (tx, ty), transpose_x=trans_x,
                              transpose_y=trans_y)
    t = add_tangents(t, tb)
    if is_zero(t):
        return out, _jax.zero_tangent(out)
    t = broadcast_like(t, np.shape(out))
    if activation != "none":
        t = multiply(t, _ACTIVATION_DZ[activation](add(prod, bias)))
    return out, t


# batching: the operands broadcast like an elementwise op's (bias against x @ y)
register_rules(fused_gemm_epilogue_p, jvp=_fused_gemm_epilogue_jvp, transpose=NOT_LINEAR,
               batch=partial(broadcasting_batch, fused_gemm_epilogue_p))
