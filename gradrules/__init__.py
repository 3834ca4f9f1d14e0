"""gradrules: differentiable ops for JAX, each a primitive with every rule.

Every public op below is a JAX primitive (or a fused group of three: forward,
JVP, backward) with abstract eval, JVP, transpose where linear, batching and
an XLA lowering; ``gradrules.check`` verifies the rules, ``list_ops`` /
``get_op`` give the manifest, and ``define_primitive`` / ``register_rules`` /
``define_op`` / ``register_samples`` make ops of your own the same way
(``gradrules.extend``, ``docs/extending.md``).
"""

from . import primitives as _primitives  # noqa: F401  (registers the primitives)
from . import rules as _rules  # noqa: F401  (registers their rules)
from .core.config import config as config
from .core.registry import get_op as get_op
from .core.registry import list_ops as list_ops
from .testing.check import CHECKS as CHECKS
from .testing.check import check as check
from .testing.report import Report as Report
from .explain import Explanation as Explanation
from .explain import explain as explain

# extending: your own ops, with the calls the catalog is made of (docs/extending.md)
from .extend import define_primitive as define_primitive
from .extend import register_rules as register_rules
from .extend import define_op as define_op
from .extend import register_samples as register_samples
from .extend import Sample as Sample
from .extend import Tol as Tol
from .extend import NOT_DIFFERENTIABLE as NOT_DIFFERENTIABLE
from .extend import ZERO_DERIVATIVE as ZERO_DERIVATIVE
from .extend import NOT_LINEAR as NOT_LINEAR
from .extend import Tangent as Tangent
from .extend import Cotangent as Cotangent
from .extend import MaybeUndefined as MaybeUndefined
from .extend import BatchDim as BatchDim
from .extend import JvpResult as JvpResult
from .extend import BatchResult as BatchResult
from .extend import ShapedArray as ShapedArray
from .extend import Zero as Zero
from .extend import UndefinedPrimal as UndefinedPrimal
from .extend import zero_tangent as zero_tangent
from .extend import zero_cotangent as zero_cotangent
from .extend import is_zero as is_zero
from .extend import is_undefined_primal as is_undefined_primal
from .extend import aval_of as aval_of
from .extend import instantiate as instantiate
from .extend import add_tangents as add_tangents
from .extend import linear_jvp as linear_jvp
from .extend import bdim_to_front as bdim_to_front

# activation
from .primitives.activation import sigmoid as sigmoid
from .primitives.activation import log_sigmoid as log_sigmoid
from .primitives.activation import relu as relu
from .primitives.activation import leaky_relu as leaky_relu
from .primitives.activation import hardtanh as hardtanh
from .primitives.activation import hardswish as hardswish
from .primitives.activation import silu as silu
from .primitives.activation import gelu as gelu
from .primitives.activation import softplus as softplus
from .primitives.activation import clamp as clamp
from .primitives.activation import clip as clip
from .primitives.activation import elu as elu
from .primitives.activation import selu as selu
from .primitives.activation import celu as celu
from .primitives.activation import mish as mish
from .primitives.activation import swish as swish

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
from .primitives.arithmetic import logaddexp as logaddexp
from .primitives.arithmetic import hypot as hypot
from .primitives.arithmetic import lerp as lerp

# attention
from .primitives.attention import attention as attention
from .primitives.attention import dot_product_attention as dot_product_attention

# compare
from .primitives.compare import eq as eq
from .primitives.compare import ne as ne
from .primitives.compare import lt as lt
from .primitives.compare import le as le
from .primitives.compare import gt as gt
from .primitives.compare import ge as ge
from .primitives.compare import where as where

# conv
from .primitives.conv import conv2d as conv2d
from .primitives.conv import conv_transpose2d as conv_transpose2d
from .primitives.conv import conv1d as conv1d
from .primitives.conv import conv3d as conv3d

# convert
from .primitives.convert import convert_element_type as convert_element_type
from .primitives.convert import copy as copy
from .primitives.convert import assign as assign

# creation
from .primitives.creation import arange as arange
from .primitives.creation import full as full
from .primitives.creation import full_like as full_like
from .primitives.creation import zeros as zeros
from .primitives.creation import ones as ones

# gated
from .primitives.gated import silu_gated as silu_gated
from .primitives.gated import gelu_gated as gelu_gated
from .primitives.gated import silu_rowsplit as silu_rowsplit
from .primitives.gated import glu as glu

# gather
from .primitives.gather import gather as gather
from .primitives.gather import take as take
from .primitives.gather import index_select as index_select
from .primitives.gather import take_along_axis as take_along_axis
from .primitives.gather import embedding as embedding
from .primitives.gather import c_embedding as c_embedding
from .primitives.gather import one_hot as one_hot

# grid
from .primitives.grid import grid_sample as grid_sample
from .primitives.grid import grid_sample2d as grid_sample2d

# im2col
from .primitives.im2col import unfold as unfold
from .primitives.im2col import fold as fold

# layout
from .primitives.layout import concatenate as concatenate
from .primitives.layout import pad as pad
from .primitives.layout import tile as tile
from .primitives.layout import repeat as repeat
from .primitives.layout import flip as flip
from .primitives.layout import stack as stack
from .primitives.layout import roll as roll
from .primitives.layout import tensor_unfold as tensor_unfold
from .primitives.layout import tensor_fold as tensor_fold

# linalg
from .primitives.linalg import matmul as matmul
from .primitives.linalg import mm as mm
from .primitives.linalg import bmm as bmm
from .primitives.linalg import addmm as addmm
from .primitives.linalg import linear as linear
from .primitives.linalg import einsum as einsum
from .primitives.linalg import fused_gemm_epilogue as fused_gemm_epilogue

# logical
from .primitives.logical import isfinite as isfinite
from .primitives.logical import isnan as isnan
from .primitives.logical import isinf as isinf
from .primitives.logical import logical_not as logical_not
from .primitives.logical import logical_and as logical_and
from .primitives.logical import logical_or as logical_or
from .primitives.logical import logical_xor as logical_xor
from .primitives.logical import bitwise_not as bitwise_not
from .primitives.logical import bitwise_and as bitwise_and
from .primitives.logical import bitwise_or as bitwise_or
from .primitives.logical import bitwise_xor as bitwise_xor

# loss
from .primitives.loss import cross_entropy as cross_entropy
from .primitives.loss import fused_linear_cross_entropy as fused_linear_cross_entropy
from .primitives.loss import nll_loss as nll_loss
from .primitives.loss import softmax_cross_entropy as softmax_cross_entropy

# matrix
from .primitives.matrix import tril as tril
from .primitives.matrix import triu as triu
from .primitives.matrix import diagonal as diagonal
from .primitives.matrix import diag as diag
from .primitives.matrix import trace as trace

# norm
from .primitives.norm import rms_norm as rms_norm
from .primitives.norm import layer_norm as layer_norm
from .primitives.norm import group_norm as group_norm
from .primitives.norm import batch_norm as batch_norm

# parallel
from .primitives.parallel import vocab_parallel_cross_entropy as vocab_parallel_cross_entropy

# pool
from .primitives.pool import avg_pool2d as avg_pool2d
from .primitives.pool import adaptive_avg_pool2d as adaptive_avg_pool2d
from .primitives.pool import max_pool2d as max_pool2d
from .primitives.pool import avg_pool3d as avg_pool3d
from .primitives.pool import max_pool3d as max_pool3d

# products
from .primitives.products import dot as dot
from .primitives.products import outer as outer
from .primitives.products import kron as kron
from .primitives.products import cross as cross

# random
from .primitives.random import dropout as dropout
from .primitives.random import uniform as uniform
from .primitives.random import normal as normal
from .primitives.random import exponential as exponential

# reduction
from .primitives.reduction import sum as sum
from .primitives.reduction import mean as mean
from .primitives.reduction import prod as prod
from .primitives.reduction import max as max
from .primitives.reduction import amax as amax
from .primitives.reduction import min as min
from .primitives.reduction import amin as amin
from .primitives.reduction import var as var
from .primitives.reduction import std as std
from .primitives.reduction import var_mean as var_mean
from .primitives.reduction import logsumexp as logsumexp

# resample
from .primitives.resample import upsample2d as upsample2d
from .primitives.resample import pixel_shuffle as pixel_shuffle
from .primitives.resample import pixel_unshuffle as pixel_unshuffle
from .primitives.resample import unpatchify as unpatchify
from .primitives.resample import patchify as patchify

# rope
from .primitives.rope import rope as rope

# rounding
from .primitives.rounding import floor as floor
from .primitives.rounding import ceil as ceil
from .primitives.rounding import round as round
from .primitives.rounding import trunc as trunc

# scan
from .primitives.scan import cumsum as cumsum
from .primitives.scan import cumprod as cumprod
from .primitives.scan import cummax as cummax
from .primitives.scan import linear_recurrence as linear_recurrence
from .primitives.scan import logcumsumexp as logcumsumexp

# scatter
from .primitives.scatter import scatter_add as scatter_add
from .primitives.scatter import scatter as scatter
from .primitives.scatter import scatter_reduce as scatter_reduce
from .primitives.scatter import index_put as index_put
from .primitives.scatter import set_value as set_value
from .primitives.scatter import slice_scatter as slice_scatter

# segment
from .primitives.segment import segment_sum as segment_sum
from .primitives.segment import segment_max as segment_max
from .primitives.segment import segment_min as segment_min
from .primitives.segment import segment_mean as segment_mean

# shape
from .primitives.shape import reshape as reshape
from .primitives.shape import transpose as transpose
from .primitives.shape import moveaxis as moveaxis
from .primitives.shape import permute as permute
from .primitives.shape import broadcast_in_dim as broadcast_in_dim
from .primitives.shape import broadcast_to as broadcast_to
from .primitives.shape import expand_dims as expand_dims
from .primitives.shape import unsqueeze as unsqueeze
from .primitives.shape import squeeze as squeeze

# slicing
from .primitives.slicing import slice as slice
from .primitives.slicing import row_slice as row_slice
from .primitives.slicing import select as select
from .primitives.slicing import dynamic_slice as dynamic_slice
from .primitives.slicing import dynamic_update_slice as dynamic_update_slice
from .primitives.slicing import split as split

# softmax
from .primitives.softmax import softmax as softmax
from .primitives.softmax import log_softmax as log_softmax

# solve
from .primitives.solve import cholesky as cholesky
from .primitives.solve import triangular_solve as triangular_solve
from .primitives.solve import solve as solve
from .primitives.solve import inv as inv
from .primitives.solve import det as det
from .primitives.solve import slogdet as slogdet
from .primitives.solve import qr as qr

# sort
from .primitives.sort import sort as sort
from .primitives.sort import argsort as argsort
from .primitives.sort import topk as topk
from .primitives.sort import argmax as argmax
from .primitives.sort import argmin as argmin
from .primitives.sort import nonzero as nonzero

# special
from .primitives.special import erf as erf
from .primitives.special import erfc as erfc
from .primitives.special import erfinv as erfinv
from .primitives.special import lgamma as lgamma
from .primitives.special import digamma as digamma
from .primitives.special import bessel_i0e as bessel_i0e
from .primitives.special import bessel_i1e as bessel_i1e
from .primitives.special import erfcx as erfcx
from .primitives.special import bessel_i0 as bessel_i0
from .primitives.special import bessel_i1 as bessel_i1
from .primitives.special import bessel_j0 as bessel_j0
from .primitives.special import bessel_j1 as bessel_j1
from .primitives.special import zeta as zeta
from .primitives.special import polygamma as polygamma

# spectral
from .primitives.spectral import eigh as eigh
from .primitives.spectral import svd as svd
from .primitives.spectral import norm as norm
from .primitives.spectral import matrix_norm as matrix_norm

# strided
from .primitives.strided import as_strided as as_strided

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
from .primitives.unary import cbrt as cbrt
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
from .primitives.unary import sinc as sinc
