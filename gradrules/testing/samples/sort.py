"""Samples of the sort family: every axis (negative ones too), descending,
k from 0 to the axis size, size-1 and size-0 axes. Values are distinct (ties
are kinks that finite differences cannot check; tests/test_sort.py covers
how ties are broken and where their gradient goes)."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample
from .reduction import distinct

DTYPES = NUMERIC_DTYPES   # the default of every op below


def _sort(rng: np.random.Generator) -> list[Sample]:
    return [Sample((distinct(rng, (2, 4)),), {}),
            Sample((distinct(rng, (3, 1, 2)),), {"axis": 0, "descending": True}),
            Sample((distinct(rng, (0, 3)),), {"axis": 0})]


def _topk(rng: np.random.Generator) -> list[Sample]:
    return [Sample((distinct(rng, (2, 5)),), {"k": 3}),
            Sample((distinct(rng, (4, 2)),), {"k": 4, "axis": 0, "largest": False}),
            Sample((distinct(rng, (2, 1, 3)),), {"k": 1, "axis": -2})]


def _arg_extremum(rng: np.random.Generator) -> list[Sample]:
    return [Sample((distinct(rng, (2, 3)),), {}),
            Sample((distinct(rng, (2, 3, 4)),), {"axis": -1, "keepdims": True}),
            Sample((distinct(rng, (3, 2)),), {"axis": None, "keepdims": True})]


def _nonzero(rng: np.random.Generator) -> list[Sample]:
    """Zeros among the values: more nonzeros than ``size`` (cut), and fewer
    in a 3-d array (padded with one fill value per axis)."""
    x = distinct(rng, (2, 4))
    x[0, 1] = x[1, 0] = x[1, 3] = 0.0
    y = distinct(rng, (2, 1, 3))
    y[0, 0, 2] = y[1, 0, 0] = 0.0
    return [Sample((x,), {"size": 3, "fill_value": -1}),
            Sample((y,), {"size": 5, "fill_value": (9, 8, 7)})]


OPINFOS = [
    OpInfo("sort", _sort),
    OpInfo("argsort", _sort),
    OpInfo("topk", _topk),
    OpInfo("argmax", _arg_extremum),
    OpInfo("argmin", _arg_extremum),
    OpInfo("nonzero", _nonzero),
]
