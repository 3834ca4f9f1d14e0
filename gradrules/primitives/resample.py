"""Resampling: upsample2d (nearest, bilinear), pixel_shuffle / pixel_unshuffle,
unpatchify / patchify (grid_sample is the ``grid`` family's).

Each primitive acts on the trailing image axes and takes any leading axes, so
batching moves the batch axis in front and binds once. upsample2d is a
separable linear map ``out = A x B^T`` of the last two axes, made by
``_separable.separable_primitive`` (as average and adaptive pooling): a
broadcast for nearest by an integer factor, static gathers otherwise, and a
transpose primitive ``upsample2d_transpose`` (``A^T ct B``, the exact
adjoint: a window sum for nearest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import bool_param, choice_param, int_pair, int_param, number_pair
from ..core.meta import check_dtype, check_size, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import promote
from ._separable import Repeat, Taps, separable_primitive
from .pool import image_operand

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "resample"
METHODS = ("nearest", "bilinear")


# -------------------------------------------------------------- upsample2d
def source_coords(n_in: int, n_out: int, ratio: float, method: str, align_corners: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torch's source of each output pixel: (i0, i1, lam), the output being
    (1 - lam) in[i0] + lam in[i1]. Nearest: i0 = floor(i ratio), lam = 0;
    bilinear: at (i + 0.5) ratio - 0.5 clamped at 0, or i (in - 1) / (out - 1)
    with ``align_corners``."""
    dst = np.arange(n_out, dtype=np.float64)
    if method == "nearest":
        i0 = np.minimum(np.floor(dst * ratio).astype(int), n_in - 1)
        return i0, i0, np.zeros(n_out)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
    return i0, np.minimum(i0 + 1, n_in - 1), src - i0


def _interp_matrix(n_in: int, n_out: int, ratio: float, method: str,
                   align_corners: bool) -> np.ndarray:
    """Row i: the weights output pixel i gives the input pixels."""
    i0, i1, lam = source_coords(n_in, n_out, ratio, method, align_corners)
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), i0), 1.0 - lam)
    np.add.at(m, (np.arange(n_out), i1), lam)
    return m


def _upsample_map(n_in: int, n_out: int, ratio: float, method: str, align_corners: bool
                  ) -> Repeat | Taps:
    """Nearest by an integer factor r: a broadcast (``Repeat``); otherwise
    the static taps of the interpolation matrix (two per row for bilinear)."""
    r = n_out // n_in
    if method == "nearest" and n_out == r * n_in and np.array_equal(
            source_coords(n_in, n_out, ratio, method, align_corners)[0], np.arange(n_out) // r):
        return Repeat(n_in, r, 1.0)
    return Taps.of(_interp_matrix(n_in, n_out, ratio, method, align_corners))


def _upsample2d_maps(h: int, w: int, *, size: tuple[int, int], ratio: tuple[float, float],
                     method: str, align_corners: bool) -> tuple[Repeat | Taps, Repeat | Taps]:
    return (_upsample_map(h, size[0], ratio[0], method, align_corners),
            _upsample_map(w, size[1], ratio[1], method, align_corners))


upsample2d_p, upsample2d_transpose_p = separable_primitive(
    "upsample2d", family=FAMILY, params=("size", "ratio", "method", "align_corners"),
    maps=_upsample2d_maps)


def _upsample_params(op: str, shape: tuple[int, ...], size: Any, scale_factor: Any,
                     method: Any, align_corners: Any) -> dict[str, Any]:
    choice_param(op, "method", method, METHODS)
    align_corners = bool_param(op, "align_corners", align_corners)
    if align_corners and method == "nearest":
        raise ValueError(f"{op_name(op)}: align_corners=True needs method='bilinear'")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op_name(op)}: give exactly one of size and scale_factor, got "
                         f"size={size!r}, scale_factor={scale_factor!r}")
    h, w = shape[-2:]
    if size is not None:
        out = int_pair(op, "size", size)
        ratio = (h / out[0], w / out[1])
    else:
        sf = number_pair(op, "scale_factor", scale_factor, gt=0.0)
        out = (int(math.floor(h * sf[0])), int(math.floor(w * sf[1])))
        if min(out) < 1:
            raise ValueError(f"{op_name(op)}: scale_factor {scale_factor!r} leaves no output "
                             f"for x with shape {shape}")
        ratio = (1.0 / sf[0], 1.0 / sf[1])
    check_size(op, "the output", shape[:-2] + out,
               lambda: f"size={size!r}" if size is not None else f"scale_factor={scale_factor!r}")
    return {"size": out, "ratio": (float(ratio[0]), float(ratio[1])), "method": method,
            "align_corners": align_corners}


def upsample2d(x: ArrayLike, *, size: int | Sequence[int] | None = None,
               scale_factor: float | Sequence[float] | None = None, method: str = "nearest",
               align_corners: bool = False) -> Array:
    """Resize an [N, C, H, W] image to ``size`` or by ``scale_factor`` (torch's
    interpolate for 'nearest' and 'bilinear', both ``align_corners`` modes).

    Nearest takes input pixel floor(i * in / out) (in / out = 1 / scale_factor
    when given); bilinear samples at (i + 0.5) in / out - 0.5 (clamped at 0),
    or i (in - 1) / (out - 1) with ``align_corners``. Linear:
    ``out = A x B^T`` with static 1-D interpolation maps (a broadcast for
    nearest by an integer factor, gathers of rows otherwise), so the tangent
    is the same map and the transpose is ``A^T ct B``, the exact adjoint
    (``upsample2d_transpose``).
    """
    x = image_operand("upsample2d", x)
    params = _upsample_params("upsample2d", np.shape(x), size, scale_factor, method,
                              align_corners)
    return upsample2d_p.bind(x, **params)


def _upsample2d_reference(x: Array, *, size: Any = None, scale_factor: Any = None,
                          method: str = "nearest", align_corners: bool = False) -> Array:
    """Gathers and weighted sums of rows, then columns (no matrices)."""
    p = _upsample_params("reference", np.shape(x), size, scale_factor, method, align_corners)
    for axis, (n_out, ratio) in enumerate(zip(p["size"], p["ratio"])):
        ax = x.ndim - 2 + axis
        i0, i1, lam = source_coords(x.shape[ax], n_out, ratio, method, align_corners)
        lam = jnp.asarray(lam, x.dtype).reshape((-1,) + (1,) * (x.ndim - 1 - ax))
        x = jnp.take(x, i0, axis=ax) * (1 - lam) + jnp.take(x, i1, axis=ax) * lam
    return x


register_op(OpDef(name="upsample2d", family=FAMILY, fn=upsample2d,
                  primitives=(upsample2d_p, upsample2d_transpose_p),
                  reference=_upsample2d_reference, operands=("x",), linear=(("x",),)))


# -------------------------------------------------- pixel_shuffle / unshuffle
def _rearrange(x: Array, lead: int, split: tuple[int, ...], perm: tuple[int, ...],
               merged: tuple[int, ...]) -> Array:
    """The axes of x after the first ``lead`` reshaped to ``split``, permuted
    by ``perm`` and reshaped to ``merged``: the permutations of this family."""
    keep = x.shape[:lead]
    y = jnp.transpose(x.reshape(*keep, *split), tuple(range(lead)) + tuple(lead + i for i in perm))
    return y.reshape(*keep, *merged)


def _shuffle_infer_meta(op: str, up: bool, x: Any, *, factor: int) -> ShapedArray:
    """infer_meta of pixel_shuffle (``up``) and pixel_unshuffle."""
    check_dtype(op, "x", x.dtype, "any")
    if len(x.shape) < 3:
        raise ValueError(f"{op_name(op)}: x must have rank >= 3, got shape {x.shape}")
    *lead, c, h, w = x.shape
    if up and c % (factor * factor):
        raise ValueError(f"{op_name(op)}: channels {c} of x with shape {x.shape} must be "
                         f"divisible by upscale_factor**2 = {factor * factor}")
    if not up and (h % factor or w % factor):
        raise ValueError(f"{op_name(op)}: height and width of x with shape {x.shape} must "
                         f"be divisible by downscale_factor={factor}")
    shape = ((c // factor**2, h * factor, w * factor) if up
             else (c * factor**2, h // factor, w // factor))
    return ShapedArray(tuple(lead) + shape, x.dtype, weak_type=x.weak_type)


def _pixel_shuffle_impl(x: Array, *, factor: int) -> Array:
    c, h, w, r = *x.shape[-3:], factor
    return _rearrange(x, x.ndim - 3, (c // (r * r), r, r, h, w), (0, 3, 1, 4, 2),
                      (c // (r * r), h * r, w * r))


pixel_shuffle_p = define_primitive("pixel_shuffle", family=FAMILY, operands=("x",),
                                   params=("factor",),
                                   infer_meta=partial(_shuffle_infer_meta, "pixel_shuffle", True),
                                   impl=_pixel_shuffle_impl)


def pixel_shuffle(x: ArrayLike, *, upscale_factor: int) -> Array:
    """[..., C r^2, H, W] -> [..., C, H r, W r] (torch's pixel_shuffle):
    ``out[c, h r + i, w r + j] = x[c r^2 + i r + j, h, w]``. A permutation,
    so linear; its transpose is pixel_unshuffle."""
    (x,) = promote("pixel_shuffle", {"x": x}, "any")
    return pixel_shuffle_p.bind(x, factor=int_param("pixel_shuffle", "upscale_factor",
                                                    upscale_factor, lo=1))


def _pixel_shuffle_reference(x: Array, *, upscale_factor: int) -> Array:
    *lead, c, h, w = x.shape
    r = upscale_factor
    return jnp.einsum("...cijhw->...chiwj", x.reshape(*lead, c // (r * r), r, r, h, w)).reshape(
        *lead, c // (r * r), h * r, w * r)


register_op(OpDef(name="pixel_shuffle", family=FAMILY, fn=pixel_shuffle,
                  primitives=(pixel_shuffle_p,), reference=_pixel_shuffle_reference,
                  operands=("x",), linear=(("x",),)))


def _pixel_unshuffle_impl(x: Array, *, factor: int) -> Array:
    c, h, w, r = *x.shape[-3:], factor
    return _rearrange(x, x.ndim - 3, (c, h // r, r, w // r, r), (0, 2, 4, 1, 3),
                      (c * r * r, h // r, w // r))


pixel_unshuffle_p = define_primitive("pixel_unshuffle", family=FAMILY, operands=("x",),
                                     params=("factor",),
                                     infer_meta=partial(_shuffle_infer_meta, "pixel_unshuffle",
                                                        False),
                                     impl=_pixel_unshuffle_impl)


def pixel_unshuffle(x: ArrayLike, *, downscale_factor: int) -> Array:
    """[..., C, H r, W r] -> [..., C r^2, H, W], the inverse of pixel_shuffle
    (and its transpose)."""
    (x,) = promote("pixel_unshuffle", {"x": x}, "any")
    return pixel_unshuffle_p.bind(x, factor=int_param("pixel_unshuffle", "downscale_factor",
                                                      downscale_factor, lo=1))


def _pixel_unshuffle_reference(x: Array, *, downscale_factor: int) -> Array:
    *lead, c, h, w = x.shape
    r = downscale_factor
    return jnp.einsum("...chiwj->...cijhw", x.reshape(*lead, c, h // r, r, w // r, r)).reshape(
        *lead, c * r * r, h // r, w // r)


register_op(OpDef(name="pixel_unshuffle", family=FAMILY, fn=pixel_unshuffle,
                  primitives=(pixel_unshuffle_p,),
                  reference=_pixel_unshuffle_reference, operands=("x",), linear=(("x",),)))


# ------------------------------------------------------ unpatchify / patchify
PATCH_PARAMS = ("grid_h", "grid_w", "patch_size", "channels")


def _patch_params(op: str, **kw: Any) -> dict[str, int]:
    return {k: int_param(op, k, v, lo=1) for k, v in kw.items()}


def _unpatchify_infer_meta(x: Any, *, grid_h: int, grid_w: int, patch_size: int,
                           channels: int) -> ShapedArray:
    check_dtype("unpatchify", "tokens", x.dtype, "any")
    p = patch_size
    if len(x.shape) < 2 or tuple(x.shape[-2:]) != (grid_h * grid_w, p * p * channels):
        raise ValueError(f"{op_name('unpatchify')}: tokens must be [..., grid_h * grid_w, "
                         f"patch_size**2 * channels] = [..., {grid_h * grid_w}, "
                         f"{p * p * channels}], got shape {tuple(x.shape)}")
    return ShapedArray(tuple(x.shape[:-2]) + (channels, grid_h * p, grid_w * p), x.dtype,
                       weak_type=x.weak_type)


def _unpatchify_impl(x: Array, *, grid_h: int, grid_w: int, patch_size: int,
                     channels: int) -> Array:
    p = patch_size
    return _rearrange(x, x.ndim - 2, (grid_h, grid_w, p, p, channels), (4, 0, 2, 1, 3),
                      (channels, grid_h * p, grid_w * p))


unpatchify_p = define_primitive("unpatchify", family=FAMILY, operands=("tokens",),
                                params=PATCH_PARAMS, infer_meta=_unpatchify_infer_meta,
                                impl=_unpatchify_impl)


def unpatchify(tokens: ArrayLike, *, grid_h: int, grid_w: int, patch_size: int,
               channels: int) -> Array:
    """Patch tokens [..., grid_h grid_w, p p C] -> image [..., C, grid_h p, grid_w p]
    (the patch form of the trainer's pixel_shuffle; DiT's unpatchify): token
    ``gy * grid_w + gx`` holds the patch at (gy, gx), laid out [p, p, C].
    A permutation, so linear; its transpose is patchify."""
    (tokens,) = promote("unpatchify", {"tokens": tokens}, "any")
    return unpatchify_p.bind(tokens, **_patch_params("unpatchify", grid_h=grid_h, grid_w=grid_w,
                                                     patch_size=patch_size, channels=channels))


def _unpatchify_reference(tokens: Array, *, grid_h: int, grid_w: int, patch_size: int,
                          channels: int) -> Array:
    *lead, _, _ = tokens.shape
    p = patch_size
    x = tokens.reshape(*lead, grid_h, grid_w, p, p, channels)
    return jnp.einsum("...hwpqc->...chpwq", x).reshape(*lead, channels, grid_h * p, grid_w * p)


register_op(OpDef(name="unpatchify", family=FAMILY, fn=unpatchify, primitives=(unpatchify_p,),
                  reference=_unpatchify_reference, operands=("tokens",),
                  linear=(("tokens",),)))


def _patchify_infer_meta(x: Any, *, grid_h: int, grid_w: int, patch_size: int,
                         channels: int) -> ShapedArray:
    check_dtype("patchify", "x", x.dtype, "any")
    p = patch_size
    if len(x.shape) < 3 or tuple(x.shape[-3:]) != (channels, grid_h * p, grid_w * p):
        raise ValueError(f"{op_name('patchify')}: x must be [..., channels, grid_h * "
                         f"patch_size, grid_w * patch_size] = [..., {channels}, {grid_h * p}, "
                         f"{grid_w * p}], got shape {tuple(x.shape)}")
    return ShapedArray(tuple(x.shape[:-3]) + (grid_h * grid_w, p * p * channels), x.dtype,
                       weak_type=x.weak_type)


def _patchify_impl(x: Array, *, grid_h: int, grid_w: int, patch_size: int,
                   channels: int) -> Array:
    p = patch_size
    return _rearrange(x, x.ndim - 3, (channels, grid_h, p, grid_w, p), (1, 3, 2, 4, 0),
                      (grid_h * grid_w, p * p * channels))


patchify_p = define_primitive("patchify", family=FAMILY, operands=("x",), params=PATCH_PARAMS,
                              infer_meta=_patchify_infer_meta, impl=_patchify_impl)


def patchify(x: ArrayLike, *, grid_h: int, grid_w: int, patch_size: int, channels: int) -> Array:
    """Image [..., C, grid_h p, grid_w p] -> patch tokens [..., grid_h grid_w, p p C],
    the inverse of unpatchify (and its transpose)."""
    (x,) = promote("patchify", {"x": x}, "any")
    return patchify_p.bind(x, **_patch_params("patchify", grid_h=grid_h, grid_w=grid_w,
                                              patch_size=patch_size, channels=channels))


def _patchify_reference(x: Array, *, grid_h: int, grid_w: int, patch_size: int,
                        channels: int) -> Array:
    *lead, _, _, _ = x.shape
    p = patch_size
    y = x.reshape(*lead, channels, grid_h, p, grid_w, p)
    return jnp.einsum("...chpwq->...hwpqc", y).reshape(*lead, grid_h * grid_w, p * p * channels)


register_op(OpDef(name="patchify", family=FAMILY, fn=patchify, primitives=(patchify_p,),
                  reference=_patchify_reference, operands=("x",), linear=(("x",),)))
