"""Samples of the gated family: with and without the swigluLimit clamp (the
points away from the clamp's kinks: tests/test_gated.py checks them), a
size-0 axis, a rank-3 input, and each activation of silu_rowsplit; and
``KERNEL_CASES``, the calls of silu_gated the Pallas kernel tests run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import OpInfo, Sample, floats


def _away(rng: np.random.Generator, shape: tuple[int, ...], kinks: tuple[float, ...]
          ) -> np.ndarray:
    """Points in [-3, 3) at least 0.1 away from every kink."""
    x = floats(rng, shape, -3.0, 3.0)
    for k in kinks:
        x = np.where(np.abs(x - k) < 0.1, k + 0.3, x)
    return x


def _gated(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (2, 3)))),
            Sample((_away(rng, (3, 4), (1.5,)), _away(rng, (3, 4), (-1.5, 1.5))),
                   {"limit": 1.5}),
            Sample((floats(rng, (2, 1, 3)), floats(rng, (2, 1, 3)))),
            Sample((floats(rng, (0, 3)), floats(rng, (0, 3))))]


def _gelu_gated(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (2, 3)))),
            Sample((floats(rng, (3, 2)), floats(rng, (3, 2))), {"approximate": True}),
            Sample((floats(rng, (0, 3)), floats(rng, (0, 3))))]


def _rowsplit(rng: np.random.Generator) -> list[Sample]:
    limited = np.concatenate([_away(rng, (2, 3), (1.0,)), _away(rng, (2, 3), (-1.0, 1.0))], -1)
    return [Sample((floats(rng, (2, 4)),)),
            Sample((limited,), {"limit": 1.0}),
            Sample((floats(rng, (2, 1, 6)),), {"activation": "gelu"}),
            Sample((floats(rng, (3, 2)),), {"activation": "gelu_tanh"})]


OPINFOS = [OpInfo("silu_gated", _gated), OpInfo("gelu_gated", _gelu_gated),
           OpInfo("silu_rowsplit", _rowsplit)]


@dataclass(frozen=True)
class KernelCase:
    """A call of silu_gated for the kernel tests (interpret mode against the
    XLA lowering, and the CUDA lowering): gate and up of ``shape``, both
    differentiated; ``blocks``: (block_rows, block_cols) or None (the
    defaults)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    limit: float | None
    blocks: tuple[int, int] | None

    def arrays(self, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        """``[gate, up]`` (float64, in [-3, 3): both sides of a limit) and the
        keyword arguments of the call other than the block sizes."""
        return [floats(rng, self.shape, -3.0, 3.0) for _ in range(2)], {"limit": self.limit}


# widths 1000 (one masked column block) and 1100 (five blocks of 256, the
# last partial), rows that do not fill the last row block, rank 3 and 2, the
# clamp, float32 and bfloat16.
KERNEL_CASES = [
    KernelCase("width-1000-f32", (3, 5, 1000), "float32", None, None),
    KernelCase("width-1100-limit-f32", (7, 1100), "float32", 1.5, (2, 256)),
    KernelCase("width-100-limit-bf16", (4, 33, 100), "bfloat16", 2.0, None),
]
