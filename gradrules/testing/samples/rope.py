"""Samples of the rope family: default positions, start_pos, positions per
sequence [S] and per example [B, S], another theta, a size-0 sequence.
positions is a keyword argument, which the checker holds fixed: vmap over
positions is checked in tests/test_rope.py."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _rope(rng: np.random.Generator) -> list[Sample]:
    return [
        Sample((floats(rng, (2, 3, 2, 4)),)),
        Sample((floats(rng, (1, 3, 1, 2)),), {"start_pos": 5, "theta": 100.0}),
        Sample((floats(rng, (2, 3, 1, 6)),), {"positions": rng.integers(0, 50, (2, 3))}),
        Sample((floats(rng, (2, 0, 1, 2)),)),
    ]


OPINFOS = [
    OpInfo("rope", _rope),
]
