"""Reductions over ``axis=None | int | tuple`` with ``keepdims``: sum, mean,
prod, max (alias amax), min (alias amin), var, std, var_mean, logsumexp.

``sum`` lives here from the start: the transposes of every broadcasting op
reduce with it. Every reduction primitive takes the params ``axes`` (a sorted
tuple of non-negative axes) and ``keepdims``, shares ``reduction_meta`` and is
batched by ``rules.reduction.reduction_batch``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import Primitive, ShapedArray
from ..core.args import bool_param, number_param
from ..core.meta import check_dtype, normalize_axes, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._fused import log_sum_exp, upcast
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
Axis = int | Sequence[int] | None
FAMILY = "reduction"


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
                  ) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduced_size(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """How many elements each output element reduces over."""
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def reduction_meta(op: str, kind: str, *, dtype_param: str | None = None,
                   nonempty: bool = False) -> Callable[..., ShapedArray]:
    """infer_meta of a reduction over ``axes`` with ``keepdims``
    (``reduction_infer_meta`` with these arguments bound).

    The result has x's dtype, or the one the param named ``dtype_param`` gives
    (argmax's ``index_dtype``); ``nonempty`` rejects a size-0 reduced axis
    (reductions without an identity: max, min, argmax). Other params of the
    primitive are accepted and ignored.
    """
    return partial(reduction_infer_meta, op, kind, dtype_param, nonempty)


def reduction_infer_meta(op: str, kind: str, dtype_param: str | None, nonempty: bool, x: Any, *,
                         axes: tuple[int, ...], keepdims: bool, **params: Any) -> ShapedArray:
    """x of dtype class ``kind`` reduced over ``axes`` (see ``reduction_meta``)."""
    check_dtype(op, "x", x.dtype, kind)
    normalize_axes(op, axes, len(x.shape))
    if nonempty and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op_name(op)}: cannot reduce x with shape {tuple(x.shape)} over "
                         f"a size-0 axis (axes {axes}): the reduction has no identity")
    dtype = None if dtype_param is None else params[dtype_param]
    return ShapedArray(reduced_shape(x.shape, axes, keepdims),
                       x.dtype if dtype is None else np.dtype(dtype),
                       weak_type=x.weak_type and dtype is None)


def reduction_args(op: str, x: Any, axis: Axis, keepdims: bool, kind: str) -> tuple[Any, dict]:
    """Validate a reduction call; returns the array and the primitive params."""
    (x,) = promote(op, {"x": x}, kind)
    keepdims = bool_param(op, "keepdims", keepdims)
    if axis is not None and not isinstance(axis, (int, np.integer, tuple, list)):
        raise TypeError(f"gradrules.{op}: axis must be None, an int or a tuple of ints, "
                        f"got {axis!r}")
    return x, {"axes": normalize_axes(op, axis, np.ndim(x)), "keepdims": keepdims}


def _reduction_op(prim: Primitive, kind: str, doc: str) -> Callable[..., Array]:
    """The public function ``f(x, *, axis=None, keepdims=False)`` of a
    reduction primitive without other params."""
    name = prim.name

    def fn(x: ArrayLike, *, axis: Axis = None, keepdims: bool = False) -> Array:
        x, params = reduction_args(name, x, axis, keepdims, kind)
        return prim.bind(x, **params)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _reduction_reference(fn: Callable[..., Array]) -> Callable[..., Array]:
    """The reference ``fn(x, axis=axis, keepdims=keepdims)`` of a reduction
    (a jax.numpy one)."""
    def reference(x: ArrayLike, *, axis: Axis = None, keepdims: bool = False) -> Array:
        return fn(x, axis=axis, keepdims=keepdims)
    return reference


# -------------------------------------------------------------------- sum
def _sum_impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
    return jnp.sum(x, axes, dtype=x.dtype, keepdims=keepdims)


sum_p = define_primitive("sum", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("sum", "numeric"), impl=_sum_impl)
sum = _reduction_op(sum_p, "numeric", """``sum_{i in axis} x_i``. Linear; its transpose
broadcasts the cotangent back over the reduced axes.""")  # noqa: A001
register_op(OpDef(name="sum", family=FAMILY, fn=sum, primitives=(sum_p,),
                  reference=_reduction_reference(jnp.sum), operands=("x",), linear=(("x",),)))


# ------------------------------------------------------------------- mean
def _mean_impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
    return jnp.mean(x, axes, dtype=x.dtype, keepdims=keepdims)


mean_p = define_primitive("mean", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                          infer_meta=reduction_meta("mean", "float"), impl=_mean_impl)
mean = _reduction_op(mean_p, "float", """``sum_{i in axis} x_i / n``, n the number of
reduced elements (NaN over a size-0 axis, as jax.numpy).

Linear: tangent mean(t); the transpose broadcasts ct / n back over the
reduced axes.""")
register_op(OpDef(name="mean", family=FAMILY, fn=mean, primitives=(mean_p,),
                  reference=_reduction_reference(jnp.mean), operands=("x",), linear=(("x",),)))


# ------------------------------------------------------------------- prod
def _prod_impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
    return jnp.prod(x, axes, dtype=x.dtype, keepdims=keepdims)


prod_p = define_primitive("prod", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                          infer_meta=reduction_meta("prod", "numeric"), impl=_prod_impl)
prod = _reduction_op(prod_p, "numeric", """``prod_{i in axis} x_i`` (1 over a size-0 axis).

d out / d x_i = prod_{j != i} x_j, the product of the others, computed as the
product of exclusive prefix and suffix products (``cumprod(exclusive=True)``)
and never as out / x_i: it is finite and exact where x has zeros, at every
derivative order.""")
register_op(OpDef(name="prod", family=FAMILY, fn=prod, primitives=(prod_p,),
                  reference=_reduction_reference(jnp.prod), operands=("x",)))


# -------------------------------------------------------------------- max
def _max_impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
    return jnp.max(x, axes, keepdims=keepdims)


max_p = define_primitive("max", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("max", "numeric", nonempty=True),
                         impl=_max_impl)
max = _reduction_op(max_p, "numeric", """``max_{i in axis} x_i`` (alias ``amax``); a size-0
reduced axis is an error.

d out / d x_i = [x_i == out] / count, count = sum [x_j == out]: ties share the
gradient evenly (as Paddle's amax and the core IR).""")
amax = max
register_op(OpDef(name="max", family=FAMILY, fn=max, primitives=(max_p,),
                  reference=_reduction_reference(jnp.max), operands=("x",), aliases=("amax",)))


# -------------------------------------------------------------------- min
def _min_impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
    return jnp.min(x, axes, keepdims=keepdims)


min_p = define_primitive("min", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("min", "numeric", nonempty=True),
                         impl=_min_impl)
min = _reduction_op(min_p, "numeric", """``min_{i in axis} x_i`` (alias ``amin``); a size-0
reduced axis is an error.

d out / d x_i = [x_i == out] / count: ties share the gradient evenly.""")
amin = min
register_op(OpDef(name="min", family=FAMILY, fn=min, primitives=(min_p,),
                  reference=_reduction_reference(jnp.min), operands=("x",), aliases=("amin",)))


# ------------------------------------------------------ var / std / var_mean
def correction_param(op: str, correction: Any) -> float:
    """Validate ``correction`` (the ddof): a finite number >= 0."""
    return number_param(op, "correction", correction, lo=0.0)


def _moment_meta(op: str, outputs: int) -> Callable[..., Any]:
    """infer_meta of a moment (``_moment_infer_meta`` with the op's name and
    number of results bound)."""
    return partial(_moment_infer_meta, op, outputs)


def _moment_infer_meta(op: str, outputs: int, x: Any, *, axes: tuple[int, ...],
                       correction: float, keepdims: bool) -> Any:
    """``outputs`` results of the reduced shape (a float reduction's)."""
    out = reduction_infer_meta(op, "float", None, False, x, axes=axes, keepdims=keepdims)
    return out if outputs == 1 else (out,) * outputs


def _moment_args(op: str, x: Any, axis: Axis, correction: Any, keepdims: bool
                 ) -> tuple[Any, dict]:
    x, params = reduction_args(op, x, axis, keepdims, "float")
    return x, {**params, "correction": correction_param(op, correction)}


def _moments(x: Array, axes: tuple[int, ...], correction: float, keepdims: bool
             ) -> tuple[Array, Array]:
    """``(var, mean)``: ``m = first + mean(x - first)`` (``first`` the slice's
    first element), exactly the value of a constant slice (where mean(x)
    rounds), so that its variance is a true 0 for std's derivative guard;
    then ``sum((x - m)**2) / (n - correction)`` (NaN where n <= correction,
    as jnp.var). Both reductions read x itself: no shifted copy of x is
    written."""
    n = math.prod(x.shape[a] for a in axes)
    m = jnp.mean(x, axes, keepdims=True)          # NaN over an empty slice
    if n:
        first = x[tuple(slice(0, 1) if i in axes else slice(None) for i in range(x.ndim))]
        m = first + jnp.mean(x - first, axes, keepdims=True)
    total = jnp.sum(jnp.square(x - m), axes, keepdims=keepdims)
    var = (total / jnp.asarray(n - correction, total.dtype) if n > correction
           else jnp.full_like(total, jnp.nan))
    return var, (m if keepdims else jnp.squeeze(m, axes))


_MOMENT_PARAMS = ("axes", "correction", "keepdims")


def _var_impl(x: Array, *, axes: tuple[int, ...], correction: float, keepdims: bool) -> Array:
    return _moments(x, axes, correction, keepdims)[0]


var_p = define_primitive("var", family=FAMILY, operands=("x",), params=_MOMENT_PARAMS,
                         infer_meta=_moment_meta("var", 1), impl=_var_impl)


def var(x: ArrayLike, *, axis: Axis = None, correction: float = 1,
        keepdims: bool = False) -> Array:
    """``sum_{i in axis} (x_i - mean)**2 / (n - correction)`` (the unbiased
    estimate by default; ``correction=0`` the population variance). With
    n <= correction the result is NaN, as in jax.numpy. The default
    differs from ``jnp.var``'s ``correction=0`` on purpose, as torch and
    Paddle's do (README, "Where gradrules differs from jax.numpy").

    d var / d x_i = 2 (x_i - mean) / (n - correction).
    """
    x, params = _moment_args("var", x, axis, correction, keepdims)
    return var_p.bind(x, **params)


def _var_reference(x: ArrayLike, *, axis: Axis = None, correction: float = 1,
                   keepdims: bool = False) -> Array:
    return jnp.var(x, axis, keepdims=keepdims, correction=correction)


register_op(OpDef(name="var", family=FAMILY, fn=var, primitives=(var_p,),
                  reference=_var_reference, operands=("x",)))


def _std_impl(x: Array, *, axes: tuple[int, ...], correction: float, keepdims: bool) -> Array:
    return jnp.sqrt(_var_impl(x, axes=axes, correction=correction, keepdims=keepdims))


std_p = define_primitive("std", family=FAMILY, operands=("x",), params=_MOMENT_PARAMS,
                         infer_meta=_moment_meta("std", 1), impl=_std_impl)


def std(x: ArrayLike, *, axis: Axis = None, correction: float = 1,
        keepdims: bool = False) -> Array:
    """``sqrt(var(x, axis, correction))``, ``correction=1`` by default as
    ``var`` (``jnp.std``: 0).

    d std / d x_i = (x_i - mean) / ((n - correction) std); where the variance
    is 0 the derivative is 0 (not 0 / 0), and so are all higher derivatives.
    """
    x, params = _moment_args("std", x, axis, correction, keepdims)
    return std_p.bind(x, **params)


def _std_reference(x: ArrayLike, *, axis: Axis = None, correction: float = 1,
                   keepdims: bool = False) -> Array:
    return jnp.std(x, axis, keepdims=keepdims, correction=correction)


register_op(OpDef(name="std", family=FAMILY, fn=std, primitives=(std_p,),
                  reference=_std_reference, operands=("x",)))


def _var_mean_impl(x: Array, *, axes: tuple[int, ...], correction: float, keepdims: bool
                   ) -> list[Array]:
    return list(_moments(x, axes, correction, keepdims))


var_mean_p = define_primitive("var_mean", family=FAMILY, operands=("x",),
                              params=_MOMENT_PARAMS, infer_meta=_moment_meta("var_mean", 2),
                              impl=_var_mean_impl, multiple_results=True)


def var_mean(x: ArrayLike, *, axis: Axis = None, correction: float = 1,
             keepdims: bool = False) -> tuple[Array, Array]:
    """``(var(x, ...), mean(x, ...))`` in one primitive; the derivatives are
    those of var and mean."""
    x, params = _moment_args("var_mean", x, axis, correction, keepdims)
    v, m = var_mean_p.bind(x, **params)
    return v, m


def _var_mean_reference(x: ArrayLike, *, axis: Axis = None, correction: float = 1,
                        keepdims: bool = False) -> tuple[Array, Array]:
    return (_var_reference(x, axis=axis, correction=correction, keepdims=keepdims),
            jnp.mean(x, axis, keepdims=keepdims))


register_op(OpDef(name="var_mean", family=FAMILY, fn=var_mean, primitives=(var_mean_p,),
                  reference=_var_mean_reference, operands=("x",)))


# -------------------------------------------------------------- logsumexp
def _logsumexp_impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
    """The library's one stable log-sum-exp (``_fused.log_sum_exp``), in
    float32 for 16-bit input, -inf where every entry is -inf or the reduced
    axes are empty."""
    out = log_sum_exp(upcast(x), axes, empty=-jnp.inf).astype(x.dtype)
    return out if keepdims else jnp.squeeze(out, axes)


logsumexp_p = define_primitive("logsumexp", family=FAMILY, operands=("x",),
                               params=("axes", "keepdims"),
                               infer_meta=reduction_meta("logsumexp", "float"),
                               impl=_logsumexp_impl)
logsumexp = _reduction_op(logsumexp_p, "float", """``log sum_{i in axis} exp(x_i)``,
computed with the maximum subtracted (-inf over a size-0 axis).

d out / d x_i = exp(x_i - m) / sum_j exp(x_j - m), m the maximum (the
softmax, normalised by the maximum rather than by the rounded output). 16-bit
input is computed in float32. A slice that is all -inf gives -inf with
derivative 0 (not NaN), at every order.""")
register_op(OpDef(name="logsumexp", family=FAMILY, fn=logsumexp, primitives=(logsumexp_p,),
                  reference=_reduction_reference(jax.nn.logsumexp), operands=("x",)))
