"""Samples of the rounding family (random points: never on a jump)."""

from __future__ import annotations

from . import OpInfo, unary_samples

OPINFOS = [OpInfo(n, unary_samples(-3.0, 3.0)) for n in ("floor", "ceil", "round", "trunc")]
