"""Samples of the conv family: odd sizes, strides above 1 with padding,
dilation, groups above 1 (depthwise included), NCHW and NHWC, every padding
form; kept tiny, as the checker vmaps over every in_axes combination."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _conv2d(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(1, 2, 5, 5), f(2, 1, 3, 3), f(2)),
                   {"stride": 2, "padding": 1, "groups": 2}),
            Sample((f(1, 5, 4, 4), f(2, 2, 2, 3)),
                   {"stride": (2, 1), "padding": "SAME", "dilation": (1, 2), "groups": 2,
                    "data_format": "NHWC"})]


def _conv1d(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(1, 2, 5), f(2, 1, 3), f(2)), {"stride": 2, "padding": 1, "groups": 2}),
            Sample((f(2, 4, 3), f(2, 3, 2)),
                   {"dilation": 2, "padding": "SAME", "data_format": "NWC"})]


def _conv3d(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(1, 2, 3, 3, 3), f(2, 1, 2, 2, 2), f(2)),
                   {"stride": 2, "padding": 1, "groups": 2}),
            Sample((f(1, 3, 2, 3, 2), f(2, 2, 1, 2, 2)),
                   {"stride": (1, 2, 1), "dilation": (1, 1, 2), "padding": "SAME",
                    "data_format": "NDHWC"})]


def _conv_transpose2d(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(1, 2, 3, 3), f(2, 1, 3, 3), f(2)),
                   {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
            Sample((f(1, 3, 2, 3), f(3, 2, 2, 2)),
                   {"dilation": 2, "padding": (0, 1), "data_format": "NHWC"})]


OPINFOS = [
    OpInfo("conv2d", _conv2d),
    OpInfo("conv_transpose2d", _conv_transpose2d),
    OpInfo("conv1d", _conv1d),
    OpInfo("conv3d", _conv3d),
]
