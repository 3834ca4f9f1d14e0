"""Samples of the softmax family: last and leading axes, a size-0 dim, a
single-entry axis and, for softmax, rows with -inf entries and a row that is
all -inf (log_softmax is -inf there, where finite differences do not apply:
tests/test_softmax.py covers it)."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _rows(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),)),
            Sample((floats(rng, (3, 2, 4)),), {"axis": 1}),
            Sample((floats(rng, (0, 3)),), {"axis": -1}),
            Sample((floats(rng, (2, 1)),), {"axis": -1})]


def _with_inf(rng: np.random.Generator) -> list[Sample]:
    x = floats(rng, (3, 4))
    x[0, 1] = -np.inf
    x[2, :] = -np.inf
    return _rows(rng)[:2] + [Sample((x,), {"axis": -1}, desc="float64[3, 4] with -inf, "
                                    "one row all -inf")]


OPINFOS = [OpInfo("softmax", _with_inf), OpInfo("log_softmax", _rows)]
