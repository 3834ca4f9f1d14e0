"""Linear algebra: matmul, its fixed-rank forms mm, bmm, addmm and linear,
einsum and fused_gemm_epilogue, each a primitive.

``matmul_p``, ``mm_p``, ``bmm_p`` and ``einsum_p`` are multilinear: their JVPs
bind themselves on one tangent at a time and their transposes are again
products of the same kind (see ``gradrules/rules/linalg.py``); ``addmm_p`` and
``linear_p`` are jointly linear in the bias and one factor.
``fused_gemm_epilogue_p`` is one primitive for ``act(x @ y + bias)``; its JVP
is written with matmul, add and the derivative of the activation.
"""

from __future__ import annotations

import string
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import bool_param, choice_param, number_param
from ..core.meta import broadcast_shapes, check_dtype, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import promote
from .shape import reshape

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "linalg"
HIGHEST = lax.Precision.HIGHEST
ACTIVATIONS = ("none", "relu", "gelu")


# ------------------------------------------------------------------ matmul
def matmul_shape(op: str, x: tuple[int, ...], y: tuple[int, ...], transpose_x: bool,
                 transpose_y: bool) -> tuple[int, ...]:
    """numpy matmul's result shape, the last two axes of an operand of rank
    >= 2 swapped first where asked (a transpose flag of a 1-D operand is
    ignored, as in Paddle). ValueError naming the shapes on a mismatch."""
    if not x or not y:
        raise ValueError(f"{op_name(op)}: operands must have rank >= 1, got x with shape "
                         f"{tuple(x)} and y with shape {tuple(y)}")
    xm = (1, x[0]) if len(x) == 1 else (x[-1], x[-2]) if transpose_x else tuple(x[-2:])
    ym = (y[0], 1) if len(y) == 1 else (y[-1], y[-2]) if transpose_y else tuple(y[-2:])
    if xm[1] != ym[0]:
        raise ValueError(f"{op_name(op)}: inner dimensions do not match: x with shape "
                         f"{tuple(x)} (transpose_x={transpose_x}) has {xm[1]} columns, y with "
                         f"shape {tuple(y)} (transpose_y={transpose_y}) has {ym[0]} rows")
    batch = broadcast_shapes(op, {"x batch dims": tuple(x[:-2]),
                                  "y batch dims": tuple(y[:-2])})
    return batch + (xm[0],) * (len(x) > 1) + (ym[1],) * (len(y) > 1)


def _matmul_infer_meta(x: Any, y: Any, *, transpose_x: bool, transpose_y: bool) -> ShapedArray:
    dtype = same_dtype("matmul", {"x": x, "y": y})
    check_dtype("matmul", "x", dtype, "numeric")
    shape = matmul_shape("matmul", x.shape, y.shape, transpose_x, transpose_y)
    return ShapedArray(shape, dtype, weak_type=x.weak_type and y.weak_type)


def _swap_last(a: Array, flag: bool) -> Array:
    return jnp.swapaxes(a, -1, -2) if flag and a.ndim > 1 else a


def _matmul_impl(x: Array, y: Array, *, transpose_x: bool, transpose_y: bool) -> Array:
    return jnp.matmul(_swap_last(x, transpose_x), _swap_last(y, transpose_y), precision=HIGHEST,
                      preferred_element_type=x.dtype)


matmul_p = define_primitive("matmul", family=FAMILY, operands=("x", "y"),
                            params=("transpose_x", "transpose_y"),
                            infer_meta=_matmul_infer_meta, impl=_matmul_impl)


def matmul(x: ArrayLike, y: ArrayLike, *, transpose_x: bool = False,
           transpose_y: bool = False) -> Array:
    """The matrix product ``op(x) @ op(y)`` with numpy's matmul semantics.

    ``op`` swaps the last two axes where ``transpose_x`` / ``transpose_y`` is
    set (ignored for a 1-D operand). A 1-D x is a row vector and a 1-D y a
    column vector, their unit axis dropped from the result; leading (batch)
    axes broadcast. Bilinear: the tangent is ``tx @ y + x @ ty``; the
    transpose for x is ``ct @ op(y)^T`` and for y ``op(x)^T @ ct`` (swapped
    back where the operand was transposed), summed over broadcast batch axes.
    """
    x, y = promote("matmul", {"x": x, "y": y}, "numeric")
    return matmul_p.bind(x, y, transpose_x=bool_param("matmul", "transpose_x", transpose_x),
                         transpose_y=bool_param("matmul", "transpose_y", transpose_y))


def _matmul_reference(x: Array, y: Array, *, transpose_x: bool = False,
                      transpose_y: bool = False) -> Array:
    return jnp.matmul(_swap_last(x, transpose_x), _swap_last(y, transpose_y), precision=HIGHEST)


register_op(OpDef(name="matmul", family=FAMILY, fn=matmul, primitives=(matmul_p,),
                  reference=_matmul_reference, operands=("x", "y"), linear=(("x",), ("y",)),
                  order=3))


# ------------------------------------------- mm, bmm, addmm, linear
# Each of the fixed-rank forms of the catalog is a primitive of its own (as in
# PyTorch's core IR): its abstract eval checks the ranks, and its rules bind
# the same primitive again (see gradrules/rules/linalg.py).
def _product_meta(op: str, operands: dict[str, Any], ranks: tuple[int | None, int],
                  kind: str) -> tuple[Any, tuple[int, ...]]:
    """Dtype and shape of ``x @ y`` for the two named operands of the given
    ranks (``None``: any rank >= 1); a rank-3 pair must agree on axis 0."""
    (xn, x), (yn, y) = operands.items()
    dtype = same_dtype(op, operands)
    check_dtype(op, xn, dtype, kind)
    for (name, a), rank in zip(operands.items(), ranks):
        if (len(a.shape) < 1) if rank is None else (len(a.shape) != rank):
            want = "rank >= 1" if rank is None else f"rank {rank}"
            raise ValueError(f"{op_name(op)}: argument {name} must have {want}, got shape "
                             f"{tuple(a.shape)}")
    if ranks == (3, 3) and x.shape[0] != y.shape[0]:
        raise ValueError(f"{op_name(op)}: batch sizes differ: {xn} with shape "
                         f"{tuple(x.shape)}, {yn} with shape {tuple(y.shape)}")
    return dtype, matmul_shape(op, x.shape, y.shape, False, False)


def _fixed_rank_meta(op: str, rank: int, x: Any, y: Any) -> ShapedArray:
    """The abstract eval of ``x @ y`` for two operands of rank ``rank``."""
    dtype, shape = _product_meta(op, {"x": x, "y": y}, (rank, rank), "numeric")
    return ShapedArray(shape, dtype, weak_type=x.weak_type and y.weak_type)


def _plain_product(x: Array, y: Array) -> Array:
    return _matmul_impl(x, y, transpose_x=False, transpose_y=False)


mm_p = define_primitive("mm", family=FAMILY, operands=("x", "y"),
                        infer_meta=partial(_fixed_rank_meta, "mm", 2), impl=_plain_product)


def mm(x: ArrayLike, y: ArrayLike) -> Array:
    """``x @ y`` for matrices x [m, k] and y [k, n] (aten.mm).

    Bilinear: the tangent is ``mm(tx, y) + mm(x, ty)``; the transposes are
    ``mm(ct, y^T)`` for x and ``mm(x^T, ct)`` for y. Under vmap the batch axis
    folds into m (x batched) or n (y batched); with both batched it is a bmm.
    """
    x, y = promote("mm", {"x": x, "y": y}, "numeric")
    return mm_p.bind(x, y)


register_op(OpDef(name="mm", family=FAMILY, fn=mm, primitives=(mm_p,),
                  reference=_matmul_reference, operands=("x", "y"), linear=(("x",), ("y",))))


bmm_p = define_primitive("bmm", family=FAMILY, operands=("x", "y"),
                         infer_meta=partial(_fixed_rank_meta, "bmm", 3), impl=_plain_product)


def bmm(x: ArrayLike, y: ArrayLike) -> Array:
    """Batched ``x @ y``: x [b, m, k], y [b, k, n] -> [b, m, n], no broadcasting
    (aten.bmm).

    Bilinear: the tangent is ``bmm(tx, y) + bmm(x, ty)``; the transposes are
    ``bmm(ct, y^T)`` and ``bmm(x^T, ct)`` (last two axes swapped). Under vmap
    the batch axis folds into m, n or b, so one bmm is bound.
    """
    x, y = promote("bmm", {"x": x, "y": y}, "numeric")
    return bmm_p.bind(x, y)


register_op(OpDef(name="bmm", family=FAMILY, fn=bmm, primitives=(bmm_p,),
                  reference=_matmul_reference, operands=("x", "y"), linear=(("x",), ("y",))))


def _addmm_infer_meta(bias: Any, x: Any, y: Any, *, beta: float, alpha: float) -> ShapedArray:
    dtype, shape = _product_meta("addmm", {"x": x, "y": y}, (2, 2), "float")
    same_dtype("addmm", {"bias": bias, "x": x})
    if broadcast_shapes("addmm", {"bias": bias.shape, "x @ y": shape}) != shape:
        raise ValueError(f"{op_name('addmm')}: bias with shape {tuple(bias.shape)} does not "
                         f"broadcast to x @ y with shape {shape}")
    return ShapedArray(shape, dtype)


def addmm_reference(bias: Array, x: Array, y: Array, *, beta: float = 1.0,
                    alpha: float = 1.0) -> Array:
    return beta * bias + alpha * jnp.matmul(x, y, precision=HIGHEST)


def _addmm_impl(bias: Array, x: Array, y: Array, *, beta: float, alpha: float) -> Array:
    return addmm_reference(bias, x, y, beta=beta, alpha=alpha).astype(x.dtype)


addmm_p = define_primitive("addmm", family=FAMILY, operands=("bias", "x", "y"),
                           params=("beta", "alpha"), infer_meta=_addmm_infer_meta,
                           impl=_addmm_impl)


def addmm(bias: ArrayLike, x: ArrayLike, y: ArrayLike, *, beta: float = 1.0,
          alpha: float = 1.0) -> Array:
    """``beta * bias + alpha * (x @ y)`` for matrices x [m, k], y [k, n] and a
    bias broadcastable to [m, n] (aten.addmm).

    Jointly linear in (bias, x) and in (bias, y). The tangent is
    ``addmm(tb, tx, y) + alpha * mm(x, ty)`` (the bias tangent rides on the
    first product); the transposes are ``beta * sum(ct)`` over the broadcast
    axes for bias, ``alpha * mm(ct, y^T)`` for x and ``alpha * mm(x^T, ct)``
    for y.
    """
    bias, x, y = promote("addmm", {"bias": bias, "x": x, "y": y}, "float")
    return addmm_p.bind(bias, x, y, beta=number_param("addmm", "beta", beta),
                        alpha=number_param("addmm", "alpha", alpha))


register_op(OpDef(name="addmm", family=FAMILY, fn=addmm, primitives=(addmm_p,),
                  reference=addmm_reference, operands=("bias", "x", "y"),
                  linear=(("bias", "x"), ("bias", "y"))))


def _linear_infer_meta(x: Any, w: Any, *b: Any) -> ShapedArray:
    dtype, shape = _product_meta("linear", {"x": x, "w": w}, (None, 2), "float")
    if b:
        same_dtype("linear", {"x": x, "b": b[0]})
        if tuple(b[0].shape) != shape[-1:]:
            raise ValueError(f"{op_name('linear')}: b must have shape ({shape[-1]},) to add "
                             f"to x @ w with shape {shape}; got b with shape "
                             f"{tuple(b[0].shape)}")
    return ShapedArray(shape, dtype)


def linear_reference(x: Array, w: Array, b: Array | None = None) -> Array:
    out = jnp.matmul(x, w, precision=HIGHEST)
    return out if b is None else out + b


def _linear_impl(x: Array, w: Array, *b: Array) -> Array:
    return linear_reference(x, w, *b).astype(x.dtype)


# b is optional: linear_p takes 2 or 3 operands
linear_p = define_primitive("linear", family=FAMILY, operands=("x", "w", "*b"),
                            infer_meta=_linear_infer_meta, impl=_linear_impl)


def linear(x: ArrayLike, w: ArrayLike, b: ArrayLike | None = None) -> Array:
    """``x @ w + b`` with the weight laid out [in, out] (as jnp's ``x @ w``,
    not torch's [out, in]); x is [..., in], b (optional) is [out].

    Jointly linear in (x, b) and in (w, b). The tangent is
    ``linear(tx, w, tb) + linear(x, tw)``; the transposes are
    ``linear(ct, w^T)`` for x, ``mm(x^T, ct)`` (leading axes of x and ct
    flattened) for w and the sum of ct over every axis but the last for b.
    """
    operands = {"x": x, "w": w} if b is None else {"x": x, "w": w, "b": b}
    return linear_p.bind(*promote("linear", operands, "float"))


register_op(OpDef(name="linear", family=FAMILY, fn=linear, primitives=(linear_p,),
                  reference=linear_reference, operands=("x", "w", "b"),
                  linear=(("x", "b"), ("w", "b"))))


# ------------------------------------------------------------------ einsum
def parse_equation(equation: str) -> tuple[list[str], str]:
    """A normalised equation ``"ab,bc->ac"`` as (input terms, output term)."""
    ins, out = equation.split("->")
    return ins.split(","), out


def fresh_letters(used: str, n: int) -> str:
    """``n`` letters that do not occur in ``used``."""
    free = [c for c in string.ascii_letters if c not in used]
    if len(free) < n:
        raise ValueError(f"{op_name('einsum')}: too many distinct indices (at most 52)")
    return "".join(free[:n])


def _einsum_infer_meta(*operands: Any, equation: str) -> ShapedArray:
    ins, out = parse_equation(equation)
    if len(ins) != len(operands):
        raise ValueError(f"{op_name('einsum')}: equation {equation!r} names {len(ins)} "
                         f"operands, got {len(operands)}")
    dtype = same_dtype("einsum", {f"operands[{i}]": a for i, a in enumerate(operands)})
    check_dtype("einsum", "operands", dtype, "numeric")
    sizes = letter_sizes(equation, [a.shape for a in operands])
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise ValueError(f"{op_name('einsum')}: output {out!r} of {equation!r} must name "
                         "distinct indices of the inputs")
    return ShapedArray(tuple(sizes[c] for c in out), dtype,
                       weak_type=all(a.weak_type for a in operands))


def letter_sizes(equation: str, shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """The size of each index letter; ValueError naming the shapes on a clash."""
    ins, _ = parse_equation(equation)
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(ins, shapes)):
        if len(term) != len(shape):
            raise ValueError(f"{op_name('einsum')}: operands[{i}] has shape {tuple(shape)} "
                             f"but {equation!r} gives it {len(term)} indices {term!r}")
        for c, d in zip(term, shape):
            if sizes.setdefault(c, d) != d:
                desc = ", ".join(f"operands[{j}] with shape {tuple(s)}"
                                 for j, s in enumerate(shapes))
                raise ValueError(f"{op_name('einsum')}: index {c!r} of {equation!r} has sizes "
                                 f"{sizes[c]} and {d}: {desc}")
    return sizes


def _einsum_impl(*operands: Array, equation: str) -> Array:
    return jnp.einsum(equation, *operands, precision=HIGHEST,
                      preferred_element_type=operands[0].dtype)


einsum_p = define_primitive("einsum", family=FAMILY, operands=("*operands",),
                            params=("equation",), infer_meta=_einsum_infer_meta,
                            impl=_einsum_impl)


def _normalize_equation(equation: str, shapes: list[tuple[int, ...]]
                        ) -> tuple[list[str], str, str]:
    """Explicit terms without ellipsis: (input terms, output, the letters
    that stand in for the ellipsis axes)."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ValueError(f"{op_name('einsum')}: malformed equation {equation!r}")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"{op_name('einsum')}: equation {equation!r} names {len(ins)} "
                         f"operands, got {len(shapes)}")
    for term in ins + [out]:
        rest = term.replace("...", "", 1)
        if not all(c in string.ascii_letters for c in rest):
            raise ValueError(f"{op_name('einsum')}: bad subscripts {term!r} in {equation!r}")
    ranks = []
    for i, (term, shape) in enumerate(zip(ins, shapes)):
        n = len(term.replace("...", ""))
        e = len(shape) - n if "..." in term else 0
        if e < 0 or ("..." not in term and len(shape) != n):
            raise ValueError(f"{op_name('einsum')}: operands[{i}] has shape {tuple(shape)} "
                             f"but {equation!r} gives it the subscripts {term!r}")
        ranks.append(e)
    ell = fresh_letters(eq, max(ranks, default=0))
    terms = [t.replace("...", ell[len(ell) - e:]) for t, e in zip(ins, ranks)]
    if not arrow:
        counts = "".join(t.replace("...", "") for t in ins)
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
    else:
        out = out.replace("...", ell)
    return terms, out, ell


def einsum(equation: str, *operands: ArrayLike) -> Array:
    """Einstein summation ``jnp.einsum(equation, *operands)``.

    Any equation: explicit (``"ij,jk->ik"``) or implicit (``"ij,jk"``: the
    indices seen once, sorted), repeated indices within an operand
    (diagonals ``"ii->i"``, traces ``"ii"``), ``...`` with numpy broadcasting.
    Multilinear: the tangent is the sum over operands of the einsum with that
    operand's tangent in its place; the transpose for an operand is the einsum
    of the others and the cotangent (times identity matrices for repeated
    indices, broadcast along indices only that operand has).
    """
    if not isinstance(equation, str):
        raise TypeError(f"{op_name('einsum')}: equation must be a string, got {equation!r}")
    if not operands:
        raise ValueError(f"{op_name('einsum')}: needs at least one operand")
    ops = promote("einsum", {f"operands[{i}]": a for i, a in enumerate(operands)}, "numeric")
    terms, out, ell = _normalize_equation(equation, [np.shape(a) for a in ops])
    # ellipsis axes of size 1 broadcast against larger ones: drop them
    ell_sizes: dict[str, int] = {}
    for t, a in zip(terms, ops):
        for c, d in zip(t, np.shape(a)):
            if c in ell:
                ell_sizes[c] = max(ell_sizes.get(c, 1), d)
    for i, (t, a) in enumerate(zip(terms, ops)):
        drop = [j for j, (c, d) in enumerate(zip(t, np.shape(a)))
                if c in ell and d == 1 and ell_sizes[c] > 1]
        if drop:
            ops[i] = reshape(a, tuple(d for j, d in enumerate(np.shape(a)) if j not in drop))
            terms[i] = "".join(c for j, c in enumerate(t) if j not in drop)
    normalized = ",".join(terms) + "->" + out
    letter_sizes(normalized, [np.shape(a) for a in ops])
    if len(set(out)) != len(out) or any(c not in "".join(terms) for c in out):
        raise ValueError(f"{op_name('einsum')}: output subscripts of {equation!r} must be "
                         "distinct indices of the inputs")
    return einsum_p.bind(*ops, equation=normalized)


def _einsum_reference(equation: str, *operands: Array) -> Array:
    return jnp.einsum(equation, *operands, precision=HIGHEST)


# einsum is multilinear, one operand at a time ("*operands": each on its own).
register_op(OpDef(name="einsum", family=FAMILY, fn=einsum, primitives=(einsum_p,),
                  reference=_einsum_reference, operands=("equation", "*operands"),
                  linear=(("*operands",),)))


# ---------------------------------------------------- fused_gemm_epilogue
def _fused_gemm_epilogue_infer_meta(x: Any, y: Any, bias: Any, *, trans_x: bool, trans_y: bool,
                                    activation: str) -> ShapedArray:
    op = "fused_gemm_epilogue"
    dtype = same_dtype(op, {"x": x, "y": y, "bias": bias})
    check_dtype(op, "x", dtype, "float")
    if len(x.shape) < 2 or len(y.shape) < 2:
        raise ValueError(f"{op_name(op)}: x and y must have rank >= 2, got x with shape "
                         f"{tuple(x.shape)} and y with shape {tuple(y.shape)}")
    shape = matmul_shape(op, x.shape, y.shape, trans_x, trans_y)
    if len(bias.shape) < 1 or bias.shape[-1] != shape[-1]:
        raise ValueError(f"{op_name(op)}: bias must have shape ({shape[-1]},) to add to x @ y "
                         f"with shape {shape}; got bias with shape {tuple(bias.shape)}")
    shape = broadcast_shapes(op, {"bias": bias.shape, "x @ y": shape})
    choice_param(op, "activation", activation, ACTIVATIONS)
    return ShapedArray(shape, dtype)


def gelu_tanh(z: Array) -> Array:
    """The tanh approximation of gelu used by the cuBLASLt epilogue."""
    return jax.nn.gelu(z, approximate=True)


def fused_gemm_epilogue_reference(x: Array, y: Array, bias: Array, *, trans_x: bool = False,
                                  trans_y: bool = False, activation: str = "none") -> Array:
    z = jnp.matmul(_swap_last(x, trans_x), _swap_last(y, trans_y), precision=HIGHEST) + bias
    return {"none": lambda v: v, "relu": jax.nn.relu, "gelu": gelu_tanh}[activation](z)


def _fused_gemm_epilogue_impl(x: Array, y: Array, bias: Array, *, trans_x: bool, trans_y: bool,
                              activation: str) -> Array:
    out = fused_gemm_epilogue_reference(x, y, bias, trans_x=trans_x, trans_y=trans_y,
                                        activation=activation)
    return out.astype(x.dtype)


fused_gemm_epilogue_p = define_primitive(
    "fused_gemm_epilogue", family=FAMILY, operands=("x", "y", "bias"),
    params=("trans_x", "trans_y", "activation"), infer_meta=_fused_gemm_epilogue_infer_meta,
    impl=_fused_gemm_epilogue_impl)


def fused_gemm_epilogue(x: ArrayLike, y: ArrayLike, bias: ArrayLike, *, trans_x: bool = False,
                        trans_y: bool = False, activation: str = "none") -> Array:
    """``act(op(x) @ op(y) + bias)`` in one primitive (Paddle's fused_gemm_epilogue).

    x is [..., m, k] (``trans_x``: [..., k, m]), y is [k, n] (``trans_y``:
    [n, k]), bias is [n]; ``activation`` is "none", "relu" or "gelu" (the tanh
    approximation, as the cuBLASLt epilogue). With ``z = op(x) @ op(y) + bias``
    the tangent is ``act'(z) * (tx @ y + x @ ty + tb)`` with relu' = [z > 0]
    and gelu' = 0.5 (1 + tanh u) + 0.5 z (1 - tanh^2 u) c (1 + 3 a z^2),
    u = c (z + a z^3); every factor is a differentiable op, so all orders work.
    """
    op = "fused_gemm_epilogue"
    x, y, bias = promote(op, {"x": x, "y": y, "bias": bias}, "float")
    if np.ndim(y) != 2 or np.ndim(bias) != 1:
        raise ValueError(f"{op_name(op)}: y must be 2-D and bias 1-D; got y with shape "
                         f"{np.shape(y)} and bias with shape {np.shape(bias)}")
    activation = choice_param(op, "activation", activation, ACTIVATIONS)
    return fused_gemm_epilogue_p.bind(x, y, bias, trans_x=bool_param(op, "trans_x", trans_x),
                                      trans_y=bool_param(op, "trans_y", trans_y),
                                      activation=activation)


register_op(OpDef(name="fused_gemm_epilogue", family=FAMILY, fn=fused_gemm_epilogue,
                  primitives=(fused_gemm_epilogue_p,),
                  reference=fused_gemm_epilogue_reference,
                  operands=("x", "y", "bias")))
