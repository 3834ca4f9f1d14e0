"""Samples of the attention family: grouped-query heads, causal decoding
(Sq < Sk, aligned to the end), several blocks with padding, a mask with an
all-masked row plus a bias and a scale. The two share their
shapes, so that they share the compiled pieces of the checks. Bias gradients,
vmap over mask and bias, and no keys at all (Sk = 0) are checked in
tests/test_attention.py (mask and bias are keyword arguments, which the
checker holds fixed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def _dot_product_attention(rng: np.random.Generator) -> list[Sample]:
    """jax.nn's layout: GQA with is_causal and T=3 < S=4 (the top-left
    mask); unbatched [T, N, H] with a positional bias [N, T, S], a mask
    leaving every row a key, is_causal with T == S and a scale."""
    mask = rng.uniform(size=(3, 3)) > 0.4
    mask[:, 0] = True
    return [Sample(_qkv(rng, 2, 3, 4, 2, 1, 2), {"is_causal": True},
                   desc="GQA 2/1 heads, is_causal, T=3 < S=4 (top-left)"),
            Sample(tuple(x[0] for x in _qkv(rng, 1, 3, 3, 2, 2, 2))
                   + (floats(rng, (2, 3, 3)),),
                   {"mask": mask, "is_causal": True, "scale": 0.7},
                   desc="unbatched [T, N, H], bias [N, T, S], mask [T, S], is_causal, "
                        "scale 0.7")]


OPINFOS = [
    OpInfo("attention", _attention),
    OpInfo("dot_product_attention", _dot_product_attention),
]


@dataclass(frozen=True)
class KernelCase:
    """A call of attention at the sizes the Pallas kernels take (head_dim
    >= 16, power-of-two blocks), for the kernel tests (interpret mode against
    the XLA lowering, and the CUDA lowering). ``mask``: the shape of a
    boolean mask with an all-masked row, or None; ``bias``: the shape of a
    bias, which the tests differentiate."""

    name: str
    shape: tuple[int, int, int, int, int, int]      # B, Sq, Sk, H, Hkv, head_dim
    dtype: str
    causal: bool
    mask: tuple[int, ...] | None
    bias: tuple[int, ...]
    blocks: tuple[int, int] | None                  # block_q, block_k; None: the tables'

    def arrays(self, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        """``[q, k, v, bias]`` (float64) and the keyword arguments of the call
        (causal, mask, block sizes)."""
        b, sq, sk, h, hkv, d = self.shape
        arrays = [floats(rng, (b, sq, h, d)), floats(rng, (b, sk, hkv, d)),
                  floats(rng, (b, sk, hkv, d)), floats(rng, self.bias, -1.0, 1.0)]
        kwargs: dict[str, Any] = {"causal": self.causal}
        if self.mask is not None:
            mask = rng.uniform(size=self.mask) > 0.3
            mask[(0,) * (len(self.mask) - 2) + (min(5, self.mask[-2] - 1),)] = False
            kwargs["mask"] = mask
        if self.blocks is not None:
            kwargs["block_q"], kwargs["block_k"] = self.blocks
        return arrays, kwargs


# Sq != Sk with odd lengths, GQA and MQA, causal (with Sq > Sk: the first
# rows see no key) and not, biases full and broadcast over rows (a bias
# broadcast over keys has a zero gradient: tests/test_attention_kernels.py
# checks that one with a cotangent of lse), masks with an all-masked row,
# head_dim 64, 128 and 96 (padded), float32 and bfloat16; blocks smaller
# than the sequences so that loops, causal skipping and partial blocks run.
KERNEL_CASES = [
    KernelCase("gqa-causal-f32", (1, 100, 77, 4, 2, 64), "float32", True, None,
               (1, 4, 1, 77), (32, 32)),
    KernelCase("mqa-mask-bias-f32", (2, 77, 100, 4, 1, 128), "float32", False, (2, 1, 77, 100),
               (1, 4, 77, 100), (32, 64)),
    KernelCase("gqa-causal-bf16", (1, 100, 77, 4, 2, 64), "bfloat16", True, None,
               (1, 1, 1, 77), None),
    KernelCase("head_dim-96-f32", (1, 33, 40, 2, 2, 96), "float32", False, (1, 2, 33, 1),
               (1, 2, 33, 40), (16, 16)),
]
