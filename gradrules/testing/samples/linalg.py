"""Samples of the linalg family: matmul in every form (1-D, transposed,
broadcast batch axes, size-0 and size-1 axes), einsum equations (explicit,
implicit, diagonals, traces, ellipsis broadcasting), fused_gemm_epilogue with
each activation."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, floats


def _matmul(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(3), f(2, 2, 3)), {"transpose_y": True}),
            Sample((f(2, 1, 3, 2), f(4, 3)), {"transpose_x": True, "transpose_y": True}),
            Sample((f(2, 3), f(3))),
            Sample((f(0, 3), f(3, 1)))]


def _mm(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3, 1)))),
            Sample((floats(rng, (1, 2)), floats(rng, (2, 3))))]


def _bmm(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3, 2)), floats(rng, (2, 2, 3)))),
            Sample((floats(rng, (1, 2, 1)), floats(rng, (1, 1, 3))))]


def _addmm(rng: np.random.Generator) -> list[Sample]:
    """Every way the bias broadcasts to [m, n]: full, a row, a column, a scalar."""
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(2, 3), f(2, 4), f(4, 3))),
            Sample((f(3,), f(2, 2), f(2, 3)), {"beta": 0.5, "alpha": -2.0}),
            Sample((f(3, 1), f(3, 2), f(2, 4)), {"alpha": 2.0}),
            Sample((f(), f(3, 2), f(2, 4)), {"beta": -1.5})]


def _linear(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3, 4)), floats(rng, (4,)))),
            Sample((floats(rng, (2, 1, 3)), floats(rng, (3, 2)))),
            Sample((floats(rng, (3,)), floats(rng, (3, 2)), floats(rng, (2,)))),
            Sample((floats(rng, (2, 3, 3)), floats(rng, (3, 4)), floats(rng, (4,))))]


def _einsum(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample(("ij,jk->ik", f(2, 3), f(3, 4))),
            Sample(("iij->ji", f(3, 3, 2))),
            Sample(("ii", f(3, 3))),
            Sample(("...ij,...j->...i", f(2, 1, 3, 2), f(4, 2))),
            Sample(("i,jk,j->ik", f(2), f(3, 2), f(3)))]


def _fused_gemm_epilogue(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((f(2, 3), f(3, 4), f(4))),
            Sample((f(3, 2), f(4, 3), f(4)),
                   {"trans_x": True, "trans_y": True, "activation": "gelu"}),
            Sample((f(2, 2, 3), f(3, 2), f(2)), {"activation": "relu"})]


OPINFOS = [
    OpInfo("matmul", _matmul, dtypes=NUMERIC_DTYPES),
    OpInfo("mm", _mm, dtypes=NUMERIC_DTYPES),
    OpInfo("bmm", _bmm, dtypes=NUMERIC_DTYPES),
    OpInfo("addmm", _addmm),
    OpInfo("linear", _linear),
    OpInfo("einsum", _einsum, dtypes=NUMERIC_DTYPES),
    OpInfo("fused_gemm_epilogue", _fused_gemm_epilogue),
]
