"""Core machinery: primitive factory, rule registration, registry, kernel
selection, config, argument and infer_meta helpers."""

from .config import config as config
from .kernels import Implementation as Implementation
from .kernels import implementation as implementation
from .primitive import define_primitive as define_primitive
from .primitive import register_rules as register_rules
from .registry import NOT_DIFFERENTIABLE as NOT_DIFFERENTIABLE
from .registry import NOT_LINEAR as NOT_LINEAR
from .registry import ZERO_DERIVATIVE as ZERO_DERIVATIVE
from .registry import OpDef as OpDef
from .registry import get_op as get_op
from .registry import list_ops as list_ops
from .registry import register_op as register_op
