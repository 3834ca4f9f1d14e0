"""Samples of the segment family: ids in any order with repeats, an empty
segment (sum, mean), out-of-range ids (negative and too large: dropped),
trailing data axes, and zero rows; max / min on distinct values (ties and
empty segments: tests/test_segment.py)."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats, ints
from .reduction import distinct


def _segments(rng: np.random.Generator) -> list[Sample]:
    """Segment 1 empty, ids -1 and 5 dropped; a 1-D data; no rows at all."""
    return [Sample((floats(rng, (5, 2)), ints([2, 0, 2, -1, 5])), {"num_segments": 3}),
            Sample((floats(rng, (4,)), ints([1, 1, 0, 1])), {"num_segments": 2}),
            Sample((floats(rng, (0, 3)), ints([]).reshape(0)), {"num_segments": 2})]


def _extremum(rng: np.random.Generator) -> list[Sample]:
    """Every segment nonempty (an empty one is -inf, which finite differences
    cannot take: tests/test_segment.py checks it), ids -1 and 5 dropped."""
    return [Sample((distinct(rng, (5, 2)), ints([2, 0, 1, -1, 5])), {"num_segments": 3}),
            Sample((distinct(rng, (4,)), ints([1, 1, 0, 1])), {"num_segments": 2}),
            Sample((floats(rng, (0, 3)), ints([]).reshape(0)), {"num_segments": 0})]


OPINFOS = [
    OpInfo("segment_sum", _segments, dtypes=NUMERIC_DTYPES),
    OpInfo("segment_max", _extremum, dtypes=NUMERIC_DTYPES),
    OpInfo("segment_min", _extremum, dtypes=NUMERIC_DTYPES),
    OpInfo("segment_mean", _segments),
]
