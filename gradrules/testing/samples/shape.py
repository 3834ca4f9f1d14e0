"""Samples of the shape family."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _reshape(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), (3, 2))), Sample((floats(rng, (2, 3)), (-1,))),
            Sample((floats(rng, (6,)), (1, 2, 3))), Sample((floats(rng, (0, 2)), (2, 0)))]


def _transpose(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), (1, 0))), Sample((floats(rng, (2, 3, 4)), (2, 0, 1))),
            Sample((floats(rng, (2, 3, 1)), (-1, 0, 1)))]


def _moveaxis(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3, 4)), 0, -1)),
            Sample((floats(rng, (2, 3, 1)), (0, 1), (2, 0)))]


def _broadcast_in_dim(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3,)), (2, 3), (1,))),
            Sample((floats(rng, (2, 1)), (2, 4, 3), (0, 2))),
            Sample((floats(rng, ()), (2,), ()))]


def _broadcast_to(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3,)), (2, 3))), Sample((floats(rng, (2, 1)), (3, 2, 4))),
            Sample((floats(rng, ()), (0, 2)))]


def _expand_dims(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"axis": 0}),
            Sample((floats(rng, (2, 3)),), {"axis": -1}),
            Sample((floats(rng, (2,)),), {"axis": (0, 2)})]


def _squeeze(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 1, 3)),), {"axis": 1}),
            Sample((floats(rng, (1, 2, 1)),), {"axis": None}),
            Sample((floats(rng, (1, 3, 1)),), {"axis": (0, -1)})]


OPINFOS = [
    OpInfo("reshape", _reshape),
    OpInfo("transpose", _transpose),
    OpInfo("moveaxis", _moveaxis),
    OpInfo("broadcast_in_dim", _broadcast_in_dim),
    OpInfo("broadcast_to", _broadcast_to),
    OpInfo("expand_dims", _expand_dims),
    OpInfo("squeeze", _squeeze),
]
