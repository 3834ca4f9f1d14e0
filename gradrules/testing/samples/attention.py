"""Samples of the attention family: grouped-query heads, causal decoding
(Sq < Sk, aligned to the end), several blocks with padding, a mask with an
all-masked row plus a bias and a scale. The two share their
shapes, so that they share the compiled pieces of the checks. Bias gradients,
vmap over mask and bias, and no keys at all (Sk = 0) are checked in
tests/test_attention.py (mask and bias are keyword arguments, which the
checker holds fixed)."""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, floats


def _qkv(rng: np.random.Generator, b: int, sq: int, sk: int, h: int, hkv: int, d: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return floats(rng, (b, sq, h, d)), floats(rng, (b, sk, hkv, d)), floats(rng, (b, sk, hkv, d))


def _attention(rng: np.random.Generator) -> list[Sample]:
    mask = rng.uniform(size=(2, 1, 3, 4)) > 0.3
    mask[:, :, :, 0] = True
    mask[1, 0, 2, :] = False                       # a row whose keys are all masked
    return [
        Sample(_qkv(rng, 2, 3, 4, 2, 1, 2), {"causal": True, "block_q": 2, "block_k": 3},
               desc="GQA 2/1 heads, causal Sq=3 < Sk=4 (decoding), 2x2 blocks with padding"),
        Sample(_qkv(rng, 2, 3, 4, 2, 1, 2),
               {"scale": 0.7, "mask": mask, "bias": floats(rng, (1, 2, 3, 4))},
               desc="mask with an all-masked row, bias [1, H, Sq, Sk], scale 0.7"),
    ]


OPINFOS = [
    OpInfo("attention", _attention),
]
