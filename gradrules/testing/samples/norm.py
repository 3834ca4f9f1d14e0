"""Samples of the norm family: leading axes of rank 0 to 2, an all-zero input
(eps large enough for finite differences; tests/test_norm.py checks the
default eps), weight_offset, None affine operands, groups of one and of
several channels, batch_norm in training and inference in both layouts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...pallas.norm import BlockSizes
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


@dataclass(frozen=True)
class KernelCase:
    """A call of rms_norm or layer_norm for the kernel tests (interpret mode
    against the XLA lowering, and the CUDA lowering). ``affine``: how many of
    the per-column operands (gamma; weight, bias) are given (the others
    None); ``blocks``: the kernels' block sizes (None: the defaults)."""

    name: str
    op: str
    shape: tuple[int, ...]
    dtype: str
    affine: int
    kwargs: dict[str, Any] = field(default_factory=dict)
    blocks: BlockSizes | None = None

    def arrays(self, rng: np.random.Generator) -> list[np.ndarray]:
        """``[x, *affine]`` (float64): x off-centre, so that layer_norm's mean matters."""
        d = self.shape[-1]
        return [floats(rng, self.shape, -1.5, 2.5)] + [floats(rng, (d,)) for _ in
                                                        range(self.affine)]

    def call_kwargs(self) -> dict[str, Any]:
        return dict(self.kwargs, block_sizes=self.blocks)


# Widths 1000 and 1100 (not powers of two: masked columns), rows that do not
# fill the last row block, float32 and bfloat16 (float32 accumulation), and a
# forced small column block (64 of a 300-wide row: the column loops of every
# kernel and the backward's stats kernel) with a backward of 3 programs
# looping over chunks of row blocks; weight_offset; layer_norm without bias.
_LOOP = BlockSizes(block_rows=4, block_cols=64, programs_bwd=3)
KERNEL_CASES = [
    KernelCase("rms-1000-f32", "rms_norm", (3, 50, 1000), "float32", 1,
               {"weight_offset": 1.0}),
    KernelCase("rms-1100-bf16", "rms_norm", (40, 1100), "bfloat16", 1),
    KernelCase("rms-loop-f32", "rms_norm", (37, 300), "float32", 1, {"eps": 1e-5}, _LOOP),
    KernelCase("ln-1000-f32", "layer_norm", (2, 33, 1000), "float32", 2),
    KernelCase("ln-1100-bf16", "layer_norm", (40, 1100), "bfloat16", 2),
    KernelCase("ln-loop-f32", "layer_norm", (37, 300), "float32", 1, {"eps": 1e-3}, _LOOP),
]
