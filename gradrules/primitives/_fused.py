"""Shared pieces of the fused ops of section 6 (softmax, log_softmax,
cross_entropy, fused_linear_cross_entropy, layer_norm, rms_norm, silu_gated).

A fused op is three primitives (DESIGN.md): ``foo_p`` (the forward, with its
residuals as extra outputs), ``foo_jvp_p`` (the tangent map) and
``foo_vjp_p`` (the fused backward). Each takes a ``kernel`` param that the
public function reads from ``gradrules.config``; only the XLA lowering exists
so far, so ``"pallas"`` and ``"interpret"`` raise ``NotImplementedError``
when the primitive is lowered.

Also here: the accumulation dtype (float32 for 16-bit input) and the
validation of the numeric params these ops share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .._jax import ShapedArray
from ..core.config import config, validate_kernel
from ..core.meta import (check_dtype, choice_param, int_param, normalize_axis,  # noqa: F401
                         number_param, op_name)

Array = jax.Array


def kernel_param(op: str) -> str:
    """The ``kernel`` param of a fused primitive: ``gradrules.config.kernel``."""
    return validate_kernel(op_name(op), config.kernel)


def xla_lowering(op: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` as the lowering of a primitive with a ``kernel`` param: the XLA
    reference for ``"auto"``/``"xla"``; no Pallas kernel exists yet."""
    def lowering(*args: Any, kernel: str, **params: Any) -> Any:
        if kernel in ("pallas", "interpret"):
            raise NotImplementedError(
                f"{op_name(op)}: kernel={kernel!r} has no Pallas kernel yet; use "
                "kernel='auto' or 'xla' (gradrules.config.using(kernel='xla'))")
        return impl(*args, **params)
    lowering.__name__ = f"_{op}_lowering"
    lowering.__doc__ = impl.__doc__
    return lowering


def matching_meta(op: str, names: tuple[str, ...]) -> Callable[..., ShapedArray]:
    """infer_meta of a map of operands of one float dtype and one shape (the
    output's); an ``axis`` param must fit that shape."""
    def infer_meta(*avals: Any, **params: Any) -> ShapedArray:
        first = avals[0]
        for n, a in zip(names, avals):
            check_dtype(op, n, a.dtype, "float")
            if a.dtype != first.dtype or a.shape != first.shape:
                raise ValueError(f"{op_name(op)}: {n} ({a.dtype}{list(a.shape)}) must match "
                                 f"{names[0]} ({first.dtype}{list(first.shape)})")
        if "axis" in params:
            normalize_axis(op, params["axis"], len(first.shape))
        return ShapedArray(first.shape, first.dtype)
    infer_meta.__name__ = f"_{op}_infer_meta"
    return infer_meta


def check_like(op: str, name: str, aval: Any, shape: tuple[int, ...], dtype: Any) -> None:
    """A residual, tangent or cotangent operand must have exactly this shape and dtype."""
    if tuple(aval.shape) != tuple(shape) or np.dtype(aval.dtype) != np.dtype(dtype):
        raise ValueError(f"{op_name(op)}: {name} must be {np.dtype(dtype)}{list(shape)}, got "
                         f"{aval.dtype}{list(aval.shape)}")


def acc_dtype(dtype: Any) -> np.dtype:
    """The dtype these ops accumulate in: float32 for float16/bfloat16 input,
    the input's own dtype for float32 and float64."""
    return np.dtype(jnp.promote_types(dtype, np.float32))


def upcast(x: Array) -> Array:
    """``x`` in its accumulation dtype (a lowering helper, plain jax.numpy)."""
    return x.astype(acc_dtype(x.dtype))


def eps_param(op: str, eps: Any) -> float:
    """``eps`` must be a finite Python number > 0."""
    return number_param(op, "eps", eps, gt=0.0)


def float_array(op: str, name: str, x: Any) -> Any:
    """An array argument that must be floating (TypeError naming it otherwise)."""
    from ._elementwise import as_array
    x = as_array(op, name, x)
    x = jnp.asarray(x) if isinstance(x, (bool, int, float, np.generic)) else x
    check_dtype(op, name, jnp.result_type(x), "float")
    return x


def sum_to(x: Array, shape: tuple[int, ...]) -> Array:
    """Sum ``x`` down to ``shape``: its extra leading axes, and the axes where
    ``shape`` has 1 and x does not (the transpose of broadcasting; a lowering
    helper, plain jax.numpy)."""
    shape = tuple(shape)
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + i] != 1)
    return jnp.sum(x, axes, keepdims=True).reshape(shape) if axes else x


def pad_axis(x: Array, axis: int, size: int, value: Any = 0) -> Array:
    """``x`` padded at the end of ``axis`` with ``value`` up to ``size``
    entries (unchanged when it has that many already; a lowering helper, plain
    jax.numpy)."""
    extra = size - x.shape[axis]
    if extra <= 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return jnp.pad(x, widths, constant_values=value)
