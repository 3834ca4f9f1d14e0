"""Samples of the scatter family: duplicate indices (accumulated, or the
last one winning), negative and out-of-range (clipped) indices, every reduce,
broadcast indices and values, Python slices with negative steps."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats, ints

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _scatter_add(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (3, 2)), ints([[0, 2], [0, 2], [-1, 9]]), floats(rng, (3, 2))),
                   {"axis": 0}),
            Sample((floats(rng, (2, 4)), ints([[1, 1, 1], [3, 0, -2]]), floats(rng, (2, 3))),
                   {"axis": -1}),
            Sample((floats(rng, (2, 1)), ints(np.zeros((0, 1))), floats(rng, (0, 1))),
                   {"axis": 0}),
            Sample((floats(rng, (3,)), ints([1]), floats(rng, (1,))), {"axis": 0})]


def _scatter(rng: np.random.Generator) -> list[Sample]:
    """Duplicates (the last one along the axis wins), clipped indices."""
    return [Sample((floats(rng, (3, 2)), ints([[0, 2], [2, 2], [0, -7]]), floats(rng, (3, 2))),
                   {"axis": 0}),
            Sample((floats(rng, (2, 4)), ints([[1, 1, 3], [9, 0, -2]]), floats(rng, (2, 3))),
                   {"axis": -1}),
            Sample((floats(rng, (2,)), ints(np.zeros((0,))), floats(rng, (0,))), {"axis": 0})]


def _scatter_reduce(rng: np.random.Generator) -> list[Sample]:
    """Every reduce, with duplicate indices and untouched elements; prod with
    zero factors (one and two in a group: it is a polynomial, so finite
    differences hold there)."""
    index = ints([[0, 2], [0, 0], [-1, 2]])
    out = [Sample((floats(rng, (3, 2)), index, floats(rng, (3, 2))),
                  {"axis": 0, "reduce": r}) for r in ("sum", "prod", "amax", "amin", "mean")]
    x, src = floats(rng, (3, 2)), floats(rng, (3, 2))
    x[0, 0] = src[1, 0] = src[2, 1] = 0.0
    out[1].args = (x, index, src)
    return out


def _index_put(rng: np.random.Generator) -> list[Sample]:
    """Duplicates with and without accumulate, broadcast indices and values,
    a partial index (trailing axes taken whole)."""
    rows, cols = ints([[0], [2], [0]]), ints([1, -1])
    return [Sample((floats(rng, (3, 2)), (rows, cols), floats(rng, (3, 2))),
                   {"accumulate": True}),
            Sample((floats(rng, (3, 2)), (rows, cols), floats(rng, (2,)))),
            Sample((floats(rng, (3, 2)), (ints([2, 0, 2, 5]),), floats(rng, (4, 2))))]


def _set_value(rng: np.random.Generator) -> list[Sample]:
    """A negative step, an end beyond the axis (clamped), a broadcast value."""
    return [Sample((floats(rng, (4, 3)), floats(rng, (2, 3))),
                   {"starts": (-1,), "ends": (0,), "steps": (-2,), "axes": (0,)}),
            Sample((floats(rng, (3, 4)), floats(rng, (1,))),
                   {"starts": (1, 1), "ends": (100, 4), "steps": (1, 2), "axes": (0, -1)}),
            Sample((floats(rng, (2, 3)), floats(rng, (2, 0))),
                   {"starts": (2,), "ends": (1,), "axes": (1,)})]


def _slice_scatter(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (5, 2)), floats(rng, (2, 2))), {"start": 1, "step": 2,
                                                                "end": -1}),
            Sample((floats(rng, (2, 3)), floats(rng, (2, 1))), {"axis": -1, "start": -1}),
            Sample((floats(rng, (3,)), floats(rng, (3,))), {"step": -1})]


OPINFOS = [
    OpInfo("scatter_add", _scatter_add),
    OpInfo("scatter", _scatter),
    OpInfo("scatter_reduce", _scatter_reduce),
    OpInfo("index_put", _index_put),
    OpInfo("set_value", _set_value),
    OpInfo("slice_scatter", _slice_scatter),
]
