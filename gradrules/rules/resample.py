"""Rules of the resample family.

Every primitive here acts on trailing image axes with any leading axes, so
``front_batch`` moves the batch axis in front and binds once (grid_sample2d
and its transpose fold it into their N axis). upsample2d, a separable map
``A x B^T``, transposes to its transpose primitive ``A^T ct B`` and back
(``pool.separable_rules``); pixel_shuffle and pixel_unshuffle, unpatchify
and patchify are each other's transposes; grid_sample2d's transpose in x is
its scatter-add adjoint, and its grid derivative is the sampling with
derivative weights.
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
from ..primitives.linalg import einsum_p
from ..primitives.resample import (grid_sample2d_p, grid_sample2d_transpose_p, patchify_p,
                                   pixel_shuffle_p, pixel_unshuffle_p, unpatchify_p,
                                   upsample2d_p, upsample2d_transpose_p)
from ._common import add_tangents, batch_size, fold_batch, linear_map_rules, unfold_batch
from ._fused import transpose_to
from .pool import separable_rules, separable_transpose_rules

# upsample2d ------------------------------------------------------------------
register_rules(upsample2d_p, linear=("x",), **separable_rules(upsample2d_p))
register_rules(upsample2d_transpose_p, linear=("ct",), **separable_transpose_rules(upsample2d_p))


# permutations: pixel_shuffle / pixel_unshuffle, unpatchify / patchify ----------
# The transpose of a permutation is its inverse permutation.
register_rules(pixel_shuffle_p, linear=("x",),
               **linear_map_rules(pixel_shuffle_p,
                                  partial(transpose_to, pixel_shuffle_p, pixel_unshuffle_p)))
register_rules(pixel_unshuffle_p, linear=("x",),
               **linear_map_rules(pixel_unshuffle_p,
                                  partial(transpose_to, pixel_unshuffle_p, pixel_shuffle_p)))
register_rules(unpatchify_p, linear=("tokens",),
               **linear_map_rules(unpatchify_p, partial(transpose_to, unpatchify_p, patchify_p)))
register_rules(patchify_p, linear=("x",),
               **linear_map_rules(patchify_p, partial(transpose_to, patchify_p, unpatchify_p)))


# grid_sample2d / grid_sample2d_transpose -------------------------------------
def _grid_component(a: Any, t_grid: Tangent, k: int) -> Any:
    """``a[n, c, h, w] * t_grid[n, h, w, k]``: one coordinate of the grid tangent."""
    e = np.zeros(2, aval_of(a).dtype)
    e[k] = 1
    return einsum_p.bind(a, t_grid, e, equation="nchw,nhwk,k->nchw")


def _with_derivative(derivative: tuple[int, int], k: int) -> tuple[int, int]:
    return (1, derivative[1]) if k == 0 else (derivative[0], 1)


def _image_batch(prim: Primitive, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> BatchResult:
    """Both operands [N, ...]: the batch axis (an unbatched operand broadcast
    along it) is merged into N, one primitive, then split out again."""
    size = batch_size(args, dims)
    n = [s for i, s in enumerate(np.shape(args[0])) if i != dims[0]][0]
    out = prim.bind(*[fold_batch(a, d, size) for a, d in zip(args, dims)], **params)
    return unfold_batch(out, size, n), 0


def _grid_sample2d_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                       derivative: tuple[int, int], align_corners: bool) -> JvpResult:
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


def _grid_sample2d_transpose(ct: Cotangent, x: MaybeUndefined, grid: MaybeUndefined, *,
                             derivative: tuple[int, int], align_corners: bool) -> list[Any]:
    if is_undefined_primal(grid):
        raise ValueError("gradrules.grid_sample2d is not linear in grid")
    size = tuple(x.aval.shape[2:])
    return [grid_sample2d_transpose_p.bind(ct, grid, derivative=derivative,
                                           align_corners=align_corners, size=size), None]


register_rules(grid_sample2d_p, linear=("x",), jvp=_grid_sample2d_jvp,
               transpose=_grid_sample2d_transpose, batch=partial(_image_batch, grid_sample2d_p))


def _grid_sample2d_transpose_jvp(primals: Sequence[Any], tangents: Sequence[Tangent], *,
                                 derivative: tuple[int, int], align_corners: bool,
                                 size: tuple[int, int]) -> JvpResult:
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


def _grid_sample2d_transpose_transpose(ct: Cotangent, ct_in: MaybeUndefined,
                                       grid: MaybeUndefined, *, derivative: tuple[int, int],
                                       align_corners: bool, size: tuple[int, int]) -> list[Any]:
    if is_undefined_primal(grid):
        raise ValueError("gradrules.grid_sample2d_transpose is not linear in grid")
    return [grid_sample2d_p.bind(ct, grid, derivative=derivative, align_corners=align_corners),
            None]


register_rules(grid_sample2d_transpose_p, linear=("ct",), jvp=_grid_sample2d_transpose_jvp,
               transpose=_grid_sample2d_transpose_transpose,
               batch=partial(_image_batch, grid_sample2d_transpose_p))
