"""im2col and col2im: unfold ([N, C, H, W] -> [N, C kh kw, L], the sliding
blocks of an image as columns, torch.nn.functional.unfold) and fold (the
sum of such columns back into an image, torch's fold).

Both are linear and each is the other's transpose (``fold(unfold(x))``
counts each pixel once per block that covers it). Both act on the trailing
axes and take any leading axes, so batching moves the batch axis in front
and binds once. unfold is kh kw strided slices of the zero-padded image,
stacked; fold pads each column block back into place (interior padding by
the stride, negative edges for the image's padding) and adds them: no
gathers, no dense 0/1 matrices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import ShapedArray
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .conv import dilate, spatial_ints
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "im2col"
BLOCK_PARAMS = ("kernel_size", "dilation", "padding", "stride")


def blocks(size: tuple[int, ...], *, kernel_size: tuple[int, ...], dilation: tuple[int, ...],
           padding: tuple[int, ...], stride: tuple[int, ...]) -> tuple[int, ...]:
    """The number of blocks along each spatial axis of an image of ``size``."""
    return tuple((n + 2 * p - dilate(k, d)) // s + 1 if n + 2 * p >= dilate(k, d) else 0
                 for n, k, d, p, s in zip(size, kernel_size, dilation, padding, stride))


def _block_params(op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any
                  ) -> dict[str, tuple[int, ...]]:
    return {"kernel_size": spatial_ints(op, "kernel_size", kernel_size, 2),
            "dilation": spatial_ints(op, "dilation", dilation, 2),
            "padding": spatial_ints(op, "padding", padding, 2, 0),
            "stride": spatial_ints(op, "stride", stride, 2)}


# ------------------------------------------------------------------- unfold
def _unfold_infer_meta(x: Any, **params: Any) -> ShapedArray:
    check_dtype("unfold", "x", x.dtype, "float")
    if len(x.shape) < 3:
        raise ValueError(f"{op_name('unfold')}: x must have rank >= 3, got shape {x.shape}")
    *lead, c, h, w = x.shape
    nb = blocks((h, w), **params)
    if min(nb) < 1:
        raise ValueError(f"{op_name('unfold')}: kernel_size {params['kernel_size']} (dilation "
                         f"{params['dilation']}) is larger than the padded input: x with "
                         f"shape {tuple(x.shape)}, padding {params['padding']}")
    return ShapedArray(tuple(lead) + (c * math.prod(params["kernel_size"]), math.prod(nb)),
                       x.dtype)


def _unfold_impl(x: Array, *, kernel_size: tuple[int, ...], dilation: tuple[int, ...],
                 padding: tuple[int, ...], stride: tuple[int, ...]) -> Array:
    """kh kw strided slices of the zero-padded image, stacked after C."""
    lead = x.ndim - 2
    nb = blocks(x.shape[lead:], kernel_size=kernel_size, dilation=dilation, padding=padding,
                stride=stride)
    xp = lax.pad(x, jnp.zeros((), x.dtype), ((0, 0, 0),) * lead + tuple(
        (p, p, 0) for p in padding))
    parts = []
    for offset in itertools.product(*map(range, kernel_size)):
        start = tuple(i * d for i, d in zip(offset, dilation))
        parts.append(lax.slice(xp, (0,) * lead + start,
                               tuple(xp.shape[:lead]) + tuple(
                                   a + (b - 1) * s + 1 for a, b, s in zip(start, nb, stride)),
                               (1,) * lead + stride))
    y = jnp.stack(parts, axis=-3)                        # [..., C, kh kw, oh, ow]
    return y.reshape(*x.shape[:lead - 1], x.shape[lead - 1] * math.prod(kernel_size),
                     math.prod(nb))                     # not -1: a leading axis may be 0


unfold_p = define_primitive("unfold", family=FAMILY, operands=("x",), params=BLOCK_PARAMS,
                            infer_meta=_unfold_infer_meta, impl=_unfold_impl)


def unfold(x: ArrayLike, *, kernel_size: int | Sequence[int], dilation: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, stride: int | Sequence[int] = 1) -> Array:
    """im2col (torch.nn.functional.unfold): [N, C, H, W] (or [C, H, W]) ->
    [N, C kh kw, L], L = oh ow blocks;
    ``out[n, (c kh + i) kw + j, bh ow + bw] = xpad[n, c, bh sh + i dh, bw sw + j dw]``
    with xpad the image zero padded by ``padding``. Linear: the tangent is
    unfold of the tangent, the transpose is ``fold`` (col2im) with the
    image's size."""
    op = "unfold"
    (x,) = promote(op, {"x": x}, "float")
    if np.ndim(x) not in (3, 4):
        raise ValueError(f"{op_name(op)}: x must be a 4-D [N, C, H, W] (or 3-D [C, H, W]) "
                         f"image, got shape {np.shape(x)}")
    return unfold_p.bind(x, **_block_params(op, kernel_size, dilation, padding, stride))


def _unfold_reference(x: Array, *, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                      stride: Any = 1) -> Array:
    """lax.conv_general_dilated_patches (JAX's im2col), the same layout."""
    p = _block_params("reference", kernel_size, dilation, padding, stride)
    y = x[None] if x.ndim == 3 else x
    out = lax.conv_general_dilated_patches(y, p["kernel_size"], p["stride"],
                                           tuple((q, q) for q in p["padding"]),
                                           rhs_dilation=p["dilation"],
                                           precision=lax.Precision.HIGHEST)
    out = out.reshape(out.shape[0], out.shape[1], math.prod(out.shape[2:]))
    return out[0] if x.ndim == 3 else out


register_op(OpDef(name="unfold", family=FAMILY, fn=unfold, primitives=(unfold_p,),
                  reference=_unfold_reference, operands=("x",), linear=(("x",),)))


# --------------------------------------------------------------------- fold
def _fold_infer_meta(x: Any, *, output_size: tuple[int, ...], **params: Any) -> ShapedArray:
    check_dtype("fold", "x", x.dtype, "float")
    k, nb = math.prod(params["kernel_size"]), blocks(output_size, **params)
    if len(x.shape) < 2 or x.shape[-2] % k or x.shape[-1] != math.prod(nb) or min(nb) < 1:
        raise ValueError(f"{op_name('fold')}: x must be [..., C * {k}, {math.prod(nb)}] (C "
                         f"times kh kw = {params['kernel_size']}, and the {nb} blocks of an "
                         f"output of size {output_size}), got shape {tuple(x.shape)}")
    return ShapedArray(tuple(x.shape[:-2]) + (x.shape[-2] // k,) + tuple(output_size),
                       x.dtype)


def _fold_impl(x: Array, *, output_size: tuple[int, ...], kernel_size: tuple[int, ...],
               dilation: tuple[int, ...], padding: tuple[int, ...],
               stride: tuple[int, ...]) -> Array:
    """Each of the kh kw column blocks [..., C, oh, ow] padded into place
    (interior padding stride - 1; edges negative where the image's padding
    cuts them), summed."""
    nb = blocks(output_size, kernel_size=kernel_size, dilation=dilation, padding=padding,
                stride=stride)
    lead = x.shape[:-2]
    k = math.prod(kernel_size)
    y = x.reshape(*lead, x.shape[-2] // k, k, *nb)       # not -1: a leading axis may be 0
    out = None
    for t, offset in enumerate(itertools.product(*map(range, kernel_size))):
        pads = []
        for i, d, p, s, b, n in zip(offset, dilation, padding, stride, nb, output_size):
            lo = i * d - p
            pads.append((lo, n - lo - dilate(b, s), s - 1))
        part = lax.pad(y[..., t, :, :], jnp.zeros((), x.dtype),
                       ((0, 0, 0),) * (len(lead) + 1) + tuple(pads))
        out = part if out is None else out + part
    return out


fold_p = define_primitive("fold", family=FAMILY, operands=("x",),
                          params=("output_size",) + BLOCK_PARAMS, infer_meta=_fold_infer_meta,
                          impl=_fold_impl)


def fold(x: ArrayLike, *, output_size: int | Sequence[int], kernel_size: int | Sequence[int],
         dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
         stride: int | Sequence[int] = 1) -> Array:
    """col2im (torch.nn.functional.fold): [N, C kh kw, L] (or [C kh kw, L])
    -> [N, C, H, W] with (H, W) = ``output_size``: each column's values added
    back at the pixels of its block (the padding's discarded), the transpose
    of ``unfold`` with the same params. Linear; its transpose is unfold."""
    op = "fold"
    (x,) = promote(op, {"x": x}, "float")
    if np.ndim(x) not in (2, 3):
        raise ValueError(f"{op_name(op)}: x must be a 3-D [N, C * kh * kw, L] (or 2-D) "
                         f"input, got shape {np.shape(x)}")
    return fold_p.bind(x, output_size=spatial_ints(op, "output_size", output_size, 2),
                       **_block_params(op, kernel_size, dilation, padding, stride))


def _fold_reference(x: Array, *, output_size: Any, kernel_size: Any, dilation: Any = 1,
                    padding: Any = 0, stride: Any = 1) -> Array:
    """The VJP of the reference unfold applied to x."""
    size = spatial_ints("reference", "output_size", output_size, 2)
    k = math.prod(spatial_ints("reference", "kernel_size", kernel_size, 2))
    image = jnp.zeros(x.shape[:-2] + (x.shape[-2] // k,) + size, x.dtype)
    _, vjp = jax.vjp(lambda z: _unfold_reference(z, kernel_size=kernel_size, dilation=dilation,
                                                 padding=padding, stride=stride), image)
    return vjp(x)[0]


register_op(OpDef(name="fold", family=FAMILY, fn=fold, primitives=(fold_p,),
                  reference=_fold_reference, operands=("x",), linear=(("x",),)))
