"""The labels and per-token pieces of the cross-entropy ops (the loss
family's and ``parallel``'s vocab-parallel one), in gradrules ops: labels
checked eagerly (integer, of the tokens' shape, each in ``[0, classes)`` or
``ignore_index``), the params, a one-hot that leaves ignored tokens out, the
per-token mask (0 for an ignored token, NaN for a bad label), nll_loss's
label index and per-token class weight, and the reductions ``mean``,
``sum`` and ``none``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..core.args import as_array, choice_param, index_dtype, int_param, number_param
from ..core.kernels import implementation
from ..core.meta import check_dtype, op_name
from ..core.numerics import outside
from .activation import clip
from .arithmetic import divide
from .compare import eq, ge, lt, ne, where
from .convert import convert_element_type
from .gather import one_hot as catalog_one_hot
from .gather import take_along_axis_p
from .reduction import sum as gr_sum
from .shape import broadcast_to, expand_dims, squeeze

REDUCTIONS = ("mean", "sum", "none")


def check_labels(op: str, labels: Any, rows: tuple[int, ...], what: str) -> None:
    check_dtype(op, "labels", labels.dtype, "int")
    if tuple(labels.shape) != tuple(rows):
        raise ValueError(f"{op_name(op)}: labels must have shape {tuple(rows)} ({what}), got "
                         f"{tuple(labels.shape)}")


def labels_arg(op: str, labels: Any, rows: tuple[int, ...], classes: int, ignore_index: int,
               what: str) -> Any:
    """Integer labels of shape ``rows``, each in [0, classes) or ignore_index
    (checked when the labels are concrete)."""
    labels = as_array(op, "labels", labels)
    labels = jnp.asarray(labels) if isinstance(labels, (bool, int, float, np.generic)) else labels
    dtype = jnp.result_type(labels)
    if not jnp.issubdtype(dtype, jnp.integer):
        raise TypeError(f"{op_name(op)}: argument labels must have an integer dtype, got "
                        f"{dtype}")
    check_labels(op, jax.ShapeDtypeStruct(np.shape(labels), dtype), rows, what)
    try:
        concrete = np.asarray(labels)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return _signed(labels)
    bad = (concrete != ignore_index) & outside(concrete, classes)
    if bad.any():
        raise ValueError(f"{op_name(op)}: labels must lie in [0, {classes}) or equal "
                         f"ignore_index={ignore_index}; got {sorted(set(concrete[bad].tolist()))[:8]}")
    return _signed(labels)


def _signed(labels: Any) -> Any:
    """Labels in the dtype index arithmetic runs in (``index_dtype``: int32
    for int8 and int16), and signed: the label arithmetic compares them with
    ``classes`` and a negative ``ignore_index`` and clips them to ``classes -
    1``, which int8, int16 or unsigned labels may not hold (int8 labels of
    300 classes all compared out of range, a NaN loss, and nll_loss's clip
    overflowed)."""
    dtype = index_dtype(jnp.result_type(labels))
    if dtype.kind == "u":
        dtype = np.dtype(f"int{8 * dtype.itemsize}")
    return labels if dtype == jnp.result_type(labels) else convert_element_type(labels,
                                                                               dtype=dtype)


def loss_params(op: str, ignore_index: Any, label_smoothing: Any, z_loss: Any,
                blocks: Any = None) -> dict[str, Any]:
    """The params of the cross-entropy primitives (``CE_PARAMS`` and the
    ``implementation``, with ``blocks`` for the lowering)."""
    return {"ignore_index": int_param(op, "ignore_index", ignore_index),
            "label_smoothing": number_param(op, "label_smoothing", label_smoothing, lo=0.0,
                                            hi=1.0),
            "z_loss": number_param(op, "z_loss", z_loss, lo=0.0),
            "implementation": implementation(blocks)}


def one_hot(labels: Any, classes: int, dtype: Any, ignore_index: int) -> Any:
    """``[labels == c]`` along a new last axis as ``dtype`` (bool or float): the
    catalog one_hot, whose out-of-range labels give zero rows; ignored tokens
    (which may carry an in-range ``ignore_index``) are sent out of range first,
    so they give zero rows too."""
    ltype = np.dtype(jnp.result_type(labels))
    outside = np.array(-1 if jnp.issubdtype(ltype, jnp.signedinteger) else np.iinfo(ltype).max,
                       ltype)
    kept = where(ne(labels, ignore_index), labels, outside)
    return catalog_one_hot(kept, num_classes=classes, dtype=dtype)


def mask_tokens(v: Any, labels: Any, classes: int, ignore_index: int) -> Any:
    """``v`` on valid tokens, 0 on ignored ones, NaN where the label is out of
    range (``_loss_xla.masked`` in gradrules ops)."""
    outside = where(lt(labels, 0), True, ge(labels, classes))
    return where(ne(labels, ignore_index), where(outside, np.nan, v), 0.0)


def label_index(labels: Any) -> Any:
    """The labels ``[...]`` as the nll_loss primitive takes them: an index
    along the class axis, ``[..., 1]``, one value shared by the forward's
    gather and the transpose's scatter (so that XLA places the two alike)."""
    return expand_dims(labels, axis=-1)


def label_inside(index: Any, classes: int) -> Any:
    """The label index clipped into ``[0, classes)``: gathered from and
    scattered to with take_along_axis's and scatter_add's ``in_range`` (no
    wrap of negatives, no clip of their own); the tokens whose label it
    moved are ignored or NaN-masked (``mask_tokens``)."""
    return clip(index, 0, classes - 1)


def label_weight(index: Any, weight: Any, shape: tuple[int, ...], ignore_index: int) -> Any:
    """``weight[label]`` per token (``index [..., 1]``, ``weight`` broadcasting
    against ``shape [..., classes]``), 0 on ignored tokens, NaN where the
    label is out of range: a gather of one weight per token, never a
    ``[tokens, classes]`` one-hot. The scale of ``d nll / d logp`` at the
    label, and the mean reduction's total weight."""
    picked = take_along_axis_p.bind(broadcast_to(weight, shape), label_inside(index, shape[-1]),
                                    axis=len(shape) - 1, in_range=True)
    return mask_tokens(squeeze(picked, axis=-1), squeeze(index, axis=-1), shape[-1],
                       ignore_index)


def reduce_loss(op: str, loss: Any, labels: Any, ignore_index: int, reduction: str,
                dtype: Any, denominator: Any = None) -> Any:
    """``none``: the per-token losses; ``sum``; ``mean``: the sum over the
    ``denominator`` (default: the number of tokens not ignored), defined as 0
    when that is 0. Cast to ``dtype`` at the end."""
    choice_param(op, "reduction", reduction, REDUCTIONS)
    if reduction == "sum":
        loss = gr_sum(loss)
    elif reduction == "mean":
        if denominator is None:
            denominator = gr_sum(convert_element_type(ne(labels, ignore_index),
                                                      dtype=jnp.result_type(loss)))
        denominator = where(eq(denominator, 0.0), 1.0, denominator)
        loss = divide(gr_sum(loss), denominator)
    if jnp.result_type(loss) != np.dtype(dtype):
        loss = convert_element_type(loss, dtype=dtype)
    return loss
