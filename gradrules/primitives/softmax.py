"""Primitives of the softmax family: softmax and log_softmax along any axis,
each fused as three primitives (DESIGN.md): the forward, the tangent map
(``*_jvp``) and the backward (``*_vjp``).

As jax.nn's, both take ``axis`` positionally, as an int or a tuple of axes
(or None: all of them; several axes are moved to the end and merged into
one, with catalog transposes and reshapes), and ``where=``, a bool array
broadcastable to x that selects the entries of each row: the excluded
entries enter as ``-inf`` (``where(w, x, -inf)``, a catalog where, before
the same primitives), so softmax is 0 there and log_softmax ``-inf``, with
derivative 0 at every order; a row with nothing selected is one of all
``-inf`` (below).

Both work in float32 for 16-bit input and return the input's dtype. A row
whose entries are all ``-inf`` has no distribution: softmax gives 0 there and
log_softmax ``-inf``, with finite derivatives (0 for softmax, the tangent
itself for log_softmax), in every mode.

The tangent maps and backwards are written once, in gradrules ops
(``softmax_tangent``, ``log_softmax_tangent``, ``log_softmax_cotangent``):
that composition is the function their JVP rules differentiate and, but
for log_softmax's backward, their XLA lowering. log_softmax's tangent map
and backward take the forward's input and output, ``(x, logp)``: the
tangent map reads ``logp``, and the backward is lowered from ``x``
(``_log_softmax_vjp_xla``), so that in a gradient XLA computes
``exp(x - m)`` once for the forward and the backward, as for jax.nn's; its
tangent along x, which a Hessian-vector product takes, is a fourth
primitive, ``log_softmax_vjp_jvp``, lowered from ``x`` the same way (XLA
only), whose rules differentiate that of ``log_softmax_cotangent``.
The forwards are lowered from plain jax.numpy, normalised by the row
maximum (``_fused.softmax_rows``, ``_fused.log_softmax_rows``), so that no
rounded log-sum-exp decides the result (a float32 row of 3e38). Each of the six
primitives also has a Pallas kernel over the last axis
(``pallas/softmax.py``); where one may run, the public functions move
another axis to the end and back. On a mesh the forward is bound inside
``jax.shard_map`` over the other dims (``primitives/_sharding``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import aval_of
from ..core.args import block_sizes_param, float_array
from ..core.config import config
from ..core.kernels import implementation
from ..core.meta import normalize_axes, normalize_axis
from ..core.numerics import acc_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..pallas import softmax as kernels
from ..pallas.softmax import BlockSizes
from ._compose import cast
from ._fused import log_softmax_rows, matching_meta, softmax_parts, softmax_rows, upcast
from ._sharding import row_labels, shard_map_bind
from .arithmetic import add, multiply, subtract
from .compare import where as gr_where
from .reduction import sum as gr_sum
from .reduction import where_arg
from .shape import moveaxis, reshape, transpose
from .unary import exp, neg

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "softmax"


# the public function's block_sizes argument: None or a valid BlockSizes
_blocks = partial(block_sizes_param, cls=BlockSizes,
                  public_name="gradrules.pallas.softmax.BlockSizes")


def _kernel_may_run(x: Any) -> bool:
    """Whether a Pallas kernel may lower this call: chosen explicitly, or
    ``"auto"`` on a GPU, for a dtype the kernels take."""
    kernel = config.kernel
    chosen = kernel in ("pallas", "interpret") or (kernel == "auto"
                                                     and jax.default_backend() == "gpu")
    return chosen and jnp.result_type(x) in kernels.DTYPES


def _bind_rows(prim: Any, x: Any, *, axis: int, moved: bool, **params: Any) -> list[Array]:
    """``[prim(x)]`` along ``axis``; with ``moved``, bound on the last axis
    with ``axis`` moved there and back (the kernels work on the last axis)."""
    if not moved:
        return [prim.bind(x, axis=axis, **params)]
    last = jnp.ndim(x) - 1
    return [moveaxis(prim.bind(moveaxis(x, axis, last), axis=last, **params), last, axis)]


def _row_primitive(name: str, operands: tuple[str, ...], xla: Any, kernel: Any | None,
                   outputs: tuple[str, ...] = ()) -> Any:
    """A primitive of the family: ``operands`` of one float dtype and shape
    along ``axis``, lowered by ``xla`` or the Pallas ``kernel`` (XLA only
    where ``kernel`` is None)."""
    table = {"xla": xla}
    if kernel is not None:
        table.update(pallas=kernel, supports=kernels.supports)
    return define_primitive(name, family=FAMILY, operands=operands, outputs=outputs,
                            params=("axis",), infer_meta=matching_meta(name, operands),
                            implementations=table)


def _rowwise(op: str, prim: Any, x: Any, axis: Any, block_sizes: Any) -> Array:
    """``prim`` bound on ``x`` along ``axis``, inside ``shard_map`` over its
    other dims; where a kernel may run and ``axis`` is not the last, the axis
    is moved to the end and back inside (on each shard)."""
    x = float_array(op, "x", x)
    ndim = jnp.ndim(x)
    axis = normalize_axis(op, axis, ndim)
    moved = ndim > 1 and axis != ndim - 1 and _kernel_may_run(x)
    labels = row_labels(ndim, axis)
    bind = partial(_bind_rows, prim, axis=axis, moved=moved,
                   implementation=implementation(_blocks(op, block_sizes)))
    (y,) = shard_map_bind(bind, (x,), (labels,), (labels,))
    return y


def _over_axes(op: str, prim: Any, x: Any, axis: Any, where: Any, excluded: float | None,
               block_sizes: Any) -> Array:
    """The public function of softmax (``excluded=None``: 0 at the entries
    ``where`` excludes) or log_softmax (``excluded=-inf``): ``prim`` bound
    along ``axis`` (an int, a tuple of axes or None) on x with ``-inf`` at
    the excluded entries."""
    x = float_array(op, "x", x)
    w = None
    if where is not None:
        w = where_arg(op, where, x)
        x = gr_where(w, x, np.full((), -np.inf, jnp.result_type(x)))
    if isinstance(axis, (tuple, list)) or axis is None:
        axes = normalize_axes(op, axis, jnp.ndim(x))
        y = (_rowwise(op, prim, x, axes[0], block_sizes) if len(axes) == 1
             else _merged(op, prim, x, axes, block_sizes))
    else:
        y = _rowwise(op, prim, x, axis, block_sizes)
    if w is not None and excluded is not None:
        y = gr_where(w, y, np.full((), excluded, jnp.result_type(y)))
    return y


def _merged(op: str, prim: Any, x: Any, axes: tuple[int, ...], block_sizes: Any) -> Array:
    """``prim`` over several ``axes`` (or none) at once: moved to the end,
    merged into one axis, bound along it, and put back."""
    shape = np.shape(x)
    perm = tuple(i for i in range(len(shape)) if i not in axes) + axes
    moved = transpose(x, perm)
    rows = tuple(shape[i] for i in perm[:len(shape) - len(axes)])
    merged = reshape(moved, rows + (int(np.prod([shape[a] for a in axes], dtype=np.int64)),))
    y = reshape(_rowwise(op, prim, merged, -1, block_sizes), np.shape(moved))
    return transpose(y, tuple(int(i) for i in np.argsort(perm)))


def _reference_parts(x: ArrayLike, axis: int) -> tuple[Array, Array, Any]:
    """(x in float32 or wider, its log-sum-exp (0 for an all -inf row), x's
    dtype): the plain jax.numpy reference's building blocks, written apart
    from the lowerings on purpose (the checker's oracle)."""
    x = jnp.asarray(x)
    xf = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    m = jax.lax.stop_gradient(jnp.max(xf, axis, keepdims=True))
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    s = jnp.sum(jnp.exp(xf - m), axis, keepdims=True)
    return xf, jnp.where(s > 0, m + jnp.log(jnp.where(s > 0, s, 1.0)), 0.0), x.dtype


# ---------------------------------------------------------------- softmax
def _softmax_xla(x: Array, *, axis: int) -> Array:
    return softmax_rows(upcast(x), axis).astype(x.dtype)


def softmax_tangent(y: Any, t: Any, *, axis: int) -> Any:
    """``y * (t - sum(y t))`` along ``axis``, in float32 for 16-bit input:
    softmax's tangent map and, its Jacobian ``diag(y) - y y^T`` being
    symmetric, its backward too."""
    dtype = aval_of(y).dtype
    yf, tf = cast(y, acc_dtype(dtype)), cast(t, acc_dtype(dtype))
    return cast(multiply(yf, subtract(tf, gr_sum(multiply(yf, tf), axis=axis, keepdims=True))),
                dtype)


softmax_p = _row_primitive("softmax", ("x",), _softmax_xla,
                           kernels.softmax_forward, outputs=("y",))
softmax_jvp_p = _row_primitive("softmax_jvp", ("y", "t"), softmax_tangent, kernels.softmax_jvp)
softmax_vjp_p = _row_primitive("softmax_vjp", ("y", "g"), softmax_tangent, kernels.softmax_vjp)


def softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = -1,
            where: ArrayLike | None = None, *, block_sizes: BlockSizes | None = None) -> Array:
    """``y = exp(x - lse(x))`` along ``axis`` (any axis, negative allowed, a
    tuple of axes or None), over the entries ``where`` selects (0 at the
    others, as jax.nn.softmax; derivative 0 there).

    Three primitives: ``softmax`` (forward), ``softmax_jvp(y, t) = y * (t -
    sum(y t))`` and ``softmax_vjp(y, g) = y * (g - sum(y g))`` (the Jacobian
    ``diag(y) - y y^T`` is symmetric). A row of all ``-inf`` gives 0 with zero
    derivatives. 16-bit input is computed in float32. ``block_sizes``, a
    ``pallas.softmax.BlockSizes``, sets the Pallas kernels' blocks (it never
    changes the result).
    """
    return _over_axes("softmax", softmax_p, x, axis, where, None, block_sizes)


def _softmax_reference(x: ArrayLike, axis: Any = -1, where: ArrayLike | None = None) -> Array:
    if where is not None or not isinstance(axis, int):
        return jax.nn.softmax(x, axis=axis, where=where)
    xf, lse, dtype = _reference_parts(x, axis)
    return jnp.exp(xf - lse).astype(dtype)


register_op(OpDef(name="softmax", family=FAMILY, fn=softmax,
                  primitives=(softmax_p, softmax_jvp_p, softmax_vjp_p),
                  reference=_softmax_reference, operands=("x",)))


# ------------------------------------------------------------ log_softmax
def _log_softmax_xla(x: Array, *, axis: int) -> Array:
    return log_softmax_rows(upcast(x), axis).astype(x.dtype)


def log_softmax_tangent(x: Any, logp: Any, t: Any, *, axis: int) -> Any:
    """``t - sum(exp(logp) t)`` along ``axis``: log_softmax's tangent map
    (``x`` is not read: the forward's output is enough)."""
    dtype = aval_of(t).dtype
    lf, tf = cast(logp, acc_dtype(dtype)), cast(t, acc_dtype(dtype))
    return cast(subtract(tf, gr_sum(multiply(exp(lf), tf), axis=axis, keepdims=True)), dtype)


def log_softmax_cotangent(x: Any, logp: Any, g: Any, *, axis: int) -> Any:
    """``g - softmax(x) sum(g)`` along ``axis``: the transpose of the tangent
    map, log_softmax's backward, as its rules differentiate it (``logp`` is
    not read). Written ``g + softmax(x) (-sum(g))`` (equal to the last
    bit): the negation is one per row. Its XLA lowering computes the same
    with a division per row (``_log_softmax_vjp_xla``), and its tangent
    along x is the primitive ``log_softmax_vjp_jvp``."""
    dtype = aval_of(g).dtype
    xf, gf = cast(x, acc_dtype(dtype)), cast(g, acc_dtype(dtype))
    y = softmax(xf, axis=axis)
    return cast(add(gf, multiply(y, neg(gr_sum(gf, axis=axis, keepdims=True)))), dtype)


def _log_softmax_vjp_xla(x: Array, logp: Array, g: Array, *, axis: int) -> Array:
    """``log_softmax_cotangent`` from ``x``: ``g + e (-sum(g) / s)`` with
    ``(e, s) = softmax_parts(x)`` (``logp`` is not read). Where XLA fuses
    the forward into the backward, as in a gradient, ``e`` is the forward's
    own ``exp(x - m)`` and ``1 / s`` one division per row: ``exp(logp)``
    took ``(x - m) - log s`` per element again, one subtraction and one
    exponential more than jax.nn's gradient."""
    e, s = softmax_parts(upcast(x), axis)
    gf = g.astype(e.dtype)
    return (gf + e * (-jnp.sum(gf, axis, keepdims=True) / s)).astype(g.dtype)


def _log_softmax_vjp_jvp_xla(x: Array, logp: Array, g: Array, tx: Array, t_logp: Array, *,
                             axis: int) -> Array:
    """The backward's tangent along ``x`` (``g`` held; ``logp`` and its
    tangent are not read), ``-sum(g) softmax(x) (tx - sum(softmax(x) tx))``,
    as ``e (tx - sum(e tx) / s) (-sum(g) / s)`` with ``(e, s) =
    softmax_parts(x)``: both per-row factors divided once per row, so a
    Hessian-vector product takes jax.nn's FLOPs (from ``exp(logp)`` it
    took ``(x - m) - log s`` per element again, and from ``softmax(x)`` a
    product per element)."""
    e, s = softmax_parts(upcast(x), axis)
    tf, gf = tx.astype(e.dtype), g.astype(e.dtype)
    r = jnp.sum(e * tf, axis, keepdims=True) / s
    k = -jnp.sum(gf, axis, keepdims=True) / s
    return (e * (tf - r) * k).astype(g.dtype)


log_softmax_p = _row_primitive("log_softmax", ("x",), _log_softmax_xla,
                               kernels.log_softmax_forward, outputs=("logp",))
log_softmax_jvp_p = _row_primitive("log_softmax_jvp", ("x", "logp", "t"), log_softmax_tangent,
                                   kernels.log_softmax_jvp)
log_softmax_vjp_p = _row_primitive("log_softmax_vjp", ("x", "logp", "g"), _log_softmax_vjp_xla,
                                   kernels.log_softmax_vjp)
log_softmax_vjp_jvp_p = _row_primitive("log_softmax_vjp_jvp", ("x", "logp", "g", "tx", "t_logp"),
                                       _log_softmax_vjp_jvp_xla, None)


def log_softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = -1,
                where: ArrayLike | None = None, *,
                block_sizes: BlockSizes | None = None) -> Array:
    """``x - lse(x)`` along ``axis``, computed stably; ``axis`` and ``where``
    as for ``softmax`` (``-inf`` at the excluded entries, as
    jax.nn.log_softmax, with derivative 0 there).

    Three primitives: ``log_softmax`` (forward), ``log_softmax_jvp(x, logp,
    t) = t - sum(exp(logp) t)`` and its transpose ``log_softmax_vjp(x, logp,
    g) = g - softmax(x) sum(g)`` (``softmax(x) = exp(logp)``), and a fourth
    for Hessian-vector products, the backward's tangent along x,
    ``log_softmax_vjp_jvp``. A row of all
    ``-inf`` gives ``-inf`` (log of the 0 of softmax) and passes tangents
    through unchanged. ``block_sizes``: as for ``softmax``.
    """
    return _over_axes("log_softmax", log_softmax_p, x, axis, where, -np.inf, block_sizes)


def _log_softmax_reference(x: ArrayLike, axis: Any = -1, where: ArrayLike | None = None
                           ) -> Array:
    if where is not None or not isinstance(axis, int):
        return jax.nn.log_softmax(x, axis=axis, where=where)
    xf, lse, dtype = _reference_parts(x, axis)
    return (xf - lse).astype(dtype)


register_op(OpDef(name="log_softmax", family=FAMILY, fn=log_softmax,
                  primitives=(log_softmax_p, log_softmax_jvp_p, log_softmax_vjp_p,
                              log_softmax_vjp_jvp_p),
                  reference=_log_softmax_reference, operands=("x",)))
