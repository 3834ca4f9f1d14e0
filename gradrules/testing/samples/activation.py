"""Samples of the activation family: random points (never on a kink), large
|x| for the smooth ops, and the parameter variants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, chain, floats, unary_samples

Make = Callable[[np.random.Generator], list[Sample]]
LARGE = np.array([-800.0, -40.0, 35.0, 700.0])   # exp(|x|) overflows float64 beyond 709


def _one(x: np.ndarray | None = None, **kwargs: Any) -> Make:
    """One sample: ``x`` (a copy) or, for None, a (3,) draw on [-2, 2)."""
    def make(rng: np.random.Generator) -> list[Sample]:
        return [Sample((rng.uniform(-2.0, 2.0, (3,)) if x is None else x.copy(),), dict(kwargs))]
    return make


def _gelu(rng: np.random.Generator) -> list[Sample]:
    """Both forms, each at large |x| (where the derivative saturates) too."""
    mixed = np.concatenate([rng.uniform(-4.0, 4.0, (2,)), LARGE[::2]])
    return unary_samples(-4.0, 4.0, ((2, 3), (0, 2)))(rng) + [
        Sample((LARGE.copy(),)), Sample((mixed,), {"approximate": True})]


_SMOOTH = unary_samples(-4.0, 4.0)
_SMALL = unary_samples(-3.0, 3.0, ((2, 3), ()))
BIG = np.array([-1e4, -50.0, 40.0, 1e4])   # float32 +-1e4: finite values and derivatives


def _away_from_zero(rng: np.random.Generator) -> list[Sample]:
    """Draws on [-3, 3) at least 0.05 away from the kink at 0 (elu, celu,
    selu), shapes (2, 3) and (), then the large |x|."""
    out = _SMALL(rng)
    for s in out:
        x = s.args[0]
        s.args = (np.where(np.abs(x) < 0.05, x + 0.2, x),)
    return out + [Sample((BIG.copy(),))]


def _clip(rng: np.random.Generator) -> list[Sample]:
    """Number bounds (clamp), and array bounds that broadcast (where), every x
    at least 0.05 from a bound."""
    x = rng.choice([-1.5, -0.7, -0.2, 0.3, 0.8, 1.6], (2, 3)) + floats(rng, (2, 3), -0.02, 0.02)
    lo = np.array([-1.0, -0.45, 0.05])
    hi = np.array([[0.55], [1.2]])
    return [Sample((x,), {"min": -1.0, "max": 1.0}), Sample((x.copy(), lo)),
            Sample((x.copy(), lo.copy(), hi))]

OPINFOS = [
    OpInfo("sigmoid", chain(_SMOOTH, _one(LARGE))),
    OpInfo("log_sigmoid", chain(_SMOOTH, _one(LARGE))),
    OpInfo("relu", unary_samples(-2.0, 2.0), dtypes=NUMERIC_DTYPES),
    OpInfo("leaky_relu", chain(unary_samples(-2.0, 2.0), _one(negative_slope=0.2))),
    OpInfo("hardtanh", chain(unary_samples(-2.0, 2.0), _one(min_val=-0.5, max_val=1.5))),
    OpInfo("hardswish", unary_samples(-4.0, 4.0)),
    OpInfo("silu", chain(_SMOOTH, _one(LARGE))),
    OpInfo("gelu", _gelu),
    OpInfo("softplus", chain(unary_samples(-4.0, 4.0, ((2, 3), ())), _one(LARGE),
                             _one(beta=2.0, threshold=3.0))),
    OpInfo("elu", chain(_away_from_zero, _one(alpha=0.5))),
    OpInfo("selu", _away_from_zero),
    OpInfo("celu", chain(_away_from_zero, _one(alpha=2.0))),
    OpInfo("mish", chain(_SMALL, _one(BIG))),
    OpInfo("clamp", chain(unary_samples(-2.0, 2.0, ((2, 3),), min=-1.0, max=1.0),
                          _one(min=0.0), _one(max=1.0)), dtypes=NUMERIC_DTYPES),
    OpInfo("clip", _clip, dtypes=NUMERIC_DTYPES),
]
