"""gradrules: differentiable ops for JAX, each a primitive with every rule."""

from . import primitives as _primitives  # noqa: F401  (registers the primitives)
from . import rules as _rules  # noqa: F401  (registers their rules)
from .core.config import config as config
from .core.registry import get_op as get_op
from .core.registry import list_ops as list_ops
