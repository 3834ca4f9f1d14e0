"""Samples of the rope family: default positions, start_pos, positions per
sequence [S] and per example [B, S], another theta, a size-0 sequence.
positions is a keyword argument, which the checker holds fixed: vmap over
positions is checked in tests/test_rope.py. ``KERNEL_CASES``: the calls the
Pallas kernel tests run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class KernelCase:
    """A call of rope for the kernel tests (interpret mode against the XLA
    lowering, and the CUDA lowering): x ``[B, S, H, D]`` of ``shape``;
    ``positions``: ``"start"`` (start_pos 7), ``"seq"`` ([S]) or ``"batch"``
    ([B, S]); ``blocks``: (block_rows, block_cols) or None (the defaults)."""

    name: str
    shape: tuple[int, int, int, int]
    dtype: str
    positions: str
    blocks: tuple[int, int] | None

    def arrays(self, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        """``[x]`` (float64) and the keyword arguments of the call other than
        the block sizes (positions up to 5000: large angles)."""
        b, s = self.shape[:2]
        kwargs: dict[str, Any] = {"start_pos": 7} if self.positions == "start" else {
            "positions": rng.integers(0, 5000, (s,) if self.positions == "seq" else (b, s))}
        return [floats(rng, self.shape)], kwargs


# head_dim 100 (half 50: one masked column block) and 2200 (half 1100: five
# blocks of 256, the last partial), token counts that do not fill the last
# row block, the three ways of giving positions, float32 and bfloat16.
KERNEL_CASES = [
    KernelCase("head_dim-100-start_pos-f32", (2, 33, 3, 100), "float32", "start", None),
    KernelCase("head_dim-2200-positions-bs-f32", (2, 9, 2, 2200), "float32", "batch", (8, 256)),
    KernelCase("head_dim-64-positions-s-bf16", (1, 40, 4, 64), "bfloat16", "seq", None),
]
