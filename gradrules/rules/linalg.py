"""Rules of the linalg family.

matmul and einsum are multilinear: their JVP binds the primitive once per
nonzero tangent, their transposes are matmuls / einsums of the cotangent with
the other operands, and batching binds them once with the batch axis moved to
the front (matmul) or given a letter of its own (einsum). fused_gemm_epilogue
differentiates through matmul, add and the derivative of its activation.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import aval_of, is_undefined_primal, is_zero
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.compare import gt
from ..primitives.convert import convert_element_type
from ..primitives.linalg import (einsum_p, fresh_letters, fused_gemm_epilogue_p, matmul_p,
                                 parse_equation)
from ..primitives.shape import broadcast_in_dim_p, expand_dims_p, reshape_p, squeeze_p
from ..primitives.unary import square, tanh
from ._common import add_tangents, bdim_to_front, broadcast_like, unbroadcast


# multilinear JVP (matmul, einsum, convolution) -----------------------------
def multilinear_jvp(prim: Any, primals: Any, tangents: Any, **params: Any) -> Any:
    """The JVP of a primitive linear in each operand separately:
    t_out = sum_i prim(..., t_i, ...), the primitive with one tangent in place."""
    out = prim.bind(*primals, **params)
    t: Any = _jax.zero_tangent(out)
    for i, ti in enumerate(tangents):
        if is_zero(ti):
            continue
        ops = list(primals)
        ops[i] = ti
        t = add_tangents(t, prim.bind(*ops, **params))
    return out, t


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


def _matmul_transpose(ct: Any, x: Any, y: Any, *, transpose_x: bool,
                      transpose_y: bool) -> list[Any]:
    """x: ct @ op(y)^T (or op(y) @ ct^T when x is transposed); y: op(x)^T @ ct
    (or ct^T @ op(x)); unbroadcast over batch axes, 1-D operands restored."""
    xs, ys = tuple(aval_of(x).shape), tuple(aval_of(y).shape)
    tx, ty = transpose_x and len(xs) > 1, transpose_y and len(ys) > 1
    ct_shape = tuple(np.shape(ct))
    batch = ct_shape[:len(ct_shape) - (len(xs) > 1) - (len(ys) > 1)]
    m = _matrix_shape(xs, True)[-1 if tx else -2]
    n = _matrix_shape(ys, False)[-2 if ty else -1]
    ct = reshape_p.bind(ct, new_sizes=batch + (m, n)) if ct_shape != batch + (m, n) else ct
    if is_undefined_primal(x):
        y = _as_matrix(y, False)
        if tx:
            g = matmul_p.bind(y, ct, transpose_x=ty, transpose_y=True)
        else:
            g = matmul_p.bind(ct, y, transpose_x=False, transpose_y=not ty)
        return [_reduce_batch(g, xs, True), None]
    x = _as_matrix(x, True)
    if ty:
        g = matmul_p.bind(ct, x, transpose_x=True, transpose_y=tx)
    else:
        g = matmul_p.bind(x, ct, transpose_x=not tx, transpose_y=False)
    return [None, _reduce_batch(g, ys, False)]


def _reduce_batch(g: Any, shape: tuple[int, ...], is_x: bool) -> Any:
    """Sum the cotangent of an operand over its broadcast batch axes and give
    it the operand's shape (a 1-D operand drops its unit matrix axis)."""
    mat = _matrix_shape(shape, is_x)
    g = unbroadcast(g, _jax.ShapedArray(mat, aval_of(g).dtype))
    return reshape_p.bind(g, new_sizes=tuple(shape)) if mat != tuple(shape) else g


def _matmul_batch(args: Any, dims: Any, *, transpose_x: bool, transpose_y: bool) -> Any:
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


register_rules(matmul_p, jvp=partial(multilinear_jvp, matmul_p), transpose=_matmul_transpose,
               batch=_matmul_batch)


# einsum --------------------------------------------------------------------
def _einsum_transpose(ct: Any, *operands: Any, equation: str) -> list[Any]:
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


def _einsum_batch(args: Any, dims: Any, *, equation: str) -> Any:
    """A fresh letter for the batch axis, in front of each batched operand's
    indices and of the output's; one einsum."""
    ins, out = parse_equation(equation)
    b = fresh_letters(equation, 1)
    ops, terms = [], []
    for a, d, term in zip(args, dims, ins):
        ops.append(bdim_to_front(a, d))
        terms.append(term if d is None else b + term)
    return einsum_p.bind(*ops, equation=",".join(terms) + "->" + b + out), 0


register_rules(einsum_p, jvp=partial(multilinear_jvp, einsum_p), transpose=_einsum_transpose,
               batch=_einsum_batch)


# fused_gemm_epilogue -------------------------------------------------------
_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _relu_dz(z: Any) -> Any:
    return convert_element_type(gt(z, 0.0), dtype=aval_of(z).dtype)


def _gelu_tanh_dz(z: Any) -> Any:
    """d/dz of 0.5 z (1 + tanh u), u = c (z + a z^3)."""
    z2 = square(z)
    th = tanh(multiply(z, multiply(add(multiply(z2, _GELU_A), 1.0), _GELU_C)))
    du = multiply(add(multiply(z2, 3 * _GELU_A), 1.0), _GELU_C)
    return add(multiply(add(th, 1.0), 0.5),
               multiply(multiply(z, 0.5), multiply(subtract(1.0, square(th)), du)))


_ACTIVATION_DZ = {"relu": _relu_dz, "gelu": _gelu_tanh_dz}


def _fused_gemm_epilogue_jvp(primals: Any, tangents: Any, *, trans_x: bool, trans_y: bool,
                             activation: str) -> Any:
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


def _fused_gemm_epilogue_batch(args: Any, dims: Any, *, trans_x: bool, trans_y: bool,
                               activation: str) -> Any:
    """Batch axis in front, unit axes after it so every batched operand's
    batch axes line up with the output's; one primitive."""
    rank = max(np.ndim(a) - (d is not None) for a, d in zip(args, dims))
    ops = []
    for a, d in zip(args, dims):
        if d is not None:
            a = bdim_to_front(a, d)
            missing = rank + 1 - np.ndim(a)
            if missing:
                a = expand_dims_p.bind(a, axes=tuple(range(1, 1 + missing)))
        ops.append(a)
    return fused_gemm_epilogue_p.bind(*ops, trans_x=trans_x, trans_y=trans_y,
                                      activation=activation), 0


register_rules(fused_gemm_epilogue_p, jvp=_fused_gemm_epilogue_jvp, transpose=NOT_LINEAR,
               batch=_fused_gemm_epilogue_batch)
