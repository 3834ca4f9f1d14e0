"""Samples of the pool family: odd sizes, strides above 1 with padding,
stride defaulting to the kernel, non-square windows, adaptive windows that
overlap (5 -> 3) and that are the identity."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _avg_pool2d(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 5, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1}),
            Sample((floats(rng, (2, 1, 4, 5)),), {"kernel_size": (2, 3)})]


def _adaptive_avg_pool2d(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 5, 7)),), {"output_size": (3, 2)}),
            Sample((floats(rng, (2, 1, 3, 4)),), {"output_size": (None, 6)})]


def _max_pool2d(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 5, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1}),
            Sample((floats(rng, (2, 1, 4, 5)),), {"kernel_size": (2, 3), "stride": (1, 2)})]


def _avg_pool3d(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 3, 3, 3)),), {"kernel_size": 2, "stride": 1,
                                                      "padding": 1}),
            Sample((floats(rng, (2, 1, 2, 4, 3)),), {"kernel_size": (2, 2, 3)})]


def _max_pool3d(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 3, 3, 3)),), {"kernel_size": 2, "stride": 1,
                                                      "padding": 1}),
            Sample((floats(rng, (2, 1, 2, 4, 3)),), {"kernel_size": (1, 2, 3),
                                                      "stride": (1, 2, 1)})]


OPINFOS = [
    OpInfo("avg_pool2d", _avg_pool2d),
    OpInfo("adaptive_avg_pool2d", _adaptive_avg_pool2d),
    OpInfo("max_pool2d", _max_pool2d),
    OpInfo("avg_pool3d", _avg_pool3d),
    OpInfo("max_pool3d", _max_pool3d),
]
