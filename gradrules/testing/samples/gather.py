"""Samples of the gather family: duplicate, negative and out-of-range
(clipped) indices, size-0 and size-1 axes, negative axes."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats, ints

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _gather(rng: np.random.Generator) -> list[Sample]:
    """Duplicates, a negative and an out-of-range (clipped) index, an ND
    index, a 0-D index, an empty index, a size-1 axis."""
    return [Sample((floats(rng, (4, 3)), ints([2, 0, 2, -1, 7])), {"axis": 0}),
            Sample((floats(rng, (2, 3, 2)), ints([[1, 1], [-5, 0]])), {"axis": -2}),
            Sample((floats(rng, (2, 3)), ints(2)), {"axis": 1}),
            Sample((floats(rng, (1, 2)), ints(np.zeros((0,)))), {"axis": 0})]


def _take(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), ints([[5, 0], [-1, 5]]))),
            Sample((floats(rng, (3, 2)), ints([0, 0, -3])), {"axis": 1}),
            Sample((floats(rng, (3,)), ints([2, 2, 1])), {"axis": -1})]


def _index_select(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3, 2)), ints([2, 0, 2]))),
            Sample((floats(rng, (2, 4)), ints([-1, 3, 9, 0])), {"axis": -1}),
            Sample((floats(rng, (2, 1)), ints([0, 0])), {"axis": 1})]


def _take_along_axis(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), ints([[2, 2, 0, -1], [1, 0, 5, 1]])), {"axis": 1}),
            Sample((floats(rng, (3, 2)), ints([[0, 2], [0, 2]])), {"axis": -2}),
            Sample((floats(rng, (2, 1, 3)), ints(np.zeros((2, 1, 0)))), {"axis": 2}),
            Sample((floats(rng, (4,)), ints([3, -4, 3])), {"axis": 0})]


def _embedding(rng: np.random.Generator) -> list[Sample]:
    return [Sample((ints([[1, 3], [1, 0], [-1, 9]]), floats(rng, (4, 3)))),
            Sample((ints([2, 0, 2, 1]), floats(rng, (3, 2))), {"padding_idx": 2}),
            Sample((ints(0), floats(rng, (2, 1))), {"padding_idx": -1}),
            Sample((ints(np.zeros((0,))), floats(rng, (3, 2))))]


def _c_embedding(rng: np.random.Generator) -> list[Sample]:
    """ids below, inside and above the shard (and negative ones)."""
    return [Sample((floats(rng, (3, 2)), ints([[4, 2, 5], [7, -1, 4]])),
                   {"start_index": 2, "vocab_size": 8}),
            Sample((floats(rng, (2, 3)), ints([0, 1, 1, 2]))),
            Sample((floats(rng, (1, 2)), ints(5)), {"start_index": 5})]


def _one_hot(rng: np.random.Generator) -> list[Sample]:
    return [Sample((ints([[0, 2], [3, -1]]),), {"num_classes": 3}),
            Sample((ints([1, 0, 1]),), {"num_classes": 2, "axis": 0}),
            Sample((ints(np.zeros((0,))),), {"num_classes": 4, "dtype": np.float32})]


OPINFOS = [
    OpInfo("gather", _gather),
    OpInfo("take", _take),
    OpInfo("index_select", _index_select),
    OpInfo("take_along_axis", _take_along_axis),
    OpInfo("embedding", _embedding),
    OpInfo("c_embedding", _c_embedding),
    OpInfo("one_hot", _one_hot, dtypes=()),
]
