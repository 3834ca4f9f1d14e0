"""Rules of the rounding family: zero derivative, not linear, elementwise
batching."""

from __future__ import annotations


from ..core.primitive import register_rules
from ..core.registry import ZERO_DERIVATIVE
from ..primitives.rounding import ceil_p, floor_p, round_p, trunc_p
from ._common import marker_rules


register_rules(floor_p, **marker_rules(floor_p, ZERO_DERIVATIVE))
register_rules(ceil_p, **marker_rules(ceil_p, ZERO_DERIVATIVE))
register_rules(round_p, **marker_rules(round_p, ZERO_DERIVATIVE))
register_rules(trunc_p, **marker_rules(trunc_p, ZERO_DERIVATIVE))
