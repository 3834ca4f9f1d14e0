"""Samples of the reduction family: axis None / int / tuple, negative axes,
keepdims, size-1 and size-0 axes; prod with zeros (its gradient is exact
there); var / std with ``correction``; logsumexp with -inf entries; one
``where=`` sample per op (a slice with nothing selected where the value
stays finite: sum, prod, logsumexp's -inf, max / min's ``initial``). Ties
(max, min) and zero variance (std) are kinks that finite differences cannot
check: tests/test_reduction.py covers them."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, chain, floats


def where_mask(rng: np.random.Generator, shape: tuple[int, ...], empty: bool = True
               ) -> np.ndarray:
    """A bool ``where=`` mask, its last-axis slice ``[0, ..., 0, :]``
    selecting nothing when ``empty``, every other slice at least its first
    entry."""
    w = rng.uniform(size=shape) > 0.4
    w[..., 0] = True
    if empty:
        w[(0,) * (len(shape) - 1)] = False
    return w


def _sum(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"where": where_mask(rng, (2, 3))}),
            Sample((floats(rng, (2, 3, 4)),), {"axis": -1}),
            Sample((floats(rng, (2, 3, 4)),), {"axis": (0, 2), "keepdims": True}),
            Sample((floats(rng, (0, 3)),), {"axis": 0})]


def _mean(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"axis": 1, "where": where_mask(rng, (2, 3), False)}),
            Sample((floats(rng, (3, 1, 4)),), {"axis": (-1, 1), "keepdims": True}),
            Sample((floats(rng, (2, 0)),), {"axis": 0})]


def _prod(rng: np.random.Generator) -> list[Sample]:
    x = floats(rng, (2, 4), 0.5, 1.5) * rng.choice([-1.0, 1.0], (2, 4))
    x[0, 1] = 0.0                      # one zero in a row
    y = floats(rng, (3, 1, 2), 0.5, 1.5)
    y[0, 0, 0] = y[2, 0, 1] = 0.0      # two zeros in one reduced slice
    return [Sample((x,), {"axis": -1}),
            Sample((y,), {"axis": (0, 2), "keepdims": True}),
            Sample((floats(rng, (2, 3)),), {"axis": 1, "where": where_mask(rng, (2, 3))}),
            Sample((floats(rng, (0, 2)),), {})]


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values a step of 0.25 apart, shuffled: no ties, so finite differences
    of max, sort, cummax ... never straddle a kink."""
    return rng.permutation(np.arange(int(np.prod(shape))) * 0.25 - 1.0).reshape(shape)


def _extremum(rng: np.random.Generator) -> list[Sample]:
    return [Sample((distinct(rng, (2, 3)),), {}),
            Sample((distinct(rng, (2, 3, 4)),), {"axis": (0, -1), "keepdims": True}),
            Sample((distinct(rng, (2, 3)) + 0.1,), {"axis": 1, "initial": 0.0,
                                                     "where": where_mask(rng, (2, 3))},
                   desc="where= with a slice selecting nothing, initial=0.0"),
            Sample((distinct(rng, (0, 1)),), {"axis": -1})]


def _std(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {}),
            Sample((floats(rng, (2, 3, 4)),), {"axis": (0, -1), "correction": 2.5,
                                               "keepdims": True}),
            Sample((floats(rng, (2, 0)),), {"axis": 0, "correction": 0})]


def _var(rng: np.random.Generator) -> list[Sample]:
    """std's samples with a size-1 axis (variance 0, where std has a kink)."""
    return _std(rng)[:2] + [Sample((floats(rng, (2, 1)),), {"axis": -1, "correction": 0})]


def _masked(rng: np.random.Generator) -> list[Sample]:
    """The ``where=`` sample of var and std (at least two entries per slice)."""
    w = where_mask(rng, (2, 4), False)
    w[:, 1] = True
    return [Sample((floats(rng, (2, 4)),), {"axis": 1, "where": w})]


def _logsumexp(rng: np.random.Generator) -> list[Sample]:
    x = floats(rng, (2, 4))
    x[0, 2] = x[1, 0] = -np.inf        # -inf entries get derivative 0
    return [Sample((x,), {}),
            Sample((floats(rng, (1, 3, 2)),), {"axis": (0, -1), "keepdims": True}),
            Sample((floats(rng, (2, 3)),), {"axis": -1,
                                            "where": where_mask(rng, (2, 3), False)}),
            Sample((floats(rng, (2, 0)),), {"axis": 0})]


OPINFOS = [
    OpInfo("sum", _sum, dtypes=NUMERIC_DTYPES),
    OpInfo("mean", _mean),
    OpInfo("prod", _prod, dtypes=NUMERIC_DTYPES),
    OpInfo("max", _extremum, dtypes=NUMERIC_DTYPES),
    OpInfo("min", _extremum, dtypes=NUMERIC_DTYPES),
    OpInfo("var", chain(_var, _masked)),
    OpInfo("std", chain(_std, _masked)),
    OpInfo("var_mean", _var),
    OpInfo("logsumexp", _logsumexp),
]
