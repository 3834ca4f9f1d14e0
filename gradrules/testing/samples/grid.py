"""Samples of grid_sample: points outside the image, both align_corners,
reflection (clamped and sign-flipped grid derivatives) and border padding,
nearest sampling; tiny images (the checker vmaps over every in_axes
combination). Zero padding is in tests/test_grid.py."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _grid_sample(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 3, 4)), floats(rng, (1, 2, 3, 2), -1.6, 1.6)),
                   {"padding_mode": "reflection"}),
            Sample((floats(rng, (2, 1, 4, 3)), floats(rng, (2, 1, 2, 2), -1.2, 1.2)),
                   {"mode": "nearest", "padding_mode": "border", "align_corners": True})]


OPINFOS = [
    OpInfo("grid_sample", _grid_sample),
]
