"""Rules of the logical family: not differentiable (symbolic zero tangents),
not linear, batched elementwise (numpy broadcasting for the binary ops)."""

from __future__ import annotations

from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE
from ..primitives import logical as g
from ._common import marker_rules


register_rules(g.isfinite_p, **marker_rules(g.isfinite_p, NOT_DIFFERENTIABLE))
register_rules(g.isnan_p, **marker_rules(g.isnan_p, NOT_DIFFERENTIABLE))
register_rules(g.isinf_p, **marker_rules(g.isinf_p, NOT_DIFFERENTIABLE))
register_rules(g.logical_not_p, **marker_rules(g.logical_not_p, NOT_DIFFERENTIABLE))
register_rules(g.logical_and_p, **marker_rules(g.logical_and_p, NOT_DIFFERENTIABLE))
register_rules(g.logical_or_p, **marker_rules(g.logical_or_p, NOT_DIFFERENTIABLE))
register_rules(g.logical_xor_p, **marker_rules(g.logical_xor_p, NOT_DIFFERENTIABLE))
register_rules(g.bitwise_not_p, **marker_rules(g.bitwise_not_p, NOT_DIFFERENTIABLE))
register_rules(g.bitwise_and_p, **marker_rules(g.bitwise_and_p, NOT_DIFFERENTIABLE))
register_rules(g.bitwise_or_p, **marker_rules(g.bitwise_or_p, NOT_DIFFERENTIABLE))
register_rules(g.bitwise_xor_p, **marker_rules(g.bitwise_xor_p, NOT_DIFFERENTIABLE))
