"""Keeping a fused op's kernels sharded on a mesh.

XLA never partitions a ``pallas_call`` (to XLA a custom call): given sharded
inputs, it gathers them onto every device. So the public function of a fused
op binds its forward primitive inside ``jax.shard_map`` over the mesh axes
that its batch-like dims are sharded on (as MaxText and tokamax do), never
inside a lowering; autodiff and vmap carry the ``shard_map`` to the tangent
map and the backward, so those kernels run on each shard too.

Each operand and result names its dims by label (``"batch"``, ``"heads"``,
any other name for a dim that may be sharded, e.g. a row op's leading dims,
or None). Which mesh axes a label is sharded on:

* on a mesh with Explicit axes (the default of ``jax.make_mesh``), what the
  type of the first operand says on its dim with that label;
* on a mesh with Auto axes, whose types do not carry their sharding,
  ``gradrules.config.batch_axes`` for ``"batch"`` and ``head_axes`` for
  ``"heads"`` (other labels stay unsharded there).

A dim of size 1 (a mask or bias broadcast over it, the one kv head of
multi-query attention) is replicated. A label that some dim of it does not
divide by its mesh axes stays unsharded (XLA gathers that dim). Outside any
mesh, or with nothing to shard, the primitive is bound as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jax
from jax.sharding import AxisType, PartitionSpec

from .. import _jax
from ..core.config import config

Labels = tuple[str | None, ...]
"""A label per dim: ``"batch"``, ``"heads"``, another name, or None (never sharded)."""

_CONFIG_AXES = {"batch": lambda: config.batch_axes, "heads": lambda: config.head_axes}


def _spec_axes(entry: Any) -> tuple[str, ...]:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def row_labels(ndim: int, axis: int | None = -1, axis_label: str | None = None) -> Labels:
    """The labels of a row op's operand: dim 0 ``"batch"``, the other dims
    ``"rows<d>"``, and ``axis`` (the reduced or feature axis; None: there is
    none) ``axis_label``."""
    if ndim == 0:
        return ()
    axis = None if axis is None else axis % ndim
    return tuple(axis_label if d == axis else "batch" if d == 0 else f"rows{d}"
                 for d in range(ndim))


def row_op_labels(ndim: int, per_column: int, row_stats: int
                  ) -> tuple[tuple[Labels, ...], tuple[Labels, ...]]:
    """(operand labels, result labels) of a row op over the last axis of x:
    x, then ``per_column`` vectors of its width (unsharded); x-like output,
    then ``row_stats`` per-row statistics."""
    rows = row_labels(ndim)
    return (rows,) + ((None,),) * per_column, (rows,) + (rows[:-1],) * row_stats


def label_axes(mesh: Any, lead: Any, labels: Labels) -> dict[str, tuple[str, ...]]:
    """The mesh axes of each label of ``lead`` (the first operand): from its
    type on Explicit axes, from ``gradrules.config`` on Auto axes."""
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    spec = _jax.spec_of(lead)
    axes = {}
    for dim, label in enumerate(labels):
        if label is None or label in axes:
            continue
        chosen = tuple(a for a in _spec_axes(spec[dim]) if types.get(a) == AxisType.Explicit)
        chosen += tuple(a for a in _CONFIG_AXES.get(label, tuple)()
                        if types.get(a) == AxisType.Auto and a not in chosen)
        if chosen:
            axes[label] = chosen
    return axes


def shard_map_bind(fn: Callable[..., Any], args: Sequence[Any], labels: Sequence[Labels],
                   out_labels: Sequence[Labels]) -> Any:
    """``fn(*args)`` (which returns a list, one result per ``out_labels``), inside
    ``jax.shard_map`` over the mesh axes of the labels (module docstring)."""
    mesh = _jax.mesh_of(args[0])
    if not mesh.axis_names:
        return fn(*args)
    axes = label_axes(mesh, args[0], labels[0])
    for x, dims in zip(args, labels):
        for size, label in zip(np.shape(x), dims):
            if label in axes and size != 1 and size % math.prod(
                    mesh.shape[a] for a in axes[label]):
                del axes[label]
    if not axes:
        return fn(*args)

    def spec(shape: Sequence[int | None], dims: Labels) -> PartitionSpec:
        return PartitionSpec(*(axes[label] if label in axes and size != 1 else None
                               for size, label in zip(shape, dims)))

    in_specs = tuple(spec(np.shape(x), dims) for x, dims in zip(args, labels))
    out_specs = [spec((None,) * len(dims), dims) for dims in out_labels]
    used = {a for names in axes.values() for a in names}
    if any(dict(zip(mesh.axis_names, mesh.axis_types))[a] == AxisType.Explicit for a in used):
        # an Explicit operand must already have its in_spec (a broadcast bias
        # replicated on the head axes is sliced there: no communication)
        args = [jax.sharding.reshard(x, s) for x, s in zip(args, in_specs)]
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         axis_names=used, check_vma=False)(*args)
