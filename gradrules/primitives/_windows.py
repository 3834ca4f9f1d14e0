"""The lowerings of tensor_fold and the window index of the layout family's
window ops (tensor_unfold, tensor_fold)."""

from __future__ import annotations

import builtins

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec

from .. import _jax

Array = jax.Array


def window_index(n_windows: int, size: int, step: int) -> np.ndarray:
    """``[w, k] -> w * step + k``: which element window w holds at position k."""
    return np.arange(n_windows)[:, None] * step + np.arange(size)[None, :]


def _zero_pad(x: Array, widths: dict[int, tuple[int, int]]) -> Array:
    """x with ``lo`` zeros before and ``hi`` after it along each axis of
    ``widths`` (a negative ``hi`` cuts that many off the end)."""
    config = [(*widths.get(d, (0, 0)), 0) for d in range(x.ndim)]
    return lax.pad(x, jnp.zeros((), x.dtype), config)


def _fold_by_scatter(y: Array, axis: int, size: int, step: int, length: int,
                     out: PartitionSpec | None) -> Array:
    """The windows scatter-added into zeros at ``window_index``, the result
    sharded as ``out`` (where given): the overlaps of windows on several
    devices summed by XLA, with no all-gather (``tensor_fold_impl`` takes it
    on any device mesh)."""
    idx = window_index(y.shape[axis], size, step)
    shape = y.shape[:axis] + (length,) + y.shape[axis + 1:-1]
    where = (builtins.slice(None),) * axis + (idx,)
    return jnp.zeros(shape, y.dtype).at[where].add(jnp.moveaxis(y, -1, axis + 1),
                                                   out_sharding=out)


def tensor_fold_impl(y: Array, *, axis: int, size: int, step: int, length: int) -> Array:
    """The windows added back whole, ``step`` elements at a time. Element
    ``k = j * step + r`` (``r < step``) of window ``w`` lands at
    ``(w + j) * step + r``, so with block ``j < J = ceil(size / step)`` of
    the windows (``y[..., j * step:(j + 1) * step]``, zero-padded to
    ``step``) shifted by ``j`` along the window axis,
    ``b[..., m, ..., r] = sum_j y[..., m - j, ..., j * step + r]``, and the
    result is ``b`` with ``(m, r)`` flattened into ``axis``
    (``(n + J - 1) * step`` elements, the last ones zeros from the padding),
    cut or zero-padded to ``length``. J pads and adds, one fused pass: no
    index table, ``O(J * length)`` work (the windows' own size; a scatter
    through an index table took 3x jax.numpy's bytes). On a device mesh
    the windows are scattered instead (``_fold_by_scatter``): with the
    windows' elements sharded (the unfold's output on Explicit axes, resharded
    to replicated along the merged axes before the fold), XLA's partitioner
    gathers them ahead of the pads but keeps a scatter local. The result is
    sharded as y off the window axes and replicated along ``axis``."""
    if _jax.mesh_of(y).axis_names:
        spec = _jax.spec_of(y)
        out = PartitionSpec(*spec[:axis], None, *spec[axis + 1:-1]) if any(spec) else None
        return _fold_by_scatter(y, axis, size, step, length, out)
    n, blocks = y.shape[axis], -(-size // step)
    summed = None
    for j in range(blocks):
        block = lax.slice_in_dim(y, j * step, min((j + 1) * step, size), axis=-1)
        shifted = _zero_pad(block, {axis: (j, blocks - 1 - j),
                                    y.ndim - 1: (0, step - block.shape[-1])})
        summed = shifted if summed is None else summed + shifted
    flat = jnp.moveaxis(summed, -1, axis + 1)
    total = (n + blocks - 1) * step
    flat = flat.reshape(flat.shape[:axis] + (total,) + flat.shape[axis + 2:])
    return _zero_pad(flat, {axis: (0, length - total)})
