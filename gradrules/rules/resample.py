"""Rules of the resample family.

Every primitive here acts on trailing image axes with any leading axes, so
``front_batch`` moves the batch axis in front and binds once. The
separable maps ``A x B^T`` transpose to the einsum with ``A^T`` and ``B^T``;
pixel_shuffle and pixel_unshuffle, unpatchify and patchify are each other's
transposes; grid_sample2d's transpose in x is its scatter-add adjoint, and
its grid derivative is the sampling with derivative weights.
"""

from __future__ import annotations

import string
from functools import partial
from typing import Any

import numpy as np

from .. import _jax
from .._jax import Primitive, aval_of, is_undefined_primal, is_zero
from ..core.primitive import register_rules
from ..primitives.linalg import einsum_p
from ..primitives.resample import (SEPARABLE, grid_sample2d_p, grid_sample2d_transpose_p,
                                   patchify_p, pixel_shuffle_p, pixel_unshuffle_p, unpatchify_p,
                                   upsample2d_p)
from ._common import (add_tangents, front_batch, linear_jvp, reshape_axis_into,
                      reshape_axis_out_of, to_front)


# separable linear maps -------------------------------------------------------
def separable_apply(x: Any, a: np.ndarray, b: np.ndarray) -> Any:
    """``a x b^T`` on the last two axes of x, as one einsum."""
    lead = string.ascii_uppercase[:np.ndim(x) - 2]
    dtype = aval_of(x).dtype
    return einsum_p.bind(x, np.asarray(a, dtype), np.asarray(b, dtype),
                         equation=f"{lead}hw,ih,jw->{lead}ij")


def _separable_transpose(prim: Primitive, ct: Any, x: Any, **params: Any) -> list[Any]:
    """The exact adjoint: ``A^T ct B``."""
    a, b = SEPARABLE[prim](*x.aval.shape[-2:], **params)
    return [separable_apply(ct, a.T, b.T)]


def register_separable(prim: Primitive) -> None:
    register_rules(prim, jvp=partial(linear_jvp, prim),
                   transpose=partial(_separable_transpose, prim),
                   batch=partial(front_batch, prim))


register_separable(upsample2d_p)


# permutations ----------------------------------------------------------------
def _inverse_transpose(inverse: Primitive, ct: Any, x: Any, **params: Any) -> list[Any]:
    return [inverse.bind(ct, **params)]


for _p, _inv in ((pixel_shuffle_p, pixel_unshuffle_p), (pixel_unshuffle_p, pixel_shuffle_p),
                 (unpatchify_p, patchify_p), (patchify_p, unpatchify_p)):
    register_rules(_p, jvp=partial(linear_jvp, _p), transpose=partial(_inverse_transpose, _inv),
                   batch=partial(front_batch, _p))


# grid_sample2d ---------------------------------------------------------------
def _grid_component(a: Any, t_grid: Any, k: int) -> Any:
    """``a[n, c, h, w] * t_grid[n, h, w, k]``: one coordinate of the grid tangent."""
    e = np.zeros(2, aval_of(a).dtype)
    e[k] = 1
    return einsum_p.bind(a, t_grid, e, equation="nchw,nhwk,k->nchw")


def _with_derivative(derivative: tuple[int, int], k: int) -> tuple[int, int]:
    return (1, derivative[1]) if k == 0 else (derivative[0], 1)


def _grid_sample2d_jvp(primals: Any, tangents: Any, *, derivative: tuple[int, int],
                       align_corners: bool) -> Any:
    """t = sample(t_x) + sum_k t_grid[..., k] * sample_k(x), where sample_k
    differentiates the weights of direction k (0 if they already are: the
    weights are piecewise linear)."""
    (x, grid), (tx, tg) = primals, tangents
    out = grid_sample2d_p.bind(x, grid, derivative=derivative, align_corners=align_corners)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(tx):
        t = grid_sample2d_p.bind(tx, grid, derivative=derivative, align_corners=align_corners)
    if not is_zero(tg):
        for k in (0, 1):
            if derivative[k] == 0:
                d = grid_sample2d_p.bind(x, grid, derivative=_with_derivative(derivative, k),
                                         align_corners=align_corners)
                t = add_tangents(t, _grid_component(d, tg, k))
    return out, t


def _grid_sample2d_transpose(ct: Any, x: Any, grid: Any, *, derivative: tuple[int, int],
                             align_corners: bool) -> list[Any]:
    if is_undefined_primal(grid):
        raise ValueError("gradrules.grid_sample2d is not linear in grid")
    size = tuple(x.aval.shape[2:])
    return [grid_sample2d_transpose_p.bind(ct, grid, derivative=derivative,
                                           align_corners=align_corners, size=size), None]


def _grid_sample2d_transpose_jvp(primals: Any, tangents: Any, *, derivative: tuple[int, int],
                                 align_corners: bool, size: tuple[int, int]) -> Any:
    """Linear in ct; in the grid, the scatter of ct * t_grid[..., k] with the
    weights of direction k differentiated."""
    (ct, grid), (tct, tg) = primals, tangents
    kw = dict(align_corners=align_corners, size=size)
    out = grid_sample2d_transpose_p.bind(ct, grid, derivative=derivative, **kw)
    t: Any = _jax.zero_tangent(out)
    if not is_zero(tct):
        t = grid_sample2d_transpose_p.bind(tct, grid, derivative=derivative, **kw)
    if not is_zero(tg):
        for k in (0, 1):
            if derivative[k] == 0:
                t = add_tangents(t, grid_sample2d_transpose_p.bind(
                    _grid_component(ct, tg, k), grid,
                    derivative=_with_derivative(derivative, k), **kw))
    return out, t


def _grid_sample2d_transpose_transpose(ct: Any, ct_in: Any, grid: Any, *,
                                       derivative: tuple[int, int], align_corners: bool,
                                       size: tuple[int, int]) -> list[Any]:
    if is_undefined_primal(grid):
        raise ValueError("gradrules.grid_sample2d_transpose is not linear in grid")
    return [grid_sample2d_p.bind(ct, grid, derivative=derivative, align_corners=align_corners),
            None]


def _fold_batch(prim: Primitive, args: Any, dims: Any, **params: Any) -> tuple[Any, int]:
    """Both operands [N, ...]: the batch axis (an unbatched operand broadcast
    along it) is merged into N, one primitive, then split out again."""
    fronted = to_front(args, dims)
    size, n = np.shape(fronted[0])[:2]
    out = prim.bind(*[reshape_axis_into(0, 0, a) for a in fronted], **params)
    return reshape_axis_out_of(0, size, out, n), 0


register_rules(grid_sample2d_p, jvp=_grid_sample2d_jvp, transpose=_grid_sample2d_transpose,
               batch=partial(_fold_batch, grid_sample2d_p))
register_rules(grid_sample2d_transpose_p, jvp=_grid_sample2d_transpose_jvp,
               transpose=_grid_sample2d_transpose_transpose,
               batch=partial(_fold_batch, grid_sample2d_transpose_p))
