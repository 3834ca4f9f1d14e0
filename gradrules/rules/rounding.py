"""Rules of the rounding family: zero derivative, elementwise batching."""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..core.registry import NOT_LINEAR, ZERO_DERIVATIVE
from ..primitives.rounding import ceil_p, floor_p, round_p, trunc_p
from ._common import unary_batch

for _p in (floor_p, ceil_p, round_p, trunc_p):
    register_rules(_p, jvp=ZERO_DERIVATIVE, transpose=NOT_LINEAR, batch=partial(unary_batch, _p))
