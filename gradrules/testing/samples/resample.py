"""Samples of the resample family: nearest and bilinear upsampling (size and
scale_factor, align_corners both ways, odd sizes, downsampling), pixel
shuffles, patch tokens."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats


def _upsample2d(rng: np.random.Generator) -> list[Sample]:
    x = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((x(1, 2, 3, 3),), {"scale_factor": (2, 1.5)}),
            Sample((x(1, 1, 3, 4),), {"size": (5, 3), "method": "bilinear"}),
            Sample((x(2, 1, 3, 2),), {"size": (4, 5), "method": "bilinear",
                                      "align_corners": True})]


def _pixel_shuffle(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 8, 2, 3)),), {"upscale_factor": 2}),
            Sample((floats(rng, (2, 9, 1, 1)),), {"upscale_factor": 3})]


def _pixel_unshuffle(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 2, 4, 6)),), {"downscale_factor": 2}),
            Sample((floats(rng, (2, 1, 3, 3)),), {"downscale_factor": 3})]


_PATCH = {"grid_h": 2, "grid_w": 3, "patch_size": 2, "channels": 3}


def _unpatchify(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 6, 12)),), dict(_PATCH)),
            Sample((floats(rng, (2, 1, 3)),), {"grid_h": 1, "grid_w": 1, "patch_size": 1,
                                               "channels": 3})]


def _patchify(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (1, 3, 4, 6)),), dict(_PATCH))]


OPINFOS = [
    OpInfo("upsample2d", _upsample2d),
    OpInfo("pixel_shuffle", _pixel_shuffle, dtypes=NUMERIC_DTYPES),     # permutations:
    OpInfo("pixel_unshuffle", _pixel_unshuffle, dtypes=NUMERIC_DTYPES),  # any dtype
    OpInfo("unpatchify", _unpatchify, dtypes=NUMERIC_DTYPES),
    OpInfo("patchify", _patchify, dtypes=NUMERIC_DTYPES),
]
