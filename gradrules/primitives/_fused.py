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


def row_shift(x: Array, axis: int) -> Array:
    """The max along ``axis`` (kept), raised to the dtype's lowest finite
    value, the shift of the one-pass softmax and log-softmax: finite for a
    row that is all ``-inf``, whose ``exp(x - shift)`` is then 0, never NaN.
    ``max_shift``'s guard written as a ``maximum`` rather than a select,
    because XLA's CPU reduction fusion (YNNPACK) takes a maximum in and stops
    at a select: the whole row op is then one pass over ``x``, like
    jax.nn.softmax's (a select splits it into five and writes ``x - max``
    out). XLA 0.10 makes that fusion from 4096 rows on; with fewer it writes
    ``exp(x - max)`` out once and reads it back twice (6 passes where the
    old recomputed ``x - max`` took 4, and still faster on the 2-core CPU:
    by a third in two interleaved runs at [1024, 1024]). A row with a ``+inf`` entry has no softmax and gives NaN (the
    log-sum-exp keeps ``max_shift``, whose 0 shift gives it ``inf``)."""
    return jnp.maximum(jnp.max(x, axis, keepdims=True, initial=-jnp.inf), jnp.finfo(x.dtype).min)


def row_total(e: Array, axis: int) -> Array:
    """``sum(e)`` along ``axis`` (kept) for ``e = exp(x - row_shift(x))``,
    raised to 1: the same sum for a row with a finite entry (its maximum
    adds ``exp(0) = 1``) and 1 for a row that is all ``-inf`` (a sum of 0),
    whose softmax is then 0 and log-softmax ``-inf``. A maximum again, not
    a select: see ``row_shift``."""
    return jnp.maximum(jnp.sum(e, axis, keepdims=True), 1)


def softmax_parts(x: Array, axis: int) -> tuple[Array, Array]:
    """``(e, s)``: ``e = exp(x - m)``, m the row maximum (``row_shift``), and
    its row total ``s`` (``row_total``), so that ``softmax(x) = e / s``. The
    softmax and log-softmax lowerings all start from these, written once:
    where XLA fuses a forward with its tangent map or backward, the two
    compute the same instructions and it keeps one ``exp(x - m)``."""
    e = jnp.exp(x - row_shift(x, axis))
    return e, row_total(e, axis)


def softmax_rows(x: Array, axis: int) -> Array:
    """``exp(x - m) / sum(exp(x - m))`` along ``axis``, m the row maximum:
    normalised by the maximum, not by a rounded log-sum-exp (a row of 3e38
    gives 1/n, not 1); 0 for a row that is all ``-inf``. One pass over
    ``x`` on the CPU (``row_shift``)."""
    e, s = softmax_parts(x, axis)
    return e / s


def log_softmax_rows(x: Array, axis: int) -> Array:
    """``(x - m) - log(sum(exp(x - m)))`` along ``axis``: the shift taken
    out before the log, so that nothing rounds it away; ``-inf`` for a row
    that is all ``-inf``. One pass over ``x`` on the CPU (``row_shift``)."""
    z = x - row_shift(x, axis)
    return z - jnp.log(row_total(jnp.exp(z), axis))


def computed_once(*tables: Array) -> tuple[Array, ...]:
    """The ``tables`` (of one shape) as they are, computed once into a
    buffer. XLA's CPU loop fusion evaluates a producer it fuses once per
    element of its consumer, so a small table of transcendentals broadcast
    over a large operand (rope's cos and sin, ``[seq, head_dim / 2]``, over
    ``[batch, seq, heads, head_dim]``) is recomputed for every element of
    that: 6x the time of reading it (JAX 0.10.2's XLA). A reduction is not
    fused into its consumer: the max over the tables stacked beside ``-inf``
    (the max's identity: exact, NaN kept) is computed once."""
    stacked = jnp.stack(tables)
    return tuple(jnp.max(jnp.stack([stacked, jnp.full_like(stacked, -jnp.inf)]), 0))


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
