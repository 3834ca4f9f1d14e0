"""Pooling: avg_pool2d, avg_pool3d, adaptive_avg_pool2d (linear, separable
maps of the last two or three axes) and max_pool2d / max_pool3d, which return
the values and the flat index (h * W + w) of each window's maximum; the 2-D
and 3-D ops share one formula, written for any number of spatial axes.

Average pooling is a ``_separable`` map ``out = A x B^T``: a 1-D window sum
(``reduce_window``) per axis, whose transpose primitive spreads the cotangent
back over the windows; adaptive pooling is the same with uneven windows
(static gathers) where the size does not divide.

max_pool2d's tangent is the input tangent gathered at those indices
(``take_along_axis`` on the flattened H * W axis), whose transpose is a
scatter-add into the input (``scatter_add``); see ``rules/pool.py``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import partial
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
from ._separable import SEPARABLE, Taps, Window, separable_primitive
from .conv import spatial_ints
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "pool"
WINDOW_PARAMS = ("kernel_size", "stride", "padding")
INDEX_DTYPE = np.int32


IMAGE_AXES = {4: "[N, C, H, W]", 5: "[N, C, D, H, W]"}


def image_operand(op: str, x: ArrayLike, rank: int = 4) -> Array:
    (x,) = promote(op, {"x": x}, "float")
    if np.ndim(x) != rank:
        raise ValueError(f"{op_name(op)}: x must be a {rank}-D {IMAGE_AXES[rank]} image, got "
                         f"shape {np.shape(x)}")
    return x


def window_out(n: int, k: int, s: int, p: int) -> int:
    return (n + 2 * p - k) // s + 1


def _window_params(op: str, shape: tuple[int, ...], kernel_size: Any, stride: Any,
                   padding: Any, nd: int = 2) -> dict[str, tuple[int, ...]]:
    """torch's rules over the last ``nd`` axes: stride defaults to the
    kernel, padding <= kernel / 2, the kernel must fit in the padded input
    (ceil_mode=False)."""
    k = spatial_ints(op, "kernel_size", kernel_size, nd)
    s = k if stride is None else spatial_ints(op, "stride", stride, nd)
    p = spatial_ints(op, "padding", padding, nd, 0)
    if any(2 * pi > ki for pi, ki in zip(p, k)):
        raise ValueError(f"{op_name(op)}: padding {p} must be at most half of kernel_size {k}")
    if any(ki > n + 2 * pi for ki, n, pi in zip(k, shape[len(shape) - nd:], p)):
        raise ValueError(f"{op_name(op)}: kernel_size {k} is larger than the padded input: x "
                         f"with shape {tuple(shape)}, padding {p}")
    return {"kernel_size": k, "stride": s, "padding": p}


def _reference_params(x: Array, kernel_size: Any, stride: Any, padding: Any, nd: int
                      ) -> tuple:
    """lax.reduce_window's (window, strides, padding) of a pooling."""
    p = _window_params("reference", np.shape(x), kernel_size, stride, padding, nd)
    lead = x.ndim - nd
    return ((1,) * lead + p["kernel_size"], (1,) * lead + p["stride"],
            ((0, 0),) * lead + tuple((q, q) for q in p["padding"]))


# ---------------------------------------------------- avg_pool2d / avg_pool3d
def _avg_pool_maps(*sizes: int, kernel_size: tuple[int, ...], stride: tuple[int, ...],
                   padding: tuple[int, ...]) -> tuple[Window, ...]:
    """Each axis: the mean of k pixels from i s - p (the padding's zeros count
    in the divisor k, torch's count_include_pad=True)."""
    return tuple(Window(n, window_out(n, k, s, p), k, s, p, 1.0 / k)
                 for n, k, s, p in zip(sizes, kernel_size, stride, padding))


avg_pool2d_p, avg_pool2d_transpose_p = separable_primitive(
    "avg_pool2d", family=FAMILY, params=WINDOW_PARAMS, maps=_avg_pool_maps)
avg_pool3d_p, avg_pool3d_transpose_p = separable_primitive(
    "avg_pool3d", family=FAMILY, params=WINDOW_PARAMS, maps=_avg_pool_maps, ndim=3)
_AVG_POOL = {2: avg_pool2d_p, 3: avg_pool3d_p}


def _avg_pool(op: str, nd: int, x: ArrayLike, kernel_size: Any, stride: Any,
              padding: Any) -> Array:
    x = image_operand(op, x, nd + 2)
    return _AVG_POOL[nd].bind(x, **_window_params(op, np.shape(x), kernel_size, stride,
                                                  padding, nd))


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
    return _avg_pool("avg_pool2d", 2, x, kernel_size, stride, padding)


def avg_pool3d(x: ArrayLike, *, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0) -> Array:
    """Mean over kd x kh x kw windows of an [N, C, D, H, W] volume (torch's
    avg_pool3d; avg_pool2d's maps with one 1-D window average per axis, one
    ``reduce_window``). Linear; the transpose (``avg_pool3d_transpose``)
    spreads each cotangent evenly over its window."""
    return _avg_pool("avg_pool3d", 3, x, kernel_size, stride, padding)


def _avg_pool_reference(nd: int, x: Array, *, kernel_size: Any, stride: Any = None,
                        padding: Any = 0) -> Array:
    win, strides, pads = _reference_params(x, kernel_size, stride, padding, nd)
    total = lax.reduce_window(x, 0.0, lax.add, win, strides, pads)
    return total / math.prod(win)


for _nd, _fn in ((2, avg_pool2d), (3, avg_pool3d)):
    register_op(OpDef(name=_fn.__name__, family=FAMILY, fn=_fn,
                      primitives=(_AVG_POOL[_nd], SEPARABLE[_AVG_POOL[_nd]][0]),
                      reference=partial(_avg_pool_reference, _nd), operands=("x",),
                      linear=(("x",),)))


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


# ---------------------------------------------------- max_pool2d / max_pool3d
def window_indices(*sizes: int, kernel_size: tuple[int, ...], stride: tuple[int, ...],
                   padding: tuple[int, ...]) -> np.ndarray:
    """[*out, prod(kernel)] flat input index (row-major over ``sizes``, e.g.
    h * W + w) of each window element, -1 for padding."""
    nd = len(sizes)
    flat: Any = 0
    valid: Any = True
    for d, (n, k, s, p) in enumerate(zip(sizes, kernel_size, stride, padding)):
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = window_out(n, k, s, p), k
        c = (np.arange(shape[d])[:, None] * s - p + np.arange(k)).reshape(shape)
        valid = valid & (c >= 0) & (c < n)
        flat = flat * n + c
    idx = np.where(valid, flat, -1)
    return idx.reshape(idx.shape[:nd] + (math.prod(kernel_size),))


def _max_pool_infer_meta(name: str, x: Any, **params: Any) -> tuple[ShapedArray, ShapedArray]:
    nd = len(params["kernel_size"])
    check_dtype(name, "x", x.dtype, "float")
    if len(x.shape) < nd:
        raise ValueError(f"{op_name(name)}: x must have rank >= {nd}, got shape {x.shape}")
    lead = len(x.shape) - nd
    out = window_indices(*x.shape[lead:], **params).shape[:-1]
    shape = tuple(x.shape[:lead]) + out
    return ShapedArray(shape, x.dtype), ShapedArray(shape, INDEX_DTYPE)


def max_pool_windows(x: Array, **params: Any) -> tuple[Array, Array]:
    """The [..., *out, prod(kernel)] windows of x (-inf for padding) and
    their flat input indices."""
    nd = len(params["kernel_size"])
    sizes = x.shape[x.ndim - nd:]
    size = math.prod(sizes)
    idx = window_indices(*sizes, **params)
    flat = x.reshape(*x.shape[:x.ndim - nd], size)
    flat = jnp.concatenate([flat, jnp.full(flat.shape[:-1] + (1,), -jnp.inf, x.dtype)], -1)
    return jnp.take(flat, np.where(idx < 0, size, idx), axis=-1), jnp.asarray(idx)


def _argmax_indices(x: Array, **params: Any) -> tuple[Array, Array]:
    """(values, flat input indices) of the first maximum of each window, by
    an argmax over all the windows gathered (the reference's way; the
    primitive compares strided slices instead)."""
    windows, idx = max_pool_windows(x, **params)
    arg = jnp.argmax(windows, axis=-1)[..., None]
    values = jnp.take_along_axis(windows, arg, axis=-1)[..., 0]
    index = jnp.take_along_axis(jnp.broadcast_to(idx, windows.shape), arg, axis=-1)[..., 0]
    return values, index.astype(INDEX_DTYPE)


def _max_pool_impl(x: Array, *, kernel_size: tuple[int, ...], stride: tuple[int, ...],
                   padding: tuple[int, ...]) -> list[Array]:
    """The values as one ``reduce_window`` max; the indices from one strided
    slice of x per window position, compared with the values: the first
    (row-major) window position that holds the maximum (or a NaN). Each
    slice covers only the windows in which that position is inside x and is
    padded to all the windows with NaN, which equals nothing, its NaN test
    with False (padding never wins, and x is not copied); the flat index
    ``(c_0 n_1 + c_1) n_2 + ...`` of the position is iota arithmetic, not a
    constant table. Where only the values are used, XLA drops the index
    computation."""
    nd = len(kernel_size)
    lead = x.ndim - nd
    sizes = x.shape[lead:]
    values = lax.reduce_window(x, -jnp.inf, lax.max, (1,) * lead + kernel_size,
                               (1,) * lead + stride, ((0, 0),) * lead + tuple(
                                   (p, p) for p in padding))
    out = values.shape[lead:]
    # the input coordinate of window o at offset 0, per spatial axis
    base = [lax.broadcasted_iota(INDEX_DTYPE, out, d) * s - p
            for d, (s, p) in enumerate(zip(stride, padding))]
    index = jnp.zeros(values.shape, INDEX_DTYPE)
    # the last write is the first hit
    for offset in reversed(list(itertools.product(*map(range, kernel_size)))):
        # windows lo <= o < hi hold this position inside x: 0 <= o s - p + i < n
        lo = [max(0, -(-(p - i) // s)) for s, p, i in zip(stride, padding, offset)]
        hi = [min(o, (n - 1 + p - i) // s + 1)
              for o, n, s, p, i in zip(out, sizes, stride, padding, offset)]
        if any(b <= a for a, b in zip(lo, hi)):
            continue
        start = [a * s - p + i for a, s, p, i in zip(lo, stride, padding, offset)]
        part = lax.slice(x, (0,) * lead + tuple(start),
                         tuple(x.shape[:lead]) + tuple(
                             c + (b - a - 1) * s + 1 for c, a, b, s in zip(start, lo, hi, stride)),
                         (1,) * lead + stride)
        widths = ((0, 0, 0),) * lead + tuple((a, o - b, 0) for a, b, o in zip(lo, hi, out))
        hit = ((lax.pad(part, jnp.asarray(jnp.nan, x.dtype), widths) == values)
               | lax.pad(jnp.isnan(part), False, widths))
        flat: Any = 0
        for c, n, i in zip(base, sizes, offset):
            flat = flat * n + (c + i)
        index = jnp.where(hit, flat, index)
    return [values, index]


max_pool2d_p = define_primitive("max_pool2d", family=FAMILY, operands=("x",),
                                params=WINDOW_PARAMS,
                                infer_meta=partial(_max_pool_infer_meta, "max_pool2d"),
                                impl=_max_pool_impl, multiple_results=True)
max_pool3d_p = define_primitive("max_pool3d", family=FAMILY, operands=("x",),
                                params=WINDOW_PARAMS,
                                infer_meta=partial(_max_pool_infer_meta, "max_pool3d"),
                                impl=_max_pool_impl, multiple_results=True)
_MAX_POOL = {2: max_pool2d_p, 3: max_pool3d_p}


def _max_pool(op: str, nd: int, x: ArrayLike, kernel_size: Any, stride: Any,
              padding: Any) -> tuple[Array, Array]:
    x = image_operand(op, x, nd + 2)
    return tuple(_MAX_POOL[nd].bind(x, **_window_params(op, np.shape(x), kernel_size, stride,
                                                        padding, nd)))  # type: ignore


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
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding)


def max_pool3d(x: ArrayLike, *, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0) -> tuple[Array, Array]:
    """Max over kd x kh x kw windows of an [N, C, D, H, W] volume -> (values,
    indices), indices the int32 flat position (d H + h) W + w of the maximum
    in its input volume (torch's max_pool3d with return_indices; the first
    one on a tie). max_pool2d's rules: the tangent is the input tangent
    gathered at the indices, the gradient a scatter-add there."""
    return _max_pool("max_pool3d", 3, x, kernel_size, stride, padding)


def _max_pool_reference(nd: int, x: Array, *, kernel_size: Any, stride: Any = None,
                        padding: Any = 0) -> tuple[Array, Array]:
    """Values from lax.reduce_window (JAX's own max pool and its derivative);
    indices from the argmax of the windows."""
    win, strides, pads = _reference_params(x, kernel_size, stride, padding, nd)
    values = lax.reduce_window(x, -jnp.inf, lax.max, win, strides, pads)
    p = _window_params("reference", np.shape(x), kernel_size, stride, padding, nd)
    return values, _argmax_indices(lax.stop_gradient(x), **p)[1]


for _nd, _fn in ((2, max_pool2d), (3, max_pool3d)):
    register_op(OpDef(name=_fn.__name__, family=FAMILY, fn=_fn, primitives=(_MAX_POOL[_nd],),
                      reference=partial(_max_pool_reference, _nd), operands=("x",)))
