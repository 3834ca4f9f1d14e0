"""The numerically stable log-sum-exp pieces and the accumulation dtype,
in plain jax.numpy: one formula each, shared by the XLA lowerings
(``primitives/_fused``: softmax, cross-entropy, attention, logsumexp) and the
Pallas kernels (``pallas/``), which trace the same functions inside a kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

Array = jax.Array


def acc_dtype(dtype: Any) -> np.dtype:
    """The dtype these ops accumulate in: float32 for float16/bfloat16 input,
    the input's own dtype for float32 and float64."""
    return np.dtype(jnp.promote_types(dtype, np.float32))


def finite_or_zero(x: Array) -> Array:
    """``x`` where finite, else 0: a shift that is ``-inf`` (a row with no
    entry) becomes 0, so that ``exp(s - shift)`` stays 0, never NaN."""
    return jnp.where(jnp.isfinite(x), x, jnp.zeros((), x.dtype))


def lse_from_sum(shift: Array, total: Array, empty: float) -> Array:
    """``shift + log(total)`` with ``total = sum exp(x - shift)``; ``empty``
    (0 or ``-inf``) where the total is 0 (every entry ``-inf``). A NaN total
    (a NaN entry) stays NaN. The first of ``lse_parts``."""
    return lse_parts(shift, total, empty)[0]


def lse_parts(shift: Array, total: Array, empty: float) -> tuple[Array, Array]:
    """``(lse, lse_lo)``: ``lse = lse_from_sum(shift, total, empty)`` and the
    part of ``shift + log(total)`` that rounding ``lse`` drops, so that ``lse
    + lse_lo`` is the log-sum-exp to twice the working precision (Knuth's
    TwoSum of ``shift`` and ``log(total)``; 0 where ``lse`` is not finite).

    A fused op keeps both as residuals: its derivatives need ``x - logsumexp``
    to the precision of ``x``, which the rounded ``lse`` alone loses once
    ``|lse|`` is large (float32 logits of 1e6: ``ulp = 0.06``; a row of
    ``3e38``: all of ``log(total)``). ``probs`` uses the pair."""
    none = total == 0
    r = jnp.log(jnp.where(none, 1, total))
    lse = shift + r
    r_part = lse - shift
    lo = (shift - (lse - r_part)) + (r - r_part)
    zero = jnp.zeros((), lo.dtype)
    return (jnp.where(none, empty, lse),
            jnp.where(none | ~jnp.isfinite(lse), zero, lo))


def probs(x: Array, lse: Array, lse_lo: Array) -> Array:
    """``p = exp(x - logsumexp)`` from the pair of ``lse_parts`` (already
    broadcast against ``x``): ``exp((x - lse) - lse_lo)``, where ``x - lse``
    is exact for every entry whose ``p`` is not negligible (Sterbenz)."""
    return jnp.exp((x - lse) - lse_lo)


def online_lse_step(m: Array, total: Array, x: Array) -> tuple[Array, Array, Array, Array]:
    """One block of the online (blockwise) log-sum-exp over the last axis.

    ``m`` is the running max so far (``-inf`` before any entry) and ``total =
    sum exp(x_seen - finite_or_zero(m))``. Returns the new max, the factor
    ``alpha`` that rescales what was accumulated against the old shift, the
    block's ``p = exp(x - shift)`` with the new shift, and the new total
    ``alpha total + sum(p)``. ``lse_from_sum(finite_or_zero(m), total, empty)``
    finishes it; rows that are all ``-inf`` so far keep a total of 0, no NaN.
    """
    m_new = jnp.maximum(m, jnp.max(x, -1))
    shift = finite_or_zero(m_new)
    alpha = jnp.exp(m - shift)
    p = jnp.exp(x - shift[..., None])
    return m_new, alpha, p, alpha * total + jnp.sum(p, -1)


def online_softmax_finish(m: Array, total: Array, acc: Array) -> tuple[Array, Array, Array]:
    """The end of an online softmax over key blocks: ``out = acc / total``
    (0 for a row that saw no entry) and its log-sum-exp as the pair ``(lse,
    lse_lo)`` of ``lse_parts`` (``-inf`` and 0 there), from the running max
    ``m``, ``total`` and the unnormalised ``acc = sum p v``."""
    seen = total > 0
    safe = jnp.where(seen, total, jnp.ones((), total.dtype))
    out = jnp.where(seen[..., None], acc / safe[..., None], jnp.zeros((), acc.dtype))
    return (out, *lse_parts(finite_or_zero(m), total, -jnp.inf))


def rounded_below_acc(dtype: Any) -> bool:
    """Whether a result stored in ``dtype`` is rounded below the precision
    these ops accumulate in (float16, bfloat16: ``acc_dtype`` is wider), so
    that a derivative should not take it back as a residual."""
    return acc_dtype(dtype) != np.dtype(dtype)


def gated_clamp(gate: Array, up: Array, limit: float | None
                ) -> tuple[Array, Array, Array | None, Array | None]:
    """The swigluLimit clamp of silu_gated: ``(min(gate, limit), clip(up,
    -limit, limit), gate <= limit, |up| <= limit)``, the masks where each clamp
    passes derivatives (inside its range, bounds included); without a limit
    the operands and None masks."""
    if limit is None:
        return gate, up, None, None
    return (jnp.minimum(gate, limit), jnp.clip(up, -limit, limit), gate <= limit,
            jnp.abs(up) <= limit)


def silu_and_slope(x: Array) -> tuple[Array, Array]:
    """``silu(x) = x s`` and ``silu'(x) = s (1 + x sigmoid(-x))``, ``s =
    sigmoid(x)`` (``sigmoid(-x)``, not ``1 - s``, which cancels for large x)."""
    s = jax.nn.sigmoid(x)
    return x * s, s * (x * jax.nn.sigmoid(-x) + 1)


# Numerical Recipes' erfcc: a Chebyshev fit of erfc(z) exp(z**2) in t = 1 / (1
# + z / 2), relative error below 1.2e-7 for every z >= 0
_ERFC_COEFFICIENTS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                      0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def erfc_from_exp(x: Array) -> Array:
    """``erfc(x)`` from exp and arithmetic alone, to a relative error below
    1.2e-7: ``t exp(-z**2 + P(t))`` for ``z = |x| >= 0``, ``t = 1 / (1 + z /
    2)``, and ``2 - erfc(z)`` for x < 0 (Numerical Recipes' erfcc). For
    kernels whose compiler has no erf (Pallas Triton)."""
    z = jnp.abs(x)
    t = 1 / (1 + 0.5 * z)
    poly = jnp.zeros_like(t)
    for c in reversed(_ERFC_COEFFICIENTS[1:]):
        poly = (poly + c) * t
    y = t * jnp.exp(poly + _ERFC_COEFFICIENTS[0] - z * z)
    return jnp.where(x >= 0, y, 2 - y)


GELU_A = 0.044715                            # u(x) = sqrt(2 / pi) (x + GELU_A x**3)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
# |x| beyond which gelu' is exactly 0 or 1 in float64 (Phi(-40) and
# sigmoid(-2 u(25)) are below the smallest subnormal), by form (approximate)
GELU_SATURATION = {False: 40.0, True: 25.0}


def gelu_two_u(x: Array) -> Array:
    """The tanh form's ``2 u(x) = 2 sqrt(2 / pi) (x + a x**3) = x (k + k a
    x**2)``, ``k = 2 sqrt(2 / pi)`` (the constants folded: four operations)."""
    k = 2.0 * SQRT_2_OVER_PI
    return x * (k + (k * GELU_A) * (x * x))


def gelu_cdf(x: Array, approximate: bool, erfc: Callable[[Array], Array] = lax.erfc) -> Array:
    """The ``c(x)`` of ``gelu(x) = x c(x)``: ``Phi(x) = erfc(-x / sqrt 2) / 2``
    (exact form), ``sigmoid(2 u(x)) = (1 + tanh u) / 2`` (tanh form), both
    without the cancellation of ``1 + erf`` / ``1 + tanh`` for x << 0."""
    if approximate:
        return jax.nn.sigmoid(gelu_two_u(x))
    return erfc(x * -math.sqrt(0.5)) * 0.5


def gelu_and_slope(x: Array, approximate: bool,
                   erfc: Callable[[Array], Array] = lax.erfc) -> tuple[Array, Array]:
    """``gelu(x) = x c(x)`` (``gelu_cdf``) and ``gelu'(x)``: ``Phi(x) + x
    exp(-x**2 / 2) / sqrt(2 pi)`` (exact form), ``c + 2 x c sigmoid(-2 u)
    u'(x)`` (tanh form); the slope is its limit ``[x > 0]`` beyond
    ``GELU_SATURATION`` (no inf * 0 there)."""
    c = gelu_cdf(x, approximate, erfc)
    if approximate:
        du = (1.0 + 3.0 * GELU_A * x * x) * (2.0 * SQRT_2_OVER_PI)
        slope = c + x * c * jax.nn.sigmoid(-gelu_two_u(x)) * du
    else:
        z = x * -math.sqrt(0.5)                 # erfc's argument: XLA shares its exp(-z**2)
        slope = c + x * jnp.exp(-(z * z)) * (1.0 / math.sqrt(2.0 * math.pi))
    big = jnp.abs(x) > GELU_SATURATION[approximate]
    return x * c, jnp.where(big, (x > 0).astype(x.dtype), slope)


def gate_and_slope(activation: str, x: Array, *, approximate: bool = False,
                   erfc: Callable[[Array], Array] = lax.erfc) -> tuple[Array, Array]:
    """A gated MLP's ``act(x)`` and ``act'(x)``: ``activation`` "silu"
    (``silu_and_slope``) or "gelu" (``gelu_and_slope``, ``approximate`` its
    tanh form)."""
    if activation == "silu":
        return silu_and_slope(x)
    return gelu_and_slope(x, approximate, erfc)


def rope_inv_freq(head_dim: int, theta: float) -> np.ndarray:
    """Rope's frequencies ``theta ** (-2 i / head_dim)``, ``i < head_dim / 2`` (float64)."""
    return theta ** (-np.arange(0, head_dim // 2, dtype=np.float64) * 2.0 / head_dim)


def rope_rotate(x1: Array, x2: Array, cos: Array, sin: Array) -> tuple[Array, Array]:
    """Each pair ``(x1, x2)`` rotated by the angle of ``cos``, ``sin``:
    ``(x1 cos - x2 sin, x2 cos + x1 sin)``."""
    return x1 * cos - x2 * sin, x2 * cos + x1 * sin


def outside(labels: Array, vocab: int) -> Array:
    """Labels outside [0, vocab) (ignore_index may be among them)."""
    return (labels < 0) | (labels >= vocab)


def token_mask(labels: Array, vocab: int, ignore_index: int) -> tuple[Array, Array]:
    """Cross-entropy's (valid, bad) tokens: not ignored; not ignored and with
    a label outside [0, vocab)."""
    valid = labels != ignore_index
    return valid, valid & outside(labels, vocab)


def masked_tokens(v: Array, labels: Array, vocab: int, ignore_index: int) -> Array:
    """``v`` on valid tokens, 0 on ignored ones, NaN where the label is bad
    (``where(valid, ...)`` masks the ignored tokens first, so ``outside``
    needs no ``valid &`` of its own)."""
    return jnp.where(labels != ignore_index, jnp.where(outside(labels, vocab), jnp.nan, v),
                     0).astype(v.dtype)


def ce_token_value(lse: Array, other: Array, picked: Array, mean: Array | None, *,
                   label_smoothing: float, z_loss: float, tangent: bool) -> Array:
    """A token's cross-entropy before masking, ``lse + z lse**2 - (1 - eps)
    picked - eps mean`` (``tangent=False``; ``other`` is ``lse_lo``, the
    rounding of ``lse`` (``lse_parts``), added last, to first order, so that
    a loss near 0 beside a large ``lse`` keeps its digits), or its tangent
    ``d_lse (1 + 2 z lse) - (1 - eps) picked - eps mean`` (``tangent=True``;
    ``other`` is ``d_lse``; picked and mean of the logits' tangent)."""
    scale = (1 + 2 * z_loss * lse) if z_loss else 1
    v = other * scale if tangent else (lse + z_loss * lse * lse if z_loss else lse)
    v = v - (1 - label_smoothing) * picked
    if label_smoothing:
        v = v - label_smoothing * mean
    return v if tangent else v + other * scale


def ce_dlogits(p: Array, onehot: Array, lse: Array, c: Array, g_lse: Array, vocab: int, *,
               label_smoothing: float, z_loss: float) -> Array:
    """The cotangent of a block of logits ``[..., cols]`` with probabilities
    ``p``: ``c (p (1 + 2 z lse) - (1 - eps) onehot - eps / V) + g_lse p``,
    with ``c`` each token's masked loss cotangent."""
    scale = (1 + 2 * z_loss * lse)[..., None] if z_loss else 1.0
    d = p * scale - (1 - label_smoothing) * onehot
    if label_smoothing:
        d = d - label_smoothing / vocab
    return c[..., None] * d + g_lse[..., None] * p
