"""Samples of the logical family: floats with inf and NaN for the
predicates, bool arrays for the logical ops, integer arrays of several
dtypes (and bools) for the bitwise ops."""

from __future__ import annotations

import numpy as np

from . import BINARY_SHAPES, FLOAT_DTYPES, OpInfo, Sample, floats

SPECIAL = np.array([0.0, np.inf, -np.inf, np.nan, 1.5, -2.0])


def _predicate(rng: np.random.Generator) -> list[Sample]:
    x = floats(rng, (2, 3))
    x[0, 1], x[1, 2] = np.nan, -np.inf
    return [Sample((SPECIAL.copy(),)), Sample((x,)), Sample((np.array(np.inf),)),
            Sample((floats(rng, (0, 2)),))]


def _bools(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.random(shape) < 0.5


def _logical_not(rng: np.random.Generator) -> list[Sample]:
    return [Sample((_bools(rng, s),)) for s in ((2, 3), (), (0, 2))]


def _logical(rng: np.random.Generator) -> list[Sample]:
    return [Sample((_bools(rng, a), _bools(rng, b))) for a, b in BINARY_SHAPES[1:4]]


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return _bools(rng, shape)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


BITWISE_DTYPES = ("int32", "int8", "uint8", "bool")


def _bitwise_not(rng: np.random.Generator) -> list[Sample]:
    return [Sample((_ints(rng, s, dt),)) for s, dt in zip(((2, 3), (), (0, 2), (3,)),
                                                          BITWISE_DTYPES)]


def _bitwise(rng: np.random.Generator) -> list[Sample]:
    return [Sample((_ints(rng, a, dt), _ints(rng, b, dt)))
            for (a, b), dt in zip(BINARY_SHAPES[1:], BITWISE_DTYPES)]


OPINFOS = [OpInfo(n, _predicate, dtypes=FLOAT_DTYPES) for n in ("isfinite", "isnan", "isinf")]
OPINFOS.append(OpInfo("logical_not", _logical_not, dtypes=("bool",)))
OPINFOS += [OpInfo(n, _logical, dtypes=("bool",))
            for n in ("logical_and", "logical_or", "logical_xor")]
OPINFOS.append(OpInfo("bitwise_not", _bitwise_not, dtypes=BITWISE_DTYPES))
OPINFOS += [OpInfo(n, _bitwise, dtypes=BITWISE_DTYPES)
            for n in ("bitwise_and", "bitwise_or", "bitwise_xor")]
