"""Samples of comparisons and where."""

from __future__ import annotations

import numpy as np

from . import FLOAT_DTYPES, INT_DTYPES, OpInfo, Sample, binary_samples, floats


def _compare(rng: np.random.Generator) -> list[Sample]:
    out = binary_samples()(rng)
    a = floats(rng, (2, 3))
    out.append(Sample((a, a.copy()), desc="equal operands"))
    return out


def _where(rng: np.random.Generator) -> list[Sample]:
    return [Sample((rng.random((2, 3)) < 0.5, floats(rng, (2, 3)), floats(rng, (2, 3)))),
            Sample((rng.random((3,)) < 0.5, floats(rng, (2, 3)), floats(rng, (2, 1)))),
            Sample((np.array(True), floats(rng, (2,)), floats(rng, ())))]


_DT = FLOAT_DTYPES + INT_DTYPES
OPINFOS = [OpInfo(n, _compare, dtypes=_DT) for n in ("eq", "ne", "lt", "le", "gt", "ge")]
OPINFOS.append(OpInfo("where", _where, dtypes=_DT))
