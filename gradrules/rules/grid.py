"""Rules of the grid family: grid_sample and its transpose in x.

Both are linear in their first operand (the image / the cotangent) and
transpose to each other. The grid tangent enters through the ``derivative``
param: the sampling with one direction's weights differentiated, times that
coordinate of the grid tangent (an ``einsum``, linear in the tangent). That
is zero for nearest sampling and for a direction already differentiated
(the derivative weights are piecewise constant). Batching folds the batch
axis into N (both operands have it) and binds once.
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
from ..primitives.grid import grid_sample_p, grid_sample_transpose_p
from ..primitives.linalg import einsum_p
from ._common import add_tangents, batch_size, fold_batch, unfold_batch


def _grid_component(a: Any, t_grid: Tangent, k: int) -> Any:
    """``a[n, c, h, w] * t_grid[n, h, w, k]``: one coordinate of the grid tangent."""
    e = np.zeros(2, aval_of(a).dtype)
    e[k] = 1
    return einsum_p.bind(a, t_grid, e, equation="nchw,nhwk,k->nchw")


def _grid_directions(mode: str, derivative: tuple[int, int]) -> list[tuple[int, tuple[int, int]]]:
    """(k, derivative with direction k differentiated) for each direction
    whose weights still depend on the grid."""
    if mode == "nearest":
        return []
    return [(k, (1, derivative[1]) if k == 0 else (derivative[0], 1))
            for k in (0, 1) if derivative[k] == 0]


def _image_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> BatchResult:
    """Both operands [N, ...]: the batch axis (an unbatched operand broadcast
    along it) is merged into N, one primitive, then split out again."""
    size = batch_size(args, dims)
    n = [s for i, s in enumerate(np.shape(args[0])) if i != dims[0]][0]
    out = prim.bind(*[fold_batch(a, d, size) for a, d in zip(args, dims)], **params)
    return unfold_batch(out, size, n), 0


def _grid_sample_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                     derivative: tuple[int, int], **params: Any) -> JvpResult:
    """t = sample(t_x) + sum_k t_grid[..., k] * sample_k(x), where sample_k
    differentiates the weights of direction k."""
    (x, grid), (tx, tg) = primals, tangents
    out = grid_sample_p.bind(x, grid, derivative=derivative, **params)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(tx):
        t = grid_sample_p.bind(tx, grid, derivative=derivative, **params)
    if not is_zero(tg):
        for k, dk in _grid_directions(params["mode"], derivative):
            d = grid_sample_p.bind(x, grid, derivative=dk, **params)
            t = add_tangents(t, _grid_component(d, tg, k))
    return out, t


def _grid_sample_transpose(ct: Cotangent, x: MaybeUndefined, grid: MaybeUndefined,
                           **params: Any) -> list[Any]:
    if is_undefined_primal(grid):
        raise ValueError("gradrules.grid_sample is not linear in grid")
    size = tuple(x.aval.shape[2:])
    return [grid_sample_transpose_p.bind(ct, grid, size=size, **params), None]


register_rules(grid_sample_p, linear=("x",), jvp=_grid_sample_jvp,
               transpose=_grid_sample_transpose, batch=partial(_image_batch, grid_sample_p))


def _grid_sample_transpose_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                               derivative: tuple[int, int], **params: Any) -> JvpResult:
    """Linear in ct; in the grid, the scatter of ct * t_grid[..., k] with the
    weights of direction k differentiated."""
    (ct, grid), (tct, tg) = primals, tangents
    out = grid_sample_transpose_p.bind(ct, grid, derivative=derivative, **params)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(tct):
        t = grid_sample_transpose_p.bind(tct, grid, derivative=derivative, **params)
    if not is_zero(tg):
        for k, dk in _grid_directions(params["mode"], derivative):
            t = add_tangents(t, grid_sample_transpose_p.bind(
                _grid_component(ct, tg, k), grid, derivative=dk, **params))
    return out, t


def _grid_sample_transpose_transpose(ct: Cotangent, ct_in: MaybeUndefined,
                                     grid: MaybeUndefined, *, size: tuple[int, int],
                                     **params: Any) -> list[Any]:
    if is_undefined_primal(grid):
        raise ValueError("gradrules.grid_sample_transpose is not linear in grid")
    return [grid_sample_p.bind(ct, grid, **params), None]


register_rules(grid_sample_transpose_p, linear=("ct",), jvp=_grid_sample_transpose_jvp,
               transpose=_grid_sample_transpose_transpose,
               batch=partial(_image_batch, grid_sample_transpose_p))
