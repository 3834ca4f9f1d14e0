"""Samples of the unary math family: each op on its domain."""

from __future__ import annotations

from . import NUMERIC_DTYPES, OpInfo, unary_samples

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
]
