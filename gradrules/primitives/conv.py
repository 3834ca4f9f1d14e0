"""Convolution: conv1d, conv2d, conv3d and conv_transpose2d, all binding
``convolution_p``.

``convolution_p`` is XLA's general convolution (window strides, explicit
padding, input and kernel dilation, feature and batch grouping, any layout
through ``lax.ConvDimensionNumbers``), so that its transposes for the input
and for the kernel are again convolutions of the same primitive, as in JAX's
own rules. ``flip_p`` (the layout family's reverse along axes) is what
conv_transpose2d and those transposes flip the kernel with.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import choice_param, int_param
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
SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
DATA_FORMATS = {nd: (f"NC{s}", f"N{s}C") for nd, s in SPATIAL.items()}
_COUNT = {1: "one int", 2: "a pair of ints", 3: "a triple of ints"}


def spatial_ints(op: str, name: str, v: Any, nd: int, minimum: int = 1) -> tuple[int, ...]:
    """An int or ``nd`` ints (each >= ``minimum``) as an ``nd``-tuple."""
    vals = (v,) * nd if isinstance(v, (int, np.integer)) else tuple(v) if isinstance(
        v, (tuple, list)) else (v,)
    if len(vals) != nd or any(isinstance(a, (bool, np.bool_))
                              or not isinstance(a, (int, np.integer)) for a in vals):
        raise TypeError(f"{op_name(op)}: {name} must be an int or {_COUNT[nd]}, got {v!r}")
    if min(vals) < minimum:
        raise ValueError(f"{op_name(op)}: {name} must be >= {minimum}, got {v!r}")
    return tuple(int(a) for a in vals)


def _padding(op: str, padding: Any, spatial: tuple[int, ...], kernel: tuple[int, ...],
             stride: tuple[int, ...], dilation: tuple[int, ...]) -> Pads:
    """int | nd ints | nd (lo, hi) pairs | 'SAME' | 'VALID'."""
    nd = len(spatial)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0),) * nd
        if mode != "SAME":
            raise ValueError(f"{op_name(op)}: padding must be 'SAME', 'VALID', an int or "
                             f"pairs of ints, got {padding!r}")
        pads = []
        for n, k, s, r in zip(spatial, kernel, stride, dilation):
            total = max((-(-n // s) - 1) * s + dilate(k, r) - n, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if isinstance(padding, (tuple, list)) and len(padding) == nd and all(
            isinstance(p, (tuple, list)) for p in padding):
        return tuple(spatial_ints(op, "padding", p, 2, 0) for p in padding)  # type: ignore
    return tuple((p, p) for p in spatial_ints(op, "padding", padding, nd, 0))


def _conv_args(op: str, nd: int, x: Any, w: Any, stride: Any, dilation: Any, groups: Any,
               data_format: Any) -> tuple[Any, Any, tuple[int, ...], tuple[int, ...], int,
                                          tuple[int, ...]]:
    """Validated (x, w, stride, dilation, groups, spatial sizes) of an
    ``nd``-D convolution."""
    choice_param(op, "data_format", data_format, DATA_FORMATS[nd])
    x, w = promote(op, {"x": x, "w": w}, "float")
    if np.ndim(x) != nd + 2 or np.ndim(w) != nd + 2:
        raise ValueError(f"{op_name(op)}: x must be a {nd + 2}-D {data_format} input and w a "
                         f"{nd + 2}-D kernel; got x with shape {np.shape(x)} and w with shape "
                         f"{np.shape(w)}")
    groups = int_param(op, "groups", groups, lo=1)
    sizes = tuple(np.shape(x)[data_format.index(a)] for a in SPATIAL[nd])
    return (x, w, spatial_ints(op, "stride", stride, nd),
            spatial_ints(op, "dilation", dilation, nd), int(groups), sizes)


def _bind(x: Any, kernel: Any, data_format: str, **params: Any) -> Array:
    nd = np.ndim(x) - 2
    dn = lax.conv_dimension_numbers(np.shape(x), np.shape(kernel),
                                    (data_format, "OI" + SPATIAL[nd], data_format))
    return convolution_p.bind(x, kernel, dimension_numbers=dn, batch_group_count=1, **params)


def _add_bias(op: str, out: Array, b: ArrayLike | None, data_format: str) -> Array:
    if b is None:
        return out
    (b,) = promote(op, {"b": b}, "float")
    c = np.shape(out)[data_format.index("C")]
    if np.shape(b) != (c,):
        raise ValueError(f"{op_name(op)}: b must have shape ({c},), got {np.shape(b)}")
    if data_format.endswith("C"):
        return bias_add(out, b)
    return add(out, reshape(b, (c,) + (1,) * (np.ndim(out) - 2)))


# ---------------------------------------------------------- conv1d/2d/3d
def _conv(op: str, nd: int, x: ArrayLike, w: ArrayLike, b: ArrayLike | None, *, stride: Any,
          padding: Any, dilation: Any, groups: Any, data_format: Any) -> Array:
    """The ``nd``-D cross-correlation behind conv1d, conv2d and conv3d."""
    x, w, s, r, groups, sizes = _conv_args(op, nd, x, w, stride, dilation, groups, data_format)
    c, o = np.shape(x)[data_format.index("C")], np.shape(w)[0]
    if c % groups or o % groups or np.shape(w)[1] * groups != c:
        raise ValueError(f"{op_name(op)}: x with shape {np.shape(x)} ({data_format}) has {c} "
                         f"channels and w with shape {np.shape(w)} wants {np.shape(w)[1]} x "
                         f"groups={groups}; channels and the {o} output channels must be "
                         "divisible by groups")
    k = tuple(np.shape(w)[2:])
    pads = _padding(op, padding, sizes, k, s, r)
    for n, kk, rr, p in zip(sizes, k, r, pads):
        if dilate(kk, rr) > n + sum(p):
            raise ValueError(f"{op_name(op)}: kernel {k} (dilation {r}) is larger than the "
                             f"padded input: x with shape {np.shape(x)} ({data_format}), "
                             f"padding {pads}")
    out = _bind(x, w, data_format, window_strides=s, padding=pads, lhs_dilation=(1,) * nd,
                rhs_dilation=r, feature_group_count=groups)
    return _add_bias(op, out, b, data_format)


def conv1d(x: ArrayLike, w: ArrayLike, b: ArrayLike | None = None, *,
           stride: int | Sequence[int] = 1, padding: Any = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1,
           data_format: str = "NCW") -> Array:
    """1-D cross-correlation (torch's conv1d), plus the bias ``b`` [out]:
    conv2d's op and rules on [N, C, W] (``"NWC"``: [N, W, C]) with w
    [out, C / groups, k]. ``padding``: int, (p,), ((lo, hi),), 'SAME' or
    'VALID'. Bilinear in (x, w), with conv2d's transposes."""
    return _conv("conv1d", 1, x, w, b, stride=stride, padding=padding, dilation=dilation,
                 groups=groups, data_format=data_format)


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
    return _conv("conv2d", 2, x, w, b, stride=stride, padding=padding, dilation=dilation,
                 groups=groups, data_format=data_format)


def conv3d(x: ArrayLike, w: ArrayLike, b: ArrayLike | None = None, *,
           stride: int | Sequence[int] = 1, padding: Any = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1,
           data_format: str = "NCDHW") -> Array:
    """3-D cross-correlation (torch's conv3d), plus the bias ``b`` [out]:
    conv2d's op and rules on [N, C, D, H, W] (``"NDHWC"``: channels last)
    with w [out, C / groups, kd, kh, kw]. ``padding``: int, three ints,
    three (lo, hi) pairs, 'SAME' or 'VALID'. Bilinear in (x, w), with
    conv2d's transposes."""
    return _conv("conv3d", 3, x, w, b, stride=stride, padding=padding, dilation=dilation,
                 groups=groups, data_format=data_format)


def _reference_bias(out: Array, b: Array | None, data_format: str) -> Array:
    if b is None:
        return out
    return out + (b if data_format.endswith("C") else b.reshape((-1,) + (1,) * (out.ndim - 2)))


def _conv_reference(nd: int, x: Array, w: Array, b: Array | None = None, *, stride: Any = 1,
                    padding: Any = 0, dilation: Any = 1, groups: int = 1,
                    data_format: str | None = None) -> Array:
    """lax.conv_general_dilated with the same arguments."""
    data_format = data_format or DATA_FORMATS[nd][0]
    s = spatial_ints("reference", "stride", stride, nd)
    r = spatial_ints("reference", "dilation", dilation, nd)
    if isinstance(padding, str):
        pads: Any = padding.upper()
    elif isinstance(padding, (tuple, list)) and isinstance(padding[0], (tuple, list)):
        pads = padding
    else:
        pads = tuple((p, p) for p in spatial_ints("reference", "padding", padding, nd, 0))
    out = lax.conv_general_dilated(x, w, s, pads, rhs_dilation=r,
                                   dimension_numbers=(data_format, "OI" + SPATIAL[nd],
                                                      data_format),
                                   feature_group_count=groups, precision=lax.Precision.HIGHEST)
    return _reference_bias(out, b, data_format)


for _nd, _fn in ((1, conv1d), (2, conv2d), (3, conv3d)):
    register_op(OpDef(name=_fn.__name__, family=FAMILY, fn=_fn,
                      primitives=(convolution_p, flip_p),
                      reference=partial(_conv_reference, _nd),
                      operands=("x", "w", "b"), linear=(("x", "b"), ("w", "b"))))


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
    x, w, s, r, groups, hw = _conv_args(op, 2, x, w, stride, dilation, groups, data_format)
    p = spatial_ints(op, "padding", padding, 2, 0)
    op_ = spatial_ints(op, "output_padding", output_padding, 2, 0)
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
    s = spatial_ints("reference", "stride", stride, 2)
    r = spatial_ints("reference", "dilation", dilation, 2)
    p = spatial_ints("reference", "padding", padding, 2, 0)
    op_ = spatial_ints("reference", "output_padding", output_padding, 2, 0)
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
