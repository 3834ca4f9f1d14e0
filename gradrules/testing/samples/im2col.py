"""Samples of the im2col family: strides, dilation and padding, non-square
kernels, an unbatched image, blocks that leave pixels uncovered."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _unfold(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 4, 5)),), {"kernel_size": (2, 3), "stride": (2, 1),
                                                  "padding": 1}),
            Sample((floats(rng, (2, 4, 4)),), {"kernel_size": 2, "dilation": 2})]


def _fold(rng: np.random.Generator) -> list[Sample]:
    # [1, 2 * 6, 3 * 5] -> [1, 2, 4, 5]; [2 * 4, 2] -> [2, 4, 4] (pixels uncovered)
    return [Sample((floats(rng, (1, 12, 15)),), {"output_size": (4, 5), "kernel_size": (2, 3),
                                                 "stride": (2, 1), "padding": 1}),
            Sample((floats(rng, (8, 2)),), {"output_size": 4, "kernel_size": 2,
                                            "dilation": 2, "stride": (1, 3)})]


OPINFOS = [
    OpInfo("unfold", _unfold),
    OpInfo("fold", _fold),
]
