"""Activations: sigmoid, log_sigmoid, relu, leaky_relu, hardtanh, hardswish,
silu (alias swish), gelu, softplus, elu, selu, celu, mish, clamp and clip
(jnp.clip's signature over clamp).

Each op is one primitive; the docstrings state the derivative the JVP rule
uses (``gradrules/rules/activation.py``), including its value at the kinks,
which follows the core IR (PyTorch's derivatives.yaml) and, for hardswish,
Paddle's backward.yaml. Every form is numerically stable: no overflow and
finite derivatives of every order at large |x|.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import Primitive
from ..core.args import as_array, bool_param, number_param
from ..core.meta import broadcast_shapes, elementwise_infer_meta, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ..core.numerics import GELU_A, GELU_SATURATION, gelu_cdf, SQRT_2_OVER_PI
from ._elementwise import (define_elementwise, elementwise_primitive,
                           register_elementwise)
from ._fused import upcast
from .arithmetic import add, multiply, subtract
from .compare import gt, where
from .convert import promote
from .special import erfc
from .unary import exp, neg, square, tanh

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "activation"

# a parameter-free activation: primitive, public function and manifest entry
_activation: Callable[..., tuple[Primitive, Callable[..., Array]]] = partial(define_elementwise,
                                                                             family=FAMILY)


# ---------------------------------------------------- parameter-free ops
def _sigmoid_and_slope_impl(x: Array) -> list[Array]:
    """From one ``e = exp(-x)``: ``s = 1 / (1 + e)``, jax.nn.sigmoid's own
    form (XLA's expansion of its logistic, so a fusion holding both computes
    it once), and ``b = e s = sigmoid(-x)``, with ``e`` capped at the
    dtype's largest value so that where it overflows (x below -88 in
    float32) ``b`` is that times ``s = 0``, a true 0, not ``inf * 0``; then
    sigmoid'(x) = ``b s``. Every factor keeps its relative precision (no
    ``1 - s``, which cancels where s is close to 1), and the pair costs the
    FLOPs of jax.nn's ``s`` and ``1 - s``. 16-bit x is computed in float32
    (``e`` would overflow from x = -11 in float16)."""
    xf = upcast(x)
    e = jnp.exp(-xf)
    s = 1.0 / (1.0 + e)
    b = jnp.minimum(e, jnp.finfo(xf.dtype).max) * s
    return [s.astype(x.dtype), (b * s).astype(x.dtype)]


def _sigmoid_and_slope_meta(x: Any) -> list[Any]:
    out = elementwise_infer_meta("sigmoid_and_slope", ("x",), "float", None, x)
    return [out, out]


sigmoid_and_slope_p = define_primitive("sigmoid_and_slope", family=FAMILY, operands=("x",),
                                       infer_meta=_sigmoid_and_slope_meta,
                                       impl=_sigmoid_and_slope_impl, multiple_results=True)


def sigmoid_and_slope(x: Any) -> tuple[Any, Any]:
    """``(s, s')``: sigmoid(x) and its derivative ``s' = sigmoid(x)
    sigmoid(-x)``, both from one exp (the derivatives of sigmoid, silu and
    the tanh-form gelu: one exp per element where ``sigmoid(x)`` and
    ``sigmoid(-x)`` took two). Its JVP, ``(s' t, s' (1 - 2 s) t)``, is
    polynomial in the two outputs, so no order differentiates the lowering
    (its cap on exp(-x)): every order is exact at x = 0 and finite at any
    x."""
    s, slope = sigmoid_and_slope_p.bind(x)
    return s, slope


def _sigmoid_slope_impl(x: Array) -> Array:
    """``e / (1 + e)**2`` with ``e = exp(-|x|)``: sigmoid(x) sigmoid(-x)
    with one division and no reciprocal kept, in [0, 1/4] (no overflow) and
    at full relative precision (no 1 - s): 5 FLOPs per element, jax.nn's
    ``s (1 - s)``'s. (``sigmoid_and_slope``'s ``b s``, from the ``exp(-x)``
    it shares with sigmoid(x), takes 6 alone; ``e / (1 + e)**2`` of that e
    overflows from x = -44.) A lowering, never differentiated."""
    e = jnp.exp(-jnp.abs(x))
    return e / jnp.square(1.0 + e)


sigmoid_slope_p = elementwise_primitive("sigmoid_slope", _sigmoid_slope_impl, family=FAMILY)


def sigmoid_slope(x: Any) -> Any:
    """sigmoid'(x) = sigmoid(x) sigmoid(-x), the derivative of ``sigmoid``
    as a primitive of its own (an internal one of the op sigmoid): a
    gradient takes only the slope, which this computes with the FLOPs of
    jax.nn.sigmoid's ``s (1 - s)``, where the slope of
    ``sigmoid_and_slope`` (``b s`` beside ``s``) takes 1.17x. Its JVP
    (``gradrules/rules/activation.py``) is the slope and tangent ``s' (1 -
    2 s) t`` of ``sigmoid_and_slope``, which computes s for that tangent
    anyway, so higher orders are those of sigmoid_and_slope."""
    return sigmoid_slope_p.bind(x)


sigmoid_p, sigmoid = _activation("sigmoid", jax.nn.sigmoid, """\
1 / (1 + exp(-x)), without overflow for any x.

d/dx = sigmoid(x) * sigmoid(-x) (= s (1 - s), written so it keeps its
precision where s is close to 1), the primitive ``sigmoid_slope``, whose
own derivative is that of ``sigmoid_and_slope``'s second output.""",
                                 reference=jax.nn.sigmoid,
                                 internal=(sigmoid_slope_p, sigmoid_and_slope_p))

log_sigmoid_p, log_sigmoid = _activation("log_sigmoid", jax.nn.log_sigmoid, """\
log(sigmoid(x)) = -softplus(-x), computed without overflow: about x for x << 0,
about -exp(-x) for x >> 0.

d/dx = sigmoid(-x).""")


def _relu_impl(x: Array) -> Array:
    return jnp.maximum(x, 0)


relu_p, relu = _activation("relu", _relu_impl, """max(x, 0); integers allowed.

d/dx = 1 for x > 0 and 0 for x <= 0: relu'(0) = 0, as in the core IR.""", kind="numeric",
                           reference=jax.nn.relu)


# ------------------------------------------------------------ leaky_relu
def _leaky_relu_impl(x: Array, *, negative_slope: float) -> Array:
    return jnp.where(x > 0, x, x * negative_slope)


leaky_relu_p = elementwise_primitive("leaky_relu", _leaky_relu_impl, family=FAMILY,
                                     params=("negative_slope",))


def leaky_relu(x: ArrayLike, *, negative_slope: float = 0.01) -> Array:
    """x for x > 0, negative_slope * x otherwise, for a finite number
    negative_slope (an infinite one gives 0 * inf = NaN at x = 0).

    d/dx = 1 for x > 0 and negative_slope for x <= 0 (the core IR's
    leaky_relu_backward: the slope at 0 is negative_slope).
    """
    slope = number_param("leaky_relu", "negative_slope", negative_slope)
    (x,) = promote("leaky_relu", {"x": x}, "float")
    return leaky_relu_p.bind(x, negative_slope=slope)


def _leaky_relu_reference(x: ArrayLike, *, negative_slope: float = 0.01) -> Array:
    return jax.nn.leaky_relu(x, negative_slope)


register_elementwise(leaky_relu, leaky_relu_p, _leaky_relu_reference)


# --------------------------------------------------------------- hardtanh
def _hardtanh_impl(x: Array, *, min_val: float, max_val: float) -> Array:
    return jnp.clip(x, min_val, max_val)


hardtanh_p = elementwise_primitive("hardtanh", _hardtanh_impl, family=FAMILY,
                                   params=("min_val", "max_val"))


def hardtanh(x: ArrayLike, *, min_val: float = -1.0, max_val: float = 1.0) -> Array:
    """min(max(x, min_val), max_val) for static numbers min_val <= max_val.

    d/dx = 1 for min_val < x < max_val and 0 elsewhere, the boundaries
    included (the core IR's hardtanh_backward), unlike clamp.
    """
    lo = number_param("hardtanh", "min_val", min_val, allow_inf=True)
    hi = number_param("hardtanh", "max_val", max_val, allow_inf=True)
    if lo > hi:
        raise ValueError(f"{op_name('hardtanh')}: min_val={min_val!r} is greater than "
                         f"max_val={max_val!r}")
    (x,) = promote("hardtanh", {"x": x}, "float")
    return hardtanh_p.bind(x, min_val=lo, max_val=hi)


def _hardtanh_reference(x: ArrayLike, *, min_val: float = -1.0, max_val: float = 1.0) -> Array:
    return jnp.clip(x, min_val, max_val)


register_elementwise(hardtanh, hardtanh_p, _hardtanh_reference)


# ------------------------------------------------- hardswish and silu
def _hardswish_impl(x: Array) -> Array:
    return x * (jnp.clip(x + 3.0, 0.0, 6.0) / 6.0)     # x * 6 would overflow at 3e38


hardswish_p, hardswish = _activation("hardswish", _hardswish_impl, """\
x * min(max(x + 3, 0), 6) / 6.

d/dx = 0 for x <= -3, (2 x + 3) / 6 for -3 < x < 3, 1 for x >= 3: at the kinks
hardswish'(-3) = 0 and hardswish'(3) = 1, as Paddle's hardswish_grad.""",
                                     reference=jax.nn.hard_swish)

silu_p, silu = _activation("silu", jax.nn.silu, """x * sigmoid(x) (alias ``swish``).

d/dx = s + x s' with s = sigmoid(x), s' = sigmoid(x) sigmoid(-x) (``silu_slope``;
= s (1 + x sigmoid(-x))).""", aliases=("swish",))

# swish (jax.nn.swish) is silu under its other name: the same function, primitive
# and manifest entry (``get_op("swish")`` is silu's), not a second formula.
swish = silu


def silu_slope(x: Any, s: Any) -> Any:
    """silu'(x) = ``s + x s'`` given ``s = sigmoid(x)``, with ``s' =
    sigmoid(x) sigmoid(-x)`` (``sigmoid_and_slope``), in gradrules ops: the
    one formula of silu's derivative (silu's JVP, which takes ``s`` from the
    same ``sigmoid_and_slope``, and the gated MLPs', which share ``s`` with
    ``silu(x) = x s``). ``s'`` rather than ``s (1 - s)``, which cancels for
    large x (float32 second derivative off by 1e-2 at x = 15)."""
    return add(s, multiply(x, sigmoid_and_slope(x)[1]))


# ------------------------------------------------------------------- gelu
def _gelu_impl(x: Array, *, approximate: bool) -> Array:
    return x * gelu_cdf(x, approximate)


gelu_p = elementwise_primitive("gelu", _gelu_impl, family=FAMILY, params=("approximate",))


def gelu(x: ArrayLike, *, approximate: bool = False) -> Array:
    """The Gaussian error linear unit, the exact form by default as in torch
    (``jax.nn.gelu`` defaults to ``approximate=True``).

    Exact form (``approximate=False``): x * Phi(x), Phi(x) = erfc(-x / sqrt(2)) / 2;
    d/dx = Phi(x) + x * exp(-x**2 / 2) / sqrt(2 pi).

    Tanh form (``approximate=True``): x / 2 * (1 + tanh(u)) = x * sigmoid(2 u),
    u = sqrt(2 / pi) (x + 0.044715 x**3); d/dx = sigmoid(2 u)
    + 2 x sigmoid(2 u) sigmoid(-2 u) u'(x).

    Beyond |x| > 40 (exact form) and |x| > 25 (tanh form), where the derivative
    is exactly 1 or 0 in float64, the derivative is that limit (all higher
    derivatives 0), selected by a double where so that no inf * 0 appears in
    any order, in any dtype.
    """
    approx = bool_param("gelu", "approximate", approximate)
    (x,) = promote("gelu", {"x": x}, "float")
    return gelu_p.bind(x, approximate=approx)


def _gelu_exact_slope(x: Any) -> Any:
    """Phi(x) + x phi(x), Phi(x) = erfc(z) / 2 (accurate for x << 0), phi(x) =
    exp(-z**2) / sqrt(2 pi), z = -x / sqrt 2: the exp of erfc's own
    expansion, which XLA then computes once for both."""
    z = multiply(x, -math.sqrt(0.5))
    cdf = multiply(erfc(z), 0.5)
    pdf = multiply(exp(neg(square(z))), 1.0 / math.sqrt(2.0 * math.pi))
    return add(cdf, multiply(x, pdf))


def _gelu_tanh_slope(x: Any) -> Any:
    """s(2u) + 2 x s(2u) s(-2u) u'(x), u = c (x + a x**3), s = sigmoid: the
    same as (1 + tanh u) / 2 + x / 2 (1 - tanh(u)**2) u'(x), without the
    cancellation of 1 + tanh(u) for x << 0."""
    x2 = square(x)
    k = 2.0 * SQRT_2_OVER_PI
    two_u = multiply(x, add(multiply(x2, k * GELU_A), k))
    cdf, slope = sigmoid_and_slope(two_u)                   # s(2u), s(2u) s(-2u)
    du = add(multiply(x2, 3.0 * k * GELU_A), k)             # 2 u'(x)
    return add(cdf, multiply(x, multiply(slope, du)))


def gelu_slope(x: Any, approximate: bool) -> Any:
    """gelu'(x) in gradrules ops (gelu's JVP, and the gated MLPs'): the
    formula on x clamped to [-L, L], L = ``GELU_SATURATION``.

    At x = +-L the formula is exactly its limit [x > 0] in float64 and every
    narrower dtype, so beyond L it gives that limit, and the clamp's zero
    derivative there makes every higher order 0; its polynomial factors
    only see |x| <= L, so none overflows to meet an exp or a sigmoid that
    has underflowed to 0 (no inf * 0 = NaN in any order). One elementwise
    pass: no where of the limit written beside the formula."""
    formula = _gelu_tanh_slope if approximate else _gelu_exact_slope
    limit = GELU_SATURATION[approximate]
    return formula(clamp(x, min=-limit, max=limit))


def _gelu_reference(x: ArrayLike, *, approximate: bool = False) -> Array:
    return jax.nn.gelu(x, approximate=approximate)


register_elementwise(gelu, gelu_p, _gelu_reference)


# --------------------------------------------------------------- softplus
def _softplus_impl(x: Array, *, beta: float, threshold: float) -> Array:
    bx = x * beta
    return jnp.where(bx > threshold, x, jnp.logaddexp(bx, 0.0) / beta)


softplus_p = elementwise_primitive("softplus", _softplus_impl, family=FAMILY,
                                   params=("beta", "threshold"))


def softplus(x: ArrayLike, *, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
    (PyTorch's semantics; the log form never overflows). ``beta > 0``.

    d/dx = sigmoid(beta x) where beta x <= threshold and 1 above it (where
    every higher derivative is 0).
    """
    b = number_param("softplus", "beta", beta, gt=0)
    t = number_param("softplus", "threshold", threshold, allow_inf=True)
    (x,) = promote("softplus", {"x": x}, "float")
    return softplus_p.bind(x, beta=b, threshold=t)


def _softplus_reference(x: ArrayLike, *, beta: float = 1.0, threshold: float = 20.0) -> Array:
    return jnp.where(x * beta > threshold, x, jax.nn.softplus(x * beta) / beta)


register_elementwise(softplus, softplus_p, _softplus_reference)


# ------------------------------------------------ elu, selu, celu
def _elu_impl(x: Array, *, alpha: float) -> Array:
    return jax.nn.elu(x, alpha)


elu_p = elementwise_primitive("elu", _elu_impl, family=FAMILY, params=("alpha",))


def elu(x: ArrayLike, *, alpha: float = 1.0) -> Array:
    """x for x > 0, alpha (exp(x) - 1) for x <= 0 (jax.nn.elu, with a static
    number alpha).

    d/dx = 1 for x > 0 and alpha exp(x) for x <= 0: at x = 0 the x <= 0 branch,
    alpha, as jax.nn.elu's derivative (``elu_slope``). Finite at every order
    for any x (exp of min(x, 0) only).
    """
    a = number_param("elu", "alpha", alpha)
    (x,) = promote("elu", {"x": x}, "float")
    return elu_p.bind(x, alpha=a)


def _elu_reference(x: ArrayLike, *, alpha: float = 1.0) -> Array:
    return jax.nn.elu(x, alpha)


register_elementwise(elu, elu_p, _elu_reference)


def elu_slope(x: Any, alpha: float) -> Any:
    """elu'(x) = 1 for x > 0, alpha exp(x) for x <= 0, in gradrules ops: the
    one formula of the derivative of elu, selu (``SELU_SCALE`` times it) and
    celu (``elu_slope(x / alpha, 1)``). The exp sees min(x, 0) (a double
    where), so no overflow enters any order."""
    pos = gt(x, 0.0)
    return where(pos, 1.0, multiply(exp(where(pos, 0.0, x)), alpha))


# jax.nn.selu's constants
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _selu_impl(x: Array) -> Array:
    return jax.nn.selu(x)


selu_p, selu = _activation("selu", _selu_impl, f"""\
scale * elu(x, alpha) with jax.nn.selu's constants alpha = {SELU_ALPHA!r} and
scale = {SELU_SCALE!r}.

d/dx = scale for x > 0 and scale alpha exp(x) for x <= 0 (at x = 0 the
x <= 0 branch, as elu).""", reference=jax.nn.selu)


def _celu_impl(x: Array, *, alpha: float) -> Array:
    return jax.nn.celu(x, alpha)


celu_p = elementwise_primitive("celu", _celu_impl, family=FAMILY, params=("alpha",))


def celu(x: ArrayLike, *, alpha: float = 1.0) -> Array:
    """max(x, 0) + alpha (exp(min(x, 0) / alpha) - 1) = alpha elu(x / alpha)
    (jax.nn.celu) for a static number alpha > 0.

    d/dx = 1 for x > 0 and exp(x / alpha) for x <= 0 (``elu_slope(x / alpha,
    1)``); continuous at 0, where higher derivatives take the x <= 0 branch.
    Finite at every order for any x.
    """
    a = number_param("celu", "alpha", alpha, gt=0.0)
    (x,) = promote("celu", {"x": x}, "float")
    return celu_p.bind(x, alpha=a)


def _celu_reference(x: ArrayLike, *, alpha: float = 1.0) -> Array:
    return jax.nn.celu(x, alpha)


register_elementwise(celu, celu_p, _celu_reference)


# ------------------------------------------------------------------- mish
mish_p, mish = _activation("mish", jax.nn.mish, """x * tanh(softplus(x)) (jax.nn.mish).

d/dx = tanh(sp) + x sigmoid(x) (1 - tanh(sp)**2), sp = softplus(x) = log(1 +
exp(x)) (``mish_slope``): every factor is bounded, so values and derivatives of
every order are finite at any |x| (x sigmoid(x) -> 0 for x << 0, 1 - tanh**2 ->
0 for x >> 0).""")


def mish_slope(x: Any) -> Any:
    """mish'(x) in gradrules ops; softplus without its threshold (the exact
    log(1 + exp(x)), never overflowing), so no derivative jumps at x = 20."""
    th = tanh(softplus(x, threshold=math.inf))
    return add(th, multiply(multiply(x, sigmoid(x)), subtract(1.0, square(th))))


# ------------------------------------------------------------------ clamp
def _clamp_impl(x: Array, *, min: float | None, max: float | None) -> Array:  # noqa: A002
    lo, hi = (None if b is None else jnp.asarray(b, x.dtype) for b in (min, max))
    return jnp.clip(x, lo, hi)


clamp_p = elementwise_primitive("clamp", _clamp_impl, family=FAMILY, kind="numeric",
                                params=("min", "max"))


def _bound(name: str, value: Any, dtype: np.dtype) -> float | int | None:
    """A clamp bound as a static number of x's kind; integer bounds are kept
    inside the range of an integer dtype (so none wraps around)."""
    if value is None:
        return None
    v = number_param("clamp", name, value, allow_inf=True)
    if not jnp.issubdtype(dtype, jnp.integer):
        return v
    if not v.is_integer() and not math.isinf(v):
        raise TypeError(f"{op_name('clamp')}: {name}={value!r} is not an integer, but x has "
                        f"the integer dtype {dtype}")
    info = jnp.iinfo(dtype)
    return int(min(max(v, info.min), info.max))


def clamp(x: ArrayLike, *, min: float | None = None,  # noqa: A002
          max: float | None = None) -> Array:  # noqa: A002
    """min(max(x, min), max) for static numbers (either may be None, not
    both); integers allowed (an integer x keeps its dtype and takes integral
    bounds, where in ``jnp.clip`` a float bound makes the result float).
    When min > max the result is max everywhere.

    d/dx = 1 where min <= x <= max, the boundaries included (the core IR's
    clamp_backward), and 0 elsewhere.
    """
    if min is None and max is None:
        raise ValueError(f"{op_name('clamp')}: at least one of min and max must be given")
    (x,) = promote("clamp", {"x": x}, "numeric")
    dtype = np.dtype(jnp.result_type(x))
    return clamp_p.bind(x, min=_bound("min", min, dtype), max=_bound("max", max, dtype))


def _clamp_reference(x: ArrayLike, *, min: float | None = None,  # noqa: A002
                     max: float | None = None) -> Array:  # noqa: A002
    """jnp.clip, an integer x's (integral) bounds in its dtype: clamp keeps
    x's dtype, where jnp.clip would promote it with a float bound."""
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.integer):
        info = jnp.iinfo(x.dtype)
        min, max = (None if b is None else jnp.asarray(np.clip(b, info.min, info.max), x.dtype)
                    for b in (min, max))
    return jnp.clip(x, min, max)


register_elementwise(clamp, clamp_p, _clamp_reference)


# ------------------------------------------------------------------- clip
# clip's array-bound path: max(x, min) and min(x, max), x broadcasting with
# the bound; each passes the tangent of x where x is at or inside its bound
# and the bound's outside (rules/activation.py), where maximum and minimum
# split ties.
def _clip_below_impl(x: Array, min: Array) -> Array:  # noqa: A002
    return jnp.maximum(min, x)      # jnp.clip's operand order: the same HLO


def _clip_above_impl(x: Array, max: Array) -> Array:  # noqa: A002
    return jnp.minimum(max, x)


clip_below_p = elementwise_primitive("clip_below", _clip_below_impl, family=FAMILY,
                                     operands=("x", "min"), kind="numeric")
clip_above_p = elementwise_primitive("clip_above", _clip_above_impl, family=FAMILY,
                                     operands=("x", "max"), kind="numeric")


def _static_bound(value: Any) -> bool:
    """None, or a Python / numpy number: a bound clamp takes as a param."""
    return value is None or (isinstance(value, (int, float, np.integer, np.floating))
                             and not isinstance(value, bool))


def clip(x: ArrayLike, min: ArrayLike | None = None,  # noqa: A002
         max: ArrayLike | None = None) -> Array:  # noqa: A002
    """jnp.clip's signature: min(max(x, min), max), either bound None (not
    both); when min > max the result is max.

    Number bounds are ``clamp``'s static params: the call is
    ``clamp(x, min=min, max=max)``, one clamp primitive (integers allowed:
    an integer x keeps its dtype and takes integral bounds only, where
    jnp.clip would promote it to float with a float bound).
    Array bounds (broadcasting with x, as jnp.clip) cannot be params, so they
    are operands of ``clip_below`` (max(x, min)) and then ``clip_above``
    (min(y, max)): one max and one min per element, as jnp.clip (a compare
    and a where per bound took twice its FLOPs). Both paths share clamp's
    derivative: d/dx = 1 where min <= x <= max, bounds included, else 0; an
    array bound receives the rest (d/dmin = [x < min], d/dmax = [y > max]).
    jnp.clip's own derivative splits ties at the bounds in half (maximum /
    minimum).
    """
    x = as_array("clip", "x", x)
    if min is None and max is None:
        raise ValueError(f"{op_name('clip')}: at least one of min and max must be given")
    if _static_bound(min) and _static_bound(max):
        return clamp(x, min=min, max=max)
    named = {"x": x, "min": min, "max": max}
    vals = promote("clip", {k: v for k, v in named.items() if v is not None}, "numeric")
    args = dict(zip([k for k, v in named.items() if v is not None], vals))
    broadcast_shapes("clip", {k: tuple(np.shape(v)) for k, v in args.items()})
    y = args["x"]
    if "min" in args:
        y = clip_below_p.bind(y, args["min"])
    if "max" in args:
        y = clip_above_p.bind(y, args["max"])
    return y


def _clip_reference(x: ArrayLike, min: ArrayLike | None = None,  # noqa: A002
                    max: ArrayLike | None = None) -> Array:  # noqa: A002
    """jnp.clip; number bounds as clamp's reference (an integer x keeps its dtype)."""
    if _static_bound(min) and _static_bound(max):
        return _clamp_reference(x, min=min, max=max)
    return jnp.clip(x, min, max)


register_op(OpDef(name="clip", family=FAMILY, fn=clip,
                  primitives=(clamp_p, clip_below_p, clip_above_p),
                  reference=_clip_reference, operands=("x", "min", "max")))
