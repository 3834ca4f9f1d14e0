"""Numerics at the edges (issue 13): ops with an exp, log, division, sqrt or
a logistic at float32 and bfloat16 extremes (+-1e4, +-3e38, -inf entries,
constant rows, arguments where a closed form cancels), against float64
maths: the value, the gradient and the forward-mode tangent are finite and
right wherever the maths is. One table of cases; each case is one jitted
program (value, gradient and tangent together), so the whole table compiles
a few dozen small programs.

A case's ``fn`` maps its operands to an output that is either elementwise in
them (``elementwise=True``: the expected derivative of each operand is
elementwise, and the tangent along ones is their sum) or a scalar (the
expected gradient of each operand; the tangent along ones is the sum of
all). Expected values come from numpy / scipy in float64 on the operands
rounded to the case's dtype (where float64 itself would round the maths
away, as log n beside 3e38, the exact closed form is written out)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pytest
import scipy.special as sp

import jax
import jax.numpy as jnp

import gradrules as gr
from gradrules.testing.samples.parallel import over_vocab_shards

TINY = 1e-37        # below this an expected value may be a flushed subnormal
RTOL = {"float32": 2e-5, "bfloat16": 2e-2}


@dataclass(frozen=True)
class Edge:
    """One edge case: ``fn(*operands)`` at ``dtype``; ``value`` and ``grads``
    map the float64 operands (already rounded to ``dtype``) to the expected
    output (None: not checked, the maths overflows the dtype in a way no
    formula keeps) and the expected derivative of each operand."""

    name: str
    fn: Callable[..., Any]
    operands: tuple[tuple[float, ...], ...]
    dtype: str
    value: Callable[..., Any] | None
    grads: Callable[..., tuple[Any, ...]]
    elementwise: bool = True


def _erfcx_slope(x: np.ndarray) -> np.ndarray:
    """erfcx'(x) by central differences of scipy's erfcx (relative step 1e-6:
    1e-10 relative error), independent of the rule's closed form and series."""
    h = np.abs(x) * 1e-6
    return (sp.erfcx(x + h) - sp.erfcx(x - h)) / (2 * h)


def _softmax(x: np.ndarray) -> np.ndarray:
    """Normalised by the maximum: 1/n for a row of 3e38, where exp(x - lse)
    is 1 even in float64 (3e38 + log n rounds to 3e38)."""
    e = np.exp(x - np.max(x))
    return e / e.sum()


def _silu_slope(x: np.ndarray) -> np.ndarray:
    s = sp.expit(x)
    return s * (1 + x * sp.expit(-x))


def _at(dtypes: tuple[str, ...], name: str, fn: Callable[..., Any],
        operands: tuple[tuple[float, ...], ...], value: Callable[..., Any] | None,
        grads: Callable[..., tuple[Any, ...]], elementwise: bool = True) -> list[Edge]:
    return [Edge(f"{name}-{dt}", fn, operands, dt, value, grads, elementwise) for dt in dtypes]


BOTH = ("float32", "bfloat16")
CE_LABELS = np.array([0.1, 0.6, 0.2, 0.1])
CE_LABEL = 1
BIG_ROW = (1e6, 1.0000025e6, 0.999992e6, 1e6)
CROSS_ENTROPIES = {
    "cross_entropy": lambda x: gr.cross_entropy(x[None], jnp.asarray([CE_LABEL])),
    "fused_linear_cross_entropy": lambda x: gr.fused_linear_cross_entropy(
        x[None], jnp.eye(4, dtype=x.dtype), jnp.asarray([CE_LABEL])),
    "vocab_parallel_cross_entropy": lambda x: over_vocab_shards(
        gr.vocab_parallel_cross_entropy)(x[None], jnp.asarray([CE_LABEL])),
}


def _ce_value(x: np.ndarray) -> float:
    """``logsumexp(x) - x[label]``, the shift taken out first (float64 would
    round log 4 away beside 3e38)."""
    return float(np.log(np.sum(np.exp(x - x.max()))) + (x.max() - x[CE_LABEL]))


# attention [B, S, H, D] = [1, 4, 1, 2] with a bias [1, 1, 4, 4], scale 1/2,
# summed against fixed weights; the reference is float64 jax.nn.softmax
ATTENTION_SHAPE, ATTENTION_SCALE = (1, 4, 1, 2), 0.5
ATTENTION_W = np.array([0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 1.0, -2.0])
# scores of about 1e6, exact in float32 (q, k integers, the bias in quarters)
ATTENTION_Q = (1.0, -1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 0.0)
ATTENTION_K = (1.0, 1.0, -1.0, 0.0, 0.0, -1.0, 1.0, -1.0)
ATTENTION_V = (0.3, -1.2, 0.7, 2.0, -0.5, 0.9, 1.6, -0.4)
ATTENTION_1E6 = tuple(1e6 + m / 4 for m in (0, 3, -2, 1, -4, 2, 0, -1, 5, -3, 1, 0, 2, 2, -1, 4))


def _attention_sum(q: Any, k: Any, v: Any, bias: Any, attention: Callable[..., Any]) -> Any:
    """``sum(W * attention(q, k, v, bias))`` of the flat operands."""
    q, k, v = (jnp.reshape(x, ATTENTION_SHAPE) for x in (q, k, v))
    out = attention(q, k, v, jnp.reshape(bias, (1, 1, 4, 4)))
    return jnp.sum(out * jnp.asarray(ATTENTION_W, out.dtype).reshape(ATTENTION_SHAPE))


def _gr_attention(q: Any, k: Any, v: Any, bias: Any) -> Any:
    return gr.attention(q, k, v, bias=bias, scale=ATTENTION_SCALE)


def _softmax_attention(q: Any, k: Any, v: Any, bias: Any) -> Any:
    """Attention in float64 from jax.nn.softmax (which jax.nn's own
    dot_product_attention takes in float32)."""
    s = ATTENTION_SCALE * jnp.einsum("bqhd,bkhd->bhqk", q, k) + bias
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)


@jax.jit
def _attention_reference(*ops: np.ndarray) -> Any:
    return _attention_sum(*(jnp.asarray(x, jnp.float64) for x in ops), _softmax_attention)


_attention_grads = jax.jit(jax.grad(_attention_reference, argnums=(0, 1, 2, 3)))


CASES = [
    # expm1' = exp(x), not expm1 + 1 (0 where expm1 rounds to -1)
    *_at(BOTH, "expm1", gr.expm1, ((-20.0, -40.0, 1e-3, 5.0),), np.expm1,
         lambda x: (np.exp(x),)),
    # bfloat16 exp2 in float32: 2**20 is a bfloat16 number
    *_at(BOTH, "exp2", gr.exp2, ((20.0, -20.0, 3.5, 100.0),), np.exp2,
         lambda x: (np.log(2.0) * np.exp2(x),)),
    # erfcx' = 2 x erfcx - 2/sqrt(pi) cancels: the asymptotic series beyond 12
    *_at(BOTH, "erfcx", gr.erfcx, ((5.0, 11.0, 13.0, 20.0, 88.0, 1e4, 1e30, 3e38),),
         sp.erfcx, lambda x: (_erfcx_slope(x),)),
    # the scaled Bessel functions' derivatives cancel: float32 for bfloat16
    *_at(("bfloat16",), "bessel_i0e", gr.bessel_i0e, ((20.0, -100.0, 0.5),), sp.i0e,
         lambda x: (sp.i1e(x) - np.sign(x) * sp.i0e(x),)),
    *_at(("bfloat16",), "bessel_i1e", gr.bessel_i1e, ((20.0, -100.0, 0.5),), sp.i1e,
         lambda x: (sp.i0e(x) - sp.i1e(x) * (np.sign(x) + 1 / x),)),
    # the variance of a constant row of 3e38 is 0 with derivative 0 (its
    # mean(x) overflows; var's tangent centres at var_mean's mean)
    *_at(BOTH, "var-constant", gr.var, ((3e38,) * 4,), lambda x: 0.0,
         lambda x: (np.zeros(4),), elementwise=False),
    *_at(BOTH, "std-constant", gr.std, ((3e38,) * 4,), lambda x: 0.0,
         lambda x: (np.zeros(4),), elementwise=False),
    # var_mean's mean in float32 for bfloat16 (x - first rounded in bfloat16)
    *_at(("bfloat16",), "var_mean-mean", lambda x: gr.var_mean(x)[1],
         ((1e4, -1e4, 0.0, 1.0),), np.mean, lambda x: (np.full(4, 0.25),), elementwise=False),
    # prod's derivative where another entry is 0 and the rest overflows: 0
    *_at(BOTH, "prod-zero", gr.prod, ((3e38, -3e38, 1.0, 0.0),), None,
         lambda x: (np.array([0.0, 0.0, 0.0, x[0] * x[1] * x[2]]),), elementwise=False),
    # logcumsumexp: weights exp(z - logcumsumexp(z)), z = x - max, in float32:
    # equal rows weigh 1/n though out rounds back to x
    *_at(("float32",), "logcumsumexp-3e38", lambda x: gr.logcumsumexp(x, axis=0)[-1],
         ((3e38,) * 4,), lambda x: x[0], lambda x: (_softmax(x),), elementwise=False),
    *_at(("bfloat16",), "logcumsumexp-1e4", lambda x: gr.logcumsumexp(x, axis=0)[-1],
         ((1e4,) * 4,), lambda x: x[0] + np.log(4.0), lambda x: (_softmax(x),),
         elementwise=False),
    *_at(("bfloat16",), "logcumsumexp-reverse", lambda x: gr.logcumsumexp(
        x, axis=0, reverse=True)[0], ((-1e4,) * 4,), lambda x: x[0] + np.log(4.0),
        lambda x: (_softmax(x),), elementwise=False),
    *_at(BOTH, "logcumsumexp-inf", lambda x: gr.logcumsumexp(x, axis=0)[-1],
         ((-np.inf, 0.0, 1.0, 2.0),), lambda x: np.log(np.exp(x).sum()),
         lambda x: (_softmax(x),), elementwise=False),
    # softmax_cross_entropy: a logit of -3e38 beside 3e38 is not masked (its
    # log-probability overflows to -inf; only a -inf logit is left out)
    *_at(BOTH, "softmax_cross_entropy", lambda x: gr.softmax_cross_entropy(
        x, jnp.asarray(CE_LABELS, x.dtype)), ((3e38, -3e38, 1.0, 0.0),),
        lambda x: np.inf, lambda x: (_softmax(x) - CE_LABELS,), elementwise=False),
    # the gated backward forms up act'(gate) before the cotangent: 0 where
    # act' is 0 and the cotangent times up overflows
    *_at(BOTH, "silu_gated", lambda g, u: gr.silu_gated(g, u) * 2.0,
         ((-3e38, 2.0), (-3e38, -3e38)), lambda g, u: 2.0 * g * sp.expit(g) * u,
         lambda g, u: (2.0 * u * _silu_slope(g), 2.0 * g * sp.expit(g))),
    # the cross-entropies differentiate through the log-sum-exp pair (lse
    # and its rounding): p sums to 1 at logits of 1e6 (ulp 0.06) and 3e38
    *[case for row in (BIG_ROW, (3e38,) * 4) for name, fn in CROSS_ENTROPIES.items()
      for case in _at(BOTH, f"{name}-{row[0]:.0e}", fn, (row,), _ce_value,
                      lambda x: (_softmax(x) - np.eye(4)[CE_LABEL],), elementwise=False)],
    # attention's derivatives take p = exp((s - lse) - lse_lo), the log-sum-exp
    # and its rounding: p sums to 1 at scores of 1e6 (ulp 0.06) and in a row
    # of identical scores of 3e38 (where lse rounds log 4 away)
    *_at(("float32",), "attention-1e6", partial(_attention_sum, attention=_gr_attention),
         (ATTENTION_Q, ATTENTION_K, ATTENTION_V, ATTENTION_1E6), _attention_reference,
         _attention_grads, elementwise=False),
    *_at(("float32",), "attention-3e38", partial(_attention_sum, attention=_gr_attention),
         (ATTENTION_V, ATTENTION_Q, ATTENTION_K, (3e38,) * 16), _attention_reference,
         _attention_grads, elementwise=False),
]


def _run(case: Edge) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """The output, each operand's gradient (of the output's sum, in float32)
    and the tangent along ones, in one jitted program, as float64."""
    ops = [jnp.asarray(np.array(o), case.dtype) for o in case.operands]
    argnums = tuple(range(len(ops)))

    def program(*args: Any) -> tuple[Any, Any, Any]:
        total = lambda *a: jnp.sum(case.fn(*a).astype(jnp.float32))  # noqa: E731
        grads = jax.grad(total, argnums=argnums)(*args)
        tangent = jax.jvp(case.fn, args, tuple(jnp.ones_like(a) for a in args))[1]
        return case.fn(*args), grads, tangent

    out, grads, tangent = jax.jit(program)(*ops)
    as64 = lambda a: np.asarray(jnp.asarray(a).astype(jnp.float64))  # noqa: E731
    return as64(out), [as64(g) for g in grads], as64(tangent)


def _close(got: np.ndarray, want: Any, dtype: str, what: str, scale: Any = 0.0) -> None:
    """``got`` is ``want`` rounded to ``dtype`` (infinite where it overflows
    the dtype), within the dtype's relative tolerance (of ``scale`` too, for
    a sum of terms that cancel); NaN never passes."""
    with np.errstate(over="ignore"):          # rounding to the dtype may overflow: inf
        want = np.asarray(jnp.asarray(np.asarray(want, np.float64), dtype).astype(jnp.float64))
    assert not np.isnan(got).any(), f"{what}: NaN in {got}"
    rtol = RTOL[dtype]
    with np.errstate(invalid="ignore"):
        ok = (np.isinf(want) & (got == want)) | (
            np.abs(got - want) <= rtol * np.abs(want) + np.maximum(TINY, rtol * scale))
    assert ok.all(), f"{what}: got {got}, want {want}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_edge_values_and_derivatives(case: Edge) -> None:
    exact = [np.asarray(jnp.asarray(np.array(o), case.dtype).astype(jnp.float64))
             for o in case.operands]
    out, grads, tangent = _run(case)
    if case.value is not None:
        _close(out, case.value(*exact), case.dtype, "value")
    want = [np.asarray(g, np.float64) for g in case.grads(*exact)]
    for i, (got, w) in enumerate(zip(grads, want)):
        _close(got, w, case.dtype, f"gradient of operand {i}")
    finite = [np.where(np.isfinite(w), np.abs(w), 0.0) for w in want]
    if case.elementwise:     # per element: the sum over operands, and its size
        along_ones, scale = sum(want), sum(finite)
    else:
        along_ones, scale = sum(np.sum(w) for w in want), sum(np.sum(f) for f in finite)
    _close(tangent, along_ones, case.dtype, "tangent along ones", scale)


@pytest.mark.parametrize("fn", [lambda v: gr.logsumexp(v, axis=1),
                                lambda v: gr.logcumsumexp(v, axis=1)],
                         ids=["logsumexp", "logcumsumexp"])
def test_max_normalised_derivatives_over_an_empty_axis(fn) -> None:
    """The shift by the maximum has nothing to take the maximum of: the
    tangent over a size-0 axis is 0 (logsumexp's value there is -inf)."""
    x = jnp.zeros((2, 0), jnp.float32)
    out, tangent = jax.jit(lambda v: jax.jvp(fn, (v,), (v + 1,)))(x)
    np.testing.assert_array_equal(tangent, np.zeros(np.shape(out)))
    assert jax.jit(jax.grad(lambda v: jnp.sum(fn(v))))(x).shape == (2, 0)
