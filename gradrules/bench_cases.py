"""The hand-sized cases of ``gradrules bench`` (``bench``): ``BenchCase``,
one op at a realistic size beside its reference, and ``BENCH_CASES``, the
fused ops, activations, a reduction, sort, indexing, pooling, resampling,
grid_sample and conv2d (elementwise on 4M elements, rows [8192, 1024],
images [16, 64, 56, 56], tables 4096 x 1024, attention [2, 1024, 8, 64],
cross-entropy [4096, 32000], fused linear cross-entropy [2048, 512] x
[512, 32000]), and the ops whose params fix their size, which the catalog's
growing of samples cannot reach (shapes, creation, random draws, slices of
a table, windows, 3-vectors), and the LAPACK solves and qr of one matrix
(``_system_args``); ``--quick`` takes the tiny sizes (but for
creation and random draws, whose shape is a param).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax.numpy as jnp

from .testing.samples.solve import dominant


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


_ROWS = (4096, 1024)
"""The size of the ops whose params fix their output (creation, random):
the same with ``--quick``."""


def _key_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """A raw uint32 key (the random family's)."""
    return (jnp.asarray([0, 7], jnp.uint32),)


def _vector_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """A row of ``_rows_args``'s width (broadcast to 4 times as many rows)."""
    return _rows_args(rng, quick)[1:]


def _rows_of(x: Any) -> tuple[int, int]:
    """The shape [4 d, d] that ``_vector_args``'s row is broadcast to."""
    (d,) = x.shape
    return 4 * d, d


def _slice_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """The table of ``_table_args``, a block of half its rows less one (every
    other row of slice_scatter's, or dynamic_update_slice's) and a start."""
    x = _table_args(rng, quick)[0]
    n, d = x.shape
    return x, _normal(rng, n // 2 - 1, d), jnp.asarray([n // 4, 0], jnp.int32)


def _shard_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """A [4096, 1024] shard at the start of the table and 4096 ids, half of
    them inside it (the others, negative or past it, in other shards)."""
    x = _table_args(rng, quick)[0]
    n = x.shape[0]
    return x, jnp.asarray(rng.integers(-n // 2, 3 * n // 2, n), jnp.int32)


def _windows_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """1024 (--quick: 8) rows of 511 windows of size 4 at step 2 (of 1024)."""
    return (_normal(rng, 8 if quick else 1024, 511, 4),)


def _matrices_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """1024 (--quick: 4) 32 x 32 matrices."""
    return (_normal(rng, 4 if quick else 1024, 32, 32),)


def _vectors_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """Two sets of 2**18 (--quick: 64) 3-vectors."""
    (n,) = _pick(quick, (1 << 18,), (64,))
    return _normal(rng, n, 3), _normal(rng, n, 3)


def _volume_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """A [2, 16, 16, 32, 32] volume and a 3 x 3 x 3 kernel keeping its 16
    channels."""
    x = _normal(rng, *_pick(quick, (2, 16, 16, 32, 32), (1, 2, 4, 6, 6)))
    c = x.shape[1]
    return x, _normal(rng, c, c, 3, 3, 3) / (27 * c) ** 0.5


_PATCHES = (("grid_h", 14), ("grid_w", 14), ("patch_size", 16), ("channels", 3))
"""A ViT's 224 x 224 RGB images as 14 x 14 patches of 16 x 16."""


def _system_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """One 1024 x 1024 (--quick: 8 x 8) diagonally dominant matrix (the
    solve family's samples' ``dominant``) and as many right-hand sides. One
    matrix, not a stack: jaxlib 0.10.2's batched LAPACK kernels fan a stack
    out into XLA's intra-op pool and wait for it, and two such calls in
    flight deadlock a two-worker pool (README); one matrix has no batch to
    fan out."""
    (n,) = _pick(quick, (1024,), (8,))
    return jnp.asarray(dominant(rng, (n, n)), jnp.float32), _normal(rng, n, n)


def _patch_image_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """16 (--quick: 1) images of ``_PATCHES``."""
    return (_normal(rng, 1 if quick else 16, 3, 224, 224),)


def _patch_token_args(rng: np.random.Generator, quick: bool) -> tuple[Any, ...]:
    """The tokens of ``_patch_image_args``'s images: [16, 196, 768]."""
    return (_normal(rng, 1 if quick else 16, 196, 768),)


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
    BenchCase("reshape", "reshape", lambda rng, q: _table_args(rng, q)[:1],
              rebuild=lambda a: (a[0], (-1, 256))),
    BenchCase("broadcast_to", "broadcast_to", _vector_args,
              rebuild=lambda a: (a[0], _rows_of(a[0]))),
    BenchCase("broadcast_in_dim", "broadcast_in_dim", _vector_args,
              rebuild=lambda a: (a[0], _rows_of(a[0]), (1,))),
    BenchCase("full", "full", _vector_args, rebuild=lambda a: (_rows_of(a[0]), a[0])),
    BenchCase("zeros", "zeros", lambda rng, q: (), (("shape", _ROWS),), diff=()),
    BenchCase("ones", "ones", lambda rng, q: (), (("shape", _ROWS),), diff=()),
    BenchCase("arange", "arange", lambda rng, q: (),
              (("start", 0), ("stop", _ROWS[0] * _ROWS[1]), ("dtype", jnp.float32)), diff=()),
    BenchCase("uniform", "uniform", _key_args, (("shape", _ROWS),), diff=()),
    BenchCase("normal", "normal", _key_args, (("shape", _ROWS),), diff=()),
    BenchCase("exponential", "exponential", _key_args, (("shape", _ROWS),), diff=()),
    BenchCase("dropout", "dropout", lambda rng, q: _key_args(rng, q) + _table_args(rng, q)[:1],
              (("rate", 0.5),), diff=(1,)),
    BenchCase("c_embedding", "c_embedding", _shard_args),
    BenchCase("row_slice", "row_slice", _matrices_args,
              (("rows", 32), ("cols", 32), ("row_index", 5))),
    BenchCase("dynamic_slice", "dynamic_slice", lambda rng, q: _slice_args(rng, q)[::2],
              (("slice_sizes", (32, 32)),)),
    BenchCase("dynamic_update_slice", "dynamic_update_slice", _slice_args, diff=(0, 1)),
    BenchCase("slice_scatter", "slice_scatter", lambda rng, q: _slice_args(rng, q)[:2],
              (("start", 1), ("step", 2), ("end", -1)), diff=(0, 1)),
    BenchCase("tensor_fold", "tensor_fold", _windows_args,
              (("axis", -1), ("size", 4), ("step", 2), ("length", 1024))),
    BenchCase("cross", "cross", _vectors_args, diff=(0, 1)),
    BenchCase("conv3d", "conv3d", _volume_args, (("padding", 1),), diff=(0, 1)),
    BenchCase("triangular_solve", "triangular_solve", _system_args, diff=(0, 1)),
    BenchCase("solve", "solve", _system_args, diff=(0, 1)),
    BenchCase("qr", "qr", lambda rng, q: (_normal(rng, *_pick(q, (1024, 512), (8, 4))),)),
    BenchCase("patchify", "patchify", _patch_image_args, _PATCHES),
    BenchCase("unpatchify", "unpatchify", _patch_token_args, _PATCHES),
)
"""The ops ``gradrules bench`` measures at a size of their own, each in
forward, grad and Hessian-vector-product mode: a small elementwise
composition, activations, a reduction, sort, indexing, pooling and
resampling, the fused ops, the ops whose params fix their size, and the
LAPACK ops that a stack of matrices would deadlock on jaxlib 0.10.2."""
