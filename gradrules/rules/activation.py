"""Rules of the activation family: the named derivative of each op, composed
into its JVP by ``chain_rule`` (``t_out = t * d(x, out, **params)``).

The derivatives at the kinks are those the docstrings of
``gradrules/primitives/activation.py`` state (relu'(0) = 0, clamp passes the
gradient at its bounds, hardtanh does not, ...). The smooth ones are written
so that every order stays finite at large |x|: sigmoid(-x) instead of
1 - sigmoid(x), and a double where for gelu beyond the |x| where its
derivative saturates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._jax import JvpResult, Tangent, aval_of, is_zero, zero_tangent
from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR
from ..primitives import activation as a
from ..primitives._compose import indicator
from ..primitives.arithmetic import add, multiply, subtract
from ..primitives.compare import ge, gt, le, lt, where
from ..primitives.logical import logical_and
from ..primitives.unary import neg
from ._common import broadcast_like, elementwise_batch, elementwise_rules, instantiate


def _sigmoid_and_slope_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """(s, s')' = (s', s' (1 - 2 s)) with s' = s (1 - s): polynomial in the
    outputs, so no order differentiates a lowering (the cap on exp(-x) of
    sigmoid_and_slope's, the |x| of sigmoid_slope's)."""
    (x,), (t,) = primals, tangents
    s, slope = a.sigmoid_and_slope(x)
    if is_zero(t):
        return [s, slope], [zero_tangent(s), zero_tangent(slope)]
    ds = multiply(t, slope)
    return [s, slope], [ds, multiply(ds, subtract(1.0, multiply(s, 2.0)))]


register_rules(a.sigmoid_and_slope_p, jvp=_sigmoid_and_slope_jvp, transpose=NOT_LINEAR,
               batch=elementwise_batch(a.sigmoid_and_slope_p))


def _sigmoid_slope_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """sigmoid_slope(x)' = s' (1 - 2 s): the slope and its tangent from
    ``_sigmoid_and_slope_jvp``, which computes s for the tangent anyway, so
    the value is that slope (``b s``), not a second one beside it."""
    (_, slope), (_, t_slope) = _sigmoid_and_slope_jvp(primals, tangents)
    return slope, t_slope


register_rules(a.sigmoid_slope_p, jvp=_sigmoid_slope_jvp, transpose=NOT_LINEAR,
               batch=elementwise_batch(a.sigmoid_slope_p))


def _sigmoid_dx(x: Any, out: Any) -> Any:
    return a.sigmoid_slope(x)                         # sigmoid(x) sigmoid(-x)


register_rules(a.sigmoid_p, **elementwise_rules(a.sigmoid_p, _sigmoid_dx))


def _log_sigmoid_dx(x: Any, out: Any) -> Any:
    return a.sigmoid(neg(x))


register_rules(a.log_sigmoid_p, **elementwise_rules(a.log_sigmoid_p, _log_sigmoid_dx))


def _relu_dx(x: Any, out: Any) -> Any:
    return indicator(gt(x, 0), x)                     # relu'(0) = 0


register_rules(a.relu_p, **elementwise_rules(a.relu_p, _relu_dx))


def _leaky_relu_dx(x: Any, out: Any, *, negative_slope: float) -> Any:
    dtype = aval_of(x).dtype                          # slope at 0: negative_slope
    return where(gt(x, 0.0), np.ones((), dtype), np.asarray(negative_slope, dtype))


register_rules(a.leaky_relu_p, **elementwise_rules(a.leaky_relu_p, _leaky_relu_dx))


def _hardtanh_dx(x: Any, out: Any, *, min_val: float, max_val: float) -> Any:
    return indicator(logical_and(gt(x, min_val), lt(x, max_val)), x)    # 0 at the bounds


register_rules(a.hardtanh_p, **elementwise_rules(a.hardtanh_p, _hardtanh_dx))


def _hardswish_dx(x: Any, out: Any) -> Any:
    inside = add(multiply(x, 1.0 / 3.0), 0.5)        # (2 x + 3) / 6
    return where(le(x, -3.0), 0.0, where(ge(x, 3.0), 1.0, inside))


register_rules(a.hardswish_p, **elementwise_rules(a.hardswish_p, _hardswish_dx))


def _silu_dx(x: Any, out: Any) -> Any:
    return a.silu_slope(x, a.sigmoid_and_slope(x)[0])


register_rules(a.silu_p, **elementwise_rules(a.silu_p, _silu_dx))


# gelu ----------------------------------------------------------------------
def _gelu_dx(x: Any, out: Any, *, approximate: bool) -> Any:
    return a.gelu_slope(x, approximate)


register_rules(a.gelu_p, **elementwise_rules(a.gelu_p, _gelu_dx))


def _softplus_dx(x: Any, out: Any, *, beta: float, threshold: float) -> Any:
    bx = multiply(x, beta)                            # 1 where out = x
    return where(gt(bx, threshold), 1.0, a.sigmoid(bx))


register_rules(a.softplus_p, **elementwise_rules(a.softplus_p, _softplus_dx))


def _elu_dx(x: Any, out: Any, *, alpha: float) -> Any:
    return a.elu_slope(x, alpha)                      # the x <= 0 branch at 0


register_rules(a.elu_p, **elementwise_rules(a.elu_p, _elu_dx))


def _selu_dx(x: Any, out: Any) -> Any:
    return multiply(a.elu_slope(x, a.SELU_ALPHA), a.SELU_SCALE)


register_rules(a.selu_p, **elementwise_rules(a.selu_p, _selu_dx))


def _celu_dx(x: Any, out: Any, *, alpha: float) -> Any:
    return a.elu_slope(multiply(x, 1.0 / alpha), 1.0)


register_rules(a.celu_p, **elementwise_rules(a.celu_p, _celu_dx))


def _mish_dx(x: Any, out: Any) -> Any:
    return a.mish_slope(x)


register_rules(a.mish_p, **elementwise_rules(a.mish_p, _mish_dx))


def _clamp_dx(x: Any, out: Any, *, min: float | None, max: float | None) -> Any:  # noqa: A002
    """1 where min <= x <= max (bounds included), 0 elsewhere."""
    masks = []
    if min is not None:
        masks.append(ge(x, min))
    if max is not None:
        masks.append(le(x, max))
    return indicator(masks[0] if len(masks) == 1 else logical_and(*masks), x)


register_rules(a.clamp_p, **elementwise_rules(a.clamp_p, _clamp_dx))


# clip_below and clip_above (clip's array bounds) -------------------------------
def _bound_jvp(prim: Any, outside: Any, primals: Sequence[Any],
               tangents: Sequence[Tangent]) -> JvpResult:
    """t_out = where(outside, t_bound, t_x): x's tangent where x is at or
    inside the bound (clamp's rule), the bound's where x is beyond it; a
    where of the tangents, linear in them, as the where of clip's values was."""
    (x, bound), (tx, tb) = primals, tangents
    out = prim.bind(x, bound)
    if is_zero(tx) and is_zero(tb):
        return out, zero_tangent(out)
    t = where(outside, instantiate(tb, bound), instantiate(tx, x))
    return out, broadcast_like(t, np.shape(out))


def _clip_below_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """max(x, min): min's tangent where x < min, x's elsewhere."""
    return _bound_jvp(a.clip_below_p, lt(*primals), primals, tangents)


def _clip_above_jvp(primals: Sequence[Any], tangents: Sequence[Tangent]) -> JvpResult:
    """min(x, max): max's tangent where x > max, x's elsewhere."""
    return _bound_jvp(a.clip_above_p, gt(*primals), primals, tangents)


register_rules(a.clip_below_p, jvp=_clip_below_jvp, transpose=NOT_LINEAR,
               batch=elementwise_batch(a.clip_below_p))
register_rules(a.clip_above_p, jvp=_clip_above_jvp, transpose=NOT_LINEAR,
               batch=elementwise_batch(a.clip_above_p))
