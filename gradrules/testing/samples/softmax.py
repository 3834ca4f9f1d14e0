"""Samples of the softmax family: last and leading axes, a size-0 dim, a
single-entry axis, a tuple of axes and, for softmax, ``where=``, rows with
-inf entries and a row that is all -inf (log_softmax is -inf there, where finite differences do not apply:
tests/test_softmax.py covers it); and ``KERNEL_CASES``, the calls of the
Pallas kernel tests (tests/test_softmax_kernels.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import OpInfo, Sample, floats


def _rows(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),)),
            Sample((floats(rng, (3, 2, 4)),), {"axis": 1}),
            Sample((floats(rng, (0, 3)),), {"axis": -1}),
            Sample((floats(rng, (2, 1)),), {"axis": -1})]


def _with_inf(rng: np.random.Generator) -> list[Sample]:
    x = floats(rng, (3, 4))
    x[0, 1] = -np.inf
    x[2, :] = -np.inf
    w = rng.uniform(size=(1, 4)) > 0.4
    w[0, 0] = True
    return _rows(rng)[:2] + [Sample((x,), {"axis": -1}, desc="float64[3, 4] with -inf, "
                                    "one row all -inf"),
                             Sample((floats(rng, (2, 3, 4)),), {"axis": (0, 2), "where": w},
                                    desc="float64[2, 3, 4], axis=(0, 2), where= [1, 4]")]


def _log_rows(rng: np.random.Generator) -> list[Sample]:
    """``_rows`` and a tuple of axes (``where=`` gives -inf entries, where
    finite differences do not apply: tests/test_softmax.py)."""
    return _rows(rng) + [Sample((floats(rng, (2, 3, 4)),), {"axis": (0, 2)})]


OPINFOS = [OpInfo("softmax", _with_inf), OpInfo("log_softmax", _log_rows)]


@dataclass(frozen=True)
class KernelCase:
    """A call of softmax or log_softmax for the kernel tests (interpret mode
    against the XLA lowering, and the CUDA lowering). ``blocks``:
    ``(block_rows, block_cols)`` or None for the defaults; a ``block_cols``
    below the width makes the kernels loop over column blocks. ``inf``: some
    ``-inf`` entries and a row of all ``-inf`` (softmax only: log_softmax is
    ``-inf`` there)."""

    name: str
    op: str
    shape: tuple[int, ...]
    dtype: str
    axis: int = -1
    blocks: tuple[int, int] | None = None
    inf: bool = False

    def array(self, rng: np.random.Generator) -> np.ndarray:
        """x (float64), with the ``-inf`` entries of ``inf``."""
        x = floats(rng, self.shape, -4.0, 4.0)
        if self.inf:
            rows = np.moveaxis(x, self.axis, -1)           # a view
            rows[(0,) * (rows.ndim - 1)] = -np.inf
            rows[(1,) * (rows.ndim - 1) + (slice(None, None, 3),)] = -np.inf
        return x


# Widths that are not powers of two (1000: one masked block; 1100 with a
# forced block_cols: the column loop with a partial last block), row counts
# that leave a partial row block, a leading axis (moved to the end), -inf
# entries with an all -inf row, float32 and bfloat16.
KERNEL_CASES = [
    KernelCase("softmax-1000-f32", "softmax", (3, 5, 1000), "float32", inf=True),
    KernelCase("softmax-loop-1100-f32", "softmax", (37, 1100), "float32", blocks=(8, 256),
               inf=True),
    KernelCase("softmax-axis0-bf16", "softmax", (1000, 6), "bfloat16", axis=0),
    KernelCase("log_softmax-1100-f32", "log_softmax", (2, 1100, 7), "float32", axis=1),
    KernelCase("log_softmax-loop-1000-f32", "log_softmax", (19, 1000), "float32",
               blocks=(4, 128)),
    KernelCase("log_softmax-loop-1000-bf16", "log_softmax", (9, 1000), "bfloat16",
               blocks=(2, 256)),
]
