"""Samples of the layout family: negative axes, size-0 and size-1 axes,
borders of every pad mode, overlapping and gapped windows."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _concatenate(rng: np.random.Generator) -> list[Sample]:
    return [Sample(([floats(rng, (2, 3)), floats(rng, (1, 3)), floats(rng, (0, 3))],)),
            Sample(([floats(rng, (2, 1)), floats(rng, (2, 2))],), {"axis": -1}),
            Sample(([floats(rng, (3,))],))]


def _stack(rng: np.random.Generator) -> list[Sample]:
    return [Sample(([floats(rng, (2, 3)), floats(rng, (2, 3))],)),
            Sample(([floats(rng, (3,)), floats(rng, (3,)), floats(rng, (3,))],), {"axis": -1}),
            Sample(([floats(rng, (0, 2))],), {"axis": 1})]


def _pad(rng: np.random.Generator) -> list[Sample]:
    """Each mode at its widest legal border (reflect: n - 1), a one-sided
    pad, a size-1 axis replicated, a size-0 axis padded with a constant.
    (A nonzero ``value`` makes pad affine in x alone, not linear; it is
    tested with value as a differentiable operand in tests/test_layout.py.)"""
    return [Sample((floats(rng, (2, 3)), ((1, 2), (0, 1)))),
            Sample((floats(rng, (3, 4)), ((2, 1), (3, 0))), {"mode": "reflect"}),
            Sample((floats(rng, (1, 3)), ((2, 1), (1, 2))), {"mode": "replicate"}),
            Sample((floats(rng, (0, 2)), 1))]


def _tile(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"repeat_times": (2, 1)}),
            Sample((floats(rng, (3,)),), {"repeat_times": (2, 1, 2)}),
            Sample((floats(rng, (1, 2)),), {"repeat_times": 0})]


def _repeat(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"repeats": 2, "axis": -1}),
            Sample((floats(rng, (3, 2)),), {"repeats": (0, 2, 1), "axis": 0}),
            Sample((floats(rng, (2, 2)),), {"repeats": 2})]


def _flip(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"axis": -1}),
            Sample((floats(rng, (2, 1, 3)),), {"axis": None}),
            Sample((floats(rng, (3, 2)),), {"axis": (0, 1)})]


def _roll(rng: np.random.Generator) -> list[Sample]:
    """One axis, a negative shift, tuples with one axis named twice, the
    flattened array (axis=None), a size-0 axis."""
    return [Sample((floats(rng, (2, 3)), 1), {"axis": -1}),
            Sample((floats(rng, (3, 2)), (-1, 4, 1), (0, 1, 0))),
            Sample((floats(rng, (2, 3)), 2)),
            Sample((floats(rng, (0, 3)), 1), {"axis": 0})]


def _tensor_unfold(rng: np.random.Generator) -> list[Sample]:
    """Overlapping windows, windows with gaps between them, one window."""
    return [Sample((floats(rng, (2, 5)),), {"axis": -1, "size": 3, "step": 1}),
            Sample((floats(rng, (7, 2)),), {"axis": 0, "size": 2, "step": 3}),
            Sample((floats(rng, (3,)),), {"axis": 0, "size": 3, "step": 2})]


def _tensor_fold(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3, 3)),), {"axis": -1, "size": 3, "step": 1,
                                               "length": 5}),
            Sample((floats(rng, (2, 2, 2)),), {"axis": 0, "size": 2, "step": 3,
                                               "length": 6})]


OPINFOS = [
    OpInfo("concatenate", _concatenate),
    OpInfo("stack", _stack),
    OpInfo("pad", _pad),
    OpInfo("tile", _tile),
    OpInfo("repeat", _repeat),
    OpInfo("flip", _flip),
    OpInfo("roll", _roll),
    OpInfo("tensor_unfold", _tensor_unfold),
    OpInfo("tensor_fold", _tensor_fold),
]
