"""Every op of the sample table on a device mesh, beside its jax.numpy
reference: the sharding walk of the test suite (tests/_sharded.py runs it
on 8 simulated CPU devices).

For an op, ``walk_op(name, meshes)`` takes its largest sample in float32
and doubles the leading axis of every operand longer than 1 (so that it
splits over a 2-device ``data`` axis). On each mesh (Explicit or Auto axes)
it shards that axis of the first operand, and of the operands aligned with
it, over ``data``; then, jitted, it computes the forward and the gradient of
``sum(w * out)`` in the float operands, in one program, for the gradrules op
and for its reference. The weights ``w`` are arguments, sharded over
``data`` where their leading axis is the first operand's. It reports
(``MeshRow``) the largest difference from the unsharded values, the output
and gradient shardings of both (on Explicit axes the types' partition
specs, on Auto axes what XLA placed), and the all-gathers and all-to-alls in
the compiled programs. Where the reference raises (a ``ShardingTypeError``:
an ambiguous sharding; or a limit of JAX's), the op may raise the same error
or place its results (a fused op runs in ``shard_map``).
``MeshRow.problems`` says what falls short. ``walk`` leaves out the ops
made for a ``shard_map`` of their own (``OpInfo.call``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from ..core.meta import is_float
from ..core.registry import OPS
from .case import Case, make_case
from .samples import largest_sample, opinfo, sample_fn, table

COLLECTIVES = ("all-gather", "all-to-all")
"""The collectives an op may not add to what its reference compiles to."""

SHARDED_AXIS = "data"


@dataclass
class MeshRow:
    """One op on one mesh: the largest difference from the unsharded run,
    the shardings (one spec text per output: the forward's, then the
    gradient's) and collective counts of the op and of its reference, the
    errors raised, and ``unplaced``: the error the reference raises too."""

    name: str
    axis_type: str
    err: float | None = None
    specs: tuple[list[str], list[str]] | None = None
    collectives: tuple[int, int] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    unplaced: str = ""

    def problems(self, tol: float = 1e-4) -> list[str]:
        out = [f"{where}: {msg}" for where, msg in self.errors.items()]
        if self.err is not None and not self.err <= tol:
            out.append(f"differs from the unsharded run by {self.err:.3g}")
        if self.specs is not None and self.specs[0] != self.specs[1]:
            out.append(f"sharded {self.specs[0]}, the reference {self.specs[1]}")
        if self.collectives is not None and self.collectives[0] > self.collectives[1]:
            out.append(f"{self.collectives[0]} all-gathers/all-to-alls, the reference "
                       f"{self.collectives[1]}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "axis_type": self.axis_type, "problems": self.problems()}


def _doubled(case: Case) -> list[np.ndarray]:
    """The case's leaves in float32 with their leading axis (where longer
    than 1) tiled twice, if the op takes them so (else as they are)."""
    leaves = [x.astype(np.float32) if is_float(x) else x for x in map(np.asarray, case.leaves)]
    grown = [np.concatenate([x, x]) if x.ndim and x.shape[0] > 1 else x for x in leaves]
    try:
        jax.eval_shape(case.call, *grown)
        jax.eval_shape(case.reference, *grown)
    except (TypeError, ValueError, IndexError):
        return leaves
    return grown


def _specs(leaves: Sequence[np.ndarray], weights: Sequence[np.ndarray] = ()
           ) -> list[PartitionSpec]:
    """``data`` on the leading axis of the first operand where it splits in
    two, of the operands of its rank and leading size (batch-aligned) and of
    the loss weights of that leading size; the others replicated."""
    lead = next((x for x in leaves if x.ndim), None)
    if lead is None or lead.shape[0] % 2:
        return [PartitionSpec()] * (len(leaves) + len(weights))
    n = lead.shape[0]
    split = [x.ndim == lead.ndim and x.shape[0] == n for x in leaves]
    split += [x.ndim > 0 and x.shape[0] == n for x in weights]
    return [PartitionSpec(SHARDED_AXIS) if s else PartitionSpec() for s in split]


def _placement(out: Any, explicit: bool) -> list[str]:
    """The sharding of each output leaf: its type's spec on Explicit axes,
    the placement XLA chose on Auto axes."""
    leaves = jax.tree_util.tree_leaves(out)
    if explicit:
        return [str(jax.typeof(o).sharding.spec) for o in leaves]
    return [str(o.sharding.spec if isinstance(o.sharding, NamedSharding) else o.sharding)
            for o in leaves]


def _run(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, int]:
    """``fn(*args)`` jitted, and the all-gathers and all-to-alls its
    compiled program holds."""
    compiled = jax.jit(fn).lower(*args).compile()
    text = compiled.as_text()
    count = sum(text.count(f" {c}(") + text.count(f" {c}-start(") for c in COLLECTIVES)
    return compiled(*args), count


def _max_diff(got: Any, want: Any) -> float:
    err = 0.0
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            return float("inf")
        if a.size:
            scale = np.maximum(1.0, np.abs(np.where(np.isfinite(b), b, 0.0)))
            diff = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.abs(a - b) / scale)
            err = max(err, float(np.nan_to_num(diff, nan=np.inf).max()))
    return err


def _programs(case: Case, leaves: Sequence[Any]) -> tuple[Callable[..., Any],
                                                           Callable[..., Any], list[Any]]:
    """(op, reference) programs of the leaves and the loss weights: the
    forward outputs, then the gradient of ``sum(w * out)`` over the float
    outputs in the float operands that take one (where there are both), in
    one program each (one compile); and the weights, arguments like the
    leaves (so that they are sharded as a downstream cotangent is)."""
    idx = case.diff_idx
    outs = [o for o in jax.tree_util.tree_leaves(jax.eval_shape(case.call, *leaves))
            if is_float(o)]
    if not idx or not outs:
        return case.call, case.reference, []
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(o.shape).astype(o.dtype) for o in outs]
    n = len(leaves)

    def with_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
        def loss(*args: Any) -> Any:
            out = fn(*args[:n])
            floats = [o for o in jax.tree_util.tree_leaves(out) if is_float(o)]
            return sum(jnp.sum(o * w) for o, w in zip(floats, args[n:])), out

        def program(*args: Any) -> Any:
            grads, out = jax.grad(loss, argnums=tuple(idx), has_aux=True)(*args)
            return out, grads
        return program
    return with_grad(case.call), with_grad(case.reference), weights


def walk_op(name: str, meshes: Sequence[jax.sharding.Mesh]) -> list[MeshRow]:
    """``name``'s largest sample on each of ``meshes`` beside its reference
    (see the module docstring), against one unsharded run."""
    op = OPS[name]
    case = make_case(name, op, sample_fn(name), largest_sample(name), opinfo(name))
    leaves = _doubled(case)
    rows = [MeshRow(name, str(mesh.axis_types[0]).split(".")[-1]) for mesh in meshes]
    fn, ref, weights = _programs(case, leaves)
    try:
        unsharded = jax.jit(fn)(*leaves, *weights)
    except Exception as exc:   # noqa: BLE001  (reported, not raised)
        for row in rows:
            row.errors["unsharded"] = f"{type(exc).__name__}: {exc}"[:300]
        return rows
    for mesh, row in zip(meshes, rows):
        _on_mesh(row, fn, ref, leaves, weights, unsharded, mesh)
    return rows


def _on_mesh(row: MeshRow, fn: Callable[..., Any], ref: Callable[..., Any],
             leaves: Sequence[np.ndarray], weights: Sequence[np.ndarray], unsharded: Any,
             mesh: jax.sharding.Mesh) -> None:
    """``walk_op`` on one mesh, recorded in ``row``."""
    explicit = row.axis_type == "Explicit"
    with jax.set_mesh(mesh):
        args = [jax.device_put(x, NamedSharding(mesh, spec))
                for x, spec in zip([*leaves, *weights], _specs(leaves, weights))]
        try:
            want, ref_count = _run(ref, args)
        except Exception as exc:   # noqa: BLE001  (ambiguous, or JAX's own limits)
            want, ref_error = None, exc
        try:
            got, count = _run(fn, args)
        except Exception as exc:   # noqa: BLE001
            if want is None and type(exc) is type(ref_error):
                row.unplaced = f"both raise {type(exc).__name__}"
            else:
                row.errors["sharded"] = f"{type(exc).__name__}: {exc}"[:300]
            return
    row.err = _max_diff(got, unsharded)
    if want is not None:      # else the op may place what jax.numpy cannot
        row.specs = (_placement(got, explicit), _placement(want, explicit))
        row.collectives = (count, ref_count)


def walk(names: Sequence[str] | None = None, *,
         axis_types: Sequence[str] = ("Explicit", "Auto"),
         shape: tuple[int, int] = (2, 4)) -> list[MeshRow]:
    """``walk_op`` for every op of the sample table (or of ``names``) with a
    reference, but those made for a ``shard_map`` of their own
    (``OpInfo.call``), on a ``data`` x ``model`` mesh of ``shape`` devices
    per axis type."""
    meshes = [jax.make_mesh(shape, (SHARDED_AXIS, "model"),
                            axis_types=(getattr(jax.sharding.AxisType, t),) * 2)
              for t in axis_types]
    names = [n for n in (names or table())
             if OPS[n].reference is not None and opinfo(n).call is None]
    return [row for n in names for row in walk_op(n, meshes)]
