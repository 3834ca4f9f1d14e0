"""Samples of the gated family: with and without the swigluLimit clamp (the
points away from the clamp's kinks: tests/test_gated.py checks them), a
size-0 axis, a rank-3 input, and each activation of silu_rowsplit."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _away(rng: np.random.Generator, shape: tuple[int, ...], kinks: tuple[float, ...]
          ) -> np.ndarray:
    """Points in [-3, 3) at least 0.1 away from every kink."""
    x = floats(rng, shape, -3.0, 3.0)
    for k in kinks:
        x = np.where(np.abs(x - k) < 0.1, k + 0.3, x)
    return x


def _gated(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (2, 3)))),
            Sample((_away(rng, (3, 4), (1.5,)), _away(rng, (3, 4), (-1.5, 1.5))),
                   {"limit": 1.5}),
            Sample((floats(rng, (2, 1, 3)), floats(rng, (2, 1, 3)))),
            Sample((floats(rng, (0, 3)), floats(rng, (0, 3))))]


def _gelu_gated(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (2, 3)))),
            Sample((floats(rng, (3, 2)), floats(rng, (3, 2))), {"approximate": True}),
            Sample((floats(rng, (0, 3)), floats(rng, (0, 3))))]


def _rowsplit(rng: np.random.Generator) -> list[Sample]:
    limited = np.concatenate([_away(rng, (2, 3), (1.0,)), _away(rng, (2, 3), (-1.0, 1.0))], -1)
    return [Sample((floats(rng, (2, 4)),)),
            Sample((limited,), {"limit": 1.0}),
            Sample((floats(rng, (2, 1, 6)),), {"activation": "gelu"}),
            Sample((floats(rng, (3, 2)),), {"activation": "gelu_tanh"})]


OPINFOS = [OpInfo("silu_gated", _gated), OpInfo("gelu_gated", _gelu_gated),
           OpInfo("silu_rowsplit", _rowsplit)]
