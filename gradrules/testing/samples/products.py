"""Samples of the products family: dot in each of jnp.dot's cases (vectors,
matrix-vector, N-d against N-d, a scalar), outer of flattened operands,
kron of unequal ranks, cross of 3-vectors along another axis with
broadcasting, and of 2-vectors."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _dot(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(3), f(3))), Sample((f(2, 3), f(3))),
            Sample((f(2, 1, 3), f(2, 3, 2))), Sample((f(), f(2, 3)))]


def _outer(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3,)), floats(rng, (2,)))),
            Sample((floats(rng, (2, 2)), floats(rng, (1,))))]


def _kron(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (2, 1)))),
            Sample((floats(rng, (3,)), floats(rng, (2, 2))))]


def _cross(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3,)))),
            Sample((floats(rng, (3, 2)), floats(rng, (3, 2))), {"axis": 0}),
            Sample((floats(rng, (2, 2)), floats(rng, (2,))))]


OPINFOS = [
    OpInfo("dot", _dot),
    OpInfo("outer", _outer),
    OpInfo("kron", _kron),
    OpInfo("cross", _cross),
]
