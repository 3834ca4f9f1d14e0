"""Samples of the strided family: a transposed view, overlapping sliding
windows (the transpose adds the overlaps), an offset, a size-0 view."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats

DTYPES = NUMERIC_DTYPES


def _as_strided(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), (3, 2), (1, 3)), desc="float64[2, 3] viewed as its transpose"),
            Sample((floats(rng, (5,)), (3, 3), (1, 1)), desc="overlapping windows of float64[5]"),
            Sample((floats(rng, (2, 2, 2)), (2, 2), (3, 1), 1), desc="float64[2, 2, 2], offset 1"),
            Sample((floats(rng, (3,)), (0, 2), (1, 1)))]


OPINFOS = [OpInfo("as_strided", _as_strided)]
