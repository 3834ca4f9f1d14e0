"""Samples of the random family: raw uint32 keys, shapes of rank 0 to 2, a
size-0 shape, float32 and float64 draws, dropout rates 0, 0.5 and 1."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import OpInfo, Sample, floats


def _key(seed: int) -> np.ndarray:
    return np.array([0, seed], np.uint32)


def _dropout(rng: np.random.Generator) -> list[Sample]:
    return [Sample((_key(1), floats(rng, (3, 4))), {"rate": 0.5}),
            Sample((_key(2), floats(rng, (5,))), {"rate": 0.0}),
            Sample((_key(3), floats(rng, (2, 3))), {"rate": 1.0}),
            Sample((_key(4), floats(rng, (0, 2))), {"rate": 0.3})]


def _sampler(**kwargs: float) -> Callable[[np.random.Generator], list[Sample]]:
    """Draws of a sampler with ``kwargs``, in float32 and float64, of rank 0 to 2."""
    def make(rng: np.random.Generator) -> list[Sample]:
        return [Sample((_key(5), (2, 3)), dict(kwargs)),
                Sample((_key(6), ()), {"dtype": np.float64}),
                Sample((_key(7), (0, 3)))]
    return make


OPINFOS = [OpInfo("dropout", _dropout),
           OpInfo("uniform", _sampler(minval=-1.0, maxval=2.0)),
           OpInfo("normal", _sampler(mean=1.0, std=0.5)),
           OpInfo("exponential", _sampler(lam=2.0))]
