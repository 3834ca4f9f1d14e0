"""Samples of the special family: each op on its domain, away from poles."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, binary_samples, floats, unary_samples


def _lgamma(rng: np.random.Generator) -> list[Sample]:
    """Positive x, and negative x between two poles (where Gamma < 0)."""
    return unary_samples(0.3, 4.0, ((2, 3), (0, 2)))(rng) + [
        Sample((floats(rng, (3,), -1.8, -1.2),), desc="float64[3] in (-2, -1)")]


def _polygamma(rng: np.random.Generator) -> list[Sample]:
    return [Sample((0, floats(rng, (2, 3), 0.5, 3.0))), Sample((1, floats(rng, (), 0.5, 3.0))),
            Sample((3, floats(rng, (3,), 0.8, 3.0))), Sample((2, floats(rng, (0, 2), 0.5, 3.0)))]


def _bessel(rng: np.random.Generator) -> list[Sample]:
    """Both signs, and points close to the kink at 0 (x == 0 itself is tested in
    tests/test_special.py: finite differences do not apply there)."""
    return unary_samples(-3.0, 3.0, ((2, 3), (), (0, 2)))(rng) + [
        Sample((np.array([-2e-3, 1e-3, 2.5]),), desc="float64[3] near (not at) 0")]


def _order_one(rng: np.random.Generator) -> list[Sample]:
    """I0, I1, J0, J1 are smooth at 0: 0 itself, points on both sides of where
    the order-1 derivatives' series takes over (|x| = 0.105 in float64), and
    for J both sides of the switch of the approximation at |x| = 5."""
    return [Sample((floats(rng, (2, 3), -3.0, 3.0),)),
            Sample((np.array([0.0, -2e-3, 0.09, -0.12, 4.9, 5.1, -9.3]),),
                   desc="float64[7] with 0")]


def _bessel_i0_i1(rng: np.random.Generator) -> list[Sample]:
    """As ``_order_one`` but away from 0 itself: the reference, jax.scipy's
    exp(|x|) * i0e(x), differentiates the kink of exp(|x|) and of i0e, i1e
    there (tests/test_special.py checks x == 0 against the series)."""
    return [Sample((floats(rng, (2, 3), -3.0, 3.0),)),
            Sample((np.array([-2e-3, 1e-3, 0.09, -0.12, 4.9]),), desc="float64[5] near 0")]


OPINFOS = [
    OpInfo("erf", unary_samples(-2.0, 2.0)),
    OpInfo("erfc", unary_samples(-2.0, 2.0)),
    OpInfo("erfinv", unary_samples(-0.8, 0.8)),
    OpInfo("erfcx", unary_samples(-1.5, 2.5, ((2, 3), ()))),
    OpInfo("lgamma", _lgamma),
    OpInfo("digamma", unary_samples(0.5, 3.0)),
    OpInfo("polygamma", _polygamma),
    OpInfo("bessel_i0e", _bessel),
    OpInfo("bessel_i1e", _bessel),
    OpInfo("bessel_i0", _bessel_i0_i1),
    OpInfo("bessel_i1", _bessel_i0_i1),
    OpInfo("bessel_j0", _order_one),
    OpInfo("bessel_j1", _order_one),
    OpInfo("zeta", binary_samples(1.5, 4.0, 0.5, 3.0,
                          shapes=(((1, 3), (2, 1)), ((), (2,))))),
]
