"""Samples of the gated family: with and without the swigluLimit clamp (the
points away from the clamp's kinks: tests/test_gated.py checks them), a
size-0 axis, a rank-3 input, and each activation of silu_rowsplit; and
``KERNEL_CASES``, the calls of silu_gated and gelu_gated the Pallas kernel
tests run."""

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


def _glu(rng: np.random.Generator) -> list[Sample]:
    """The last axis, axis 0 of a rank-3 input, a size-2 axis."""
    return [Sample((floats(rng, (2, 4)),)),
            Sample((floats(rng, (4, 1, 3)),), {"axis": 0}),
            Sample((floats(rng, (3, 2)),), {"axis": -1})]


OPINFOS = [OpInfo("silu_gated", _gated), OpInfo("gelu_gated", _gelu_gated),
           OpInfo("silu_rowsplit", _rowsplit), OpInfo("glu", _glu)]


@dataclass(frozen=True)
class KernelCase:
    """A call of a gated op (``op``: "silu_gated" or "gelu_gated") for the
    kernel tests (interpret mode against the XLA lowering, and the CUDA
    lowering): gate and up of ``shape``, both differentiated; ``params``: the
    op's keyword arguments other than the block sizes; ``blocks``:
    (block_rows, block_cols) or None (the defaults)."""

    name: str
    op: str
    shape: tuple[int, ...]
    dtype: str
    params: tuple[tuple[str, Any], ...]
    blocks: tuple[int, int] | None

    def arrays(self, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        """``[gate, up]`` (float64, in [-3, 3): both sides of a limit; for
        gelu_gated every 7th gate entry at +-30 or +-45, where gelu' is its
        limit in one form or both) and the keyword arguments of the call
        other than the block sizes."""
        gate, up = (floats(rng, self.shape, -3.0, 3.0) for _ in range(2))
        if self.op == "gelu_gated":
            far = gate.reshape(-1)[::7]
            far[:] = np.sign(far) * rng.choice([30.0, 45.0], far.shape)
        return [gate, up], dict(self.params)


# widths 1000 (one masked column block) and 1100 (five blocks of 256, the
# last partial), rows that do not fill the last row block, rank 3 and 2,
# silu_gated's clamp, gelu_gated's two forms, float32 and bfloat16.
KERNEL_CASES = [
    KernelCase("silu-width-1000-f32", "silu_gated", (3, 5, 1000), "float32", (), None),
    KernelCase("silu-width-1100-limit-f32", "silu_gated", (7, 1100), "float32",
               (("limit", 1.5),), (2, 256)),
    KernelCase("silu-width-100-limit-bf16", "silu_gated", (4, 33, 100), "bfloat16",
               (("limit", 2.0),), None),
    KernelCase("gelu-width-1100-f32", "gelu_gated", (7, 1100), "float32", (), (2, 256)),
    KernelCase("gelu-tanh-width-100-bf16", "gelu_gated", (4, 33, 100), "bfloat16",
               (("approximate", True),), None),
]
