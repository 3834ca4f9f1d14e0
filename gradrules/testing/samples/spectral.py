"""Samples of the spectral family: small matrices with well separated
eigenvalues / singular values (where eigh's and svd's derivatives are defined
and the signs LAPACK picks for the vectors hold under the finite-difference
steps), square, tall and wide, one batched; norms over each supported ord and
axis form, away from x == 0 (the subgradient there is tested in
tests/test_spectral.py: finite differences do not apply at the kink). The
derivatives are checked to order 3, so the shapes are few and small."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import OpInfo, Sample, floats

# LAPACK / cuSolver take float32 and float64 only
LAPACK_DTYPES = ("float32",)


def orthonormal(rng: np.random.Generator, batch: Sequence[int], n: int, k: int) -> np.ndarray:
    """``[*batch, n, k]`` with orthonormal columns (a QR of a Gaussian matrix)."""
    q, _ = np.linalg.qr(rng.standard_normal((*batch, n, k)))
    return q


def symmetric(rng: np.random.Generator, batch: Sequence[int], n: int,
              eigenvalues: Sequence[float]) -> np.ndarray:
    """``Q diag(eigenvalues) Q^T`` ``[*batch, n, n]``, Q random orthogonal."""
    q = orthonormal(rng, batch, n, n)
    return (q * np.asarray(eigenvalues)) @ np.swapaxes(q, -1, -2)


def with_singular_values(rng: np.random.Generator, batch: Sequence[int], m: int, n: int,
                         values: Sequence[float]) -> np.ndarray:
    """``U diag(values) V^T`` ``[*batch, m, n]``, U and V random with
    orthonormal columns (``len(values) == min(m, n)``)."""
    k = len(values)
    u, v = orthonormal(rng, batch, m, k), orthonormal(rng, batch, n, k)
    return (u * np.asarray(values)) @ np.swapaxes(v, -1, -2)


def _eigh(rng: np.random.Generator) -> list[Sample]:
    """Symmetric matrices, and one that is not (eigh takes its symmetric part)."""
    skew = floats(rng, (2, 2))
    return [Sample((symmetric(rng, (), 3, (-1.5, 0.5, 2.0)),)),
            Sample((symmetric(rng, (), 2, (-1.0, 1.5)) + skew - skew.T,),
                   desc="float64[2, 2] (not symmetric)"),
            Sample((symmetric(rng, (2,), 3, (-2.0, -0.5, 1.0)),))]


def _svd(rng: np.random.Generator) -> list[Sample]:
    return [Sample((with_singular_values(rng, (), 3, 3, (2.5, 1.2, 0.4)),)),
            Sample((with_singular_values(rng, (), 3, 2, (2.0, 0.7)),)),
            Sample((with_singular_values(rng, (2,), 2, 3, (1.8, 0.6)),))]


def _away_from_zero(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Entries of both signs with |x| in [0.3, 2], no two |x| alike (no ties for
    the max / min)."""
    return rng.choice((-1.0, 1.0), tuple(shape)) * floats(rng, shape, 0.3, 2.0)


def _norm(rng: np.random.Generator) -> list[Sample]:
    x = lambda *s: _away_from_zero(rng, s)  # noqa: E731
    return [Sample((x(2, 3),)),
            Sample((x(2, 3),), {"ord": 1, "axis": -1}),
            Sample((x(3, 2),), {"ord": np.inf, "axis": 0, "keepdims": True}),
            Sample((x(2, 3),), {"ord": -np.inf, "axis": 1}),
            Sample((x(2, 2, 3),), {"ord": "fro", "axis": (0, 2)}),
            Sample((x(3, 2, 2),), {"ord": 1, "axis": (2, 0), "keepdims": True}),
            Sample((with_singular_values(rng, (), 2, 3, (2.5, 0.7)),), {"ord": "nuc"})]


def _matrix_norm(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),)),
            Sample((floats(rng, (2, 2, 3)),), {"keepdims": True})]


OPINFOS = [
    OpInfo("eigh", _eigh, dtypes=LAPACK_DTYPES),
    OpInfo("svd", _svd, dtypes=LAPACK_DTYPES),
    OpInfo("norm", _norm),
    OpInfo("matrix_norm", _matrix_norm),
]
