"""Samples of the reduction family."""

from __future__ import annotations

import numpy as np

from . import FLOAT_DTYPES, INT_DTYPES, OpInfo, Sample, floats


def _sum(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {}),
            Sample((floats(rng, (2, 3, 4)),), {"axis": -1}),
            Sample((floats(rng, (2, 3, 4)),), {"axis": (0, 2), "keepdims": True}),
            Sample((floats(rng, (0, 3)),), {"axis": 0})]


OPINFOS = [OpInfo("sum", _sum, dtypes=FLOAT_DTYPES + INT_DTYPES[:1], dtype_tol=4.0)]
