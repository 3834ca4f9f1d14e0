"""Property fuzzing of the sample table with hypothesis (tests/test_fuzz.py).

An ``Example`` of an op is a handful of choices, each drawn by hypothesis
(``examples(name)``) and replayed by ``check_example(name, example)``:

- ``seed`` and ``index``: the op's sample number ``index``, made by its own
  sample function from a generator seeded with ``seed`` (and the op's name),
  so that values, shapes and keyword arguments are in the op's domain;
- ``reshape``: a change of the operands' leading axes (``reshapes``): the
  leading axis of the arrays aligned with the first operand (its rank and
  leading size, ``where=`` and ``mask=`` arrays included) resized to 0, 1
  or one more row, or a new leading axis of size 0, 1 or 2 put in front of
  them, or one operand's leading axis cut to size 1 or dropped
  (broadcasting), or the ``axis`` argument counted from the other end.
  Grown axes take their rows from further draws of the same sample (other
  seeds), so they stay in the domain. A reshape is drawn only where both the
  op and its jax.numpy reference accept it (``jax.eval_shape``): an op may
  be stricter than jax.numpy (attention's batch does not broadcast);
- ``dtype``: float64 or one of the OpInfo's dtypes, the float arrays
  (operands and keyword arguments) cast to it (to integers as the ``dtypes``
  check casts them);
- ``batch``: the size of a new leading axis of the first operand for vmap.

The checks of one example, each raising ``Mismatch``:

1. infer_meta: ``jax.eval_shape`` against the real output (shape, dtype,
   weak type: the checker's ``abstract_eval``), and the output's shapes and
   dtypes against those of the reference at the same dtype (where it takes
   that dtype: jax.numpy's linalg takes no 16-bit floats);
2. value: against the reference at the same dtype, within the dtype's
   tolerance (float64: 1e-9 abs + 1e-9 rel, 16-bit and float32: those of the
   ``dtypes`` check); at a lower precision, where the two roundings part,
   the op may instead be that close to the reference in float64 of the same
   rounded inputs (the exact answer, cast to the output dtype);
3. ``jax.jit`` of the op against eager;
4. ``jax.vmap`` over a new leading axis (``batch`` draws) of the first
   operand against stacking the calls on each slice.

Every choice's list starts with an edge case, rotated by a digest of the
op's name, so that the simplest example of each op (the first one
hypothesis tries) differs from op to op and the few examples per op of a
short run cover every kind of edge across the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import hypothesis.strategies as st

import jax

from ..core.meta import is_float
from ..core.registry import get_op
from .case import Case, Mismatch, NotApplicable, compare, make_case, tree_arrays
from .check import seed as name_seed
from .properties import _DTYPE_TOL, _cast, _check_abstract_eval, same_meta
from .samples import Sample, Tol, opinfo, sample_fn

BATCHES = (0, 1, 2)
"""The sizes of the vmapped axis."""

LOW_FLOATS = ("float16", "bfloat16", "float32")

DRAWS_APART = 100
"""Seeds of the draws of two vmapped slices are this far apart."""


@dataclass(frozen=True)
class Example:
    """One fuzzed call of an op (see the module docstring). ``reshape``:
    ``"none"``, ``"lead=K"`` (aligned operands' leading axis resized to K),
    ``"new=K"`` (a new leading axis of size K on the aligned operands),
    ``"one@J"`` / ``"drop@J"`` (operand J's leading axis cut to 1 / dropped),
    ``"negaxis"`` (the ``axis`` argument counted from the other end)."""

    seed: int
    index: int
    dtype: str = "float64"
    reshape: str = "none"
    batch: int = 2


def _rotated(items: Sequence[Any], name: str, salt: str) -> list[Any]:
    """``items`` rotated by a digest of the op's name: each op its own first."""
    k = name_seed(name, salt) % len(items) if items else 0
    return list(items[k:]) + list(items[:k])


# ------------------------------------------------------------ building a call
def _draw(name: str, seed: int, index: int, j: int) -> Sample:
    """Sample ``index`` of the op, made by its sample function from the
    generator of (op, seed, j)."""
    rng = np.random.default_rng([name_seed(name), seed, j])
    return opinfo(name).samples(rng)[index]


def _case(name: str, sample: Sample) -> Case:
    """The checker's ``Case`` of one call of the op (as its OpInfo calls it)."""
    return make_case(name, get_op(name), sample_fn(name), sample, opinfo(name))


Key = int | str
"""An array of a call: an operand (its position among the array leaves) or
a keyword argument (its name: a ``where=`` or ``mask=``)."""


def _arrays(case: Case) -> dict[Key, np.ndarray]:
    """The call's arrays: its operands, then its array keyword arguments."""
    out: dict[Key, np.ndarray] = dict(enumerate(case.leaves))
    out.update({k: v for k, v in case.sample.kwargs.items() if isinstance(v, np.ndarray)})
    return out


def _with_arrays(case: Case, arrays: dict[Key, np.ndarray]) -> Case:
    """The call with its arrays replaced by ``arrays`` (``_arrays``' keys)."""
    leaves = [arrays[i] for i in range(len(case.leaves))]
    kwargs = {k: arrays.get(k, v) for k, v in case.sample.kwargs.items()}
    return replace(case, leaves=leaves, sample=replace(case.sample, kwargs=kwargs))


def _aligned(arrays: dict[Key, np.ndarray]) -> list[Key]:
    """The arrays batch-aligned with the first operand: its rank and leading
    size (keyword arguments too)."""
    lead = arrays.get(0)
    if lead is None or lead.ndim == 0:
        return []
    return [k for k, x in arrays.items() if x.ndim == lead.ndim and x.shape[0] == lead.shape[0]]


def _rows(draws: Sequence[dict[Key, np.ndarray]], key: Key, k: int) -> np.ndarray | None:
    """Array ``key``'s leading ``k`` rows, from the first draw on and as many
    further ones as needed (None where they run out or differ in shape)."""
    first = draws[0][key]
    parts = [first[:0]]
    for d in draws:
        if sum(map(len, parts)) >= k:
            break
        if d[key].shape != first.shape or not first.shape[0]:
            return None
        parts.append(d[key])
    return np.concatenate(parts)[:k] if sum(map(len, parts)) >= k else None


def _stacked(draws: Sequence[dict[Key, np.ndarray]], key: Key, k: int) -> np.ndarray | None:
    """Array ``key`` of the first ``k`` draws stacked on a new leading axis."""
    xs = [d[key] for d in draws[:k]]
    if any(x.shape != draws[0][key].shape for x in xs):
        return None
    return np.stack(xs) if xs else draws[0][key][None][:0]


def _negaxis(kwargs: dict[str, Any], rank: int) -> dict[str, Any] | None:
    """``kwargs`` with an int (or tuple of int) ``axis`` counted from the other end."""
    axis = kwargs.get("axis")

    def flip(a: int) -> int:
        return a - rank if a >= 0 else a + rank
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return {**kwargs, "axis": flip(int(axis))}
    if isinstance(axis, tuple) and axis and all(isinstance(a, int) for a in axis):
        return {**kwargs, "axis": tuple(flip(a) for a in axis)}
    return None


def build(name: str, ex: Example, offset: int = 0) -> Case | None:
    """The op's call of ``ex`` in float64 (``ex.dtype`` not applied): its
    sample reshaped, from draw ``offset`` on; None where the reshape does
    not apply to it."""
    case = _case(name, _draw(name, ex.seed, ex.index, offset))
    kind, _, arg = ex.reshape.partition("=") if "=" in ex.reshape else \
        ex.reshape.partition("@")
    if kind == "none":
        return case
    if kind == "negaxis":
        kwargs = _negaxis(case.sample.kwargs, case.leaves[0].ndim if case.leaves else 0)
        return None if kwargs is None else replace(case, sample=replace(case.sample,
                                                                        kwargs=kwargs))
    arrays = _arrays(case)
    if kind in ("lead", "new"):
        aligned, k = _aligned(arrays), int(arg)
        draws = [arrays] + [_arrays(_case(name, _draw(name, ex.seed, ex.index, offset + j)))
                            for j in range(1, max(k, 1))]
        for key in aligned:
            x = (_rows if kind == "lead" else _stacked)(draws, key, k)
            if x is None:
                return None
            arrays[key] = x
        return _with_arrays(case, arrays) if aligned else None
    if kind in ("one", "drop"):
        x = arrays.get(int(arg))
        if x is None or x.ndim == 0 or x.shape[0] == 0:
            return None
        arrays[int(arg)] = x[:1] if kind == "one" else x[0]
        return _with_arrays(case, arrays)
    raise ValueError(f"gradrules.testing.fuzz: unknown reshape {ex.reshape!r}")


def reshapes(case: Case) -> tuple[list[str], list[str]]:
    """The reshapes worth trying on a call (``Example.reshape``): the edge
    cases (a size-0 or size-1 axis, broadcasting, an axis counted from the
    other end), and the rest (one more row, a new axis of size 2, none)."""
    leaves = case.leaves
    if not leaves:
        return [], ["none"]
    edges, rest = [], []
    if leaves[0].ndim:
        n = leaves[0].shape[0]
        edges += [f"lead={k}" for k in (0, 1) if k != n] + ["new=0", "new=1"]
        rest += [f"lead={n + 1}"] if n else []
        rest += ["new=2"]
    edges += [f"{kind}@{i}" for i, x in enumerate(leaves) if x.ndim and x.shape[0] != 1
              for kind in ("one", "drop")]
    if _negaxis(case.sample.kwargs, leaves[0].ndim) is not None:
        edges.append("negaxis")
    return edges, rest + ["none"]


def accepts(case: Case) -> bool:
    """Whether both the op and its reference take the call (abstractly)."""
    try:
        jax.eval_shape(case.call, *case.leaves)
        jax.eval_shape(case.reference, *case.leaves)
    except Exception:   # noqa: BLE001  (a call either rejects: not drawn)
        return False
    return True


def candidate_reshapes(name: str, seed: int, index: int) -> list[str]:
    """``reshapes`` of sample ``index`` (drawn with ``seed``), the edge cases
    rotated per op, then the rest."""
    edges, rest = reshapes(_case(name, _draw(name, seed, index, 0)))
    return _rotated(edges, name, "reshape") + rest


def first_valid_reshape(name: str, seed: int, index: int, start: int) -> str:
    """The first of ``candidate_reshapes`` from position ``start`` on
    (cyclically) that the op and its reference both accept ("none" is last)."""
    candidates = candidate_reshapes(name, seed, index)
    with jax.enable_x64(True):
        for r in candidates[start:] + candidates[:start]:
            case = build(name, Example(seed, index, reshape=r))
            if case is not None and accepts(case):
                return r
    return "none"


# ------------------------------------------------------------ hypothesis strategies
@st.composite
def _examples(draw: Callable[..., Any], name: str) -> Example:
    info = opinfo(name)
    n = len(info.samples(np.random.default_rng(0)))
    index = draw(st.sampled_from(_rotated(range(n), name, "index")))
    seed = draw(st.integers(0, 2**32 - 1))
    dtype = draw(st.sampled_from(_rotated(("float64", *info.dtypes), name, "dtype")))
    start = draw(st.integers(0, len(candidate_reshapes(name, seed, index)) - 1))
    reshape = first_valid_reshape(name, seed, index, start)
    batch = draw(st.sampled_from(_rotated(BATCHES, name, "batch")))
    return Example(seed, index, dtype, reshape, batch)


def examples(name: str) -> st.SearchStrategy[Example]:
    """A hypothesis strategy of the op's ``Example``s."""
    return _examples(name)


# ------------------------------------------------------------ the checks
def value_tol(dtype: str) -> Tol:
    """The value tolerance at ``dtype``: float64 (and integers) 1e-9 abs +
    1e-9 rel, a lower float precision that of the checker's ``dtypes`` check."""
    t = _DTYPE_TOL.get(dtype)
    return Tol(t, t) if t is not None and dtype != "float64" else Tol(1e-9, 1e-9)


def jit_tol(dtype: str) -> Tol:
    """jit against eager, vmap against a loop: 1e-12 abs + 1e-10 rel in
    float64 (and integers); at a lower float precision XLA may fuse away a
    rounding that eager keeps, so the value tolerance."""
    return Tol(1e-12, 1e-10) if dtype == "float64" or dtype not in _DTYPE_TOL else \
        value_tol(dtype)


def _describe(leaves: Sequence[Any], kwargs: dict[str, Any]) -> str:
    """The call as text: dtype[shape] of each array, the other arguments' reprs."""
    parts = [f"{np.result_type(x).name}{list(np.shape(x))}" for x in leaves]
    parts += [f"{k}={np.result_type(v).name}{list(np.shape(v))}"
              if isinstance(v, (np.ndarray, jax.Array)) else f"{k}={v!r}"
              for k, v in kwargs.items()]
    return ", ".join(parts)


def _reference_meta(case: Case, dtype: str) -> Any:
    """The reference's output types at the call's dtype; None at a lower
    float precision it does not take (jax.numpy's linalg on JAX 0.11 has no
    16-bit floats), where the value check compares in float64."""
    try:
        return jax.eval_shape(case.reference, *case.leaves)
    except Exception:   # noqa: BLE001  (re-raised but at a lower precision)
        if dtype not in LOW_FLOATS:
            raise
        return None


def _check_meta(case: Case, out: Any, ref_meta: Any) -> None:
    """infer_meta against the real output, and the output against the
    reference's shapes and dtypes (where it takes the call's dtype)."""
    _check_abstract_eval(case, np.random.default_rng(0))
    if ref_meta is None:
        return
    same_meta(out, ref_meta, "output", "the reference")


def _check_value(case: Case, out: Any, dtype: str) -> None:
    """The op against its reference at the same dtype or, at a lower float
    precision, against the reference in float64 of the same rounded inputs."""
    tol = value_tol(dtype)
    try:
        compare(out, jax.jit(case.reference)(*case.leaves), tol, "op vs reference")
        return
    except Exception:   # a mismatch, or a reference that does not run at this
        if dtype not in LOW_FLOATS:   # dtype (LAPACK has no 16-bit floats)
            raise
        wide = [np.asarray(x, np.float64) if is_float(x) else x for x in case.leaves]
        exact = [np.asarray(w).astype(g.dtype) for w, g in
                 zip(tree_arrays(jax.jit(case.reference)(*wide)), tree_arrays(out))]
        compare(out, exact, tol, f"op vs reference (and vs the reference in float64 of "
                                 f"the {dtype} inputs)")


def _check_jit(case: Case, out: Any, dtype: str) -> None:
    """``jax.jit`` of the op against its eager output ``out``."""
    compare(jax.jit(case.call)(*case.leaves), out, jit_tol(dtype), "jit vs eager")


def _check_vmap(name: str, ex: Example, case: Case, out: Any) -> None:
    """vmap over a new leading axis of the first operand (``ex.batch``
    further draws of it) against stacking the calls on each slice."""
    slices = []
    for b in range(ex.batch):
        other = build(name, ex, offset=(b + 1) * DRAWS_APART)
        if other is None or other.leaves[0].shape != case.leaves[0].shape:
            raise NotApplicable("the draws' first operands differ in shape")
        slices.append(_cast(other.leaves[0], ex.dtype))
    first = np.stack(slices) if slices else np.asarray(case.leaves[0])[None][:0]
    in_axes = (0,) + (None,) * (len(case.leaves) - 1)
    rest = case.leaves[1:]
    got = jax.jit(jax.vmap(case.call, in_axes=in_axes))(first, *rest)
    if ex.batch:
        outs = [case.call(x, *rest) for x in slices]
        want = jax.tree_util.tree_map(lambda *o: np.stack([np.asarray(v) for v in o]), *outs)
    else:
        want = jax.tree_util.tree_map(
            lambda o: np.zeros((0, *o.shape), o.dtype), jax.eval_shape(case.call, *case.leaves))
    compare(got, want, jit_tol(ex.dtype), f"vmap over a new axis of size {ex.batch}")


def check_example(name: str, ex: Example) -> None:
    """Run the checks of the module docstring on one example of the op;
    raises ``AssertionError`` naming the op, the example and the call."""
    with jax.enable_x64(True):
        case = build(name, ex)
        if case is None:
            raise ValueError(f"gradrules.testing.fuzz: {ex} does not apply to {name}")
        case = _with_arrays(case, {k: _cast(x, ex.dtype) for k, x in _arrays(case).items()})
        what = f"{name}({_describe(case.leaves, case.sample.kwargs)}) from {ex}"
        try:
            out = case.call(*case.leaves)
            _check_meta(case, out, _reference_meta(case, ex.dtype))
            _check_value(case, out, ex.dtype)
            _check_jit(case, out, ex.dtype)
            if case.leaves:
                try:
                    _check_vmap(name, ex, case, out)
                except NotApplicable:
                    pass
        except Mismatch as exc:
            raise AssertionError(f"{what}: {exc}") from None
        except Exception as exc:
            raise AssertionError(f"{what}: {type(exc).__name__}: {exc}") from exc
