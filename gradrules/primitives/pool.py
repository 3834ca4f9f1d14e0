"""Pooling: avg_pool2d, adaptive_avg_pool2d (linear, separable maps of the
last two axes) and max_pool2d, which returns the values and the flat index
(h * W + w) of each window's maximum.

Average pooling is a ``_separable`` map ``out = A x B^T``: a 1-D window sum
(``reduce_window``) per axis, whose transpose primitive spreads the cotangent
back over the windows; adaptive pooling is the same with uneven windows
(static gathers) where the size does not divide.

max_pool2d's tangent is the input tangent gathered at those indices
(``take_along_axis`` on the flattened H * W axis), whose transpose is a
scatter-add into the input (``scatter_add``); see ``rules/pool.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.args import int_pair
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from ._separable import Taps, Window, separable_primitive
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "pool"
WINDOW_PARAMS = ("kernel_size", "stride", "padding")
INDEX_DTYPE = np.int32


def image_operand(op: str, x: ArrayLike, rank: int = 4) -> Array:
    (x,) = promote(op, {"x": x}, "float")
    if np.ndim(x) != rank:
        raise ValueError(f"{op_name(op)}: x must be a {rank}-D [N, C, H, W] image, got shape "
                         f"{np.shape(x)}")
    return x


def window_out(n: int, k: int, s: int, p: int) -> int:
    return (n + 2 * p - k) // s + 1


def _window_params(op: str, shape: tuple[int, ...], kernel_size: Any, stride: Any,
                   padding: Any) -> dict[str, tuple[int, int]]:
    """torch's rules: stride defaults to the kernel, padding <= kernel / 2,
    the kernel must fit in the padded input (ceil_mode=False)."""
    k = int_pair(op, "kernel_size", kernel_size)
    s = k if stride is None else int_pair(op, "stride", stride)
    p = int_pair(op, "padding", padding, 0)
    if any(2 * pi > ki for pi, ki in zip(p, k)):
        raise ValueError(f"{op_name(op)}: padding {p} must be at most half of kernel_size {k}")
    if any(ki > n + 2 * pi for ki, n, pi in zip(k, shape[-2:], p)):
        raise ValueError(f"{op_name(op)}: kernel_size {k} is larger than the padded input: x "
                         f"with shape {tuple(shape)}, padding {p}")
    return {"kernel_size": k, "stride": s, "padding": p}


# -------------------------------------------------------------- avg_pool2d
def _avg_pool2d_maps(h: int, w: int, *, kernel_size: tuple[int, int], stride: tuple[int, int],
                     padding: tuple[int, int]) -> tuple[Window, Window]:
    """Each axis: the mean of k pixels from i s - p (the padding's zeros count
    in the divisor k, torch's count_include_pad=True)."""
    return tuple(Window(n, window_out(n, k, s, p), k, s, p, 1.0 / k)  # type: ignore
                 for n, k, s, p in zip((h, w), kernel_size, stride, padding))


avg_pool2d_p, avg_pool2d_transpose_p = separable_primitive(
    "avg_pool2d", family=FAMILY, params=WINDOW_PARAMS, maps=_avg_pool2d_maps)


def avg_pool2d(x: ArrayLike, *, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0) -> Array:
    """Mean over kh x kw windows of an [N, C, H, W] image (torch's avg_pool2d:
    zero padding counted in the divisor, floor output size).

    Linear: ``out = A x B^T`` with A, B the 1-D window averages (window
    sums, as ``lax.reduce_window``), so the transpose spreads each cotangent
    evenly over its window (``A^T ct B``, the primitive
    ``avg_pool2d_transpose``).
    """
    x = image_operand("avg_pool2d", x)
    return avg_pool2d_p.bind(x, **_window_params("avg_pool2d", np.shape(x), kernel_size, stride,
                                                 padding))


def _reference_params(x: Array, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    p = _window_params("reference", np.shape(x), kernel_size, stride, padding)
    k, s, (ph, pw) = p["kernel_size"], p["stride"], p["padding"]
    return (1, 1) + k, (1, 1) + s, ((0, 0), (0, 0), (ph, ph), (pw, pw))


def _avg_pool2d_reference(x: Array, *, kernel_size: Any, stride: Any = None,
                          padding: Any = 0) -> Array:
    win, strides, pads = _reference_params(x, kernel_size, stride, padding)
    total = lax.reduce_window(x, 0.0, lax.add, win, strides, pads)
    return total / (win[2] * win[3])


register_op(OpDef(name="avg_pool2d", family=FAMILY, fn=avg_pool2d,
                  primitives=(avg_pool2d_p, avg_pool2d_transpose_p),
                  reference=_avg_pool2d_reference, operands=("x",), linear=(("x",),)))


# ----------------------------------------------------- adaptive_avg_pool2d
def _adaptive_matrix(n: int, m: int) -> np.ndarray:
    """Row i averages input pixels floor(i n / m) .. ceil((i + 1) n / m) - 1."""
    a = np.zeros((m, n))
    for i in range(m):
        lo, hi = (i * n) // m, -(-((i + 1) * n) // m)
        a[i, lo:hi] = 1.0 / (hi - lo)
    return a


def _adaptive_map(n: int, m: int) -> Window | Taps:
    """Even windows (a window sum) where m divides n, else static taps."""
    if n % m == 0:
        return Window(n, m, n // m, n // m, 0, 1.0 / (n // m))
    return Taps.of(_adaptive_matrix(n, m))


def _adaptive_avg_pool2d_maps(h: int, w: int, *, output_size: tuple[int, int]
                              ) -> tuple[Window | Taps, Window | Taps]:
    return _adaptive_map(h, output_size[0]), _adaptive_map(w, output_size[1])


adaptive_avg_pool2d_p, adaptive_avg_pool2d_transpose_p = separable_primitive(
    "adaptive_avg_pool2d", family=FAMILY, params=("output_size",),
    maps=_adaptive_avg_pool2d_maps)


def _output_size(op: str, shape: tuple[int, ...], output_size: Any) -> tuple[int, int]:
    sizes = (output_size,) * 2 if output_size is None or isinstance(
        output_size, (int, np.integer)) else tuple(output_size)
    if len(sizes) != 2:
        raise ValueError(f"{op_name(op)}: output_size must be an int or a pair, got "
                         f"{output_size!r}")
    sizes = tuple(n if s is None else s for s, n in zip(sizes, shape[-2:]))
    return int_pair(op, "output_size", sizes)


def adaptive_avg_pool2d(x: ArrayLike, *, output_size: int | Sequence[int | None]) -> Array:
    """Average pooling of an [N, C, H, W] image to ``output_size`` (torch's
    adaptive_avg_pool2d; None keeps that axis): output row i averages input
    rows floor(i H / oh) to ceil((i + 1) H / oh) - 1. Linear; the transpose
    spreads each cotangent evenly over its window."""
    x = image_operand("adaptive_avg_pool2d", x)
    size = _output_size("adaptive_avg_pool2d", np.shape(x), output_size)
    return adaptive_avg_pool2d_p.bind(x, output_size=size)


def _adaptive_avg_pool2d_reference(x: Array, *, output_size: Any) -> Array:
    oh, ow = _output_size("reference", np.shape(x), output_size)
    h, w = x.shape[-2:]
    rows = [jnp.stack([jnp.mean(x[..., (i * h) // oh:-(-((i + 1) * h) // oh),
                                  (j * w) // ow:-(-((j + 1) * w) // ow)], axis=(-2, -1))
                       for j in range(ow)], -1) for i in range(oh)]
    return jnp.stack(rows, -2)


register_op(OpDef(name="adaptive_avg_pool2d", family=FAMILY, fn=adaptive_avg_pool2d,
                  primitives=(adaptive_avg_pool2d_p, adaptive_avg_pool2d_transpose_p),
                  reference=_adaptive_avg_pool2d_reference, operands=("x",),
                  linear=(("x",),)))


# --------------------------------------------------------------- max_pool2d
def window_indices(h: int, w: int, *, kernel_size: tuple[int, int], stride: tuple[int, int],
                   padding: tuple[int, int]) -> np.ndarray:
    """[oh, ow, kh * kw] flat input index (h * W + w) of each window element,
    -1 for padding."""
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    rows = np.arange(window_out(h, kh, sh, ph))[:, None] * sh - ph + np.arange(kh)
    cols = np.arange(window_out(w, kw, sw, pw))[:, None] * sw - pw + np.arange(kw)
    r = rows[:, None, :, None]
    c = cols[None, :, None, :]
    idx = np.where((r >= 0) & (r < h) & (c >= 0) & (c < w), r * w + c, -1)
    return idx.reshape(idx.shape[0], idx.shape[1], kh * kw)


def _max_pool2d_infer_meta(x: Any, **params: Any) -> tuple[ShapedArray, ShapedArray]:
    check_dtype("max_pool2d", "x", x.dtype, "float")
    if len(x.shape) < 2:
        raise ValueError(f"{op_name('max_pool2d')}: x must have rank >= 2, got shape {x.shape}")
    oh, ow, _ = window_indices(*x.shape[-2:], **params).shape
    shape = tuple(x.shape[:-2]) + (oh, ow)
    return ShapedArray(shape, x.dtype), ShapedArray(shape, INDEX_DTYPE)


def max_pool2d_windows(x: Array, **params: Any) -> tuple[Array, Array]:
    """The [..., oh, ow, kh kw] windows of x (-inf for padding) and their
    flat input indices."""
    h, w = x.shape[-2:]
    idx = window_indices(h, w, **params)
    flat = x.reshape(*x.shape[:-2], h * w)
    flat = jnp.concatenate([flat, jnp.full(flat.shape[:-1] + (1,), -jnp.inf, x.dtype)], -1)
    return jnp.take(flat, np.where(idx < 0, h * w, idx), axis=-1), jnp.asarray(idx)


def _argmax_indices(x: Array, **params: Any) -> tuple[Array, Array]:
    """(values, flat input indices) of the first maximum of each window, by
    an argmax over all the windows gathered (the reference's way; the
    primitive compares strided slices instead)."""
    windows, idx = max_pool2d_windows(x, **params)
    arg = jnp.argmax(windows, axis=-1)[..., None]
    values = jnp.take_along_axis(windows, arg, axis=-1)[..., 0]
    index = jnp.take_along_axis(jnp.broadcast_to(idx, windows.shape), arg, axis=-1)[..., 0]
    return values, index.astype(INDEX_DTYPE)


def _max_pool2d_impl(x: Array, *, kernel_size: tuple[int, int], stride: tuple[int, int],
                     padding: tuple[int, int]) -> list[Array]:
    """The values as one ``reduce_window`` max; the indices from kh kw
    strided slices of x, each compared with the values: the first (row-major)
    window position that holds the maximum (or a NaN), padding excluded.
    Where only the values are used, XLA drops the index computation."""
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    lead = x.ndim - 2
    h, w = x.shape[-2:]
    values = lax.reduce_window(x, -jnp.inf, lax.max, (1,) * lead + (kh, kw),
                               (1,) * lead + (sh, sw), ((0, 0),) * lead + ((ph, ph), (pw, pw)))
    oh, ow = values.shape[-2:]
    hi = (max(0, (oh - 1) * sh + kh - h - ph), max(0, (ow - 1) * sw + kw - w - pw))
    xp = lax.pad(x, jnp.asarray(-jnp.inf, x.dtype),
                 ((0, 0, 0),) * lead + ((ph, hi[0], 0), (pw, hi[1], 0)))
    index = jnp.zeros(values.shape, INDEX_DTYPE)
    for i in reversed(range(kh)):          # the last write is the first hit
        for j in reversed(range(kw)):
            rows = np.arange(oh) * sh - ph + i
            cols = np.arange(ow) * sw - pw + j
            valid = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
            if not valid.any():
                continue
            part = lax.slice(xp, (0,) * lead + (i, j),
                             tuple(xp.shape[:lead]) + (i + (oh - 1) * sh + 1,
                                                       j + (ow - 1) * sw + 1),
                             (1,) * lead + (sh, sw))
            hit = (part == values) | jnp.isnan(part)
            if not valid.all():
                hit = hit & valid
            flat = (rows[:, None] * w + cols[None, :]).astype(INDEX_DTYPE)
            index = jnp.where(hit, flat, index)
    return [values, index]


max_pool2d_p = define_primitive("max_pool2d", family=FAMILY, operands=("x",),
                                params=WINDOW_PARAMS, infer_meta=_max_pool2d_infer_meta,
                                impl=_max_pool2d_impl, multiple_results=True)


def max_pool2d(x: ArrayLike, *, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0) -> tuple[Array, Array]:
    """Max over kh x kw windows of an [N, C, H, W] image (padding never wins)
    -> (values, indices), indices the int32 flat position h * W + w of the
    maximum in its input plane (torch's return_indices; the first one on a tie;
    jax.numpy has no max pool, ``lax.reduce_window`` gives the values alone).

    The tangent of the values is the input tangent gathered at the indices,
    so the gradient goes to the argmax only; the indices take no tangent.
    """
    x = image_operand("max_pool2d", x)
    return tuple(max_pool2d_p.bind(x, **_window_params("max_pool2d", np.shape(x), kernel_size,
                                                       stride, padding)))  # type: ignore


def _max_pool2d_reference(x: Array, *, kernel_size: Any, stride: Any = None,
                          padding: Any = 0) -> tuple[Array, Array]:
    """Values from lax.reduce_window (JAX's own max pool and its derivative);
    indices from the argmax of the windows."""
    win, strides, pads = _reference_params(x, kernel_size, stride, padding)
    values = lax.reduce_window(x, -jnp.inf, lax.max, win, strides, pads)
    p = _window_params("reference", np.shape(x), kernel_size, stride, padding)
    return values, _argmax_indices(lax.stop_gradient(x), **p)[1]


register_op(OpDef(name="max_pool2d", family=FAMILY, fn=max_pool2d, primitives=(max_pool2d_p,),
                  reference=_max_pool2d_reference, operands=("x",)))
