"""Scans along one axis: cumsum, cumprod, cummax, logcumsumexp, and the
helper ``linear_recurrence`` that the derivatives of cumprod and of
logcumsumexp are made of. cumprod, cummax, logcumsumexp and
linear_recurrence lower to ``blocked_scan`` (blocks of 4, about two combines
per entry).

Every scan primitive takes the params ``axis`` (a non-negative int) and
``reverse`` (scan from the last element to the first) and keeps the shape of
its operand; ``rules.scan.axis_batch`` batches them all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import Primitive, ShapedArray
from ..core.meta import check_dtype, normalize_axis, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._fused import upcast
from .convert import promote
from .reduction import extremum_identity

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "scan"


def check_axis_meta(op: str, shape: tuple[int, ...], axis: int, arg: str = "x") -> None:
    """infer_meta's check of an ``axis`` param: an axis of an array of rank >= 1."""
    if not shape:
        raise ValueError(f"{op_name(op)}: {arg} must have at least one axis, got a scalar")
    if not 0 <= axis < len(shape):
        raise ValueError(f"{op_name(op)}: axis={axis} is out of range for {arg} with shape "
                         f"{tuple(shape)}")


def axis_args(op: str, x: Any, axis: Any, kind: str, arg: str = "x", **flags: Any
              ) -> tuple[Any, int]:
    """Validate a call along one axis: the array ``arg`` (rank >= 1, dtype of
    ``kind``), the axis (normalized) and the bool ``flags``."""
    (x,) = promote(op, {arg: x}, kind)
    check_axis_meta(op, np.shape(x), 0, arg)
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{op_name(op)}: {name} must be a bool, got {value!r}")
    return x, normalize_axis(op, axis, np.ndim(x))


def _scan_meta(op: str, kind: str) -> Callable[..., ShapedArray]:
    """infer_meta of a scan (``_scan_infer_meta`` with the op's name and dtype
    class bound)."""
    return partial(_scan_infer_meta, op, kind)


def _scan_infer_meta(op: str, kind: str, x: Any, *, axis: int, reverse: bool, **params: Any
                     ) -> ShapedArray:
    """x of dtype class ``kind`` with an ``axis``; the result is shaped like x."""
    check_dtype(op, "x", x.dtype, kind)
    check_axis_meta(op, x.shape, axis)
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)


def _scan_call(prim: Primitive, x: ArrayLike, axis: int, reverse: bool) -> Array:
    """Validate a call of the scan ``prim`` (numeric x, an axis, the bool
    ``reverse``) and bind it."""
    x, axis = axis_args(prim.name, x, axis, "numeric", reverse=reverse)
    return prim.bind(x, axis=axis, reverse=reverse)


def _scan_reference(fn: Callable[..., Array], x: ArrayLike, *, axis: int,
                    reverse: bool = False) -> Array:
    """The reference: ``fn`` (lax.cumsum or lax.cummax) itself, on a
    non-negative axis."""
    return fn(jnp.asarray(x), axis % np.ndim(x), reverse)


SCAN_BLOCK = 4
"""The block length of ``blocked_scan`` where none of ``BLOCK_DIVISORS``
divides the axis."""

BLOCK_DIVISORS = (4, 5, 3)
"""Block lengths ``blocked_scan`` takes, the first that divides the axis:
no padded copy (an axis of 1615 is 323 blocks of 5; padded to 1616, cummax
took 1.40x the bytes of lax.cummax and +1.3 MiB temp, with blocks of 5
0.96x and 6.9 MiB less). 6 and 7 were tried too: blocks of 7 at the third
level of a 1448 axis (91 block totals) took cumprod's forward from 0.74x
lax.cumprod's bytes to 0.95x, logcumsumexp's from 1.84x to 2.60x."""

Elems = tuple[Array, ...]


def _running(combine: Callable[[Elems, Elems], Elems], cols: list[Elems]) -> list[Elems]:
    """``[c_0, c_0 . c_1, (c_0 . c_1) . c_2, ...]``: the running combination
    of ``cols`` in order, one combine a step."""
    out = [cols[0]]
    for col in cols[1:]:
        out.append(combine(out[-1], col))
    return out


def blocked_scan(combine: Callable[[Elems, Elems], Elems], elems: Elems,
                 identity: tuple[Any, ...], axis: int, *, reverse: bool = False,
                 exclusive: bool = False) -> Elems:
    """The scan ``out_i = x_0 . x_1 . ... . x_i`` of an associative ``combine``
    (on tuples of arrays, ``identity`` its neutral element) along ``axis``:
    ``x_i . ... . x_{n-1}`` in that order with ``reverse``; with
    ``exclusive``, without x_i itself (the identity at the first entry).

    In blocks of k entries, k the first of ``BLOCK_DIVISORS`` that divides
    the axis, else ``SCAN_BLOCK`` with the axis padded with the identity to a
    multiple of it: the axis is split into ``[n / k, k]``; within each block
    the running combination takes k - 1 sequential steps; the exclusive scan
    of the block totals (recursively) gives what comes before each block,
    which each entry is combined with. An axis of at most SCAN_BLOCK entries
    is one block. About two combines per entry and log_k(n) passes over
    memory, where lax.associative_scan takes two combines too but 2 log_2(n)
    strided passes, and lax.cumprod on the CPU a reduce-window of 16
    products per entry.
    """
    if reverse:
        flipped = blocked_scan(combine, tuple(lax.rev(e, (axis,)) for e in elems), identity,
                               axis, exclusive=exclusive)
        return tuple(lax.rev(e, (axis,)) for e in flipped)
    shape = elems[0].shape
    n = shape[axis]
    if n == 0:
        return elems
    if n <= SCAN_BLOCK:
        cols = [tuple(lax.slice_in_dim(e, j, j + 1, axis=axis) for e in elems) for j in range(n)]
        running = _running(combine, cols)
        if exclusive:
            running = [tuple(lax.full_like(c, i) for c, i in zip(cols[0], identity)),
                       *running[:-1]]
        return tuple(lax.concatenate(list(parts), axis) for parts in zip(*running))
    size = next((k for k in BLOCK_DIVISORS if n % k == 0), SCAN_BLOCK)
    m = -(-n // size)
    pad = [(0, 0, 0)] * len(shape)
    pad[axis] = (0, m * size - n, 0)
    split = tuple(shape[:axis]) + (m, size) + tuple(shape[axis + 1:])
    blocks = [lax.pad(e, np.asarray(i, e.dtype), pad).reshape(split)
              for e, i in zip(elems, identity)]
    running = _running(combine, [tuple(lax.index_in_dim(b, j, axis + 1, keepdims=False)
                                       for b in blocks) for j in range(size)])
    before = blocked_scan(combine, running[-1], identity, axis, exclusive=True)
    out = ([before, *(combine(before, r) for r in running[:-1])] if exclusive
           else [combine(before, r) for r in running])
    padded = tuple(shape[:axis]) + (m * size,) + tuple(shape[axis + 1:])
    return tuple(lax.slice_in_dim(jnp.stack(parts, axis + 1).reshape(padded), 0, n, axis=axis)
                 for parts in zip(*out))


def _multiply_combine(first: Elems, then: Elems) -> Elems:
    return (first[0] * then[0],)


# ----------------------------------------------------------------- cumsum
cumsum_p = define_primitive("cumsum", family=FAMILY, operands=("x",), params=("axis", "reverse"),
                            infer_meta=_scan_meta("cumsum", "numeric"), impl=lax.cumsum)


def cumsum(x: ArrayLike, *, axis: int, reverse: bool = False) -> Array:
    """Running sum along ``axis``: ``out_i = sum_{j <= i} x_j`` (``j >= i``
    with ``reverse``).

    Linear: tangent cumsum(t); the transpose is the cumsum in the other
    direction, cumsum(ct, reverse=not reverse).
    """
    return _scan_call(cumsum_p, x, axis, reverse)


register_op(OpDef(name="cumsum", family=FAMILY, fn=cumsum, primitives=(cumsum_p,),
                  reference=partial(_scan_reference, lax.cumsum), operands=("x",),
                  linear=(("x",),)))


# ---------------------------------------------------------------- cumprod
def _cumprod_impl(x: Array, *, axis: int, reverse: bool, exclusive: bool) -> Array:
    """A ``blocked_scan`` of products (lax.cumprod lowers to a reduce-window
    on the CPU, 16 products per entry: 3x slower at n = 1448)."""
    (y,) = blocked_scan(_multiply_combine, (x,), (1,), axis, reverse=reverse,
                        exclusive=exclusive)
    return y


cumprod_p = define_primitive("cumprod", family=FAMILY, operands=("x",),
                             params=("axis", "reverse", "exclusive"),
                             infer_meta=_scan_meta("cumprod", "numeric"), impl=_cumprod_impl)


def cumprod(x: ArrayLike, *, axis: int, reverse: bool = False, exclusive: bool = False
            ) -> Array:
    """Running product along ``axis``: ``out_i = prod_{j <= i} x_j``
    (``j >= i`` with ``reverse``; ``j < i`` / ``j > i`` with ``exclusive``,
    so the first element is 1).

    Derivative: with E the exclusive product, the tangent of E is the linear
    recurrence ``dE = linear_recurrence(x, t * E)`` and that of the inclusive
    product x * E is ``t * E + x * dE``. No division: exact and finite where x
    has zeros, at every order.
    """
    x, axis = axis_args("cumprod", x, axis, "numeric", reverse=reverse, exclusive=exclusive)
    return cumprod_p.bind(x, axis=axis, reverse=reverse, exclusive=exclusive)


def _cumprod_reference(x: ArrayLike, *, axis: int, reverse: bool = False,
                       exclusive: bool = False) -> Array:
    """jnp.cumprod, shifted by concatenating ones for ``exclusive``."""
    x = jnp.asarray(x)
    y = jnp.flip(x, axis) if reverse else x
    if exclusive and y.shape[axis]:
        ones = jnp.ones_like(lax.slice_in_dim(y, 0, 1, axis=axis))
        y = jnp.concatenate([ones, lax.slice_in_dim(y, 0, y.shape[axis] - 1, axis=axis)], axis)
    y = jnp.cumprod(y, axis)
    return jnp.flip(y, axis) if reverse else y


register_op(OpDef(name="cumprod", family=FAMILY, fn=cumprod, primitives=(cumprod_p,),
                  reference=_cumprod_reference, operands=("x",)))


# ----------------------------------------------------------------- cummax
def _max_combine(first: Elems, then: Elems) -> Elems:
    return (lax.max(first[0], then[0]),)


def _cummax_impl(x: Array, *, axis: int, reverse: bool) -> Array:
    """``blocked_scan`` of ``max`` (NaN propagates, as in lax.cummax), the
    dtype's lowest value its identity: 0.29x the time of lax.cummax's CPU
    lowering (a reduce-window of 16 entries per block) at [646, 1615]."""
    (out,) = blocked_scan(_max_combine, (x,), (extremum_identity("max", x.dtype),), axis,
                          reverse=reverse)
    return out


cummax_p = define_primitive("cummax", family=FAMILY, operands=("x",), params=("axis", "reverse"),
                            infer_meta=_scan_meta("cummax", "numeric"), impl=_cummax_impl)


def cummax(x: ArrayLike, *, axis: int, reverse: bool = False) -> Array:
    """Running maximum along ``axis``: ``out_i = max_{j <= i} x_j`` (``j >= i``
    with ``reverse``).

    The tangent of out_i is the tangent of x at the running argmax, the last
    position (in scan order) whose value equals out_i: ties route the whole
    gradient to the latest of the tied elements, as torch.cummax's indices.
    """
    return _scan_call(cummax_p, x, axis, reverse)


register_op(OpDef(name="cummax", family=FAMILY, fn=cummax, primitives=(cummax_p,),
                  reference=partial(_scan_reference, lax.cummax), operands=("x",)))


# ----------------------------------------------------------- logcumsumexp
def _logaddexp_combine(first: Elems, then: Elems) -> Elems:
    return (jnp.logaddexp(first[0], then[0]),)


def _logcumsumexp_impl(x: Array, *, axis: int, reverse: bool) -> Array:
    """The ``blocked_scan`` of logaddexp (identity -inf), in float32 for
    16-bit input (cast at the end): lax.cumlogsumexp lowers to a reduce_window
    on the CPU, O(n) work per element (20x slower at n = 1448), and
    lax.associative_scan makes 2 log2(n) strided passes (3x the bytes and
    2.7x the FLOPs of the blocked scan at n = 1448)."""
    (out,) = blocked_scan(_logaddexp_combine, (upcast(x),), (-np.inf,), axis, reverse=reverse)
    return out.astype(x.dtype)


logcumsumexp_p = define_primitive("logcumsumexp", family=FAMILY, operands=("x",),
                                  params=("axis", "reverse"),
                                  infer_meta=_scan_meta("logcumsumexp", "float"),
                                  impl=_logcumsumexp_impl)


def logcumsumexp(x: ArrayLike, *, axis: int, reverse: bool = False) -> Array:
    """Running log-sum-exp along ``axis``: ``out_i = log sum_{j <= i} exp(x_j)``
    (``j >= i`` with ``reverse``; torch.logcumsumexp, lax.cumlogsumexp),
    computed without overflow; -inf while every entry so far is -inf.

    Derivative: ``t_out_i = sum_{j <= i} exp(x_j - out_i) t_j``, a running
    softmax-weighted sum. It is the recurrence ``u_i = a_i u_{i-1} + w_i t_i``
    with ``w_i = exp(x_i - out_i)`` and ``a_i = exp(out_{i-1} - out_i) = 1 -
    w_i``, both in [0, 1]: ``linear_recurrence`` (linear in the tangent, so it
    transposes to the reversed recurrence) with no exp of a large number and no
    division, finite for entries of -inf or +-1e4. The weights are those of
    ``z = x - max(x)`` (the same, shift-invariant), in float32 for 16-bit
    input, so that no rounded out enters them (a float32 row of 3e38, a
    bfloat16 row of 1e4: weights 1/n). Where out_i is -inf (all -inf so far)
    the weights are 0, as ``logsumexp``'s over an all -inf row. The value is
    computed in float32 for 16-bit input too.
    """
    x, axis = axis_args("logcumsumexp", x, axis, "float", reverse=reverse)
    return logcumsumexp_p.bind(x, axis=axis, reverse=reverse)


register_op(OpDef(name="logcumsumexp", family=FAMILY, fn=logcumsumexp,
                  primitives=(logcumsumexp_p,),
                  reference=partial(_scan_reference, lax.cumlogsumexp), operands=("x",)))


# ------------------------------------------------------ linear_recurrence
def _linear_recurrence_meta(a: Any, b: Any, *, axis: int, reverse: bool) -> ShapedArray:
    op = "linear_recurrence"
    same_dtype(op, {"a": a, "b": b})
    check_dtype(op, "a", a.dtype, "float")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{op_name(op)}: a and b must have one shape, got a with shape "
                         f"{tuple(a.shape)} and b with shape {tuple(b.shape)}")
    check_axis_meta(op, b.shape, axis, "b")
    return ShapedArray(b.shape, b.dtype, weak_type=a.weak_type and b.weak_type)


def _linear_recurrence_combine(first: tuple[Array, Array], then: tuple[Array, Array]
                               ) -> tuple[Array, Array]:
    """Compose the affine maps ``s -> a s + b``: ``first``, then ``then``."""
    (a1, b1), (a2, b2) = first, then
    return a1 * a2, a2 * b1 + b2


def _linear_recurrence_impl(a: Array, b: Array, *, axis: int, reverse: bool) -> Array:
    """The exclusive ``blocked_scan`` of the affine maps ``s -> a s + b``."""
    _, s = blocked_scan(_linear_recurrence_combine, (a, b), (1, 0), axis, reverse=reverse,
                        exclusive=True)
    return s


linear_recurrence_p = define_primitive(
    "linear_recurrence", family=FAMILY, operands=("a", "b"), params=("axis", "reverse"),
    infer_meta=_linear_recurrence_meta, impl=_linear_recurrence_impl)


def linear_recurrence(a: ArrayLike, b: ArrayLike, *, axis: int, reverse: bool = False
                      ) -> Array:
    """The exclusive first-order linear recurrence along ``axis``:

        s_0 = 0,  s_i = a_{i-1} s_{i-1} + b_{i-1},
        i.e. s_i = sum_{j < i} b_j prod_{j < k < i} a_k,

    and with ``reverse`` the mirror image, s_i = sum_{j > i} b_j
    prod_{i < k < j} a_k (the coefficients strictly between j and i). The
    helper the derivatives of cumprod are made of.

    Linear in b, and the two directions are each other's transpose:
    transpose = linear_recurrence(a, ct, reverse=not reverse). In a the
    tangent is ``linear_recurrence(a, t_b + t_a * s)``, so every derivative
    stays in this family.
    """
    a, b = promote("linear_recurrence", {"a": a, "b": b}, "float")
    b, axis = axis_args("linear_recurrence", b, axis, "float", "b", reverse=reverse)
    return linear_recurrence_p.bind(a, b, axis=axis, reverse=reverse)


def _linear_recurrence_reference(a: ArrayLike, b: ArrayLike, *, axis: int,
                                 reverse: bool = False) -> Array:
    """The recurrence as a lax.scan over the axis."""
    a, b = jnp.moveaxis(jnp.asarray(a), axis, 0), jnp.moveaxis(jnp.asarray(b), axis, 0)

    def step(s: Array, ab: tuple[Array, Array]) -> tuple[Array, Array]:
        return ab[0] * s + ab[1], s
    _, out = lax.scan(step, jnp.zeros(b.shape[1:], b.dtype), (a, b), reverse=reverse)
    return jnp.moveaxis(out, 0, axis)


register_op(OpDef(name="linear_recurrence", family=FAMILY, fn=linear_recurrence,
                  primitives=(linear_recurrence_p,),
                  reference=_linear_recurrence_reference, operands=("a", "b"),
                  linear=(("b",),)))
