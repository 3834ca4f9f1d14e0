"""grid_sample: torch's grid_sampler_2d (bilinear / nearest; zeros, border,
reflection padding), as a primitive linear in the image with a transpose
primitive (the scatter-add of the same weights).

One formula, ``grid_sample_reference``: each grid coordinate is mapped to a
pixel coordinate (unnormalised with or without ``align_corners``, then
reflected and / or clamped by the padding mode), and the output is a
weighted sum of the image at the corners around it (bilinear: four, weights
(1 - f, f) per axis; nearest: the rounded corner). The derivative in the
grid is the same sum with one axis's weights replaced by their derivative
in the grid coordinate, ``(-1, 1) d(pixel)/d(grid)`` (zero where the padding
clamps, negated where it reflects): a ``derivative`` param of the primitive.
Those weights are piecewise constant, so their own derivative is zero;
nearest sampling has a zero derivative in the grid.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import bool_param, choice_param
from ..core.meta import check_dtype, op_name, same_dtype
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op
from .convert import promote

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "grid"
MODES = ("bilinear", "nearest")
PADDING_MODES = ("zeros", "border", "reflection")
PARAMS = ("mode", "padding_mode", "align_corners", "derivative")


def _check(op: str, x: Any, grid: Any) -> Any:
    dtype = same_dtype(op, {"x": x, "grid": grid})
    check_dtype(op, "x", dtype, "float")
    if (len(x.shape) != 4 or len(grid.shape) != 4 or grid.shape[-1] != 2
            or grid.shape[0] != x.shape[0]):
        raise ValueError(f"{op_name(op)}: x must be [N, C, H, W] and grid [N, Ho, Wo, 2]; got x "
                         f"with shape {tuple(x.shape)} and grid with shape {tuple(grid.shape)}")
    return dtype


def _grid_sample_infer_meta(x: Any, grid: Any, **params: Any) -> ShapedArray:
    dtype = _check("grid_sample", x, grid)
    return ShapedArray(tuple(x.shape[:2]) + tuple(grid.shape[1:3]), dtype)


def source_coordinate(g: Array, size: int, *, padding_mode: str, align_corners: bool
                      ) -> tuple[Array, Array]:
    """torch's grid_sampler_compute_source_index: the pixel coordinate of the
    normalised coordinate g along an axis of ``size``, and its derivative in
    g (0 where clamped, negated where reflected an odd number of times)."""
    if align_corners:
        c, scale = (g + 1) * (size - 1) / 2, (size - 1) / 2
    else:
        c, scale = ((g + 1) * size - 1) / 2, size / 2
    slope = jnp.full(g.shape, scale, g.dtype)
    if padding_mode == "reflection":
        low, span = (0.0, size - 1.0) if align_corners else (-0.5, float(size))
        if span == 0:
            return jnp.zeros_like(c), jnp.zeros_like(slope)
        t = c - low
        sign = jnp.where(t < 0, -1.0, 1.0).astype(g.dtype)
        t = jnp.abs(t)
        extra, even = jnp.fmod(t, span), jnp.floor(t / span) % 2 == 0
        c = jnp.where(even, extra + low, span - extra + low)
        slope = slope * jnp.where(even, sign, -sign)
    if padding_mode in ("border", "reflection"):
        slope = jnp.where((c > 0) & (c < size - 1), slope, 0)
        c = jnp.clip(c, 0, size - 1)
    return c, slope


def grid_directions(mode: str, derivative: tuple[int, int]) -> tuple[int, ...]:
    """The grid coordinates k whose weights still depend on the grid: none
    for nearest sampling, else those not yet differentiated."""
    return () if mode == "nearest" else tuple(k for k in (0, 1) if derivative[k] == 0)


def _corners(x: Array, grid: Array, *, mode: str, padding_mode: str, align_corners: bool
             ) -> tuple[list[Array], Any]:
    """(values, weights): the image at each corner around the sampled points,
    [N, C, Ho, Wo] (bilinear: four, nearest: one), and ``weights(derivative)``,
    each corner's weight [N, Ho, Wo] (0 where the corner is outside the
    image) with the weights of direction k replaced by their derivative
    where ``derivative[k] = 1``."""
    n, c, h, w = x.shape
    kw = dict(padding_mode=padding_mode, align_corners=align_corners)
    ix, sx = source_coordinate(grid[..., 0], w, **kw)  # type: ignore[arg-type]
    iy, sy = source_coordinate(grid[..., 1], h, **kw)  # type: ignore[arg-type]
    if mode == "nearest":
        corners = [(jnp.round(ix), jnp.round(iy))]
    else:
        x0, y0 = jnp.floor(ix), jnp.floor(iy)
        fx, fy = ix - x0, iy - y0
        corners = [(x0 + dx, y0 + dy) for dy in (0, 1) for dx in (0, 1)]
    valid = [(cx >= 0) & (cx <= w - 1) & (cy >= 0) & (cy <= h - 1) for cx, cy in corners]

    def weights(derivative: tuple[int, int]) -> list[Array]:
        if mode == "nearest":
            raw = [jnp.ones_like(ix)]
        else:
            wx = (1 - fx, fx) if derivative[0] == 0 else (-sx, sx)
            wy = (1 - fy, fy) if derivative[1] == 0 else (-sy, sy)
            raw = [wx[dx] * wy[dy] for dy in (0, 1) for dx in (0, 1)]
        return [jnp.where(v, r, 0) for v, r in zip(valid, raw)]

    flat = x.reshape(n, c, h * w)
    values = []
    for cx, cy in corners:
        idx = (jnp.clip(cy, 0, h - 1) * w + jnp.clip(cx, 0, w - 1)).astype(jnp.int32)
        idx = idx.reshape(n, 1, math.prod(idx.shape[1:]))   # not -1: n may be 0
        values.append(jnp.take_along_axis(flat, idx, axis=2).reshape((n, c) + grid.shape[1:3]))
    return values, weights


def _weighted_sum(values: list[Array], weights: list[Array], dtype: Any) -> Array:
    """``sum_corner values * weights`` (the weights broadcast over channels)."""
    out = jnp.zeros(values[0].shape, dtype)
    for v, weight in zip(values, weights):
        out = out + v * weight[:, None]
    return out.astype(dtype)


def grid_sample_reference(x: Array, grid: Array, *, mode: str = "bilinear",
                          padding_mode: str = "zeros", align_corners: bool = False,
                          derivative: tuple[int, int] = (0, 0)) -> Array:
    """torch's grid_sample in plain jax.numpy. ``derivative`` (a, b) replaces
    the x- (a = 1) / y- (b = 1) interpolation weights by their derivative
    with respect to the normalised grid coordinate."""
    values, weights = _corners(x, grid, mode=mode, padding_mode=padding_mode,
                               align_corners=align_corners)
    return _weighted_sum(values, weights(derivative), x.dtype)


grid_sample_p = define_primitive("grid_sample", family=FAMILY, operands=("x", "grid"),
                                 params=PARAMS, infer_meta=_grid_sample_infer_meta,
                                 impl=grid_sample_reference)


def _grid_sample_transpose_infer_meta(ct: Any, grid: Any, *, size: tuple[int, int],
                                      **params: Any) -> ShapedArray:
    dtype = same_dtype("grid_sample_transpose", {"ct": ct, "grid": grid})
    return ShapedArray(tuple(ct.shape[:2]) + tuple(size), dtype)


def _adjoint_in_x(sample: Any, ct: Array, size: tuple[int, int]) -> Array:
    """The adjoint of the image -> [N, C, Ho, Wo] linear map ``sample``
    applied to ct: a scatter-add of ct with the same weights."""
    _, vjp = jax.vjp(sample, jnp.zeros(tuple(ct.shape[:2]) + tuple(size), ct.dtype))
    return vjp(ct)[0]


def _grid_sample_transpose_impl(ct: Array, grid: Array, *, size: tuple[int, int],
                                **params: Any) -> Array:
    """The adjoint of grid_sample in x."""
    return _adjoint_in_x(lambda x: grid_sample_reference(x, grid, **params), ct, size)


grid_sample_transpose_p = define_primitive(
    "grid_sample_transpose", family=FAMILY, operands=("ct", "grid"), params=PARAMS + ("size",),
    infer_meta=_grid_sample_transpose_infer_meta, impl=_grid_sample_transpose_impl)


def differentiated(derivative: tuple[int, int], k: int) -> tuple[int, int]:
    """``derivative`` with direction k's weights differentiated as well."""
    return (1, derivative[1]) if k == 0 else (derivative[0], 1)


def _check_grid_like(op: str, grid: Any, t: Any) -> None:
    if tuple(t.shape) != tuple(grid.shape):
        raise ValueError(f"{op_name(op)}: t with shape {tuple(t.shape)} must have the grid's "
                         f"shape {tuple(grid.shape)}")


def _grid_jvp_infer_meta(x: Any, grid: Any, t: Any, **params: Any) -> ShapedArray:
    _check_grid_like("grid_sample_grid_jvp", grid, t)
    return _grid_sample_infer_meta(x, grid)


def _grid_jvp_impl(x: Array, grid: Array, t: Array, *, derivative: tuple[int, int],
                   **params: Any) -> Array:
    """``sum_k t[..., k] * grid_sample(x, derivative + e_k)``: the corners'
    weights combined per point before the channels are weighted."""
    values, weights = _corners(x, grid, **params)
    per_k = {k: weights(differentiated(derivative, k))
             for k in grid_directions(params["mode"], derivative)}
    if not per_k:
        return jnp.zeros(values[0].shape, x.dtype)
    combined = [sum(t[..., k] * per_k[k][i] for k in per_k) for i in range(len(values))]
    return _weighted_sum(values, combined, x.dtype)


grid_sample_grid_jvp_p = define_primitive(
    "grid_sample_grid_jvp", family=FAMILY, operands=("x", "grid", "t"), params=PARAMS,
    infer_meta=_grid_jvp_infer_meta, impl=_grid_jvp_impl)


def _grid_vjp_infer_meta(x: Any, grid: Any, ct: Any, **params: Any) -> ShapedArray:
    want = _grid_sample_infer_meta(x, grid)
    if tuple(ct.shape) != tuple(want.shape):
        raise ValueError(f"{op_name('grid_sample_grid_vjp')}: ct with shape "
                         f"{tuple(ct.shape)} must have the output's shape {tuple(want.shape)}")
    return ShapedArray(tuple(grid.shape), want.dtype)


def _grid_vjp_impl(x: Array, grid: Array, ct: Array, *, derivative: tuple[int, int],
                   **params: Any) -> Array:
    """The transpose of grid_sample_grid_jvp in t: ``out[..., k] = sum_c ct *
    grid_sample(x, derivative + e_k)``, with the channels summed per corner
    first (``sum_corner weight_k * sum_c ct * value``)."""
    values, weights = _corners(x, grid, **params)
    dirs = grid_directions(params["mode"], derivative)
    dots = [jnp.sum(ct * v, axis=1) for v in values] if dirs else []
    out = [sum(d * wk for d, wk in zip(dots, weights(differentiated(derivative, k))))
           if k in dirs else jnp.zeros(grid.shape[:-1], x.dtype) for k in (0, 1)]
    return jnp.stack(out, axis=-1).astype(x.dtype)


grid_sample_grid_vjp_p = define_primitive(
    "grid_sample_grid_vjp", family=FAMILY, operands=("x", "grid", "ct"), params=PARAMS,
    infer_meta=_grid_vjp_infer_meta, impl=_grid_vjp_impl)


def _grid_scatter_infer_meta(ct: Any, grid: Any, t: Any, *, size: tuple[int, int],
                             **params: Any) -> ShapedArray:
    _check_grid_like("grid_sample_grid_scatter", grid, t)
    return _grid_sample_transpose_infer_meta(ct, grid, size=size)


def _grid_scatter_impl(ct: Array, grid: Array, t: Array, *, size: tuple[int, int],
                       **params: Any) -> Array:
    """The transpose of grid_sample_grid_jvp in x: ``sum_k
    grid_sample_transpose(ct * t[..., k], derivative + e_k)``, one scatter
    per corner with the directions' weights combined per point."""
    return _adjoint_in_x(lambda x: _grid_jvp_impl(x, grid, t, **params), ct, size)


grid_sample_grid_scatter_p = define_primitive(
    "grid_sample_grid_scatter", family=FAMILY, operands=("ct", "grid", "t"),
    params=PARAMS + ("size",), infer_meta=_grid_scatter_infer_meta, impl=_grid_scatter_impl)


def grid_sample(x: ArrayLike, grid: ArrayLike, *, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool = False) -> Array:
    """Sample the [N, C, H, W] image x at the points of grid [N, Ho, Wo, 2]
    (normalised (x, y), -1 and 1 the edges of the image: the outer edges of
    the corner pixels, or their centres with ``align_corners``) -> [N, C, Ho,
    Wo]: torch's grid_sample. ``mode``: 'bilinear' or 'nearest' (round half
    to even); ``padding_mode``: 'zeros' (outside pixels are 0), 'border'
    (coordinates clamped to the image), 'reflection' (reflected at the
    edges, then clamped).

    Linear in x: its transpose scatters the cotangent with the same weights.
    The derivative in the grid (bilinear) is the same sampling with one
    direction's weights (1 - f, f) replaced by their derivative
    (-1, 1) d(pixel)/d(grid) (a ``derivative`` param of the primitive), whose
    own derivative is 0; nearest sampling has a zero derivative in the grid.
    """
    op = "grid_sample"
    x, grid = promote(op, {"x": x, "grid": grid}, "float")
    return grid_sample_p.bind(
        x, grid, mode=choice_param(op, "mode", mode, MODES),
        padding_mode=choice_param(op, "padding_mode", padding_mode, PADDING_MODES),
        align_corners=bool_param(op, "align_corners", align_corners), derivative=(0, 0))


def _grid_sample_ref(x: Array, grid: Array, *, mode: str = "bilinear",
                     padding_mode: str = "zeros", align_corners: bool = False) -> Array:
    return grid_sample_reference(x, grid, mode=mode, padding_mode=padding_mode,
                                 align_corners=align_corners)


register_op(OpDef(name="grid_sample", family=FAMILY, fn=grid_sample,
                  primitives=(grid_sample_p, grid_sample_transpose_p, grid_sample_grid_jvp_p,
                              grid_sample_grid_vjp_p, grid_sample_grid_scatter_p),
                  reference=_grid_sample_ref, operands=("x", "grid"), linear=(("x",),),
                  aliases=("grid_sample2d",)))
grid_sample2d = grid_sample
"""The catalog's earlier name of ``grid_sample`` (the same op)."""
