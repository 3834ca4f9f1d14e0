"""Rules of the logical family: not differentiable (symbolic zero tangents),
not linear, batched elementwise (numpy broadcasting for the binary ops)."""

from __future__ import annotations

from functools import partial

from ..core.primitive import register_rules
from ..core.registry import NOT_DIFFERENTIABLE, NOT_LINEAR
from ..primitives import logical as g
from ._common import broadcasting_batch, unary_batch

for _p in (g.isfinite_p, g.isnan_p, g.isinf_p, g.logical_not_p, g.bitwise_not_p):
    register_rules(_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
                   batch=partial(unary_batch, _p))
for _p in (g.logical_and_p, g.logical_or_p, g.logical_xor_p, g.bitwise_and_p, g.bitwise_or_p,
           g.bitwise_xor_p):
    register_rules(_p, jvp=NOT_DIFFERENTIABLE, transpose=NOT_LINEAR,
                   batch=partial(broadcasting_batch, _p))
