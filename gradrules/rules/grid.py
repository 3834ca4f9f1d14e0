"""Rules of the grid family: grid_sample, its transpose in x, and its
tangent map in the grid with that map's transpose.

``grid_sample`` and ``grid_sample_transpose`` are linear in their first
operand (the image / the cotangent) and transpose to each other. The grid
tangent enters through ``grid_sample_grid_jvp(x, grid, t) = sum_k t[..., k] *
grid_sample(x, derivative + e_k)`` (the sampling with direction k's weights
differentiated, the ``derivative`` param), linear in x and in t; its
transpose in t is ``grid_sample_grid_vjp(x, grid, ct)``, ``[sum_c ct *
grid_sample(x, derivative + e_k)]_k``, linear in x and in ct. Both sum over
the directions k still depending on the grid: none for nearest sampling or
a direction already differentiated (the derivative weights are piecewise
constant, so their own derivative is zero). Batching folds the batch axis
into N (every operand has it) and binds once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import (BatchDim, BatchResult, Cotangent, JvpResult, MaybeUndefined, Primitive,
                    Tangent, aval_of, is_undefined_primal, is_zero)
from ..core.primitive import register_rules
from ..primitives.grid import (differentiated, grid_directions, grid_sample_grid_jvp_p,
                               grid_sample_grid_scatter_p, grid_sample_grid_vjp_p, grid_sample_p,
                               grid_sample_transpose_p)
from ..primitives.linalg import einsum_p
from ._common import add_tangents, batch_size, fold_batch, unfold_batch


def _component(a: Any, t: Any, k: int, equation: str) -> Any:
    """``einsum(equation, a, t, e_k)``, e_k the k-th unit vector: picks (or,
    as an output index, places) coordinate k of an [N, Ho, Wo, 2] factor."""
    e = np.zeros(2, aval_of(a).dtype)
    e[k] = 1
    return einsum_p.bind(a, t, e, equation=equation)


def _image_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> BatchResult:
    """Every operand [N, ...]: the batch axis (an unbatched operand broadcast
    along it) is merged into N, one primitive, then split out again."""
    size = batch_size(args, dims)
    n = [s for i, s in enumerate(np.shape(args[0])) if i != dims[0]][0]
    out = prim.bind(*[fold_batch(a, d, size) for a, d in zip(args, dims)], **params)
    return unfold_batch(out, size, n), 0


def _not_linear_in_grid(op: str, grid: MaybeUndefined) -> None:
    if is_undefined_primal(grid):
        raise ValueError(f"gradrules.{op} is not linear in grid")


# ---------------------------------------------------------------- grid_sample
def _grid_sample_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                     derivative: tuple[int, int], **params: Any) -> JvpResult:
    """t = sample(t_x) + grid_sample_grid_jvp(x, grid, t_grid)."""
    (x, grid), (tx, tg) = primals, tangents
    out = grid_sample_p.bind(x, grid, derivative=derivative, **params)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(tx):
        t = grid_sample_p.bind(tx, grid, derivative=derivative, **params)
    if not is_zero(tg) and grid_directions(params["mode"], derivative):
        t = add_tangents(t, grid_sample_grid_jvp_p.bind(x, grid, tg, derivative=derivative,
                                                        **params))
    return out, t


def _grid_sample_transpose(ct: Cotangent, x: MaybeUndefined, grid: MaybeUndefined,
                           **params: Any) -> list[Any]:
    _not_linear_in_grid("grid_sample", grid)
    size = tuple(x.aval.shape[2:])
    return [grid_sample_transpose_p.bind(ct, grid, size=size, **params), None]


register_rules(grid_sample_p, linear=("x",), jvp=_grid_sample_jvp,
               transpose=_grid_sample_transpose, batch=partial(_image_batch, grid_sample_p))


# ------------------------------------------------------ grid_sample_transpose
def _grid_sample_transpose_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                               size: tuple[int, int], **params: Any) -> JvpResult:
    """Linear in ct; in the grid, ``grid_sample_grid_scatter(ct, grid,
    t_grid)``: the scatter of ct * t_grid[..., k] with the weights of
    direction k differentiated."""
    (ct, grid), (tct, tg) = primals, tangents
    out = grid_sample_transpose_p.bind(ct, grid, size=size, **params)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(tct):
        t = grid_sample_transpose_p.bind(tct, grid, size=size, **params)
    if not is_zero(tg) and grid_directions(params["mode"], params["derivative"]):
        t = add_tangents(t, grid_sample_grid_scatter_p.bind(ct, grid, tg, size=size, **params))
    return out, t


def _grid_sample_transpose_transpose(ct: Cotangent, ct_in: MaybeUndefined,
                                     grid: MaybeUndefined, *, size: tuple[int, int],
                                     **params: Any) -> list[Any]:
    _not_linear_in_grid("grid_sample_transpose", grid)
    return [grid_sample_p.bind(ct, grid, **params), None]


register_rules(grid_sample_transpose_p, linear=("ct",), jvp=_grid_sample_transpose_jvp,
               transpose=_grid_sample_transpose_transpose,
               batch=partial(_image_batch, grid_sample_transpose_p))


# ------------------------------------------------------- grid_sample_grid_jvp
def _direction_sum_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Tangent],
                       *, derivative: tuple[int, int], **params: Any) -> JvpResult:
    """JVP of ``prim(a, grid, t) = sum_k (a, t[..., k]) -> ... with direction
    k's weights differentiated`` (grid_sample_grid_jvp, grid_sample_grid_scatter):
    linear in a and t; in the grid, ``sum_k prim(a, grid, t[..., k] * t_grid,
    derivative + e_k)`` (only the cross terms survive)."""
    (a, grid, t), (ta, tg, tt) = primals, tangents
    out = prim.bind(a, grid, t, derivative=derivative, **params)
    dt: Any = _jax.zero_tangent(out)
    for u, v in ((ta, t), (a, tt)):
        if not is_zero(u) and not is_zero(v):
            dt = add_tangents(dt, prim.bind(u, grid, v, derivative=derivative, **params))
    if not is_zero(tg):
        for k in grid_directions(params["mode"], derivative):
            dt = add_tangents(dt, prim.bind(a, grid, _component(tg, t, k, "nhwj,nhwk,k->nhwj"),
                                            derivative=differentiated(derivative, k), **params))
    return out, dt


def _grid_jvp_transpose(ct: Cotangent, x: MaybeUndefined, grid: MaybeUndefined,
                        t: MaybeUndefined, **params: Any) -> list[Any]:
    _not_linear_in_grid("grid_sample_grid_jvp", grid)
    if is_undefined_primal(t):
        return [None, None, grid_sample_grid_vjp_p.bind(x, grid, ct, **params)]
    size = tuple(x.aval.shape[2:])
    return [grid_sample_grid_scatter_p.bind(ct, grid, t, size=size, **params), None, None]


register_rules(grid_sample_grid_jvp_p, linear=("x", "t"),
               jvp=partial(_direction_sum_jvp, grid_sample_grid_jvp_p),
               transpose=_grid_jvp_transpose,
               batch=partial(_image_batch, grid_sample_grid_jvp_p))


# ------------------------------------------------------- grid_sample_grid_vjp
def _grid_vjp_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                  derivative: tuple[int, int], **params: Any) -> JvpResult:
    """Linear in x and ct; in the grid, coordinate k gains ``sum_j t_grid[...,
    j] * grid_sample_grid_vjp(x, grid, ct, derivative + e_k)[..., j]``."""
    (x, grid, ct), (tx, tg, tct) = primals, tangents
    out = grid_sample_grid_vjp_p.bind(x, grid, ct, derivative=derivative, **params)
    dt: Any = _jax.zero_tangent(out)
    for a, b in ((tx, ct), (x, tct)):
        if not is_zero(a) and not is_zero(b):
            dt = add_tangents(dt, grid_sample_grid_vjp_p.bind(a, grid, b, derivative=derivative,
                                                              **params))
    if not is_zero(tg):
        for k in grid_directions(params["mode"], derivative):
            g = grid_sample_grid_vjp_p.bind(x, grid, ct, derivative=differentiated(derivative, k),
                                            **params)
            dt = add_tangents(dt, _component(g, tg, k, "nhwj,nhwj,k->nhwk"))
    return out, dt


def _grid_vjp_transpose(ct_out: Cotangent, x: MaybeUndefined, grid: MaybeUndefined,
                        ct: MaybeUndefined, **params: Any) -> list[Any]:
    _not_linear_in_grid("grid_sample_grid_vjp", grid)
    if is_undefined_primal(ct):
        return [None, None, grid_sample_grid_jvp_p.bind(x, grid, ct_out, **params)]
    size = tuple(x.aval.shape[2:])
    return [grid_sample_grid_scatter_p.bind(ct, grid, ct_out, size=size, **params), None, None]


register_rules(grid_sample_grid_vjp_p, linear=("x", "ct"), jvp=_grid_vjp_jvp,
               transpose=_grid_vjp_transpose,
               batch=partial(_image_batch, grid_sample_grid_vjp_p))


# --------------------------------------------------- grid_sample_grid_scatter
def _grid_scatter_transpose(ct_out: Cotangent, ct: MaybeUndefined, grid: MaybeUndefined,
                            t: MaybeUndefined, *, size: tuple[int, int],
                            **params: Any) -> list[Any]:
    _not_linear_in_grid("grid_sample_grid_scatter", grid)
    if is_undefined_primal(t):
        return [None, None, grid_sample_grid_vjp_p.bind(ct_out, grid, ct, **params)]
    return [grid_sample_grid_jvp_p.bind(ct_out, grid, t, **params), None, None]


register_rules(grid_sample_grid_scatter_p, linear=("ct", "t"),
               jvp=partial(_direction_sum_jvp, grid_sample_grid_scatter_p),
               transpose=_grid_scatter_transpose,
               batch=partial(_image_batch, grid_sample_grid_scatter_p))
