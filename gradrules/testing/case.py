"""One sample call of an op, as the property checks see it (``Case``), and
what they share: the comparison with tolerances, the outcomes (``Mismatch``,
``NotApplicable``), random directions, and the scalarisation of a function's
outputs in gradrules ops."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..core.meta import is_float
from ..core.registry import OpDef
from ..primitives.arithmetic import add, multiply
from ..primitives.reduction import sum as gr_sum
from .samples import OpInfo, Sample, Tol

CheckOutcome = tuple[float, float, str]
"""(max abs error, max rel error, the tolerance as text) of a passed check."""


class NotApplicable(Exception):
    """The check does not apply to this sample (e.g. no linear operand)."""


class Mismatch(Exception):
    def __init__(self, abs_err: float, rel_err: float, msg: str):
        super().__init__(msg)
        self.abs_err, self.rel_err = abs_err, rel_err


@dataclass
class Case:
    """One sample call, with its array leaves split out so transforms can
    act on them."""

    name: str
    op: OpDef | None
    fn: Callable[..., Any]
    sample: Sample
    leaves: list[np.ndarray]
    names: list[str]
    rebuild: Callable[[Sequence[Any]], tuple[Any, ...]]
    info: OpInfo | None
    index: int = 0          # position of the sample in the op's table
    full_vmap: bool = True  # vmap over every in_axes combination (else a cover)

    def call(self, *leaves: Any) -> Any:
        return self.fn(*self.rebuild(leaves), **self.sample.kwargs)

    def reference(self, *leaves: Any) -> Any:
        assert self.op is not None and self.op.reference is not None
        return self.op.reference(*self.rebuild(leaves), **self.sample.kwargs)

    @property
    def diff_idx(self) -> list[int]:
        skip = set()
        if self.op is not None:
            skip = set(self.op.nondiff) | set(self.op.not_implemented)
        return [i for i, (a, n) in enumerate(zip(self.leaves, self.names))
                if is_float(a) and n not in skip]

    def float_outputs(self, fn: Callable[..., Any]) -> Callable[..., list[Any]]:
        """``fn`` of the differentiable leaves alone, returning float outputs."""
        idx = self.diff_idx

        def f(*dleaves: Any) -> list[Any]:
            leaves: list[Any] = list(self.leaves)
            for i, v in zip(idx, dleaves):
                leaves[i] = v
            outs = jax.tree_util.tree_leaves(fn(*leaves))
            return [o for o in outs if is_float(o)]
        return f

    @property
    def tol(self) -> Tol:
        return self.info.fd_tol if self.info else Tol()


def is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, jax.Array))


def in_float64(sample: Sample) -> Sample:
    """The sample with its float arrays (float32, 16-bit) in float64, where
    finite differences and the checks' tolerances are meaningful; its
    description keeps the dtypes it was given in."""
    flat, tree = jax.tree_util.tree_flatten(sample.args, is_leaf=is_array)
    low = [is_array(x) and is_float(x) and np.result_type(x) != np.float64 for x in flat]
    if not any(low):
        return sample
    wide = [np.asarray(x, np.float64) if lo else x for x, lo in zip(flat, low)]
    return Sample(tuple(jax.tree_util.tree_unflatten(tree, wide)), sample.kwargs,
                  sample.desc or f"{sample.describe()} (in float64)")


def make_case(name: str, op: OpDef | None, fn: Callable[..., Any], sample: Sample,
               info: OpInfo | None) -> Case:
    flat, tree = jax.tree_util.tree_flatten(sample.args, is_leaf=is_array)
    pos = [i for i, x in enumerate(flat) if is_array(x)]
    # name of each array leaf: the operand name of the positional arg it is in
    arg_of_leaf: list[int] = []
    for ai, a in enumerate(sample.args):
        n = len(jax.tree_util.tree_leaves(a, is_leaf=is_array))
        arg_of_leaf += [ai] * n
    operands = op.operands if op else ()
    names = []
    for i in pos:
        ai = arg_of_leaf[i]
        if ai < len(operands):
            names.append(operands[ai].lstrip("*"))
        elif operands and operands[-1].startswith("*"):
            names.append(operands[-1].lstrip("*"))
        else:
            names.append(f"arg{ai}")

    def rebuild(leaves: Sequence[Any]) -> tuple[Any, ...]:
        new = list(flat)
        for i, v in zip(pos, leaves):
            new[i] = v
        return tuple(jax.tree_util.tree_unflatten(tree, new))

    leaves = [np.asarray(flat[i]) for i in pos]
    return Case(name, op, fn, sample, leaves, names, rebuild, info)


# ----------------------------------------------------------------- helpers
def tree_arrays(x: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(x)]


def compare(got: Any, want: Any, tol: Tol, what: str) -> tuple[float, float]:
    """Max abs / rel error of two pytrees; raises Mismatch beyond tolerance."""
    g, w = tree_arrays(got), tree_arrays(want)
    if len(g) != len(w):
        raise Mismatch(np.inf, np.inf, f"{what}: {len(g)} outputs vs {len(w)}")
    max_abs = max_rel = 0.0
    for a, b in zip(g, w):
        if a.shape != b.shape:
            raise Mismatch(np.inf, np.inf, f"{what}: shape {a.shape} vs {b.shape}")
        if a.size == 0:
            continue
        a64 = a.astype(np.float64) if a.dtype != jax.dtypes.float0 else np.zeros(a.shape)
        b64 = b.astype(np.float64) if b.dtype != jax.dtypes.float0 else np.zeros(b.shape)
        same_inf = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        with np.errstate(invalid="ignore"):   # inf - inf where both are the same inf
            err = np.where(same_inf, 0.0, np.abs(a64 - b64))
        if np.isnan(err).any():
            raise Mismatch(np.nan, np.nan, f"{what}: NaN where the other has a number")
        bound = tol.atol + tol.rtol * np.abs(np.where(np.isfinite(b64), b64, 0.0))
        e = float(err.max())
        r = float((err / np.maximum(np.abs(b64), 1e-300)).max()) if e else 0.0
        max_abs, max_rel = max(max_abs, e), max(max_rel, min(r, 1e300))
        if (err > bound).any():
            raise Mismatch(max_abs, max_rel, f"{what}: max abs err {e:.3e} beyond "
                            f"atol={tol.atol:g}, rtol={tol.rtol:g}")
    return max_abs, max_rel


def vdot(a: Sequence[Any], b: Sequence[Any]) -> float:
    """``sum_k <a_k, b_k>`` in float64, in numpy (no program to compile)."""
    return float(sum(np.vdot(np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel())
                     for x, y in zip(a, b)))


def like(rng: np.random.Generator, xs: Sequence[Any]) -> list[np.ndarray]:
    return [rng.standard_normal(np.shape(x)).astype(jnp.result_type(x)) for x in xs]


def scalarize(f: Callable[..., list[Any]], weights: Sequence[Any]) -> Callable[..., Any]:
    """``h(x) = sum_k sum(w_k * f_k(x))`` written with gradrules ops."""

    def h(*xs: Any) -> Any:
        total = None
        for o, w in zip(f(*xs), weights):
            s = gr_sum(multiply(o, w))
            total = s if total is None else add(total, s)
        return total
    return h


def rank_variety(case: Case) -> tuple[int, int]:
    """How many distinct operand ranks a sample has, then how many operands
    have rank > 0: the sample that gets every in_axes combination."""
    ranks = [x.ndim for x in case.leaves]
    return len(set(ranks)), sum(r > 0 for r in ranks)
