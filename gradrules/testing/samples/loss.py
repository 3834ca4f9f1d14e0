"""Samples of the loss family: ignore_index on some and on every token, label
smoothing, z-loss, -inf logits, every reduction, class weights for nll_loss,
a token axis of rank 2 for fused_linear_cross_entropy, probability and
one-hot labels for softmax_cross_entropy (-inf logits: tests/test_loss.py). ``KERNEL_CASES``:
the cross_entropy calls of the Pallas kernel tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import OpInfo, Sample, floats

IGNORE = -100


def _labels(rng: np.random.Generator, shape: tuple[int, ...], classes: int,
            ignored: float = 0.25) -> np.ndarray:
    labels = rng.integers(0, classes, shape).astype(np.int32)
    labels[rng.uniform(size=shape) < ignored] = IGNORE
    return labels


def _log_probs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = floats(rng, shape)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _cross_entropy(rng: np.random.Generator) -> list[Sample]:
    masked = floats(rng, (2, 3, 4))
    labels = np.array([[0, 1, 2], [3, IGNORE, 1]], np.int32)
    masked[0, 0, 3] = masked[1, 2, 0] = masked[1, 1, :] = -np.inf
    return [Sample((floats(rng, (4, 5)), np.array([2, 3, 2, 4], np.int32)),
                   {"ignore_index": 2, "label_smoothing": 0.1}),
            Sample((masked, labels), {"reduction": "none", "z_loss": 0.1},
                   desc="float64[2, 3, 4] with -inf logits, an ignored row all -inf, "
                        "reduction='none', z_loss=0.1"),
            Sample((floats(rng, (2, 3)), np.full((2,), IGNORE, np.int32)),
                   desc="ignore_index on every token")]


def _nll_loss(rng: np.random.Generator) -> list[Sample]:
    weight = rng.uniform(0.5, 2.0, (4,))
    return [Sample((_log_probs(rng, (4, 5)), np.array([0, 3, IGNORE, 4], np.int32))),
            Sample((_log_probs(rng, (2, 3, 4)), _labels(rng, (2, 3), 4)),
                   {"weight": weight, "reduction": "sum"}),
            Sample((_log_probs(rng, (3, 4)), np.array([1, 0, 3], np.int32)),
                   {"weight": weight, "ignore_index": 1}),
            Sample((_log_probs(rng, (2, 3)), np.full((2,), IGNORE, np.int32)),
                   {"reduction": "none"}, desc="ignore_index on every token")]


def _probs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _softmax_cross_entropy(rng: np.random.Generator) -> list[Sample]:
    """Probability labels on a leading batch of rank 2, one-hot labels with
    large logits (30 apart), a single class."""
    big = floats(rng, (3, 4)) * 15.0
    return [Sample((floats(rng, (2, 2, 3)), _probs(rng, (2, 2, 3)))),
            Sample((big, np.eye(4)[[0, 3, 1]]), desc="float64[3, 4] logits in [-30, 30), "
                   "one-hot labels"),
            Sample((floats(rng, (2, 1)), _probs(rng, (2, 1))))]


def _flce(rng: np.random.Generator) -> list[Sample]:
    return [Sample((floats(rng, (4, 2)), floats(rng, (2, 5)),
                    np.array([0, 4, IGNORE, 3], np.int32))),
            Sample((floats(rng, (2, 2, 3)), floats(rng, (3, 4)), _labels(rng, (2, 2), 4)),
                   {"reduction": "none", "label_smoothing": 0.1, "z_loss": 0.1}),
            Sample((floats(rng, (2, 3)), floats(rng, (3, 4)), np.full((2,), IGNORE, np.int32)),
                   {"reduction": "sum"}, desc="ignore_index on every token")]


OPINFOS = [OpInfo("cross_entropy", _cross_entropy),
           OpInfo("nll_loss", _nll_loss),
           OpInfo("fused_linear_cross_entropy", _flce),
           OpInfo("softmax_cross_entropy", _softmax_cross_entropy)]


@dataclass(frozen=True)
class KernelCase:
    """A call of cross_entropy for the kernel tests (interpret mode against
    the XLA lowering, and the CUDA lowering): logits of ``shape`` (a quarter
    of the tokens ignored), the keyword arguments ``kwargs`` and the kernels'
    ``blocks`` (rows, vocab; None: the defaults). ``minus_inf``: some
    logits off the labels are ``-inf`` (masked classes; only without label
    smoothing, which would make the loss infinite)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    kwargs: tuple[tuple[str, Any], ...]
    blocks: tuple[int, int] | None
    minus_inf: bool = False

    def arrays(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(logits, labels)``: float64 logits in [-4, 4) and int32 labels."""
        logits = floats(rng, self.shape, -4.0, 4.0)
        labels = _labels(rng, self.shape[:-1], self.shape[-1])
        if self.minus_inf:
            off = rng.uniform(size=self.shape) < 0.05
            np.put_along_axis(off, np.clip(labels, 0, None)[..., None], False, -1)
            logits[off] = -np.inf
        return logits, labels


KERNEL_CASES = [
    KernelCase("vocab-5000-smoothing-zloss-f32", (2, 5, 5000), "float32",
               (("label_smoothing", 0.1), ("z_loss", 1e-3)), (4, 1024)),
    KernelCase("vocab-5000-smoothing-zloss-bf16", (2, 5, 5000), "bfloat16",
               (("label_smoothing", 0.1), ("z_loss", 1e-3), ("reduction", "sum")), (2, 2048)),
    KernelCase("vocab-1100-minus-inf-none-f32", (7, 1100), "float32",
               (("reduction", "none"),), None, minus_inf=True),
]


@dataclass(frozen=True)
class FlceCase:
    """A call of fused_linear_cross_entropy for the kernel tests: ``h
    [tokens, hidden]``, ``w [hidden, vocab]`` (``shape = (tokens, hidden,
    vocab)``), a quarter of the tokens ignored, the keyword arguments
    ``kwargs``."""

    name: str
    shape: tuple[int, int, int]
    dtype: str
    kwargs: tuple[tuple[str, Any], ...]

    def arrays(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(h, w, labels)``: float64 h and w, int32 labels."""
        tokens, hidden, vocab = self.shape
        return (floats(rng, (tokens, hidden)), floats(rng, (hidden, vocab), -0.5, 0.5),
                _labels(rng, (tokens,), vocab))


FLCE_KERNEL_CASES = [
    FlceCase("vocab-1000-smoothing-zloss-f32", (21, 48, 1000), "float32",
             (("label_smoothing", 0.1), ("z_loss", 1e-3))),
    FlceCase("vocab-1000-none-bf16", (21, 48, 1000), "bfloat16", (("reduction", "none"),)),
]
