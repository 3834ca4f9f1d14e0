"""gradrules: differentiable ops for JAX, each a primitive with every rule.

Every public op below is a JAX primitive (or a fused group of three: forward,
JVP, backward) with abstract eval, JVP, transpose where linear, batching and
an XLA lowering; ``gradrules.check`` verifies the rules, ``list_ops`` /
``get_op`` give the manifest.
"""

from . import primitives as _primitives  # noqa: F401  (registers the primitives)
from . import rules as _rules  # noqa: F401  (registers their rules)
from .core.config import config as config
from .core.registry import get_op as get_op
from .core.registry import list_ops as list_ops
from .testing.check import CHECKS as CHECKS
from .testing.check import check as check
from .testing.report import Report as Report

# arithmetic
from .primitives.arithmetic import add as add
from .primitives.arithmetic import subtract as subtract
from .primitives.arithmetic import multiply as multiply
from .primitives.arithmetic import divide as divide
from .primitives.arithmetic import pow as pow
from .primitives.arithmetic import maximum as maximum
from .primitives.arithmetic import minimum as minimum
from .primitives.arithmetic import remainder as remainder
from .primitives.arithmetic import fmod as fmod
from .primitives.arithmetic import atan2 as atan2
from .primitives.arithmetic import residual_add as residual_add
from .primitives.arithmetic import bias_add as bias_add
from .primitives.arithmetic import scale as scale
from .primitives.arithmetic import div_scale as div_scale

# compare
from .primitives.compare import eq as eq
from .primitives.compare import ne as ne
from .primitives.compare import lt as lt
from .primitives.compare import le as le
from .primitives.compare import gt as gt
from .primitives.compare import ge as ge
from .primitives.compare import where as where

# convert
from .primitives.convert import convert_element_type as convert_element_type
from .primitives.convert import copy as copy
from .primitives.convert import assign as assign

# reduction
from .primitives.reduction import sum as sum

# rounding
from .primitives.rounding import floor as floor
from .primitives.rounding import ceil as ceil
from .primitives.rounding import round as round
from .primitives.rounding import trunc as trunc

# shape
from .primitives.shape import reshape as reshape
from .primitives.shape import transpose as transpose
from .primitives.shape import permute as permute
from .primitives.shape import broadcast_in_dim as broadcast_in_dim
from .primitives.shape import broadcast_to as broadcast_to
from .primitives.shape import expand_dims as expand_dims
from .primitives.shape import unsqueeze as unsqueeze
from .primitives.shape import squeeze as squeeze

# unary
from .primitives.unary import abs as abs
from .primitives.unary import neg as neg
from .primitives.unary import sign as sign
from .primitives.unary import exp as exp
from .primitives.unary import exp2 as exp2
from .primitives.unary import expm1 as expm1
from .primitives.unary import log as log
from .primitives.unary import log2 as log2
from .primitives.unary import log10 as log10
from .primitives.unary import log1p as log1p
from .primitives.unary import sqrt as sqrt
from .primitives.unary import rsqrt as rsqrt
from .primitives.unary import reciprocal as reciprocal
from .primitives.unary import square as square
from .primitives.unary import sin as sin
from .primitives.unary import cos as cos
from .primitives.unary import tan as tan
from .primitives.unary import asin as asin
from .primitives.unary import acos as acos
from .primitives.unary import atan as atan
from .primitives.unary import sinh as sinh
from .primitives.unary import cosh as cosh
from .primitives.unary import tanh as tanh
from .primitives.unary import asinh as asinh
from .primitives.unary import acosh as acosh
from .primitives.unary import atanh as atanh
