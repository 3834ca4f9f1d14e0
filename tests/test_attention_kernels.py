"""The Pallas attention kernels, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, the grads of q, k, v
  and the bias, ``jax.jvp`` and a Hessian-vector product agree with the
  blockwise XLA lowering on every case of ``KERNEL_CASES`` (float32
  round-off for float32; bfloat16 rounding of the outputs for bfloat16).
* Lowered for CUDA (without a GPU), forward, grad and jvp under
  ``kernel="auto"`` hold a Triton kernel call for every primitive of the op,
  for each dtype the kernels take; a call they do not take lowers to XLA
  under "auto" and raises under "pallas".
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.cli import main as cli_main
from gradrules.core.kernels import Implementation
from gradrules.pallas.attention import BlockSizes, supports
from gradrules.primitives.attention import attention_p, attention_vjp_p
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls
from gradrules.testing.kernels import assert_kernels_match_xla, lowering_matrix
from gradrules.testing.samples.attention import KERNEL_CASES, KernelCase


def _inputs(case: KernelCase) -> tuple[list[jax.Array], dict]:
    arrays, kwargs = case.arrays(np.random.default_rng(0))
    return [jnp.asarray(a, case.dtype) for a in arrays], kwargs


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernels_agree_with_the_xla_lowering(case):
    primals, kwargs = _inputs(case)
    tangents = [jnp.asarray(t, case.dtype) for t in case.arrays(np.random.default_rng(1))[0]]
    assert supports(*primals, primals[3], primals[3]) is None
    def f(q, k, v, bias):
        return gradrules.attention(q, k, v, bias=bias, **kwargs)
    assert_kernels_match_xla(f, primals, tangents, case.dtype)


def test_an_all_masked_row_has_zero_output_and_gradients_in_the_kernels():
    case = KERNEL_CASES[1]
    (q, k, v, bias), kwargs = _inputs(case)
    row = 5                                          # KernelCase masks row 5 of batch 0
    with gradrules.config.using(kernel="interpret"):
        out = gradrules.attention(q, k, v, bias=bias, **kwargs)
        dq = jax.grad(lambda q: jnp.sum(gradrules.attention(q, k, v, bias=bias, **kwargs)))(q)
    assert not kwargs["mask"][0, 0, row].any()
    np.testing.assert_array_equal(out[0, row], 0)
    np.testing.assert_array_equal(dq[0, row], 0)


# ------------------------------------------------------------ CUDA lowering
_KERNELS = {"forward": {"attention_forward"},
            "grad": {"attention_forward", "attention_delta", "attention_dkdv", "attention_dq"},
            "jvp": {"attention_forward", "attention_jvp"}}


def _modes(kwargs: dict):
    def f(q, k, v, bias):
        return gradrules.attention(q, k, v, bias=bias, **kwargs)

    def loss(q, k, v, bias):
        return jnp.sum(f(q, k, v, bias).astype(jnp.float32))
    return {"forward": f, "grad": jax.grad(loss, argnums=(0, 1, 2, 3)),
            "jvp": lambda *a: jax.jvp(f, a, a)}


def _structs(case: KernelCase, dtype: str) -> tuple[list[jax.ShapeDtypeStruct], dict]:
    arrays, kwargs = case.arrays(np.random.default_rng(0))
    return [jax.ShapeDtypeStruct(a.shape, dtype) for a in arrays], kwargs


@pytest.mark.parametrize("case, dtype", lowering_matrix(KERNEL_CASES),
                         ids=lambda x: getattr(x, "name", x))
def test_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(case, dtype):
    structs, kwargs = _structs(case, dtype)
    assert_lowers_to_kernels(_modes(kwargs), structs, _KERNELS)


def test_a_call_the_kernels_do_not_take_runs_xla_under_auto_and_raises_under_pallas():
    structs, kwargs = _structs(KERNEL_CASES[0], "float32")
    kwargs = dict(kwargs, block_q=24)                 # not a power of two
    f = _modes(kwargs)["grad"]
    text = cuda_hlo(f, *structs)
    assert triton_calls(text) == 0
    with gradrules.config.using(kernel="pallas"):
        with pytest.raises(NotImplementedError, match=r"gradrules\.attention: kernel='pallas': "
                           r"the Pallas kernel does not take this call \(block_q=24"):
            jax.make_jaxpr(f)(*structs)


@pytest.mark.parametrize("bias_shape", [(2, 2, 40, 1), (1, 1, 1, 1), (2, 1, 1, 33)])
def test_the_backward_kernel_sums_dbias_to_the_shape_of_the_bias(bias_shape):
    """dbias of a bias broadcast over keys (zero through ``out`` alone: each
    row's softmax ignores a shift) is nonzero through a cotangent of lse."""
    rng = np.random.default_rng(2)
    B, Sq, Sk, H, Hkv, D = 2, 40, 33, 2, 1, 32
    f32 = lambda *shape: jnp.asarray(rng.standard_normal(shape), jnp.float32)  # noqa: E731
    q, k, v = f32(B, Sq, H, D), f32(B, Sk, Hkv, D), f32(B, Sk, Hkv, D)
    mask, bias = jnp.ones((1, 1, 1, 1), bool), f32(*bias_shape)
    params = dict(causal=True, scale=0.2)
    blocks = BlockSizes(16, 16, block_q_bwd=32, block_k_bwd=16)     # the backward's own
    out, lse, lse_lo = attention_p.bind(q, k, v, mask, bias, **params,
                                        implementation=Implementation("xla", blocks))
    cts = (f32(*out.shape), f32(*lse.shape))
    grads = {kernel: attention_vjp_p.bind(q, k, v, mask, bias, out, lse, lse_lo, *cts, **params,
                                          implementation=Implementation(kernel, blocks))
             for kernel in ("xla", "interpret")}
    for ref, got in zip(grads["xla"], grads["interpret"]):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    assert np.abs(grads["xla"][3]).max() > 0.1


def test_gradrules_list_says_which_calls_the_kernels_take(capsys):
    assert cli_main(["list", "attention"]) == 0
    out = capsys.readouterr().out
    assert out.count("lowering[pallas]") == 3
    assert out.count("pallas takes: float16, bfloat16 and float32; head_dim up to 256") == 3


def test_block_sizes_reach_the_primitive_and_bad_ones_are_refused():
    q = jnp.zeros((1, 8, 2, 16), jnp.float32)
    blocks = BlockSizes(32, 16, block_q_bwd=16, num_warps=2)
    jaxpr = str(jax.make_jaxpr(lambda q: gradrules.attention(q, q, q, block_sizes=blocks))(q))
    assert repr(blocks) in jaxpr
    with pytest.raises(ValueError, match=r"gradrules\.attention: give block_sizes or block_q"):
        gradrules.attention(q, q, q, block_q=16, block_sizes=blocks)
    with pytest.raises(TypeError, match=r"gradrules\.attention: block_sizes must be a"):
        gradrules.attention(q, q, q, block_sizes=(16, 16))
    with pytest.raises(ValueError, match=r"gradrules\.attention: block_k_bwd must be an int >= 1"):
        gradrules.attention(q, q, q, block_sizes=BlockSizes(block_k_bwd=0))
