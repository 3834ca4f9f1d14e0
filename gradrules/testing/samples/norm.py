"""Samples of the norm family: leading axes of rank 0 to 2, an all-zero input
(eps large enough for finite differences; tests/test_norm.py checks the
default eps), weight_offset, None affine operands, groups of one and of
several channels, batch_norm in training and inference in both layouts."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _rms_norm(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3,)))),
            Sample((floats(rng, (2, 2, 4)), floats(rng, (4,), -0.5, 0.5)),
                   {"eps": 1e-5, "weight_offset": 1.0}),
            Sample((np.zeros((2, 3)), floats(rng, (3,))), {"eps": 0.1}, desc="zero input"),
            Sample((floats(rng, (4,)),))]


def _layer_norm(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3,)), floats(rng, (3,)))),
            Sample((floats(rng, (2, 2, 4)), floats(rng, (4,)), floats(rng, (4,))),
                   {"eps": 1e-3}),
            Sample((np.zeros((2, 3)), floats(rng, (3,)), floats(rng, (3,))), {"eps": 0.1},
                   desc="zero input"),
            Sample((floats(rng, (1, 5)),))]


def _group_norm(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 4, 3)), floats(rng, (4,)), floats(rng, (4,))),
                   {"num_groups": 2}),
            Sample((np.zeros((1, 3, 2, 2)),), {"num_groups": 3, "eps": 0.1},
                   desc="zero input [1, 3, 2, 2], one channel per group")]


def _batch_norm(rng: np.random.Generator) -> list[Sample]:
    def stats(c: int) -> tuple[np.ndarray, ...]:
        return (floats(rng, (c,)), floats(rng, (c,), 0.5, 2.0), floats(rng, (c,)),
                floats(rng, (c,)))
    return [Sample((floats(rng, (3, 2, 2)), *stats(2)), {"training": True}),
            Sample((floats(rng, (2, 2, 3)), *stats(3)),
                   {"training": True, "momentum": 0.8, "data_format": "NHWC"}),
            Sample((floats(rng, (3, 2)), *stats(2)), {"training": False})]


OPINFOS = [OpInfo("rms_norm", _rms_norm), OpInfo("layer_norm", _layer_norm),
           OpInfo("group_norm", _group_norm), OpInfo("batch_norm", _batch_norm)]
