"""Reductions over ``axis=None | int | tuple`` with ``keepdims``: sum, mean,
prod, max (alias amax), min (alias amin), var, std, var_mean, logsumexp.
As in jax.numpy, ``axis`` may be given positionally (``sum(x, 0)``) and all
but var_mean take ``where=``, a bool array broadcastable to x's shape that
selects the entries reduced (max and min then need ``initial=``, as in
jax.numpy).

``where=`` adds no formula: the public function masks x with catalog ops
before the op's own primitive (``_masked``): sum, prod and logsumexp
reduce ``where(w, x, identity)`` (0, 1, -inf); max and min the same with
-inf / +inf, then combine with ``initial``; mean divides the masked sum by
the count of selected entries; var and std fill the excluded entries with
the masked mean (so they add nothing to the squares) and rescale the
population moment by ``n / (count - correction)``. Excluded entries thus
get derivative 0 at every order through ``where``'s rules, and a slice
with nothing selected gives jax.numpy's value (0, 1, -inf, ``initial``, or
NaN for mean, var and std) with zero derivatives, never NaN.

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
from jax.sharding import PartitionSpec

from .. import _jax
from .._jax import Primitive, ShapedArray
from ..core.args import as_array, bool_param, number_param
from ..core.meta import check_dtype, normalize_axes, op_name
from ..core.numerics import finite_or_zero
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._fused import log_sum_exp, upcast
from .arithmetic import divide, maximum, minimum, multiply, subtract
from .compare import gt, where as gr_where
from .convert import convert_element_type, promote
from .shape import broadcast_to
from .unary import sqrt

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


def where_arg(op: str, where: Any, x: Any) -> Any:
    """A ``where=`` argument: a bool array that broadcasts to x's shape
    (never beyond it), returned broadcast to it (a catalog broadcast_to)."""
    where = as_array(op, "where", where)
    dtype = jnp.result_type(where)
    if dtype != np.bool_:
        raise TypeError(f"{op_name(op)}: where must be a bool array, got dtype {dtype}")
    shape, wshape = tuple(np.shape(x)), tuple(np.shape(where))
    try:
        fits = np.broadcast_shapes(wshape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{op_name(op)}: where with shape {wshape} does not broadcast to "
                         f"the shape {shape} of x")
    return where if wshape == shape else broadcast_to(where, shape)


def _masked(op: str, x: Any, where: Any, fill: Any) -> Any:
    """x where ``where`` holds, ``fill`` (a number, or an array that
    broadcasts to x) elsewhere: the input of a reduction with ``where=``."""
    fill = np.asarray(fill, jnp.result_type(x)) if isinstance(fill, float) else fill
    return gr_where(where_arg(op, where, x), x, fill)


def _count(w: Any, like: Any, params: dict) -> Any:
    """How many entries ``w`` (bool, x's shape) selects per output element,
    in the dtype of ``like``."""
    return sum_p.bind(convert_element_type(w, dtype=jnp.result_type(like)), **params)


def _safe_divide(total: Any, count: Any) -> tuple[Any, Any]:
    """``(count > 0, total / count)``, the division by 1 where ``count <= 0``
    (so that no derivative there is 0 / 0)."""
    valid = gt(count, 0.0)
    return valid, divide(total, gr_where(valid, count, np.ones((), jnp.result_type(count))))


def _per_count(total: Any, count: Any) -> Any:
    """``total / count``, NaN where ``count <= 0`` (as jax.numpy) with a
    zero derivative there."""
    valid, out = _safe_divide(total, count)
    return gr_where(valid, out, np.full((), np.nan, jnp.result_type(out)))


def extremum_identity(kind: str, dtype: Any) -> Any:
    """The identity of max (``kind="max"``: the lowest value of dtype) or min."""
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        return np.asarray(-np.inf if kind == "max" else np.inf, dtype)
    info = jnp.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)


def widened_integers(x: Any) -> Any:
    """x, an integer x narrower than jax.numpy's default integer converted
    to it (unsigned to the default unsigned): what jnp.sum and jnp.prod
    accumulate and return."""
    dtype = np.dtype(jnp.result_type(x))
    if not jnp.issubdtype(dtype, jnp.integer):
        return x
    wide = np.dtype(jax.dtypes.canonicalize_dtype(
        np.uint64 if jnp.issubdtype(dtype, jnp.unsignedinteger) else np.int64))
    return convert_element_type(x, dtype=wide) if dtype.itemsize < wide.itemsize else x


def _reduction_op(prim: Primitive, kind: str, fill: float, doc: str,
                  widen: bool = False) -> Callable[..., Array]:
    """The public function ``f(x, axis=None, *, keepdims=False, where=None)``
    of a reduction primitive without other params, whose ``where=`` reduces
    x with ``fill`` (the reduction's identity) at the excluded entries;
    ``widen``: narrow integers reduced in the default integer
    (``widened_integers``)."""
    name = prim.name

    def fn(x: ArrayLike, axis: Axis = None, *, keepdims: bool = False,
           where: ArrayLike | None = None) -> Array:
        x, params = reduction_args(name, x, axis, keepdims, kind)
        x = widened_integers(x) if widen else x
        if where is not None:
            x = _masked(name, x, where, fill)
        return prim.bind(x, **params)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _reduction_reference(fn: Callable[..., Array]) -> Callable[..., Array]:
    """The reference ``fn(x, axis=axis, keepdims=keepdims, **kwargs)`` of a
    reduction (a jax.numpy one; ``where=``, ``initial=`` passed on)."""
    def reference(x: ArrayLike, axis: Axis = None, *, keepdims: bool = False,
                  **kwargs: Any) -> Array:
        return fn(x, axis=axis, keepdims=keepdims, **kwargs)
    return reference


def _over_longer_axes(reduce: Callable[..., Array], *, keep_dtype: bool = False
                      ) -> Callable[..., Array]:
    """The lowering of a reduction, ``reduce(x, axes, keepdims=...)``
    (jnp.sum, jnp.max, ...; ``keep_dtype``: in x's dtype, ``dtype=x.dtype``)
    over the reduced axes longer than 1 only; those of size 1 are reshaped
    away, which gives the same values (a reduction over them too took JAX
    0.11.2's XLA 1.4x the time of jnp.kron's gradient on the CPU)."""
    def impl(x: Array, *, axes: tuple[int, ...], keepdims: bool) -> Array:
        longer = tuple(ax for ax in axes if x.shape[ax] != 1)
        dtype = {"dtype": x.dtype} if keep_dtype else {}
        out = reduce(x, longer, keepdims=keepdims, **dtype) if longer else x
        return out.reshape(reduced_shape(x.shape, axes, keepdims))
    return impl


# -------------------------------------------------------------------- sum
_sum_impl = _over_longer_axes(jnp.sum, keep_dtype=True)


sum_p = define_primitive("sum", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("sum", "numeric"), impl=_sum_impl)
sum = _reduction_op(sum_p, "numeric", 0.0, """``sum_{i in axis} x_i`` (over the entries
``where`` selects). Linear; its transpose broadcasts the cotangent back over
the reduced axes. Narrow integers are summed in the default integer, as
jnp.sum does.""", widen=True)  # noqa: A001
register_op(OpDef(name="sum", family=FAMILY, fn=sum, primitives=(sum_p,),
                  reference=_reduction_reference(jnp.sum), operands=("x",), linear=(("x",),)))


# ------------------------------------------------------------------- mean
_mean_impl = _over_longer_axes(jnp.mean, keep_dtype=True)


mean_p = define_primitive("mean", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                          infer_meta=reduction_meta("mean", "float"), impl=_mean_impl)
def mean(x: ArrayLike, axis: Axis = None, *, keepdims: bool = False,
         where: ArrayLike | None = None) -> Array:
    """``sum_{i in axis} x_i / n``, n the number of reduced elements (NaN over
    a size-0 axis, as jax.numpy). With ``where``: the sum of the selected
    entries over their count (NaN where nothing is selected, with
    derivative 0).

    Linear: tangent mean(t); the transpose broadcasts ct / n back over the
    reduced axes.
    """
    x, params = reduction_args("mean", x, axis, keepdims, "float")
    if where is None:
        return mean_p.bind(x, **params)
    w = where_arg("mean", where, x)
    return _per_count(sum_p.bind(gr_where(w, x, np.zeros((), jnp.result_type(x))), **params),
                      _count(w, x, params))
register_op(OpDef(name="mean", family=FAMILY, fn=mean, primitives=(mean_p,),
                  reference=_reduction_reference(jnp.mean), operands=("x",), linear=(("x",),)))


# ------------------------------------------------------------------- prod
_prod_impl = _over_longer_axes(jnp.prod, keep_dtype=True)


prod_p = define_primitive("prod", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                          infer_meta=reduction_meta("prod", "numeric"), impl=_prod_impl)
prod = _reduction_op(prod_p, "numeric", 1.0, """``prod_{i in axis} x_i`` (1 over a size-0 axis;
over the entries ``where`` selects).

d out / d x_i = prod_{j != i} x_j, the product of the others, computed in
blocks of 4 (``rules.reduction.product_of_others``: within a block (a, b, c,
d) the others are (b cd, a cd, ab d, ab c), times the product of the other
blocks) and never as out / x_i: it is finite and exact where x has zeros, at
every derivative order, and 0 (not inf * 0) where another entry is 0 and the
product of the rest overflows. Narrow integers are multiplied in the default
integer, as jnp.prod does.""", widen=True)
register_op(OpDef(name="prod", family=FAMILY, fn=prod, primitives=(prod_p,),
                  reference=_reduction_reference(jnp.prod), operands=("x",)))


# -------------------------------------------------------------------- max
_max_impl = _over_longer_axes(jnp.max)


max_p = define_primitive("max", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("max", "numeric", nonempty=True),
                         impl=_max_impl)
def _extremum(prim: Primitive, combine: Callable[..., Array], x: Any, axis: Axis,
              keepdims: bool, initial: Any, where: Any) -> Array:
    """max or min (``prim``) with jax.numpy's ``initial`` and ``where``:
    the excluded entries become the identity (-inf / +inf, or the integer
    extreme) and the result is ``combine``d (maximum / minimum) with
    ``initial``; over a size-0 axis the result is ``initial``."""
    name = prim.name
    x, params = reduction_args(name, x, axis, keepdims, "numeric")
    if initial is None:
        if where is not None:
            raise ValueError(f"{op_name(name)}: where= needs initial= ({name} has no identity "
                             "to give a slice with nothing selected), as in jax.numpy")
        return prim.bind(x, **params)
    dtype = jnp.result_type(x)
    initial = np.asarray(number_param(name, "initial", initial, allow_inf=True), dtype)
    if reduced_size(np.shape(x), params["axes"]) == 0:
        return broadcast_to(initial, reduced_shape(np.shape(x), **params))
    if where is not None:
        x = _masked(name, x, where, extremum_identity(name, dtype))
    return combine(prim.bind(x, **params), initial)


def max(x: ArrayLike, axis: Axis = None, *, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: ArrayLike | None = None) -> Array:
    """``max_{i in axis} x_i`` (alias ``amax``); a size-0 reduced axis is an
    error unless ``initial`` is given. As jax.numpy: with ``initial`` the
    result is ``maximum(initial, max)``, and ``where`` (which needs
    ``initial``) selects the entries reduced.

    d out / d x_i = [x_i == out] / count, count = sum [x_j == out]: ties share
    the gradient evenly (as Paddle's amax and the core IR); excluded entries
    get 0.
    """
    return _extremum(max_p, maximum, x, axis, keepdims, initial, where)
amax = max
register_op(OpDef(name="max", family=FAMILY, fn=max, primitives=(max_p,),
                  reference=_reduction_reference(jnp.max), operands=("x",), aliases=("amax",)))


# -------------------------------------------------------------------- min
_min_impl = _over_longer_axes(jnp.min)


min_p = define_primitive("min", family=FAMILY, operands=("x",), params=("axes", "keepdims"),
                         infer_meta=reduction_meta("min", "numeric", nonempty=True),
                         impl=_min_impl)
def min(x: ArrayLike, axis: Axis = None, *, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: ArrayLike | None = None) -> Array:
    """``min_{i in axis} x_i`` (alias ``amin``); ``initial`` and ``where`` as
    for ``max``.

    d out / d x_i = [x_i == out] / count: ties share the gradient evenly.
    """
    return _extremum(min_p, minimum, x, axis, keepdims, initial, where)
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


def _first(x: Array, axes: tuple[int, ...]) -> Array:
    """x's entries at index 0 of ``axes`` (kept, of size 1). Where x's type
    shards a reduced axis (Explicit mesh axes), such a slice has no sharding
    type; it is then placed by XLA as on Auto axes (the owners' entries
    broadcast: an all-reduce of the result's size, never a gather of x)."""
    index = tuple(slice(0, 1) if i in axes else slice(None) for i in range(x.ndim))
    spec = _jax.spec_of(x)
    if all(spec[a] is None for a in axes):
        return x[index]
    out = PartitionSpec(*(None if i in axes else s for i, s in enumerate(spec)))
    return jax.sharding.auto_axes(lambda v: v[index], out_sharding=out)(x)


def _moments(x: Array, axes: tuple[int, ...], correction: float, keepdims: bool
             ) -> tuple[Array, Array]:
    """``(var, mean)`` in the accumulation dtype (float32 for 16-bit x; the
    callers cast): ``m = f + mean(x - f)`` (``f`` the slice's first element
    where finite, else 0), exactly the value of a constant slice (where
    mean(x) rounds, and overflows for a float32 slice of 3e38), so that its
    variance is a true 0 for std's derivative guard; then ``sum((x -
    m)**2) / (n - correction)`` (NaN where n <= correction, as jnp.var). Both
    reductions read x itself: no shifted copy of x is written. (A slice
    spanning more than the dtype's range, 3e38 beside -3e38, overflows
    ``x - f``.)"""
    x = upcast(x)
    n = math.prod(x.shape[a] for a in axes)
    m = jnp.mean(x, axes, keepdims=True)          # NaN over an empty slice
    if n:
        first = finite_or_zero(_first(x, axes))
        m = first + jnp.mean(x - first, axes, keepdims=True)
    total = jnp.sum(jnp.square(x - m), axes, keepdims=keepdims)
    var = (total / jnp.asarray(n - correction, total.dtype) if n > correction
           else jnp.full_like(total, jnp.nan))
    return var, (m if keepdims else jnp.squeeze(m, axes))


_MOMENT_PARAMS = ("axes", "correction", "keepdims")


def _var_impl(x: Array, *, axes: tuple[int, ...], correction: float, keepdims: bool) -> Array:
    return _moments(x, axes, correction, keepdims)[0].astype(x.dtype)


var_p = define_primitive("var", family=FAMILY, operands=("x",), params=_MOMENT_PARAMS,
                         infer_meta=_moment_meta("var", 1), impl=_var_impl)


def _masked_moment(prim: Primitive, x: Any, where: Any, params: dict) -> Array:
    """var or std (``prim``) of the entries ``where`` selects, through the
    op's own primitive: the excluded entries are set to the masked mean m
    (so they add nothing to ``sum((x - m)**2)`` and do not move the mean),
    the population moment of that is taken and rescaled by ``n / (count -
    correction)`` (its square root for std). NaN where ``count <=
    correction``, as jax.numpy, with derivative 0 there."""
    axes, keepdims = params["axes"], params["keepdims"]
    dtype = jnp.result_type(x)
    w = where_arg(prim.name, where, x)
    kept = {"axes": axes, "keepdims": True}
    _, m = _safe_divide(sum_p.bind(gr_where(w, x, np.zeros((), dtype)), **kept),
                        _count(w, x, kept))
    moment = prim.bind(gr_where(w, x, m), axes=axes, correction=0.0, keepdims=keepdims)
    denom = subtract(_count(w, x, {"axes": axes, "keepdims": keepdims}), params["correction"])
    valid, ratio = _safe_divide(np.asarray(reduced_size(np.shape(x), axes), dtype), denom)
    ratio = ratio if prim is var_p else sqrt(ratio)
    return gr_where(valid, multiply(moment, ratio), np.full((), np.nan, dtype))


def var(x: ArrayLike, axis: Axis = None, *, correction: float = 1, keepdims: bool = False,
        where: ArrayLike | None = None) -> Array:
    """``sum_{i in axis} (x_i - mean)**2 / (n - correction)`` (the unbiased
    estimate by default; ``correction=0`` the population variance). With
    n <= correction the result is NaN, as in jax.numpy. The default
    differs from ``jnp.var``'s ``correction=0`` on purpose, as torch and
    Paddle's do (README, "Where gradrules differs from jax.numpy").

    d var / d x_i = 2 (x_i - mean) / (n - correction). ``where`` selects
    the entries (n their count; ``_masked_moment``).
    """
    x, params = _moment_args("var", x, axis, correction, keepdims)
    if where is not None:
        return _masked_moment(var_p, x, where, params)
    return var_p.bind(x, **params)


def _var_reference(x: ArrayLike, axis: Axis = None, *, correction: float = 1,
                   keepdims: bool = False, where: ArrayLike | None = None) -> Array:
    return jnp.var(x, axis, keepdims=keepdims, correction=correction, where=where)


register_op(OpDef(name="var", family=FAMILY, fn=var, primitives=(var_p,),
                  reference=_var_reference, operands=("x",)))


def _std_impl(x: Array, *, axes: tuple[int, ...], correction: float, keepdims: bool) -> Array:
    return jnp.sqrt(_moments(x, axes, correction, keepdims)[0]).astype(x.dtype)


std_p = define_primitive("std", family=FAMILY, operands=("x",), params=_MOMENT_PARAMS,
                         infer_meta=_moment_meta("std", 1), impl=_std_impl)


def std(x: ArrayLike, axis: Axis = None, *, correction: float = 1, keepdims: bool = False,
        where: ArrayLike | None = None) -> Array:
    """``sqrt(var(x, axis, correction))``, ``correction=1`` by default as
    ``var`` (``jnp.std``: 0).

    d std / d x_i = (x_i - mean) / ((n - correction) std); where the variance
    is 0 the derivative is 0 (not 0 / 0), and so are all higher derivatives.
    ``where`` as for ``var``.
    """
    x, params = _moment_args("std", x, axis, correction, keepdims)
    if where is not None:
        return _masked_moment(std_p, x, where, params)
    return std_p.bind(x, **params)


def _std_reference(x: ArrayLike, axis: Axis = None, *, correction: float = 1,
                   keepdims: bool = False, where: ArrayLike | None = None) -> Array:
    return jnp.std(x, axis, keepdims=keepdims, correction=correction, where=where)


register_op(OpDef(name="std", family=FAMILY, fn=std, primitives=(std_p,),
                  reference=_std_reference, operands=("x",)))


def _var_mean_impl(x: Array, *, axes: tuple[int, ...], correction: float, keepdims: bool
                   ) -> list[Array]:
    return [v.astype(x.dtype) for v in _moments(x, axes, correction, keepdims)]


var_mean_p = define_primitive("var_mean", family=FAMILY, operands=("x",),
                              params=_MOMENT_PARAMS, infer_meta=_moment_meta("var_mean", 2),
                              impl=_var_mean_impl, multiple_results=True)


def var_mean(x: ArrayLike, axis: Axis = None, *, correction: float = 1,
             keepdims: bool = False) -> tuple[Array, Array]:
    """``(var(x, ...), mean(x, ...))`` in one primitive; the derivatives are
    those of var and mean."""
    x, params = _moment_args("var_mean", x, axis, correction, keepdims)
    v, m = var_mean_p.bind(x, **params)
    return v, m


def _var_mean_reference(x: ArrayLike, axis: Axis = None, *, correction: float = 1,
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
logsumexp = _reduction_op(logsumexp_p, "float", -np.inf, """``log sum_{i in axis} exp(x_i)``,
computed with the maximum subtracted (-inf over a size-0 axis; over the
entries ``where`` selects, -inf where it selects none).

d out / d x_i = exp(x_i - m) / sum_j exp(x_j - m), m the maximum (the
softmax, normalised by the maximum rather than by the rounded output; the
rule shifts by floor(m), whose derivative is zero: any shift cancels). 16-bit
input is computed in float32. A slice that is all -inf gives -inf with
derivative 0 (not NaN), at every order.""")
register_op(OpDef(name="logsumexp", family=FAMILY, fn=logsumexp, primitives=(logsumexp_p,),
                  reference=_reduction_reference(jax.nn.logsumexp), operands=("x",)))
