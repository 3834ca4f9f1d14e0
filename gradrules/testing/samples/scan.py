"""Samples of the scan family: cumsum, cumprod, cummax along every axis
(negative ones too), reversed, over size-1 and size-0 axes; cumprod with
zeros in the input (its derivatives are exact there)."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats
from .reduction import distinct


def _cumsum(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"axis": 1}),
            Sample((floats(rng, (3, 2, 2)),), {"axis": -3, "reverse": True}),
            Sample((floats(rng, (0, 2)),), {"axis": 0})]


def _with_zeros(rng: np.random.Generator, shape: tuple[int, ...], zeros: int) -> np.ndarray:
    x = floats(rng, shape, 0.5, 1.5) * rng.choice([-1.0, 1.0], shape)
    x.flat[rng.choice(x.size, zeros, replace=False)] = 0.0
    return x


def _cumprod(rng: np.random.Generator) -> list[Sample]:
    return [Sample((_with_zeros(rng, (2, 4), 2),), {"axis": -1}),
            Sample((_with_zeros(rng, (4, 2), 3),), {"axis": 0, "reverse": True,
                                                    "exclusive": True}),
            Sample((floats(rng, (1, 0)),), {"axis": 1})]


def _cummax(rng: np.random.Generator) -> list[Sample]:
    return [Sample((distinct(rng, (2, 5)),), {"axis": 1}),
            Sample((distinct(rng, (4, 2)),), {"axis": -2, "reverse": True}),
            Sample((distinct(rng, (1, 3)),), {"axis": 0})]


def _logcumsumexp(rng: np.random.Generator) -> list[Sample]:
    """Along each axis, reversed, and a row with large entries (+-1e4)."""
    big = np.array([[-1e4, 3.0, 1e4, -2.0], [0.5, -1e4, 2.0, 1.0]])
    return [Sample((floats(rng, (2, 3)),), {"axis": 1}),
            Sample((floats(rng, (3, 2)),), {"axis": 0, "reverse": True}),
            Sample((big,), {"axis": -1})]


def _linear_recurrence(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 4)), floats(rng, (2, 4))), {"axis": -1}),
            Sample((floats(rng, (3, 2)), floats(rng, (3, 2))), {"axis": 0, "reverse": True}),
            Sample((floats(rng, (1,)), floats(rng, (1,))), {"axis": 0})]


OPINFOS = [
    OpInfo("cumsum", _cumsum, dtypes=NUMERIC_DTYPES),
    OpInfo("cumprod", _cumprod, dtypes=NUMERIC_DTYPES),
    OpInfo("cummax", _cummax, dtypes=NUMERIC_DTYPES),
    OpInfo("logcumsumexp", _logcumsumexp),
    OpInfo("linear_recurrence", _linear_recurrence),
]
