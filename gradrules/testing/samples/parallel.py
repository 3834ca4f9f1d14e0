"""Samples of the parallel family. vocab_parallel_cross_entropy is called
(``over_vocab_shards``) inside ``jax.shard_map`` over a mesh axis of as many
local devices as divide the vocabulary (up to 8), on the whole logits, and
checked against the unsharded cross entropy: on one device a mesh of one
shard; tests/test_parallel.py runs the checker on 8 simulated devices. The
samples: ignore_index on some tokens and on every token, label smoothing,
-inf logits (a masked class; a token's row all -inf on one shard), a token
axis of rank 2, every reduction."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import numpy as np

import jax
from jax.sharding import AxisType, PartitionSpec

from . import OpInfo, Sample, floats
from .loss import IGNORE

AXIS = "vocab"


def over_vocab_shards(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(logits, labels, **kwargs)`` called as ``fn(logits_shard, labels,
    axis_name="vocab", **kwargs)`` inside a jitted ``jax.shard_map`` (eager,
    each primitive would compile a shard_map of its own): the logits split
    over their last axis across ``n`` local devices (the most, up to 8, that
    divide it), the labels and the result replicated. One jitted function
    per (n, rank, kwargs), so that calls and their transforms reuse its
    traces and compiled programs."""
    def call(logits: Any, labels: Any, **kwargs: Any) -> Any:
        vocab = np.shape(logits)[-1]
        n = max(d for d in range(1, min(jax.device_count(), 8, vocab) + 1) if vocab % d == 0)
        return _on_shards(fn, n, np.ndim(logits), tuple(sorted(kwargs.items())))(logits, labels)
    call.__name__ = f"{getattr(fn, '__name__', 'fn')}_over_vocab_shards"
    return call


@lru_cache(maxsize=None)
def _on_shards(fn: Callable[..., Any], n: int, ndim: int, kwargs: tuple[tuple[str, Any], ...]
               ) -> Callable[..., Any]:
    mesh = jax.make_mesh((n,), (AXIS,), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])
    spec = PartitionSpec(*([None] * (ndim - 1)), AXIS)
    return jax.jit(jax.shard_map(partial(fn, axis_name=AXIS, **dict(kwargs)), mesh=mesh,
                                 in_specs=(spec, PartitionSpec()), out_specs=PartitionSpec()))


def _vocab_parallel_cross_entropy(rng: np.random.Generator) -> list[Sample]:
    masked = floats(rng, (2, 3, 8))
    masked[0, 1, 4:] = masked[1, 0, 2] = -np.inf
    labels = np.array([[0, 1, 7], [3, IGNORE, 6]], np.int32)
    return [Sample((floats(rng, (6, 8)), np.array([0, 7, 3, IGNORE, 4, 5], np.int32)),
                   {"label_smoothing": 0.1}),
            Sample((masked, labels), {"reduction": "none"},
                   desc="float64[2, 3, 8] with -inf logits (token [0, 1] -inf on half the "
                        "vocabulary), reduction='none'"),
            Sample((floats(rng, (4, 8)), np.array([2, 5, 2, 1], np.int32)),
                   {"ignore_index": 2, "reduction": "sum"}),
            Sample((floats(rng, (2, 4)), np.full((2,), IGNORE, np.int32)),
                   desc="ignore_index on every token")]


OPINFOS = [OpInfo("vocab_parallel_cross_entropy", _vocab_parallel_cross_entropy,
                  call=over_vocab_shards)]
