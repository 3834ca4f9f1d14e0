"""Samples of the slicing family: strides, negative axes and indices,
size-0 and size-1 axes, starts that are clipped so the block fits."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats, ints

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _slice(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (4, 3)),), {"start": (1, 0), "limit": (4, 2)}),
            Sample((floats(rng, (5, 3)),), {"start": (0, 1), "limit": (5, 3),
                                            "strides": (2, 3)}),
            Sample((floats(rng, (2, 0)),), {"start": (1, 0), "limit": (1, 0)})]


def _row_slice(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3, 4)),), {"rows": 3, "cols": 4, "row_index": 2}),
            Sample((floats(rng, (1, 2)),), {"rows": 1, "cols": 2, "row_index": 0})]


def _select(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"axis": 1, "index": -1}),
            Sample((floats(rng, (3, 1, 2)),), {"axis": -2, "index": 0}),
            Sample((floats(rng, (4,)),), {"axis": 0, "index": 2})]


def _dynamic_slice(rng: np.random.Generator) -> list[Sample]:
    """A start that is clipped so the block fits, a negative start."""
    return [Sample((floats(rng, (4, 3)), ints([1, 2])), {"slice_sizes": (2, 2)}),
            Sample((floats(rng, (5,)), ints([-2])), {"slice_sizes": (1,)}),
            Sample((floats(rng, (3, 2)), ints([2, 0])), {"slice_sizes": (0, 2)})]


def _dynamic_update_slice(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (4, 3)), floats(rng, (2, 2)), ints([3, 1]))),
            Sample((floats(rng, (5,)), floats(rng, (1,)), ints([-1]))),
            Sample((floats(rng, (2, 3)), floats(rng, (2, 0)), ints([0, 1])))]


def _split(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (6, 2)),), {"indices_or_sections": 3}),
            Sample((floats(rng, (2, 5)),), {"indices_or_sections": (1, 1, 4), "axis": -1}),
            Sample((floats(rng, (3,)),), {"indices_or_sections": 1})]


OPINFOS = [
    OpInfo("slice", _slice),
    OpInfo("row_slice", _row_slice),
    OpInfo("select", _select),
    OpInfo("dynamic_slice", _dynamic_slice),
    OpInfo("dynamic_update_slice", _dynamic_update_slice),
    OpInfo("split", _split),
]
