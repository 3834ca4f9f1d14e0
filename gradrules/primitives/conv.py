"""Convolution: conv2d and conv_transpose2d, both binding ``convolution_p``.

``convolution_p`` is XLA's general convolution (window strides, explicit
padding, input and kernel dilation, feature and batch grouping, any layout
through ``lax.ConvDimensionNumbers``), so that its transposes for the input
and for the kernel are again convolutions of the same primitive, as in JAX's
own rules. ``flip_p`` (the layout family's reverse along axes) is what
conv_transpose2d and those transposes flip the kernel with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import choice_param, int_pair, int_param
from ..core.meta import check_dtype, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .arithmetic import add, bias_add
from .convert import promote
from .layout import flip_p
from .shape import reshape, transpose

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "conv"
Pads = tuple[tuple[int, int], ...]
DATA_FORMATS = ("NCHW", "NHWC")


# ------------------------------------------------------------- convolution
def dilate(d: int, r: int) -> int:
    """The size of an axis of size ``d`` with ``r - 1`` holes between elements."""
    return 0 if d == 0 else 1 + r * (d - 1)


def conv_shape(op: str, lhs: Sequence[int], rhs: Sequence[int], *, window_strides: tuple,
               padding: Pads, lhs_dilation: tuple, rhs_dilation: tuple,
               dimension_numbers: lax.ConvDimensionNumbers, feature_group_count: int,
               batch_group_count: int) -> tuple[int, ...]:
    """The output shape of a general convolution (lax.conv_general_dilated's rule)."""
    lspec, rspec, ospec = dimension_numbers
    lt, rt = [lhs[i] for i in lspec], [rhs[i] for i in rspec]
    desc = f"lhs with shape {tuple(lhs)} and rhs with shape {tuple(rhs)}"
    if len(lhs) != len(rhs) or len(lhs) != len(ospec):
        raise ValueError(f"{op_name(op)}: ranks differ: {desc}")
    if lt[1] != rt[1] * feature_group_count or rt[0] % feature_group_count:
        raise ValueError(f"{op_name(op)}: {desc}: input features {lt[1]} must be "
                         f"feature_group_count={feature_group_count} x kernel input features "
                         f"{rt[1]}, and kernel output features {rt[0]} divisible by it")
    if lt[0] % batch_group_count or rt[0] % batch_group_count:
        raise ValueError(f"{op_name(op)}: {desc}: batch_group_count={batch_group_count} "
                         "must divide the batch and the kernel output features")
    spatial = []
    for d in range(len(lt) - 2):
        padded = dilate(lt[2 + d], lhs_dilation[d]) + sum(padding[d])
        k = dilate(rt[2 + d], rhs_dilation[d])
        spatial.append((padded - k) // window_strides[d] + 1 if padded >= k else 0)
    out_t = (lt[0] // batch_group_count, rt[0], *spatial)
    out = [0] * len(ospec)
    for j, i in enumerate(ospec):
        out[i] = out_t[j]
    return tuple(out)


def _convolution_infer_meta(lhs: Any, rhs: Any, **params: Any) -> ShapedArray:
    dtype = same_dtype("convolution", {"lhs": lhs, "rhs": rhs})
    check_dtype("convolution", "lhs", dtype, "float")
    return ShapedArray(conv_shape("convolution", lhs.shape, rhs.shape, **params), dtype)


def _convolution_impl(lhs: Array, rhs: Array, **params: Any) -> Array:
    return lax.conv_general_dilated(lhs, rhs, precision=lax.Precision.HIGHEST, **params)


CONV_PARAMS = ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "dimension_numbers",
               "feature_group_count", "batch_group_count")
convolution_p = define_primitive("convolution", family=FAMILY, operands=("lhs", "rhs"),
                                 params=CONV_PARAMS, infer_meta=_convolution_infer_meta,
                                 impl=_convolution_impl)


# ---------------------------------------------------------- argument parsing
def _padding(op: str, padding: Any, spatial: tuple[int, int], kernel: tuple[int, int],
             stride: tuple[int, int], dilation: tuple[int, int]) -> Pads:
    """int | (ph, pw) | ((top, bottom), (left, right)) | 'SAME' | 'VALID'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0), (0, 0))
        if mode != "SAME":
            raise ValueError(f"{op_name(op)}: padding must be 'SAME', 'VALID', an int or "
                             f"pairs of ints, got {padding!r}")
        pads = []
        for n, k, s, r in zip(spatial, kernel, stride, dilation):
            total = max((-(-n // s) - 1) * s + dilate(k, r) - n, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if isinstance(padding, (tuple, list)) and len(padding) == 2 and all(
            isinstance(p, (tuple, list)) for p in padding):
        return tuple(int_pair(op, "padding", p, 0) for p in padding)  # type: ignore[return-value]
    ph, pw = int_pair(op, "padding", padding, 0)
    return ((ph, ph), (pw, pw))


def _conv_args(op: str, x: Any, w: Any, stride: Any, dilation: Any, groups: Any,
               data_format: Any) -> tuple[Any, Any, tuple[int, int], tuple[int, int], int,
                                          tuple[int, int]]:
    """Validated (x, w, stride, dilation, groups, (H, W)) of a 2-D convolution."""
    choice_param(op, "data_format", data_format, DATA_FORMATS)
    x, w = promote(op, {"x": x, "w": w}, "float")
    if np.ndim(x) != 4 or np.ndim(w) != 4:
        raise ValueError(f"{op_name(op)}: x must be a 4-D {data_format} image and w a 4-D "
                         f"kernel; got x with shape {np.shape(x)} and w with shape "
                         f"{np.shape(w)}")
    groups = int_param(op, "groups", groups, lo=1)
    hw = tuple(np.shape(x)[data_format.index(a)] for a in "HW")
    return (x, w, int_pair(op, "stride", stride), int_pair(op, "dilation", dilation),
            int(groups), hw)  # type: ignore[return-value]


def _bind(x: Any, kernel: Any, data_format: str, **params: Any) -> Array:
    dn = lax.conv_dimension_numbers(np.shape(x), np.shape(kernel),
                                    (data_format, "OIHW", data_format))
    return convolution_p.bind(x, kernel, dimension_numbers=dn, batch_group_count=1, **params)


def _add_bias(op: str, out: Array, b: ArrayLike | None, data_format: str) -> Array:
    if b is None:
        return out
    (b,) = promote(op, {"b": b}, "float")
    c = np.shape(out)[data_format.index("C")]
    if np.shape(b) != (c,):
        raise ValueError(f"{op_name(op)}: b must have shape ({c},), got {np.shape(b)}")
    if data_format == "NHWC":
        return bias_add(out, b)
    return add(out, reshape(b, (c, 1, 1)))


# ------------------------------------------------------------------ conv2d
def conv2d(x: ArrayLike, w: ArrayLike, b: ArrayLike | None = None, *,
           stride: int | Sequence[int] = 1, padding: Any = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1,
           data_format: str = "NCHW") -> Array:
    """2-D cross-correlation (torch/Paddle conv2d), plus the bias ``b`` [out].

    x is [N, C, H, W] (``data_format="NHWC"``: [N, H, W, C]); w is
    [out, C / groups, kh, kw] in either format. ``padding``: int, (ph, pw),
    ((top, bottom), (left, right)), 'SAME' (output ceil(H / stride)) or
    'VALID'. Bilinear in (x, w): the tangent is conv(tx, w) + conv(x, tw); the
    transpose for x is a convolution of the cotangent (dilated by the stride)
    with the flipped kernel, its in/out features swapped per group; for w a
    convolution of x with the cotangent (batch-grouped when groups > 1).
    """
    op = "conv2d"
    x, w, s, r, groups, hw = _conv_args(op, x, w, stride, dilation, groups, data_format)
    c, o = np.shape(x)[data_format.index("C")], np.shape(w)[0]
    if c % groups or o % groups or np.shape(w)[1] * groups != c:
        raise ValueError(f"{op_name(op)}: x with shape {np.shape(x)} ({data_format}) has {c} "
                         f"channels and w with shape {np.shape(w)} wants {np.shape(w)[1]} x "
                         f"groups={groups}; channels and the {o} output channels must be "
                         "divisible by groups")
    k = tuple(np.shape(w)[2:])
    pads = _padding(op, padding, hw, k, s, r)
    for n, kk, rr, p in zip(hw, k, r, pads):
        if dilate(kk, rr) > n + sum(p):
            raise ValueError(f"{op_name(op)}: kernel {k} (dilation {r}) is larger than the "
                             f"padded input: x with shape {np.shape(x)} ({data_format}), "
                             f"padding {pads}")
    out = _bind(x, w, data_format, window_strides=s, padding=pads, lhs_dilation=(1, 1),
                rhs_dilation=r, feature_group_count=groups)
    return _add_bias(op, out, b, data_format)


def _reference_bias(out: Array, b: Array | None, data_format: str) -> Array:
    if b is None:
        return out
    return out + (b if data_format == "NHWC" else b[:, None, None])


def _conv2d_reference(x: Array, w: Array, b: Array | None = None, *, stride: Any = 1,
                      padding: Any = 0, dilation: Any = 1, groups: int = 1,
                      data_format: str = "NCHW") -> Array:
    s, r = int_pair("reference", "stride", stride), int_pair("reference", "dilation", dilation)
    if isinstance(padding, str):
        pads: Any = padding.upper()
    elif isinstance(padding, (tuple, list)) and isinstance(padding[0], (tuple, list)):
        pads = padding
    else:
        ph, pw = int_pair("reference", "padding", padding, 0)
        pads = ((ph, ph), (pw, pw))
    out = lax.conv_general_dilated(x, w, s, pads, rhs_dilation=r,
                                   dimension_numbers=(data_format, "OIHW", data_format),
                                   feature_group_count=groups, precision=lax.Precision.HIGHEST)
    return _reference_bias(out, b, data_format)


register_op(OpDef(name="conv2d", family=FAMILY, fn=conv2d, primitives=(convolution_p, flip_p),
                  reference=_conv2d_reference, operands=("x", "w", "b"),
                  linear=(("x", "b"), ("w", "b"))))


# -------------------------------------------------------- conv_transpose2d
def conv_transpose2d(x: ArrayLike, w: ArrayLike, b: ArrayLike | None = None, *,
                     stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0,
                     dilation: int | Sequence[int] = 1, groups: int = 1,
                     data_format: str = "NCHW") -> Array:
    """The transposed convolution (torch's conv_transpose2d): the adjoint of
    conv2d with the same stride / padding / dilation / groups, applied to x.

    w is [C_in, out / groups, kh, kw]; the output has spatial size
    (H - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1.
    Computed as a convolution of x dilated by the stride with the flipped
    kernel (in/out features swapped per group), so its rules are conv's.
    """
    op = "conv_transpose2d"
    x, w, s, r, groups, hw = _conv_args(op, x, w, stride, dilation, groups, data_format)
    p = int_pair(op, "padding", padding, 0)
    op_ = int_pair(op, "output_padding", output_padding, 0)
    c, (ci, og, kh, kw) = np.shape(x)[data_format.index("C")], np.shape(w)
    if c != ci or c % groups:
        raise ValueError(f"{op_name(op)}: x with shape {np.shape(x)} ({data_format}) has {c} "
                         f"channels; w with shape {np.shape(w)} wants {ci}, divisible by "
                         f"groups={groups}")
    if any(a >= max(si, ri) for a, si, ri in zip(op_, s, r)):
        raise ValueError(f"{op_name(op)}: output_padding {op_} must be smaller than stride "
                         f"{s} or dilation {r}")
    for n, k, si, ri, pi, oi in zip(hw, (kh, kw), s, r, p, op_):
        if (n - 1) * si - 2 * pi + dilate(k, ri) + oi < 1:
            raise ValueError(f"{op_name(op)}: padding {p} leaves no output for x with shape "
                             f"{np.shape(x)} and w with shape {np.shape(w)}")
    kernel = reshape(w, (groups, ci // groups, og, kh, kw))
    kernel = reshape(transpose(kernel, (0, 2, 1, 3, 4)), (groups * og, ci // groups, kh, kw))
    kernel = flip_p.bind(kernel, axes=(2, 3))
    pads = tuple((dilate(k, ri) - 1 - pi, dilate(k, ri) - 1 - pi + oi)
                 for k, ri, pi, oi in zip((kh, kw), r, p, op_))
    out = _bind(x, kernel, data_format, window_strides=(1, 1), padding=pads, lhs_dilation=s,
                rhs_dilation=r, feature_group_count=groups)
    return _add_bias(op, out, b, data_format)


def _conv_transpose2d_reference(x: Array, w: Array, b: Array | None = None, *, stride: Any = 1,
                                padding: Any = 0, output_padding: Any = 0, dilation: Any = 1,
                                groups: int = 1, data_format: str = "NCHW") -> Array:
    """The VJP of lax's conv (JAX's own transpose rule) applied to x."""
    s, r = int_pair("reference", "stride", stride), int_pair("reference", "dilation", dilation)
    p = int_pair("reference", "padding", padding, 0)
    op_ = int_pair("reference", "output_padding", output_padding, 0)
    hw_axes = (data_format.index("H"), data_format.index("W"))
    out_shape = list(np.shape(x))
    out_shape[data_format.index("C")] = np.shape(w)[1] * groups
    for a, si, pi, ri, k, oi in zip(hw_axes, s, p, r, np.shape(w)[2:], op_):
        out_shape[a] = (np.shape(x)[a] - 1) * si - 2 * pi + dilate(k, ri) + oi

    def forward(z: Array) -> Array:
        return lax.conv_general_dilated(z, w, s, tuple((pi, pi) for pi in p), rhs_dilation=r,
                                        dimension_numbers=(data_format, "OIHW", data_format),
                                        feature_group_count=groups,
                                        precision=lax.Precision.HIGHEST)

    _, vjp = jax.vjp(forward, jnp.zeros(out_shape, x.dtype))
    return _reference_bias(vjp(x)[0], b, data_format)


register_op(OpDef(name="conv_transpose2d", family=FAMILY, fn=conv_transpose2d,
                  primitives=(convolution_p, flip_p),
                  reference=_conv_transpose2d_reference, operands=("x", "w", "b"),
                  linear=(("x", "b"), ("w", "b"))))
