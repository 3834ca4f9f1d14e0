"""The numerically stable log-sum-exp pieces and the accumulation dtype,
in plain jax.numpy: one formula each, shared by the XLA lowerings
(``primitives/_fused``: softmax, cross-entropy, attention, logsumexp) and the
Pallas kernels (``pallas/``), which trace the same functions inside a kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

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
    (a NaN entry) stays NaN."""
    none = total == 0
    return jnp.where(none, empty, shift + jnp.log(jnp.where(none, 1, total)))


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


def online_softmax_finish(m: Array, total: Array, acc: Array) -> tuple[Array, Array]:
    """The end of an online softmax over key blocks: ``out = acc / total``
    (0 for a row that saw no entry) and its log-sum-exp (``-inf`` there),
    from the running max ``m``, ``total`` and the unnormalised ``acc = sum p v``."""
    seen = total > 0
    safe = jnp.where(seen, total, jnp.ones((), total.dtype))
    out = jnp.where(seen[..., None], acc / safe[..., None], jnp.zeros((), acc.dtype))
    return out, lse_from_sum(finite_or_zero(m), total, -jnp.inf)
