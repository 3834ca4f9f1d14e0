"""Shared pieces of the fused ops (softmax, log_softmax, cross_entropy,
fused_linear_cross_entropy, layer_norm, rms_norm, silu_gated, attention,
rope).

A fused op is three primitives (DESIGN.md): ``foo_p`` (the forward, with its
residuals as extra outputs), ``foo_jvp_p`` (the tangent map) and
``foo_vjp_p`` (the fused backward), each defined with an implementation
table (``core.kernels``) and bound with the ``implementation`` param its
public function reads from ``gradrules.config``.

Also here: infer_meta helpers these ops share and the lowering helpers in
plain jax.numpy, among them the one numerically stable log-sum-exp
(``log_sum_exp``, from ``max_shift`` and ``core.numerics.lse_from_sum``; the
blockwise ``online_lse_step`` and the accumulation dtype are in
``core.numerics`` too, shared with the Pallas kernels) used by softmax,
cross-entropy, attention and logsumexp.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.meta import check_dtype, normalize_axis, op_name
from ..core.numerics import acc_dtype, finite_or_zero, lse_from_sum

Array = jax.Array


# ------------------------------------------------------------ infer_meta
def matching_meta(op: str, names: tuple[str, ...]) -> Callable[..., ShapedArray]:
    """infer_meta of a map of operands of one float dtype and one shape (the
    output's); an ``axis`` param must fit that shape (``matching_infer_meta``
    with the op's name and its operands' names bound)."""
    return partial(matching_infer_meta, op, names)


def matching_infer_meta(op: str, names: tuple[str, ...], *avals: Any, **params: Any
                        ) -> ShapedArray:
    """The operands ``names`` share the first one's float dtype and shape, the result's."""
    first = avals[0]
    for n, a in zip(names, avals):
        check_dtype(op, n, a.dtype, "float")
        if a.dtype != first.dtype or a.shape != first.shape:
            raise ValueError(f"{op_name(op)}: {n} ({a.dtype}{list(a.shape)}) must match "
                             f"{names[0]} ({first.dtype}{list(first.shape)})")
    if "axis" in params:
        normalize_axis(op, params["axis"], len(first.shape))
    return ShapedArray(first.shape, first.dtype)


def check_like(op: str, name: str, aval: Any, shape: tuple[int, ...], dtype: Any) -> None:
    """A residual, tangent or cotangent operand must have exactly this shape and dtype."""
    if tuple(aval.shape) != tuple(shape) or np.dtype(aval.dtype) != np.dtype(dtype):
        raise ValueError(f"{op_name(op)}: {name} must be {np.dtype(dtype)}{list(shape)}, got "
                         f"{aval.dtype}{list(aval.shape)}")


# ---------------------------------------------- lowering helpers (jax.numpy)
def upcast(x: Array) -> Array:
    """``x`` in its accumulation dtype."""
    return x.astype(acc_dtype(x.dtype))


def max_shift(x: Array, axis: int | tuple[int, ...]) -> Array:
    """The max along ``axis`` (an axis or a tuple of them; kept), 0 for a row
    that is all ``-inf``: ``exp(x - shift)`` cannot overflow."""
    return finite_or_zero(jnp.max(x, axis, keepdims=True, initial=-jnp.inf))


def shifted_exp(x: Array, axis: int | tuple[int, ...]) -> tuple[Array, Array, Array]:
    """``(shift, z, e)``: the finite max along ``axis`` (kept), ``z = x -
    shift`` and ``e = exp(z)``, which cannot overflow and sums to at least
    1 (0 for a row that is all ``-inf``)."""
    shift = max_shift(x, axis)
    z = x - shift
    return shift, z, jnp.exp(z)


def log_sum_exp(x: Array, axis: int | tuple[int, ...], *, empty: float = 0.0) -> Array:
    """``log sum exp(x)`` along ``axis`` (kept), computed with the finite max
    subtracted; ``empty`` for a row that is all ``-inf`` (0 for softmax, whose
    row of zeros needs a finite normaliser; ``-inf`` for a log-sum-exp)."""
    shift, _, e = shifted_exp(x, axis)
    return lse_from_sum(shift, jnp.sum(e, axis, keepdims=True), empty)


def recomputed(shift: Array) -> Array:
    """``shift`` behind an optimization barrier, for the output pass of a
    row op that summed ``exp(x - shift)`` first: ``x - recomputed(shift)``
    is then a second expression, which XLA computes again inside the
    output's loop fusion, where one shared ``x - shift`` (or its exp) is
    written out in full and read back (the CPU's reduction fusions take no
    producer that has another consumer: 1.5x the bytes of a softmax). The
    same value, one exp or subtraction more per entry."""
    return lax.optimization_barrier(shift)


def softmax_rows(x: Array, axis: int) -> Array:
    """``exp(x - m) / sum(exp(x - m))`` along ``axis``, m the row maximum:
    normalised by the maximum, not by a rounded log-sum-exp (a row of 3e38
    gives 1/n, not 1); 0 for a row that is all ``-inf``."""
    shift, _, e = shifted_exp(x, axis)
    total = jnp.sum(e, axis, keepdims=True)
    return jnp.exp(x - recomputed(shift)) / jnp.where(total > 0, total, 1)


def log_softmax_rows(x: Array, axis: int) -> Array:
    """``(x - m) - log(sum(exp(x - m)))`` along ``axis``: the shift taken
    out before the log, so that nothing rounds it away; ``-inf`` for a row
    that is all ``-inf``."""
    shift, _, e = shifted_exp(x, axis)
    total = jnp.sum(e, axis, keepdims=True)
    return (x - recomputed(shift)) - jnp.log(jnp.where(total > 0, total, 1))


def sum_to(x: Array, shape: tuple[int, ...]) -> Array:
    """Sum ``x`` down to ``shape``: its extra leading axes, and the axes where
    ``shape`` has 1 and x does not (the transpose of broadcasting)."""
    shape = tuple(shape)
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + i] != 1)
    return jnp.sum(x, axes, keepdims=True).reshape(shape) if axes else x


def pad_axis(x: Array, axis: int, size: int, value: Any = 0) -> Array:
    """``x`` padded at the end of ``axis`` with ``value`` up to ``size``
    entries (unchanged when it has that many already)."""
    extra = size - x.shape[axis]
    if extra <= 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return jnp.pad(x, widths, constant_values=value)
