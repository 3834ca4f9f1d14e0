"""Separable linear maps of the last ``ndim`` axes: ``out = A x B^T`` in 2-D,
with A and B 1-D maps of the height and width axes (average and adaptive
pooling, upsampling), and the same with one 1-D map per axis in 3-D
(avg_pool3d).

Each 1-D map is applied by its structure, never as a dense matrix:

- ``Window``: ``out[i] = c * sum_{t < k} x[i s - p + t]`` (zero outside the
  axis), a 1-D ``reduce_window`` sum (average pooling);
- ``Dilated``: its transpose, the cotangent spread back over its windows: a
  stride-1 window sum over the input dilated by s and padded (as JAX's own
  transpose of a reduce-window sum);
- ``Repeat``: ``out[i] = c * x[i // r]``, a broadcast (nearest upsampling by
  an integer factor; the transpose of a ``Window`` with ``k = s`` that tiles
  the axis exactly, and back);
- ``Taps``: anything else, ``out[i] = sum_r w_r[i] x[idx_r[i]]``, a few
  gathers of rows with static indices (bilinear, nearest by other factors,
  adaptive pooling with uneven windows); its transpose is the ``Taps`` of
  the transposed matrix.

``separable_primitive`` makes a pair of primitives, the map and its
transpose (``<name>_transpose``, which takes the map's params and the input
size), each the other's transpose; ``.matrix()`` gives each 1-D map as a
dense numpy matrix for tests and docs.
"""

from __future__ import annotations

from collections.abc import Callable
import math
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Union

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .._jax import Primitive, ShapedArray
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive

Array = jax.Array


def _along(x: Array, axis: int, values: np.ndarray) -> Array:
    """A per-position vector along ``axis`` of x, in x's dtype, broadcastable."""
    return jnp.asarray(values, x.dtype).reshape((-1,) + (1,) * (x.ndim - 1 - axis))


def _scale(y: Array, c: float) -> Array:
    """``c y``; a division when c is 1 / integer (as the references divide)."""
    if c == 1.0:
        return y
    k = round(1.0 / c)
    if k > 0 and 1.0 / k == c:
        return y / jnp.asarray(k, y.dtype)
    return y * jnp.asarray(c, y.dtype)


def _window_sum(x: Array, windows: dict[int, tuple[int, int, tuple[int, int], int]]) -> Array:
    """Sums of k elements at stride s along each ``axis: (k, s, pad,
    dilation)`` of ``windows`` (one ``reduce_window``), over x zero padded by
    ``pad`` with ``dilation - 1`` zeros between its elements."""
    def per_axis(i: int, default: Any) -> tuple[Any, ...]:
        return tuple(windows[d][i] if d in windows else default for d in range(x.ndim))
    return lax.reduce_window(x, jnp.zeros((), x.dtype), lax.add, per_axis(0, 1), per_axis(1, 1),
                             per_axis(2, (0, 0)), base_dilation=per_axis(3, 1))


@dataclass(frozen=True)
class _Windows:
    """The fields of a window sum and of its transpose: an axis of n_in to
    one of n_out, windows of k at stride s from -p, scaled by c."""

    n_in: int
    n_out: int
    k: int
    s: int
    p: int
    c: float


@dataclass(frozen=True)
class Window(_Windows):
    """``out[i] = c * sum_{t < k} x[i s - p + t]``, i < n_out (zero outside)."""

    def trimmed(self, x: Array, axis: int
                ) -> tuple[Array, tuple[int, int, tuple[int, int], int]]:
        """x without the trailing elements that no window reaches, and the
        (k, s, pad, dilation) of the window sum along ``axis``."""
        hi = (self.n_out - 1) * self.s + self.k - self.n_in - self.p
        if hi < 0:
            x = lax.slice_in_dim(x, 0, self.n_in + hi, axis=axis)
        return x, (self.k, self.s, (self.p, max(hi, 0)), 1)

    @property
    def blocks(self) -> bool:
        """Whether the windows tile the axis exactly (k = s, no padding)."""
        return self.k == self.s and self.p == 0 and self.n_in == self.n_out * self.k

    def apply(self, x: Array, axis: int) -> Array:
        return _windows(x, {axis: self})

    def transpose(self) -> AxisMap:
        if self.blocks:
            return Repeat(self.n_out, self.k, self.c)
        return Dilated(self.n_out, self.n_in, self.k, self.s, self.p, self.c)

    def matrix(self) -> np.ndarray:
        m = np.zeros((self.n_out, self.n_in))
        for i in range(self.n_out):
            lo = i * self.s - self.p
            m[i, max(lo, 0):min(lo + self.k, self.n_in)] = self.c
        return m


@dataclass(frozen=True)
class Dilated(_Windows):
    """The transpose of ``Window(n_out, n_in, k, s, p, c)``: each input
    element spread over the k outputs of its window."""

    def window(self) -> tuple[int, int, tuple[int, int], int]:
        """The stride-1 window sum over the input dilated by s (s - 1 zeros
        between elements) and zero padded so that each element starts its
        window's k - 1 before the first: (k, 1, pad, s)."""
        return (self.k, 1, (self.k - 1 - self.p,
                            self.n_out + self.p - (self.n_in - 1) * self.s - 1), self.s)

    def apply(self, x: Array, axis: int) -> Array:
        return _spread(x, {axis: self})

    def transpose(self) -> AxisMap:
        return Window(self.n_out, self.n_in, self.k, self.s, self.p, self.c)

    def matrix(self) -> np.ndarray:
        return self.transpose().matrix().T


def _windows(x: Array, maps: dict[int, Window]) -> Array:
    """``Window`` maps along several axes at once: where every window tiles
    its axis exactly, a reshape and one sum (which XLA fuses with what
    produces x); else one ``reduce_window``."""
    c = math.prod(m.c for m in maps.values())
    if all(m.blocks for m in maps.values()):
        shape: list[int] = []
        for d, n in enumerate(x.shape):
            shape += [maps[d].n_out, maps[d].k] if d in maps else [n]
        axes = tuple(d + 1 + sum(e < d for e in maps) for d in sorted(maps))
        return _scale(jnp.sum(x.reshape(shape), axes), c)
    windows = {}
    for d in sorted(maps):
        x, windows[d] = maps[d].trimmed(x, d)
    return _scale(_window_sum(x, windows), c)


def _spread(x: Array, maps: dict[int, Dilated]) -> Array:
    """``Dilated`` maps along several axes at once: one window sum over the
    dilated, padded input (as JAX's own transpose of a reduce-window sum)."""
    for m in maps.values():      # scaled on the smaller side, before the spread
        x = _scale(x, m.c)
    return _window_sum(x, {d: m.window() for d, m in maps.items()})


@dataclass(frozen=True)
class Repeat:
    """``out[i] = c * x[i // r]``, n_out = n_in * r."""

    n_in: int
    r: int
    c: float

    def apply(self, x: Array, axis: int) -> Array:
        shape = x.shape[:axis + 1] + (self.r,) + x.shape[axis + 1:]
        dims = tuple(d if d <= axis else d + 1 for d in range(x.ndim))
        y = lax.broadcast_in_dim(_scale(x, self.c), shape, dims)
        return y.reshape(x.shape[:axis] + (self.n_in * self.r,) + x.shape[axis + 1:])

    def transpose(self) -> AxisMap:
        return Window(self.n_in * self.r, self.n_in, self.r, self.r, 0, self.c)

    def matrix(self) -> np.ndarray:
        return np.kron(np.eye(self.n_in), np.ones((self.r, 1))) * self.c


@dataclass(frozen=True, eq=False)
class Taps:
    """``out[i] = sum_r weight[r, i] x[index[r, i]]``: the nonzeros of each
    row of a matrix, padded with zero weights."""

    n_in: int
    index: np.ndarray       # [R, n_out] int
    weight: np.ndarray      # [R, n_out] float

    @classmethod
    def of(cls, m: np.ndarray) -> Taps:
        nz = m != 0
        taps = max(int(nz.sum(1).max(initial=0)), 1)
        index = np.zeros((taps, m.shape[0]), np.int32)
        weight = np.zeros((taps, m.shape[0]))
        for i, row in enumerate(nz):
            cols = np.flatnonzero(row)
            index[:len(cols), i] = cols
            weight[:len(cols), i] = m[i, cols]
        return cls(m.shape[1], index, weight)

    def apply(self, x: Array, axis: int) -> Array:
        out = None
        for index, weight in zip(self.index, self.weight):
            y = jnp.take(x, index, axis=axis, mode="clip")
            if not np.all(weight == 1.0):
                y = y * _along(x, axis, weight)
            out = y if out is None else out + y
        assert out is not None
        return out

    def transpose(self) -> AxisMap:
        return Taps.of(self.matrix().T)

    def matrix(self) -> np.ndarray:
        m = np.zeros((self.index.shape[1], self.n_in))
        rows = np.broadcast_to(np.arange(self.index.shape[1]), self.index.shape)
        np.add.at(m, (rows, self.index), self.weight)
        return m


AxisMap = Union[Window, Dilated, Repeat, Taps]
Maps = Callable[..., tuple[AxisMap, ...]]


def out_size(m: AxisMap) -> int:
    """The length of the axis a 1-D map gives."""
    if isinstance(m, Repeat):
        return m.n_in * m.r
    if isinstance(m, Taps):
        return m.index.shape[1]
    return m.n_out


def apply_maps(maps: tuple[AxisMap, ...], x: Array) -> Array:
    """``A x B^T`` (2-D): map i along axis ``x.ndim - len(maps) + i``; window
    sums (or spreads) along every axis as one ``reduce_window``, without the
    intermediates."""
    axes = {x.ndim - len(maps) + i: m for i, m in enumerate(maps)}
    if all(isinstance(m, Window) for m in maps):
        return _windows(x, axes)  # type: ignore[arg-type]
    if all(isinstance(m, Dilated) for m in maps):
        return _spread(x, axes)  # type: ignore[arg-type]
    for d, m in axes.items():
        x = m.apply(x, d)
    return x


SEPARABLE: dict[Primitive, tuple[Primitive, Maps, int]] = {}
"""primitive -> (its transpose primitive, its maps(*sizes, **params), the
number of trailing axes it maps); the transpose's maps are the maps of its
``in_size``, transposed."""


def _maps_infer_meta(name: str, maps: Maps, ndim: int, x: Any, **params: Any) -> ShapedArray:
    check_dtype(name, "x", x.dtype, "float")
    if len(x.shape) < ndim:
        raise ValueError(f"{op_name(name)}: x must have rank >= {ndim}, got shape {x.shape}")
    m = maps(*x.shape[len(x.shape) - ndim:], **params)
    return ShapedArray(tuple(x.shape[:len(x.shape) - ndim]) + tuple(out_size(a) for a in m),
                       x.dtype)


def _transposed(maps: Maps, *, in_size: tuple[int, ...], **params: Any
                ) -> tuple[AxisMap, ...]:
    return tuple(m.transpose() for m in maps(*in_size, **params))


def _transpose_infer_meta(name: str, maps: Maps, ct: Any, *, in_size: tuple[int, ...],
                          **params: Any) -> ShapedArray:
    want = tuple(out_size(m) for m in maps(*in_size, **params))
    lead = len(ct.shape) - len(want)
    if lead < 0 or tuple(ct.shape[lead:]) != want:
        raise ValueError(f"{op_name(name)}: ct with shape {tuple(ct.shape)} must end in {want}, "
                         f"the output size of an input of size {in_size}")
    return ShapedArray(tuple(ct.shape[:lead]) + tuple(in_size), ct.dtype)


def separable_primitive(name: str, *, family: str, params: tuple[str, ...],
                        maps: Maps, ndim: int = 2) -> tuple[Primitive, Primitive]:
    """The primitives ``out = A x B^T`` (``A, B = maps(h, w, **params)``,
    cached; with ``ndim`` = 3, one map per axis of the last three) and its
    transpose ``<name>_transpose(ct, **params, in_size)``, ``A^T ct B``."""
    maps = lru_cache(maxsize=128)(maps)

    def impl(x: Array, **kw: Any) -> Array:
        return apply_maps(maps(*x.shape[x.ndim - ndim:], **kw), x)

    def impl_transpose(ct: Array, **kw: Any) -> Array:
        return apply_maps(_transposed(maps, **kw), ct)

    prim = define_primitive(name, family=family, operands=("x",), params=params,
                            infer_meta=partial(_maps_infer_meta, name, maps, ndim), impl=impl)
    transpose_name = f"{name}_transpose"
    prim_t = define_primitive(transpose_name, family=family, operands=("ct",),
                              params=params + ("in_size",),
                              infer_meta=partial(_transpose_infer_meta, transpose_name, maps),
                              impl=impl_transpose)
    SEPARABLE[prim] = (prim_t, maps, ndim)
    return prim, prim_t
