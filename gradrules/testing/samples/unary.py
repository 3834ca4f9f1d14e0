"""Samples of the unary math family: each op on its domain."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats, unary_samples


def _cbrt(rng: np.random.Generator) -> list[Sample]:
    """Both signs, away from the vertical tangent at 0."""
    x = floats(rng, (2, 3), 0.3, 2.0) * rng.choice([-1.0, 1.0], (2, 3))
    return [Sample((x,)), Sample((np.array(-0.7),))]


def _sinc(rng: np.random.Generator) -> list[Sample]:
    """Both signs, 0 itself and points on both sides of where the derivative's
    Taylor series takes over (|x| = 0.105 in float64)."""
    return [Sample((floats(rng, (2, 3)),)),
            Sample((np.array([0.0, -3e-3, 0.08, 0.13, -2.5]),), desc="float64[5] with 0")]

OPINFOS = [
    OpInfo("abs", unary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("neg", unary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("sign", unary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("exp", unary_samples()),
    OpInfo("exp2", unary_samples()),
    OpInfo("expm1", unary_samples()),
    OpInfo("log", unary_samples(0.2, 3.0)),
    OpInfo("log2", unary_samples(0.2, 3.0)),
    OpInfo("log10", unary_samples(0.2, 3.0)),
    OpInfo("log1p", unary_samples(-0.7, 3.0)),
    OpInfo("sqrt", unary_samples(0.2, 3.0)),
    OpInfo("rsqrt", unary_samples(0.2, 3.0)),
    OpInfo("cbrt", _cbrt),
    OpInfo("reciprocal", unary_samples(0.3, 3.0)),
    OpInfo("square", unary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("sin", unary_samples()),
    OpInfo("cos", unary_samples()),
    OpInfo("tan", unary_samples(-1.2, 1.2)),
    OpInfo("asin", unary_samples(-0.8, 0.8)),
    OpInfo("acos", unary_samples(-0.8, 0.8)),
    OpInfo("atan", unary_samples()),
    OpInfo("sinh", unary_samples()),
    OpInfo("cosh", unary_samples()),
    OpInfo("tanh", unary_samples()),
    OpInfo("asinh", unary_samples()),
    OpInfo("acosh", unary_samples(1.2, 3.0)),
    OpInfo("atanh", unary_samples(-0.8, 0.8)),
    OpInfo("sinc", _sinc),
]
