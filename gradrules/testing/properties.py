"""The property checks of ``gradrules.check``, one function each, and their
one list, ``PROPERTIES`` (the order in which they run and are reported):

1. ``abstract_eval``: abstract evaluation against the concrete output (shape,
   dtype, weak type);
2. ``jit``: eager against ``jax.jit``;
3. ``reference``: the op against its plain jax.numpy reference composition,
   values, and on the op's sample with the most operand ranks directional
   derivatives up to the op's order (n/a without one);
4. ``fd``: JVP and VJP against central finite differences, recursively to the
   op's order (2, or 3 for the seed yaml's chains), as JAX's check_grads does;
5. ``transpose``: for each group of operands the op is linear in,
   ``<A x, y> == <x, A^T y>`` through ``jax.linear_transpose``;
6. ``vmap``: against a Python loop, on the op's sample with the most
   distinct operand ranks (the "richest") for every combination of in_axes
   in {None, 0, last} over the array operands (at least one batched;
   beyond two operands a pairwise cover of them, and each operand alone
   unbatched and alone batched), with nested vmap, vmap of grad and jvp of
   vmap; on the others all 0 and all last;
7. ``closure``: on the richest sample, the jaxprs of ``jax.grad``,
   ``jax.jacfwd`` and ``jax.hessian`` hold only catalog primitives and the
   structural ones JAX itself emits for the same transform of a
   catalog-only function (n/a for a function that binds no gradrules op),
   and for an op called inside ``shard_map`` the collectives and the
   structure JAX adds for it;
8. ``hessian_symmetry``: on the richest sample, the Hessian of a scalar
   composition is symmetric;
9. ``dtypes``: abstract eval and values at each dtype the op supports
   (float16, bfloat16, float32, integers) against the float64 result, on
   the op's sample with the most operand ranks;
10. ``export``: ``jax.export`` of ``jit(vmap(grad))`` of the op (of the op
   itself where it has no derivative) over a symbolic batch dimension ``b``,
   called at b = 2 and b = 3, against the same program run directly, on the
   op's sample with the most operand ranks (n/a where the jax.numpy
   reference cannot be exported that way either).

Each takes a ``Case`` and a seeded generator and returns a ``CheckOutcome``,
or raises ``Mismatch`` / ``NotApplicable``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from .. import _jax
from ..core.meta import is_float
from ..core.registry import is_catalog_primitive
from ..primitives.arithmetic import add, multiply
from ..primitives.reduction import sum as gr_sum
from ..primitives.shape import broadcast_to
from .case import (Case, CheckOutcome, Mismatch, NotApplicable, compare, like,
                   scalarize, vdot)
from .samples import Tol

_DTYPE_TOL = {"float16": 1e-2, "bfloat16": 4e-2, "float32": 1e-5, "float64": 1e-12}


def same_meta(got: Any, want: Any, got_name: str, want_name: str) -> None:
    """A Mismatch unless the output trees ``got`` and ``want`` have as many
    leaves, of the same shapes and dtypes."""
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    if len(got) != len(want):
        raise Mismatch(np.inf, np.inf, f"{len(got)} {got_name} outputs, {len(want)} "
                                       f"{want_name}")
    for g, w in zip(got, want):
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            raise Mismatch(np.inf, np.inf, f"{got_name} {g.dtype}{list(g.shape)}, {want_name} "
                                           f"{w.dtype}{list(w.shape)}")


def _check_abstract_eval(case: Case, rng: np.random.Generator) -> CheckOutcome:
    out = case.call(*case.leaves)
    abstract = jax.eval_shape(case.call, *case.leaves)
    same_meta(abstract, out, "abstract", "concrete")
    for g, w in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(abstract)):
        gw = getattr(getattr(g, "aval", None), "weak_type", False)
        if gw != getattr(w, "weak_type", False):
            raise Mismatch(np.inf, np.inf, f"weak_type: abstract {w.weak_type}, concrete {gw}")
    return 0.0, 0.0, "exact"


def _check_jit(case: Case, rng: np.random.Generator) -> CheckOutcome:
    tol = Tol(1e-12, 1e-10)
    e, r = compare(jax.jit(case.call)(*case.leaves), case.call(*case.leaves), tol,
                    "jit vs eager")
    return e, r, "1e-12 + 1e-10 rel"


def _directional(f: Callable[..., list[Any]], xs: Sequence[Any], ts: Sequence[Any],
                 order: int, wrap: Callable[..., Any] = lambda g: g) -> list[Any]:
    """[f, D f[t], D^2 f[t, t], ...] up to ``order`` along one direction,
    each evaluated as ``wrap(g)(*xs)``."""
    fns = [f]
    for _ in range(order):
        prev = fns[-1]
        fns.append(lambda *x, prev=prev: jax.jvp(prev, tuple(x), tuple(ts))[1])
    return [wrap(g)(*xs) for g in fns]


def _check_reference(case: Case, rng: np.random.Generator) -> CheckOutcome:
    if case.op is None or case.op.reference is None:
        raise NotApplicable("no reference composition registered (define_op(reference=))")
    tol = Tol(1e-9, 1e-9)
    # the reference (jax.numpy, many primitives) as one compiled program per
    # order: eager, each of its primitives would compile on its own
    e, r = compare(case.call(*case.leaves), jax.jit(case.reference)(*case.leaves), tol,
                    "op vs reference")
    idx = case.diff_idx
    if idx and case.op.order and case.full_vmap:   # derivatives: on the richest sample
        f_ours, f_ref = case.float_outputs(case.call), case.float_outputs(case.reference)
        xs = [case.leaves[i] for i in idx]
        ts = like(rng, xs)
        for k, (a, b) in enumerate(zip(_directional(f_ours, xs, ts, case.op.order),
                                       _directional(f_ref, xs, ts, case.op.order, jax.jit))):
            e2, r2 = compare(a, b, tol, f"derivative of order {k} vs reference")
            e, r = max(e, e2), max(r, r2)
    return e, r, f"{tol.atol:g} + {tol.rtol:g} rel, to order {case.op.order}"


def _fd_rec(f: Callable[..., list[Any]], xs: list[Any], order: int, eps: float, tol: Tol,
            rng: np.random.Generator, path: str, errs: list[float]) -> None:
    ts = like(rng, xs)
    ys, tys = jax.jit(partial(jax.jvp, f))(xs, ts)
    value = jax.jit(f)
    plus = value(*[x + eps * t for x, t in zip(xs, ts)])
    minus = value(*[x - eps * t for x, t in zip(xs, ts)])
    fd = [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus)]
    e, _ = compare(tys, fd, tol, f"{path}jvp vs finite differences")
    errs.append(e)
    ws = like(rng, ys)
    cts = jax.jit(lambda xs, ws: jax.vjp(f, *xs)[1](ws))(xs, ws)
    lhs, rhs = float(vdot(cts, ts)), float(vdot(ws, fd))
    scale = 1.0 + float(vdot(ws, ws)) ** 0.5 * float(vdot(fd, fd)) ** 0.5
    e = abs(lhs - rhs)
    errs.append(e / scale)
    if e > (tol.atol + tol.rtol) * scale:
        raise Mismatch(e, e / scale, f"{path}vjp: <vjp(w), t> = {lhs:.8g} but "
                        f"<w, fd(t)> = {rhs:.8g}")
    if order > 1:
        n = len(xs)

        def f_jvp(*pt: Any) -> list[Any]:
            return list(jax.jvp(f, list(pt[:n]), list(pt[n:]))[1])

        def f_vjp(*pw: Any) -> list[Any]:
            return list(jax.vjp(f, *pw[:n])[1](list(pw[n:])))

        _fd_rec(f_jvp, list(xs) + ts, order - 1, eps, tol, rng, path + "jvp->", errs)
        _fd_rec(f_vjp, list(xs) + [np.asarray(w) for w in ws], order - 1, eps, tol, rng,
                path + "vjp->", errs)


def _check_fd(case: Case, rng: np.random.Generator) -> CheckOutcome:
    idx = case.diff_idx
    if not idx or case.op is not None and case.op.order == 0:
        raise NotApplicable("no differentiable operand")
    order = case.op.order if case.op else 2
    f = case.float_outputs(case.call)
    if not f(*[case.leaves[i] for i in idx]):
        raise NotApplicable("no floating output")
    errs: list[float] = []
    eps = case.info.fd_eps if case.info else 1e-5
    _fd_rec(f, [case.leaves[i] for i in idx], order, eps, case.tol, rng, "", errs)
    return max(errs), max(errs), f"{case.tol.atol:g} + {case.tol.rtol:g} rel, order {order}"


def _check_transpose(case: Case, rng: np.random.Generator) -> CheckOutcome:
    if case.op is None or not case.op.linear:
        raise NotApplicable("not linear in any operand")
    e = 0.0
    for group, idx in _linear_groups(case):

        def f(*lin: Any, idx: list[int] = idx) -> list[Any]:
            leaves: list[Any] = list(case.leaves)
            for i, v in zip(idx, lin):
                leaves[i] = v
            return [o for o in jax.tree_util.tree_leaves(case.call(*leaves)) if is_float(o)]

        xs = like(rng, [case.leaves[i] for i in idx])
        ys = like(rng, f(*xs))
        transposed = jax.linear_transpose(f, *xs)
        lhs = float(vdot(f(*xs), ys))
        rhs = float(vdot(xs, transposed(ys)))
        scale = 1.0 + abs(lhs)
        err = abs(lhs - rhs) / scale
        e = max(e, err)
        if err > 1e-10:
            raise Mismatch(err, err, f"operands {group}: <A x, y> = {lhs:.12g}, "
                            f"<x, A^T y> = {rhs:.12g}")
    return e, e, "1e-10 rel"


def _linear_groups(case: Case) -> list[tuple[tuple[str, ...], list[int]]]:
    """The leaf indices of each linearity group of the op. A group entry
    ``"*name"`` (a variadic operand, e.g. einsum's) stands for each of its
    leaves on its own: multilinear, one operand at a time."""
    assert case.op is not None
    out = []
    for group in case.op.linear:
        floats = [i for i, n in enumerate(case.names) if is_float(case.leaves[i])]
        joint = [i for i in floats if case.names[i] in group]
        if joint:
            out.append((group, joint))
        for g in group:
            if g.startswith("*"):
                out += [((f"{g[1:]}[{k}]",), [i]) for k, i in
                        enumerate(i for i in floats if case.names[i] == g[1:])]
    return out


def _batched(rng: np.random.Generator, leaf: np.ndarray, axis: int | None, size: int
             ) -> np.ndarray:
    """``size`` variants of ``leaf`` (permutations of its values, so indices
    and domains stay valid) stacked along ``axis``."""
    if axis is None:
        return leaf
    flat = leaf.ravel()
    variants = [leaf] + [rng.permutation(flat).reshape(leaf.shape) for _ in range(size - 1)]
    return np.stack(variants, axis=axis if axis >= 0 else leaf.ndim + 1 + axis)


def _unbatch(x: np.ndarray, axis: int | None, b: int) -> np.ndarray:
    if axis is None:
        return x
    return np.take(x, b, axis=axis)


def _loop(fn: Callable[..., Any], leaves: Sequence[Any], axes: Sequence[int | None],
          size: int) -> Any:
    outs = [fn(*[_unbatch(x, a, b) for x, a in zip(leaves, axes)]) for b in range(size)]
    return jax.tree_util.tree_map(lambda *o: np.stack([np.asarray(v) for v in o]), *outs)


FULL_PRODUCT_OPERANDS = 2
"""Up to this many operands the richest sample gets every in_axes combination."""


def _in_axes_combinations(case: Case) -> list[tuple[int | None, ...]]:
    """Combinations of in_axes in {None, 0, last} with at least one batched
    operand. On the op's sample with the most distinct operand ranks (where
    broadcasting in a batching rule goes wrong): every combination, or, with
    more than ``FULL_PRODUCT_OPERANDS`` operands, a pairwise cover (every
    pair of operands sees every pair of choices, which is where a batching
    rule misaligns one operand's batch axis with another's) beside the cover
    below (all 0, all last, each operand alone unbatched and each alone
    batched). On its other samples, which exercise the same rule on other
    shapes and params: all 0 and all last."""
    n = len(case.leaves)
    combos = [axes for axes in itertools.product((None, 0, -1), repeat=n)
              if not all(a is None for a in axes)
              and not any(a == -1 and case.leaves[i].ndim == 0 for i, a in enumerate(axes))]
    if case.full_vmap and n <= FULL_PRODUCT_OPERANDS:
        return combos
    cover = {(0,) * n, tuple(-1 if x.ndim else 0 for x in case.leaves)}
    for i in range(n if case.full_vmap else 0):
        cover.add(tuple(None if j == i else 0 for j in range(n)))
        cover.add(tuple(0 if j == i else None for j in range(n)))
    chosen = [c for c in combos if c in cover]
    return chosen + (_pairwise_cover(combos, chosen) if case.full_vmap else [])


def _pairs(axes: tuple[int | None, ...]) -> set[tuple[int, int | None, int, int | None]]:
    return {(i, axes[i], j, axes[j]) for i, j in itertools.combinations(range(len(axes)), 2)}


def _pairwise_cover(combos: list[tuple[int | None, ...]], chosen: list[tuple[int | None, ...]]
                    ) -> list[tuple[int | None, ...]]:
    """Combinations added (greedily, in a fixed order) to ``chosen`` until
    every pair of choices that some combination has is covered."""
    todo = set().union(*map(_pairs, combos)) - set().union(set(), *map(_pairs, chosen))
    out = []
    while todo:
        best = max(combos, key=lambda c: len(_pairs(c) & todo))
        out.append(best)
        todo -= _pairs(best)
    return out


def _check_vmap(case: Case, rng: np.random.Generator) -> CheckOutcome:
    n = len(case.leaves)
    if n == 0:
        raise NotApplicable("no array operand")
    tol = Tol(1e-10, 1e-10)
    e = r = 0.0

    def note(err: tuple[float, float]) -> None:
        nonlocal e, r
        e, r = max(e, err[0]), max(r, err[1])

    size = 2
    for axes in _in_axes_combinations(case):
        leaves = [_batched(rng, x, a, size) for x, a in zip(case.leaves, axes)]
        got = jax.vmap(case.call, in_axes=tuple(axes))(*leaves)
        note(compare(got, _loop(case.call, leaves, axes, size), tol, f"vmap in_axes={axes}"))
    if not case.full_vmap:     # the transforms of vmap: on the richest sample
        return e, r, "1e-10 + 1e-10 rel"
    # nested vmap
    axes0 = (0,) * n
    inner = [_batched(rng, x, 0, 3) for x in case.leaves]
    outer = [_batched(rng, x, 0, 2) for x in inner]
    got = jax.vmap(jax.vmap(case.call))(*outer)
    want = _loop(lambda *o: _loop(case.call, o, axes0, 3), outer, axes0, 2)
    note(compare(got, want, tol, "nested vmap"))
    idx = case.diff_idx
    f = case.float_outputs(case.call)
    if idx and f(*[case.leaves[i] for i in idx]):
        xs = [case.leaves[i] for i in idx]
        h = scalarize(f, like(rng, f(*xs)))
        g = jax.grad(h, argnums=tuple(range(len(xs))))
        bx = [_batched(rng, x, 0, size) for x in xs]
        note(compare(jax.vmap(g)(*bx), _loop(g, bx, (0,) * len(xs), size), tol,
                      "vmap of grad"))
        ts = [_batched(rng, t, 0, size) for t in like(rng, xs)]
        _, got_t = jax.jvp(jax.vmap(f), bx, ts)
        want_t = _loop(lambda *xt: jax.jvp(f, xt[:len(xs)], xt[len(xs):])[1], bx + ts,
                       (0,) * (2 * len(xs)), size)
        note(compare(got_t, want_t, tol, "jvp of vmap"))
    return e, r, "1e-10 + 1e-10 rel"


# What JAX emits for a function called inside a jitted shard_map (OpInfo.call):
# the jit and the shard_map themselves (whose bodies are checked), the
# collectives of a parallel op's rules, pvary, and the squeeze of the
# per-shard residuals the shard_map's transpose passes on.
_SHARD_MAP_STRUCTURE = frozenset({"jit", "pjit", "shard_map", "pvary", "psum",
                                  "psum_invariant", "pmax", "axis_index", "squeeze"})


def _foreign(closed: Any, baseline: set[tuple[Any, tuple[str, ...]]],
             allowed: frozenset[str] = frozenset()) -> set[str]:
    out = set()
    for prim, dtypes in _jax.jaxpr_primitives(closed):
        if is_catalog_primitive(prim) or (prim, dtypes) in baseline or prim.name in allowed:
            continue
        out.add(f"{prim.name}[{','.join(dtypes)}]")
    return out


def _transforms(f: Callable[..., list[Any]], h: Callable[..., Any], n: int
                ) -> dict[str, Callable[..., Any]]:
    argnums = tuple(range(n))
    return {"grad": jax.grad(h, argnums=argnums), "jacfwd": jax.jacfwd(f, argnums=argnums),
            "hessian": jax.hessian(h, argnums=argnums)}


def _check_closure(case: Case, rng: np.random.Generator) -> CheckOutcome:
    if not case.full_vmap:
        raise NotApplicable("checked on the op's sample with the most operand ranks")
    idx = case.diff_idx
    f = case.float_outputs(case.call)
    xs = [case.leaves[i] for i in idx]
    if not idx or not f(*xs):
        raise NotApplicable("no differentiable operand")
    outs = f(*xs)
    ws = like(rng, outs)

    def base(*x: Any, square: bool) -> list[Any]:
        total = gr_sum(x[0])
        for v in x[1:]:
            total = add(total, gr_sum(v))
        if square:   # a nonlinear baseline: its hessian is not a symbolic zero
            total = multiply(total, total)
        return [broadcast_to(total, np.shape(o)) for o in outs]

    # what JAX itself emits for these transforms (basis vectors, splits,
    # instantiated zeros) around a function made of catalog ops only
    baseline: set[tuple[Any, tuple[str, ...]]] = set()
    for square in (False, True):
        b = partial(base, square=square)
        for fn in _transforms(b, scalarize(b, ws), len(xs)).values():
            baseline |= set(_jax.jaxpr_primitives(jax.make_jaxpr(fn)(*xs)))
    forward = jax.make_jaxpr(f)(*xs)
    if not any(is_catalog_primitive(p) for p, _ in _jax.jaxpr_primitives(forward)):
        own = _foreign(forward, baseline)
        raise NotApplicable(f"binds no gradrules op (only {', '.join(sorted(own))})")
    sharded = case.info is not None and case.info.call is not None
    allowed = _SHARD_MAP_STRUCTURE if sharded else frozenset()
    bad = {}
    for name, fn in _transforms(f, scalarize(f, ws), len(xs)).items():
        foreign = _foreign(jax.make_jaxpr(fn)(*xs), baseline, allowed)
        if foreign:
            bad[name] = sorted(foreign)
    if bad:
        raise Mismatch(np.inf, np.inf, f"foreign primitives: {bad}")
    return 0.0, 0.0, "catalog only"


def _check_hessian_symmetry(case: Case, rng: np.random.Generator) -> CheckOutcome:
    if not case.full_vmap:
        raise NotApplicable("checked on the op's sample with the most operand ranks")
    idx = case.diff_idx
    f = case.float_outputs(case.call)
    xs = [case.leaves[i] for i in idx]
    if not idx or not f(*xs) or sum(x.size for x in xs) == 0:
        raise NotApplicable("no differentiable operand")
    flat, unravel = ravel_pytree(xs)
    h = scalarize(f, like(rng, f(*xs)))
    hess = np.asarray(jax.jit(jax.hessian(lambda v: h(*unravel(v))))(flat))
    err = float(np.abs(hess - hess.T).max())
    scale = 1.0 + float(np.abs(hess).max())
    if err > 1e-10 * scale:
        raise Mismatch(err, err / scale, f"|H - H^T| = {err:.3e}")
    return err, err / scale, "1e-10 rel"


def _cast(x: np.ndarray, dtype: str) -> np.ndarray:
    if not is_float(x):
        return x
    if jnp.issubdtype(dtype, jnp.integer):
        v = np.rint(x * 3)
        if jnp.issubdtype(dtype, jnp.unsignedinteger):
            v = np.abs(v)
        return v.astype(dtype)
    return np.asarray(jnp.asarray(x, dtype))


def _check_dtypes(case: Case, rng: np.random.Generator) -> CheckOutcome:
    dtypes = case.info.dtypes if case.info else ()
    if not dtypes or not any(is_float(x) for x in case.leaves):
        raise NotApplicable("no dtype variants")
    if not case.full_vmap:
        raise NotApplicable("checked on the op's sample with the most operand ranks")
    e = r = 0.0
    for dt in dtypes:
        leaves = [_cast(x, dt) for x in case.leaves]
        out = case.call(*leaves)
        abstract = jax.eval_shape(case.call, *leaves)
        for g, w in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(abstract)):
            if g.shape != w.shape or g.dtype != w.dtype:
                raise Mismatch(np.inf, np.inf, f"{dt}: abstract {w.dtype}{list(w.shape)} vs "
                                f"{g.dtype}{list(g.shape)}")
        for x, y in zip(case.leaves, leaves):
            if is_float(x) and x.size and np.result_type(y) != np.dtype(dt):
                raise Mismatch(np.inf, np.inf, f"{dt}: input cast failed")
        # the float64 result of the same (rounded) inputs
        wide = [np.asarray(y).astype(np.float64) if is_float(x) else x
                for x, y in zip(case.leaves, leaves)]
        want = case.call(*wide)
        t = _DTYPE_TOL.get(dt, 0.0)
        got = [np.asarray(g).astype(np.float64) if jnp.issubdtype(g.dtype, jnp.floating) else g
               for g in jax.tree_util.tree_leaves(out)]
        want_cast = [np.asarray(jnp.asarray(w).astype(g.dtype)).astype(np.float64)
                     if jnp.issubdtype(g.dtype, jnp.floating) else np.asarray(w).astype(g.dtype)
                     for w, g in zip(jax.tree_util.tree_leaves(want),
                                     jax.tree_util.tree_leaves(out))]
        ee, rr = compare(got, want_cast, Tol(t, t), f"{dt} vs float64")
        e, r = max(e, ee), max(r, rr)
    return e, r, ", ".join(dtypes)


def _batched_program(case: Case, call: Callable[..., Any], weights: Sequence[Any] | None
                     ) -> Callable[..., Any]:
    """``jit(vmap(g))``, g the gradient of ``sum_k sum(w_k * out_k)`` in the
    differentiable operands (the outputs themselves when ``weights`` is None)."""
    idx = case.diff_idx

    def per_example(*leaves: Any) -> Any:
        if weights is None:
            return call(*leaves)

        def h(*dleaves: Any) -> Any:
            full = list(leaves)
            for i, v in zip(idx, dleaves):
                full[i] = v
            outs = [o for o in jax.tree_util.tree_leaves(call(*full)) if is_float(o)]
            return scalarize(lambda *_: outs, weights)()
        return jax.grad(h, argnums=tuple(range(len(idx))))(*[leaves[i] for i in idx])
    return jax.jit(jax.vmap(per_example))


def _export(program: Callable[..., Any], leaves: Sequence[np.ndarray]) -> Any:
    scope = jax.export.SymbolicScope()
    specs = [jax.ShapeDtypeStruct(jax.export.symbolic_shape(
        ", ".join(["b", *map(str, x.shape)]), scope=scope), x.dtype) for x in leaves]
    return jax.export.export(program)(*specs)


def _check_export(case: Case, rng: np.random.Generator) -> CheckOutcome:
    if not case.full_vmap:
        raise NotApplicable("checked on the op's sample with the most operand ranks")
    if not case.leaves:
        raise NotApplicable("no array operand")
    outs = [o for o in jax.tree_util.tree_leaves(case.call(*case.leaves)) if is_float(o)]
    weights = like(rng, outs) if outs and case.diff_idx else None
    program = _batched_program(case, case.call, weights)
    try:
        exported = _export(program, case.leaves)
    except Exception as exc:
        if case.op is not None and case.op.reference is not None:
            try:
                _export(_batched_program(case, case.reference, weights), case.leaves)
            except Exception:
                raise NotApplicable("the jax.numpy reference does not export with a "
                                    f"symbolic batch either ({type(exc).__name__})") from None
        raise
    e = r = 0.0
    for size in (2, 3):
        xs = [_batched(rng, x, 0, size) for x in case.leaves]
        e2, r2 = compare(exported.call(*xs), program(*xs), Tol(1e-12, 1e-10),
                         f"exported with a symbolic batch, called at b={size}")
        e, r = max(e, e2), max(r, r2)
    return e, r, "1e-12 + 1e-10 rel"


PROPERTIES: dict[str, Callable[[Case, np.random.Generator], CheckOutcome]] = {
    "abstract_eval": _check_abstract_eval, "jit": _check_jit, "reference": _check_reference,
    "fd": _check_fd, "transpose": _check_transpose, "vmap": _check_vmap,
    "closure": _check_closure, "hessian_symmetry": _check_hessian_symmetry,
    "dtypes": _check_dtypes, "export": _check_export,
}
"""Every check, in the order they run: the one list (``CHECKS`` is its keys)."""
