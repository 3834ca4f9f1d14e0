"""Samples of the arithmetic family."""

from __future__ import annotations

import numpy as np

from . import NUMERIC_DTYPES, OpInfo, Sample, binary_samples, chain, floats


def _paddle_axis(rng: np.random.Generator) -> list[Sample]:
    """Paddle's axis argument: y [3] against x [2, 3, 4] at axis 1."""
    return [Sample((floats(rng, (2, 3, 4)), floats(rng, (3,))), {"axis": 1}),
            Sample((floats(rng, (2, 3)), floats(rng, (2, 3))), {"axis": 0})]


def _divisor(rng: np.random.Generator) -> list[Sample]:
    out = binary_samples(0.5, 2.0)(rng)
    for s in out:   # divisors away from 0, either sign
        s.args = (s.args[0] * rng.choice([-1, 1], np.shape(s.args[0])), s.args[1])
    return out


def _divide(rng: np.random.Generator) -> list[Sample]:
    return _divisor(rng) + [Sample((floats(rng, (2, 3, 4)), floats(rng, (3,), 0.5, 2)),
                                   {"axis": 1})]


def _bias_add(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)), floats(rng, (3,)))),
            Sample((floats(rng, (2, 1, 4)), floats(rng, (4,)))),
            Sample((floats(rng, (5,)), floats(rng, (5,))))]


def _logaddexp(rng: np.random.Generator) -> list[Sample]:
    """Broadcasting, and large |x| (finite derivatives at +-1e4)."""
    big = np.array([-1e4, -30.0, 25.0, 1e4])
    return binary_samples(-3.0, 3.0, shapes=(((2, 3), (3,)), ((1, 3), (2, 1))))(rng) + [
        Sample((big.copy(), big[::-1].copy()))]


def _hypot(rng: np.random.Generator) -> list[Sample]:
    """Either sign, away from the origin (where the derivative is a chosen 0:
    tests/test_arithmetic.py)."""
    return binary_samples(0.3, 2.0, shapes=(((2, 3), (2, 3)), ((3,), (2, 1))))(rng) + [
        Sample((-floats(rng, (2,), 0.3, 2.0), floats(rng, (), -2.0, -0.3)))]


def _lerp(rng: np.random.Generator) -> list[Sample]:
    """An array weight, broadcasting in each operand, a scalar weight."""
    return [Sample((floats(rng, (2, 3)), floats(rng, (2, 3)), floats(rng, (2, 3), 0.0, 1.0))),
            Sample((floats(rng, (3,)), floats(rng, (2, 1)), floats(rng, (1, 3), -0.5, 1.5))),
            Sample((floats(rng, (2, 2)), floats(rng, ()), floats(rng, (), 0.0, 1.0)))]


def _scale(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (2, 3)),), {"scale": 0.5}),
            Sample((floats(rng, ()),), {"scale": -3.0})]


OPINFOS = [
    OpInfo("add", chain(binary_samples(), _paddle_axis), dtypes=NUMERIC_DTYPES),
    OpInfo("subtract", chain(binary_samples(), _paddle_axis), dtypes=NUMERIC_DTYPES),
    OpInfo("multiply", chain(binary_samples(), _paddle_axis), dtypes=NUMERIC_DTYPES),
    OpInfo("divide", _divide),
    OpInfo("pow", binary_samples(0.5, 2.0, -2.0, 2.0)),
    OpInfo("maximum", binary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("minimum", binary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("remainder", binary_samples(-3.0, 3.0, 0.7, 2.0), dtypes=NUMERIC_DTYPES),
    OpInfo("fmod", binary_samples(-3.0, 3.0, 0.7, 2.0), dtypes=NUMERIC_DTYPES),
    OpInfo("atan2", binary_samples(0.3, 2.0)),
    OpInfo("logaddexp", _logaddexp),
    OpInfo("hypot", _hypot),
    OpInfo("lerp", _lerp),
    OpInfo("residual_add", binary_samples(), dtypes=NUMERIC_DTYPES),
    OpInfo("bias_add", _bias_add, dtypes=NUMERIC_DTYPES),
    OpInfo("scale", _scale),
    OpInfo("div_scale", _scale),
]
