"""Samples of convert_element_type and copy."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats, unary_samples


def _convert(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3,)),), {"dtype": np.float64}),
            Sample((floats(rng, (2, 2)),), {"dtype": np.int32}),
            Sample((np.arange(4, dtype=np.int32),), {"dtype": np.float64})]


OPINFOS = [OpInfo("convert_element_type", _convert, dtypes=NUMERIC_DTYPES),   # any dtype
           OpInfo("copy", unary_samples(), dtypes=NUMERIC_DTYPES)]
