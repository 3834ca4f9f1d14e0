"""The hand-sized cases of ``gradrules bench`` (``bench``): ``BenchCase``,
one op at a realistic size beside its reference, and ``BENCH_CASES``, the
fused ops, activations, a reduction, sort, indexing, pooling, resampling,
grid_sample and conv2d (elementwise on 4M elements, rows [8192, 1024],
images [16, 64, 56, 56], tables 4096 x 1024, attention [2, 1024, 8, 64],
cross-entropy [4096, 32000], fused linear cross-entropy [2048, 512] x
[512, 32000]); ``--quick`` takes the tiny sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax.numpy as jnp


@dataclass(frozen=True)
class BenchCase:
    """One row group of ``gradrules bench``: the op ``op`` called as
    ``op(*args, **kwargs)`` beside its registered plain jax.numpy reference,
    on ``make(rng, quick)``'s arguments (a realistic size, or a tiny one with
    ``quick``), differentiated in the arguments at positions ``diff``; of
    an op with several outputs, the one at ``output`` (values, not indices;
    None: every float output). With ``rebuild``, ``make`` gives array leaves
    and ``rebuild(leaves)`` the positional arguments (ops taking lists)."""

    name: str
    op: str
    make: Callable[[np.random.Generator, bool], tuple[Any, ...]]
    kwargs: tuple[tuple[str, Any], ...] = ()
    diff: tuple[int, ...] = (0,)
    output: int | None = None
    rebuild: Callable[[Sequence[Any]], tuple[Any, ...]] | None = None


def _normal(rng: np.random.Generator, *shape: int) -> Any:
    return jnp.asarray(rng.standard_normal(shape), jnp.float32)


def _pick(quick: bool, full: tuple[int, ...], small: tuple[int, ...]) -> tuple[int, ...]:
    return small if quick else full


def _elementwise_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    (n,) = _pick(quick, (1 << 22,), (1024,))
    return jnp.linspace(-2.0, 2.0, n, dtype=jnp.float32), jnp.linspace(0.5, 1.5, n,
                                                                      dtype=jnp.float32)


def _unary_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    (n,) = _pick(quick, (1 << 22,), (1024,))
    return (jnp.linspace(-6.0, 6.0, n, dtype=jnp.float32),)


def _table_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """A [4096, 1024] table and 4096 row indices into it."""
    n, d = _pick(quick, (4096, 1024), (64, 32))
    return _normal(rng, n, d), jnp.asarray(rng.integers(0, n, n), jnp.int32)


def _image_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    return (_normal(rng, *_pick(quick, (16, 64, 56, 56), (2, 4, 12, 12))),)


def _small_image_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """An image that upsampling by 2 brings to the size of ``_image_args``."""
    return (_normal(rng, *_pick(quick, (16, 64, 28, 28), (2, 4, 6, 6))),)


def _conv_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """An image and a 3 x 3 kernel keeping its 64 channels."""
    x = _image_args(rng, quick)[0]
    c = x.shape[1]
    return x, _normal(rng, c, c, 3, 3) / (3 * c ** 0.5)


def _grid_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """An image and a sampling grid of its size, reaching past its edges."""
    x = _image_args(rng, quick)[0]
    n, _, h, w = x.shape
    return x, jnp.asarray(rng.uniform(-1.2, 1.2, (n, h, w, 2)), jnp.float32)


def _rows_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    t, d = _pick(quick, (8192, 1024), (64, 128))
    return _normal(rng, t, d), _normal(rng, d)


def _attention_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    shape = _pick(quick, (2, 1024, 8, 64), (1, 64, 2, 16))
    return tuple(_normal(rng, *shape) for _ in range(3))


def _ce_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    t, v = _pick(quick, (4096, 32000), (64, 512))
    return _normal(rng, t, v), jnp.asarray(rng.integers(0, v, t), jnp.int32)


def _flce_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    t, h, v = _pick(quick, (2048, 512, 32000), (64, 32, 512))
    return (_normal(rng, t, h), _normal(rng, h, v) / h ** 0.5,
            jnp.asarray(rng.integers(0, v, t), jnp.int32))


BENCH_CASES = (
    BenchCase("tanh*exp(x/y)", "tanh_exp_ratio", _elementwise_args, diff=(0, 1)),
    BenchCase("sigmoid", "sigmoid", _unary_args),
    BenchCase("silu", "silu", _unary_args),
    BenchCase("gelu", "gelu", _unary_args),
    BenchCase("gelu tanh", "gelu", _unary_args, (("approximate", True),)),
    BenchCase("logsumexp", "logsumexp", lambda rng, q: _rows_args(rng, q)[:1],
              (("axis", -1),)),
    BenchCase("sort", "sort", lambda rng, q: _rows_args(rng, q)[:1], output=0),
    BenchCase("gather", "gather", _table_args, (("axis", 0),)),
    BenchCase("embedding", "embedding", lambda rng, q: _table_args(rng, q)[::-1], diff=(1,)),
    BenchCase("max_pool2d", "max_pool2d", _image_args,
              (("kernel_size", 3), ("stride", 2), ("padding", 1)), output=0),
    BenchCase("conv2d", "conv2d", _conv_args, (("padding", 1),), diff=(0, 1)),
    BenchCase("avg_pool2d", "avg_pool2d", _image_args,
              (("kernel_size", 3), ("stride", 2), ("padding", 1))),
    BenchCase("upsample2d nearest", "upsample2d", _small_image_args, (("scale_factor", 2),)),
    BenchCase("upsample2d bilinear", "upsample2d", _small_image_args,
              (("scale_factor", 2), ("method", "bilinear"))),
    BenchCase("grid_sample", "grid_sample", _grid_args, (("padding_mode", "reflection"),),
              diff=(0, 1)),
    BenchCase("softmax", "softmax", lambda rng, q: _rows_args(rng, q)[:1]),
    BenchCase("log_softmax", "log_softmax", lambda rng, q: _rows_args(rng, q)[:1]),
    BenchCase("rms_norm", "rms_norm", _rows_args, diff=(0, 1)),
    BenchCase("layer_norm", "layer_norm", _rows_args, diff=(0, 1)),
    BenchCase("attention", "attention", _attention_args, diff=(0, 1, 2)),
    BenchCase("attention causal", "attention", _attention_args, (("causal", True),),
              diff=(0, 1, 2)),
    BenchCase("cross_entropy", "cross_entropy", _ce_args),
    BenchCase("nll_loss", "nll_loss", _ce_args),
    BenchCase("fused_linear_cross_entropy", "fused_linear_cross_entropy", _flce_args,
              diff=(0, 1)),
)
"""The ops ``gradrules bench`` measures, each in forward, grad and
Hessian-vector-product mode: a small elementwise composition, activations,
a reduction, sort, indexing, pooling and resampling, and the fused ops."""
