"""Samples of the solve family: small, well-conditioned matrices (the checks
run to order 3): symmetric positive definite ``m m^T + n I`` for cholesky,
diagonally dominant ones for the solves, inv, det and slogdet (for
triangular_solve they hold values in the triangle it does not read, where
its derivative must be 0), full-rank tall, square and wide ones for qr; a
batch axis in each and broadcast batch axes where the op broadcasts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import FLOAT_DTYPES, OpInfo, Sample, floats

DTYPES = FLOAT_DTYPES


def spd(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Symmetric positive definite matrices ``m m^T + n I`` of the given shape."""
    *_, n = shape
    m = floats(rng, shape, -1.0, 1.0)
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def dominant(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Diagonally dominant matrices (entries in [-1, 1], diagonal n + 1)."""
    *_, n = shape
    return floats(rng, shape, -1.0, 1.0) + (n + 1) * np.eye(n)


def _cholesky(rng: np.random.Generator) -> list[Sample]:
    return [Sample((spd(rng, (3, 3)),)), Sample((spd(rng, (2, 2, 2)),))]


def _triangular_solve(rng: np.random.Generator) -> list[Sample]:
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((dominant(rng, (3, 3)), f(3, 2))),
            Sample((dominant(rng, (2, 2, 2)), f(2, 3, 2)),
                   {"left_side": False, "lower": False, "transpose_a": True,
                    "unit_diagonal": True})]


def _solve(rng: np.random.Generator) -> list[Sample]:
    """A vector b against a batch of matrices, and a batch of b against one a."""
    f = lambda *s: floats(rng, s)  # noqa: E731
    return [Sample((dominant(rng, (2, 3, 3)), f(3))),
            Sample((dominant(rng, (2, 2)), f(2, 2, 3)))]


def _square(rng: np.random.Generator) -> list[Sample]:
    return [Sample((dominant(rng, (3, 3)),)), Sample((dominant(rng, (2, 2, 2)),))]


def _qr(rng: np.random.Generator) -> list[Sample]:
    """A batch of tall, a square and a wide matrix, of full rank."""
    f = lambda *s: floats(rng, s, -1.0, 1.0) + 3 * np.eye(*s[-2:])  # noqa: E731
    return [Sample((f(2, 3, 2),)), Sample((f(2, 2),)), Sample((f(2, 3),))]


OPINFOS = [
    OpInfo("cholesky", _cholesky),
    OpInfo("triangular_solve", _triangular_solve),
    OpInfo("solve", _solve),
    OpInfo("inv", _square),
    OpInfo("det", _square),
    OpInfo("slogdet", _square),
    OpInfo("qr", _qr),
]
