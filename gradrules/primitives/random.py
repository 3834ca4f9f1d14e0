"""Primitives of the random family: dropout(key, x) and the samplers
uniform, normal and exponential(key, shape).

Randomness comes from an explicit key: a raw ``uint32[2]`` threefry key
(``jax.random.PRNGKey``) or a typed threefry key (``jax.random.key``), whose
data is used. The values are exactly those of ``jax.random`` with that key.

At the primitive level the key may carry leading axes (``uint32[*K, 2]``),
each key drawing the values of one slice of the output (the leading ``K``
axes of x for dropout, new leading axes for the samplers). That is how
``vmap`` over keys binds the primitive once: a batched key gives each example
its own draws, an unbatched one is broadcast so every example draws alike,
as a Python loop would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.args import as_array, dtype_param, float_array, number_param, shape_param
from ..core.meta import check_dtype, op_name
from ..core.primitive import define_primitive
from ..core.registry import OpDef, register_op

Array = jax.Array
ArrayLike = jax.typing.ArrayLike
FAMILY = "random"


def _check_key(op: str, key: Any) -> tuple[int, ...]:
    """The key axes of a key aval (its shape without the trailing 2)."""
    if np.dtype(key.dtype) != np.uint32 or not key.shape or key.shape[-1] != 2:
        raise TypeError(f"{op_name(op)}: key must be a uint32[..., 2] threefry key (as "
                        f"jax.random.PRNGKey makes), got {key.dtype}{list(key.shape)}")
    return tuple(key.shape[:-1])


def key_arg(op: str, key: Any) -> Any:
    """A single key: raw ``uint32[2]``, or the data of a typed threefry key."""
    if isinstance(key, (jax.Array, np.ndarray)) or hasattr(key, "aval"):
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
    else:
        key = as_array(op, "key", key)
    if np.shape(key) != (2,) or jnp.result_type(key) != np.uint32:
        raise TypeError(f"{op_name(op)}: key must be one threefry key (uint32[2], as "
                        f"jax.random.PRNGKey(seed) makes), got "
                        f"{jnp.result_type(key)}{list(np.shape(key))}")
    return key


def _per_key(fn: Callable[..., Array], key_ndim: int) -> Callable[..., Array]:
    """``fn(key, *args)`` mapped over the leading key axes."""
    for _ in range(key_ndim):
        fn = jax.vmap(fn)
    return fn


# ----------------------------------------------------------------- dropout
def _dropout_meta(key: Any, x: Any, *, rate: float) -> ShapedArray:
    axes = _check_key("dropout", key)
    check_dtype("dropout", "x", x.dtype, "float")
    if tuple(x.shape[:len(axes)]) != axes:
        raise ValueError(f"{op_name('dropout')}: the key axes {axes} must lead the axes of x "
                         f"with shape {tuple(x.shape)}")
    return ShapedArray(x.shape, x.dtype)


def keep_mask(key: Array, shape: Sequence[int], rate: float) -> Array:
    """The entries dropout keeps: Bernoulli(1 - rate) draws of ``jax.random``."""
    return jax.random.bernoulli(key, 1.0 - rate, tuple(shape))


def _dropout_one(key: Array, x: Array, rate: float) -> Array:
    scale = 0.0 if rate == 1.0 else 1.0 / (1.0 - rate)
    return jnp.where(keep_mask(key, x.shape, rate), x * jnp.asarray(scale, x.dtype),
                     jnp.zeros((), x.dtype))


def _dropout_impl(key: Array, x: Array, *, rate: float) -> Array:
    return _per_key(partial(_dropout_one, rate=rate), key.ndim - 1)(key, x)


dropout_p = define_primitive("dropout", family=FAMILY, operands=("key", "x"), params=("rate",),
                             infer_meta=_dropout_meta, impl=_dropout_impl)


def dropout(key: ArrayLike, x: ArrayLike, *, rate: float) -> Array:
    """Inverted dropout: each entry of x is kept with probability ``1 - rate``
    and scaled by ``1 / (1 - rate)``, else set to 0 (``rate=1``: all 0); the
    mask is ``jax.random.bernoulli(key, 1 - rate, x.shape)``.

    Linear in x for a fixed key: the tangent is dropout(key, t) and the
    transpose dropout(key, ct), the same mask both times (the key takes no
    tangent).
    """
    op = "dropout"
    rate = number_param(op, "rate", rate, lo=0.0, hi=1.0)
    return dropout_p.bind(key_arg(op, key), float_array(op, "x", x), rate=rate)


def _dropout_reference(key: ArrayLike, x: ArrayLike, *, rate: float) -> Array:
    """Inverted dropout written out: x scaled by 1 / (1 - rate) where
    ``jax.random.bernoulli(key, 1 - rate, x.shape)`` is True, else 0."""
    x = jnp.asarray(x)
    if rate == 1.0:
        return jnp.zeros_like(x)
    keep = jax.random.bernoulli(jnp.asarray(key), 1.0 - rate, x.shape)
    return jnp.where(keep, x * (1.0 / (1.0 - rate)), jnp.zeros((), x.dtype))


register_op(OpDef(name="dropout", family=FAMILY, fn=dropout, primitives=(dropout_p,),
                  reference=_dropout_reference, operands=("key", "x"),
                  linear=(("x",),), nondiff=("key",)))


# ---------------------------------------------------------------- samplers
def _sampler_meta(op: str, key: Any, *, shape: tuple[int, ...], dtype: np.dtype,
                  **dist: float) -> ShapedArray:
    """infer_meta of a sampler: the key axes, then ``shape``."""
    return ShapedArray(_check_key(op, key) + tuple(shape), dtype)


def _sampler_impl(one: Callable[..., Array], key: Array, *, shape: tuple[int, ...],
                  dtype: np.dtype, **dist: float) -> Array:
    """``one(key, shape, dtype, **dist)`` mapped over the key axes of the key."""
    return _per_key(partial(one, shape=shape, dtype=dtype, **dist), key.ndim - 1)(key)


def _sampler_args(op: str, key: Any, shape: Any, dtype: Any) -> tuple[Any, tuple[int, ...],
                                                                       np.dtype]:
    shape = shape_param(op, shape)
    dtype = dtype_param(op, "dtype", dtype, "float")
    return key_arg(op, key), shape, dtype


# ----------------------------------------------------------------- uniform
def _uniform_one(key: Array, shape: tuple[int, ...], dtype: Any, *, minval: float,
                 maxval: float) -> Array:
    return jax.random.uniform(key, shape, dtype, minval, maxval)


uniform_p = define_primitive("uniform", family=FAMILY, operands=("key",),
                             params=("shape", "dtype", "minval", "maxval"),
                             infer_meta=partial(_sampler_meta, "uniform"),
                             impl=partial(_sampler_impl, _uniform_one))


def uniform(key: ArrayLike, shape: Sequence[int] = (), *, dtype: Any = jnp.float32,
            minval: float = 0.0, maxval: float = 1.0) -> Array:
    """Uniform draws on ``[minval, maxval)``, ``jax.random.uniform``'s values.
    The derivative is zero (the key takes no tangent, the bounds are static)."""
    key, shape, dtype = _sampler_args("uniform", key, shape, dtype)
    lo = number_param("uniform", "minval", minval)
    hi = number_param("uniform", "maxval", maxval)
    if not lo < hi:
        raise ValueError(f"{op_name('uniform')}: minval={minval!r} must be < maxval={maxval!r}")
    return uniform_p.bind(key, shape=shape, dtype=dtype, minval=lo, maxval=hi)


def _uniform_reference(key: ArrayLike, shape: Sequence[int] = (), *, dtype: Any = jnp.float32,
                       minval: float = 0.0, maxval: float = 1.0) -> Array:
    return jax.random.uniform(jnp.asarray(key), tuple(shape), dtype, minval, maxval)


register_op(OpDef(name="uniform", family=FAMILY, fn=uniform, primitives=(uniform_p,),
                  reference=_uniform_reference, operands=("key",), nondiff=("key",)))


# ------------------------------------------------------------------ normal
def _normal_one(key: Array, shape: tuple[int, ...], dtype: Any, *, mean: float,
                std: float) -> Array:
    return jax.random.normal(key, shape, dtype) * jnp.asarray(std, dtype) + jnp.asarray(mean,
                                                                                         dtype)


normal_p = define_primitive("normal", family=FAMILY, operands=("key",),
                            params=("shape", "dtype", "mean", "std"),
                            infer_meta=partial(_sampler_meta, "normal"),
                            impl=partial(_sampler_impl, _normal_one))


def normal(key: ArrayLike, shape: Sequence[int] = (), *, dtype: Any = jnp.float32,
           mean: float = 0.0, std: float = 1.0) -> Array:
    """Gaussian draws ``mean + std * jax.random.normal(key, shape)``. The
    derivative is zero."""
    key, shape, dtype = _sampler_args("normal", key, shape, dtype)
    return normal_p.bind(key, shape=shape, dtype=dtype, mean=number_param("normal", "mean", mean),
                         std=number_param("normal", "std", std, lo=0.0))


def _normal_reference(key: ArrayLike, shape: Sequence[int] = (), *, dtype: Any = jnp.float32,
                      mean: float = 0.0, std: float = 1.0) -> Array:
    return mean + std * jax.random.normal(jnp.asarray(key), tuple(shape), dtype)


register_op(OpDef(name="normal", family=FAMILY, fn=normal, primitives=(normal_p,),
                  reference=_normal_reference, operands=("key",), nondiff=("key",)))


# ------------------------------------------------------------- exponential
def _exponential_one(key: Array, shape: tuple[int, ...], dtype: Any, *, lam: float) -> Array:
    return jax.random.exponential(key, shape, dtype) / jnp.asarray(lam, dtype)


exponential_p = define_primitive("exponential", family=FAMILY, operands=("key",),
                                 params=("shape", "dtype", "lam"),
                                 infer_meta=partial(_sampler_meta, "exponential"),
                                 impl=partial(_sampler_impl, _exponential_one))


def exponential(key: ArrayLike, shape: Sequence[int] = (), *, dtype: Any = jnp.float32,
                lam: float = 1.0) -> Array:
    """Exponential draws of rate ``lam`` (mean ``1 / lam``, Paddle's
    exponential_): ``jax.random.exponential(key, shape) / lam``. The
    derivative is zero."""
    key, shape, dtype = _sampler_args("exponential", key, shape, dtype)
    lam = number_param("exponential", "lam", lam)
    if not lam > 0:
        raise ValueError(f"{op_name('exponential')}: lam must be > 0, got {lam!r}")
    return exponential_p.bind(key, shape=shape, dtype=dtype, lam=lam)


def _exponential_reference(key: ArrayLike, shape: Sequence[int] = (), *,
                           dtype: Any = jnp.float32, lam: float = 1.0) -> Array:
    return jax.random.exponential(jnp.asarray(key), tuple(shape), dtype) / lam


register_op(OpDef(name="exponential", family=FAMILY, fn=exponential,
                  primitives=(exponential_p,), reference=_exponential_reference,
                  operands=("key",), nondiff=("key",)))
