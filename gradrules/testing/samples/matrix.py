"""Samples of the matrix family: square and non-square matrices, offsets
above, below and past the edge (an empty diagonal), stacks of matrices,
other axis pairs, a size-0 axis."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _triangle(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3, 4)),)), Sample((floats(rng, (2, 3, 3)), -1)),
            Sample((floats(rng, (4, 2)),), {"k": 1})]


def _diagonal(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3, 4)),), {"offset": 1}),
            Sample((floats(rng, (2, 3, 4)), -1, 2, 0)),
            Sample((floats(rng, (2, 3)),), {"offset": 5})]


def _diag(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3,)),)), Sample((floats(rng, (2,)), -2)),
            Sample((floats(rng, (3, 4)), 1))]


def _trace(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3, 4)),)), Sample((floats(rng, (2, 3, 4)), 1, 2, 0)),
            Sample((floats(rng, (2, 3)),), {"offset": -1}),
            Sample((floats(rng, (0, 2)),))]


OPINFOS = [
    OpInfo("tril", _triangle),
    OpInfo("triu", _triangle),
    OpInfo("diagonal", _diagonal),
    OpInfo("diag", _diag),
    OpInfo("trace", _trace),
]
