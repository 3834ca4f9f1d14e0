"""The Pallas attention kernels, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, the grads of q, k, v
  and the bias, ``jax.jvp`` and a Hessian-vector product agree with the
  blockwise XLA lowering on every case of ``KERNEL_CASES`` (float32
  round-off for float32; bfloat16 rounding of the outputs for bfloat16).
* In 16-bit, the jvp and the grads of the kernels are within one rounding
  of the exact (float64) tangent and gradients.
* Lowered for CUDA (without a GPU), forward, grad and jvp under
  ``kernel="auto"`` hold a Triton kernel call for every primitive of the op,
  for each dtype the kernels take; a call they do not take lowers to XLA
  under "auto" and raises under "pallas". The 16-bit jvp and backward
  kernels multiply 16-bit operands only (tensor cores).
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules._jax import iter_eqns
from gradrules.cli import main as cli_main
from gradrules.core.kernels import Implementation
from gradrules.core.numerics import rounded_below_acc
from gradrules.pallas import attention as attention_kernels
from gradrules.pallas.attention import BlockSizes, supports
from gradrules.primitives.attention import attention_p, attention_reference, attention_vjp_p
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls
from gradrules.testing.kernels import assert_close, everything, lowering_matrix, tolerance
from gradrules.testing.samples.attention import KERNEL_CASES, KernelCase


def _attention_of(fn: Any, kwargs: dict, q: jax.Array, k: jax.Array, v: jax.Array,
                  bias: jax.Array) -> jax.Array:
    """``fn(q, k, v, bias=bias, **kwargs)`` (gradrules.attention or the reference)."""
    return fn(q, k, v, bias=bias, **kwargs)


def _inputs(case: KernelCase) -> tuple[list[jax.Array], dict]:
    arrays, kwargs = case.arrays(np.random.default_rng(0))
    return [jnp.asarray(a, case.dtype) for a in arrays], kwargs


def _tangents(case: KernelCase) -> list[jax.Array]:
    return [jnp.asarray(t, case.dtype) for t in case.arrays(np.random.default_rng(1))[0]]


def _target(case: KernelCase) -> np.ndarray:
    """The loss of the grads is ``sum((out - target) ** 2)``: a cotangent
    ``2 (out - target)`` as large as the entries (``2 out`` would hide an
    error of ``delta = rowsum(ct_out * out)``); float32, 16-bit values."""
    q = case.arrays(np.random.default_rng(0))[0][0]
    target = np.random.default_rng(3).standard_normal(q.shape)
    return np.asarray(jnp.asarray(target, case.dtype), np.float32)


def _everything(case: KernelCase, kernel: str) -> dict[str, Any]:
    """Forward, grads of ``sum((out - target) ** 2)``, jvp and HVP under ``kernel``."""
    primals, kwargs = _inputs(case)
    target = _target(case)
    with gradrules.config.using(kernel=kernel):
        return everything(partial(_attention_of, gradrules.attention, kwargs),
                          lambda out: jnp.square(out - target))(primals, _tangents(case))


@cache
def _interpreted(case: KernelCase) -> dict[str, Any]:
    """``_everything`` under the Pallas interpreter, made once per process:
    the agreement test and the one-rounding test read the same results
    (interpret mode compiles slowly)."""
    return _everything(case, "interpret")


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernels_agree_with_the_xla_lowering(case):
    primals, _ = _inputs(case)
    assert supports(*primals, primals[3], primals[3]) is None
    assert_close(_everything(case, "xla"), _interpreted(case), tolerance(case.dtype))


def _assert_one_rounding(name: str, got: Any, want: Any, dtype: Any) -> None:
    """``got`` within one rounding to ``dtype`` (half its eps, relative) of
    the float64 ``want``, beside float32 round-off (1e-5 of the largest entry)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = np.abs(got - want)
    bound = np.finfo(dtype).eps / 2 * np.abs(want) + 1e-5 * np.abs(want).max()
    assert bool((err <= bound).all()), (f"{name}: max error {err.max():.2e}, "
                                        f"max |exact| {np.abs(want).max():.2f}")


@pytest.mark.parametrize("case", [c for c in KERNEL_CASES if rounded_below_acc(c.dtype)],
                         ids=lambda c: c.name)
def test_the_16_bit_jvp_and_backward_kernels_are_one_rounding_of_the_exact_results(case):
    """The jvp and the grads (cotangent ``2 (out - target)``, rounded to 16
    bits as the kernel gets it) in the interpreter against float64 autodiff
    of the reference at the same 16-bit inputs: the kernels sum ``p ds v``,
    ``p tv``, ``p v``, ``p^T ct``, ``g k`` and ``g^T q`` from float32 weights
    (``split_dot``), not their 16-bit roundings, and delta from ``out =
    sum_j p v`` in float32, not the rounded ``out`` (as
    ``rules.attention._backward_map``)."""
    primals, kwargs = _inputs(case)
    got = _interpreted(case)
    reference = partial(_attention_of, attention_reference, kwargs)

    @jax.jit
    def exact(primals, tangents, ct):
        return jax.jvp(reference, primals, tangents)[1], jax.vjp(reference, *primals)[1](ct)
    wide = partial(jnp.asarray, dtype=jnp.float64)
    ct = jnp.asarray(2 * (np.asarray(got["out"], np.float32) - _target(case)), case.dtype)
    jvp, grads = exact([wide(x) for x in primals], [wide(t) for t in _tangents(case)], wide(ct))
    _assert_one_rounding("jvp", got["jvp"], jvp, case.dtype)
    for name, g, w in zip(("q", "k", "v", "bias"), got["grad"], grads):
        _assert_one_rounding(f"grad of {name}", g, w, case.dtype)


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


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_16_bit_kernels_multiply_16_bit_operands_only(dtype):
    """Every product in the jvp and backward kernels takes 16-bit operands
    (tensor cores): float32 weights go through ``split_dot``, never a
    float32 dot (TF32 on the GPU, 2**-11: not one rounding; IEEE: slow)."""
    (q, k, v, bias), kwargs = _structs(KERNEL_CASES[0], dtype)
    mask = jax.ShapeDtypeStruct((1, 1, 1, 1), bool)
    rows = jax.ShapeDtypeStruct((q.shape[0], q.shape[2], q.shape[1]), jnp.float32)
    params = dict(causal=kwargs["causal"], scale=0.125, blocks=None, interpret=False)
    for fn, args in ((attention_kernels.jvp, (q, k, v, mask, bias, q, rows, rows, q, k, v, bias)),
                     (attention_kernels.backward, (q, k, v, mask, bias, q, rows, rows, q, rows))):
        jaxpr = jax.make_jaxpr(partial(fn, **params))(*args)
        calls = [e.params["jaxpr"] for e in iter_eqns(jaxpr) if e.primitive.name == "pallas_call"]
        operands = {str(x.aval.dtype) for call in calls for e in iter_eqns(call)
                    if e.primitive.name == "dot_general" for x in e.invars}
        assert len(calls) == (1 if fn is attention_kernels.jvp else 3)
        assert operands == {dtype}, (fn.__name__, operands)


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
