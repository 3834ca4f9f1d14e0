"""Samples of the unary math family: each op on its domain."""

from __future__ import annotations

from . import FLOAT_DTYPES, INT_DTYPES, OpInfo, unary

_NUMERIC = FLOAT_DTYPES + INT_DTYPES[:1]

OPINFOS = [
    OpInfo("abs", unary(), dtypes=_NUMERIC),
    OpInfo("neg", unary(), dtypes=_NUMERIC),
    OpInfo("sign", unary(), dtypes=_NUMERIC),
    OpInfo("exp", unary()),
    OpInfo("exp2", unary()),
    OpInfo("expm1", unary()),
    OpInfo("log", unary(0.2, 3.0)),
    OpInfo("log2", unary(0.2, 3.0)),
    OpInfo("log10", unary(0.2, 3.0)),
    OpInfo("log1p", unary(-0.7, 3.0)),
    OpInfo("sqrt", unary(0.2, 3.0)),
    OpInfo("rsqrt", unary(0.2, 3.0)),
    OpInfo("reciprocal", unary(0.3, 3.0)),
    OpInfo("square", unary(), dtypes=_NUMERIC),
    OpInfo("sin", unary()),
    OpInfo("cos", unary()),
    OpInfo("tan", unary(-1.2, 1.2)),
    OpInfo("asin", unary(-0.8, 0.8)),
    OpInfo("acos", unary(-0.8, 0.8)),
    OpInfo("atan", unary()),
    OpInfo("sinh", unary()),
    OpInfo("cosh", unary()),
    OpInfo("tanh", unary()),
    OpInfo("asinh", unary()),
    OpInfo("acosh", unary(1.2, 3.0)),
    OpInfo("atanh", unary(-0.8, 0.8)),
]
