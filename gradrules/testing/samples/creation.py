"""Samples of the creation family: arange with one, two and three numbers
(a negative step, float steps, an empty range), full with a scalar and a
broadcast array fill value and a dtype change, full_like, zeros and ones of
rank 0 to 2 and a size-0 shape."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats


def _arange(rng: np.random.Generator) -> list[Sample]:
    return [Sample((5,)), Sample((0.5, 2.0, 0.25)), Sample((7, -2, -3), {"dtype": np.float32}),
            Sample((3, 3))]


def _full(rng: np.random.Generator) -> list[Sample]:
    return [Sample(((2, 3), floats(rng, (3,)))), Sample(((2, 1, 3), floats(rng, (1, 3)))),
            Sample(((0, 2), floats(rng, ()))), Sample(((3,), floats(rng, ())), {"dtype": np.int32})]


def _full_like(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3,)))),
            Sample((floats(rng, (3,)), floats(rng, ())), {"shape": (2, 1)})]


def _constant(rng: np.random.Generator) -> list[Sample]:
    return [Sample(((2, 3),)), Sample(((),), {"dtype": np.int32}), Sample(((0, 2),))]


OPINFOS = [
    OpInfo("arange", _arange),
    OpInfo("full", _full, dtypes=NUMERIC_DTYPES),             # a fill of any dtype
    OpInfo("full_like", _full_like, dtypes=NUMERIC_DTYPES),
    OpInfo("zeros", _constant),
    OpInfo("ones", _constant),
]
