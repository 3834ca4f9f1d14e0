"""The Pallas cross_entropy kernels, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, the grad of the
  logits, ``jax.jvp`` and a Hessian-vector product agree with the XLA
  lowering on every case of ``KERNEL_CASES`` (a 5000-way vocabulary with
  ignored tokens, label smoothing and z-loss in float32 and bfloat16, small
  vocabulary blocks so that the vocabulary loop runs; a 1100-way one with
  ``-inf`` logits): float32 round-off for float32, bfloat16 rounding of the
  outputs for bfloat16. The backward with a cotangent of the ``lse``
  residual and labels out of range (NaN tokens) agree too.
* Lowered for CUDA (without a GPU), forward, grad and jvp under
  ``kernel="auto"`` hold a Triton kernel call for every primitive, for each
  dtype the kernels take; a call they do not take lowers to XLA under
  "auto" and raises under "pallas".
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.cli import main as cli_main
from gradrules.core.kernels import Implementation
from gradrules.pallas.loss import BlockSizes, supports
from gradrules.pallas.loss import flce_supports
from gradrules.primitives import _loss_xla
from gradrules.primitives.loss import (cross_entropy_jvp_p, cross_entropy_p, cross_entropy_vjp_p,
                                       fused_linear_cross_entropy_jvp_p,
                                       fused_linear_cross_entropy_p,
                                       fused_linear_cross_entropy_vjp_p)
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls
from gradrules.testing.kernels import (assert_close, assert_kernels_match_xla, lowering_matrix,
                                       tolerance)
from gradrules.testing.samples.loss import FLCE_KERNEL_CASES, KERNEL_CASES, KernelCase


def _kwargs(case: KernelCase) -> dict:
    kwargs = dict(case.kwargs)
    if case.blocks is not None:
        kwargs["block_sizes"] = BlockSizes(*case.blocks)
    return kwargs


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernels_agree_with_the_xla_lowering(case):
    logits, labels = case.arrays(np.random.default_rng(0))
    x = jnp.asarray(logits, case.dtype)
    t = jnp.asarray(np.random.default_rng(1).standard_normal(x.shape), case.dtype)
    kwargs = _kwargs(case)
    assert supports(x, labels, blocks=kwargs.get("block_sizes")) is None
    assert (labels == -100).any()
    labels = jnp.asarray(labels)
    assert_kernels_match_xla(lambda x: gradrules.cross_entropy(x, labels, **kwargs), (x,), (t,),
                             case.dtype)


def _whole(lse, lse_lo):
    """The log-sum-exp the pair stands for, in float64 (``lse_lo`` alone is
    a rounding error, which differs with the order of summation)."""
    return np.float64(lse) + np.float64(lse_lo)


def test_the_backward_and_tangent_kernels_with_an_lse_cotangent_and_bad_labels():
    """Direct binds: cotangents of both outputs, a label out of range (NaN
    token), an ignored one, vocabulary blocks with a partial last one."""
    rng = np.random.default_rng(3)
    n, v = 6, 700
    x = jnp.asarray(rng.standard_normal((n, v)) * 3, jnp.float32)
    labels = jnp.asarray([3, -100, v + 2, 699, 0, 350], jnp.int32)
    params = dict(ignore_index=-100, label_smoothing=0.2, z_loss=0.01)
    blocks = BlockSizes(rows=4, vocab=128)
    impl = {k: Implementation(k, blocks) for k in ("xla", "interpret")}
    g_loss, g_lse = (jnp.asarray(rng.standard_normal(n), jnp.float32) for _ in range(2))
    t = jnp.asarray(rng.standard_normal((n, v)), jnp.float32)
    out = {}
    for k in impl:
        loss, lse, lo = cross_entropy_p.bind(x, labels, **params, implementation=impl[k])
        out[k] = {"forward": (loss, _whole(lse, lo)),
                  "jvp": cross_entropy_jvp_p.bind(x, labels, lse, lo, t, **params,
                                                  implementation=impl[k]),
                  "vjp": cross_entropy_vjp_p.bind(x, labels, lse, lo, g_loss, g_lse, **params,
                                                  implementation=impl[k])}
    assert_close(out["xla"], out["interpret"], 2e-5)
    assert np.isnan(out["interpret"]["forward"][0][2]) and out["interpret"]["forward"][0][1] == 0
    assert np.isnan(out["interpret"]["vjp"][2]).all()
    np.testing.assert_allclose(out["interpret"]["vjp"][1],
                               g_lse[1] * jax.nn.softmax(x[1]), rtol=1e-5, atol=1e-9)


# ------------------------------------------------------------ CUDA lowering
_KERNELS = {"forward": {"cross_entropy_forward"},
            "grad": {"cross_entropy_forward", "cross_entropy_backward"},
            "jvp": {"cross_entropy_forward", "cross_entropy_jvp"}}


def _modes(labels: np.ndarray, kwargs: dict):
    def f(x):
        return gradrules.cross_entropy(x, labels, **kwargs)

    def loss(x):
        return jnp.sum(f(x).astype(jnp.float32))
    return {"forward": f, "grad": jax.grad(loss), "jvp": lambda x: jax.jvp(f, (x,), (x,))}


@pytest.mark.parametrize("case, dtype", lowering_matrix(KERNEL_CASES),
                         ids=lambda x: getattr(x, "name", x))
def test_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(case, dtype):
    _, labels = case.arrays(np.random.default_rng(0))
    struct = jax.ShapeDtypeStruct(case.shape, dtype)
    assert_lowers_to_kernels(_modes(labels, _kwargs(case)), [struct], _KERNELS)


def test_the_default_blocks_lower_for_a_256k_vocabulary():
    """A row of 262144 logits is looped over in vocabulary blocks."""
    labels = np.zeros((4,), np.int32)
    text = cuda_hlo(_modes(labels, {})["grad"], jax.ShapeDtypeStruct((4, 262144), "bfloat16"))
    assert triton_calls(text) == 2


def test_a_call_the_kernels_do_not_take_runs_xla_under_auto_and_raises_under_pallas():
    labels = np.zeros((3,), np.int32)
    f = _modes(labels, {"block_sizes": BlockSizes(vocab=1000)})["grad"]
    struct = jax.ShapeDtypeStruct((3, 1000), "float32")
    assert triton_calls(cuda_hlo(f, struct)) == 0
    with gradrules.config.using(kernel="pallas"):
        with pytest.raises(NotImplementedError, match=r"gradrules\.cross_entropy: "
                           r"kernel='pallas': the Pallas kernel does not take this call "
                           r"\(vocab=1000"):
            jax.make_jaxpr(f)(struct)


def test_gradrules_list_says_which_calls_the_kernels_take(capsys):
    assert cli_main(["list", "cross_entropy"]) == 0
    out = capsys.readouterr().out
    assert out.count("lowering[pallas]") == 3
    assert out.count("pallas takes: float16, bfloat16 and float32 logits") == 3
    assert cli_main(["list", "fused_linear_cross_entropy"]) == 0
    out = capsys.readouterr().out
    assert out.count("lowering[pallas]") == 3
    assert out.count("pallas takes: float16, bfloat16 and float32 ``h [tokens, hidden]``") == 3


def test_block_sizes_reach_the_primitive_and_bad_ones_are_refused():
    x, labels = jnp.zeros((2, 8), jnp.float32), jnp.zeros((2,), jnp.int32)
    blocks = BlockSizes(rows=2, vocab=4, num_warps=2)
    jaxpr = str(jax.make_jaxpr(lambda x: gradrules.cross_entropy(x, labels,
                                                                 block_sizes=blocks))(x))
    assert repr(blocks) in jaxpr
    with pytest.raises(TypeError, match=r"gradrules\.cross_entropy: block_sizes must be a"):
        gradrules.cross_entropy(x, labels, block_sizes=(2, 4))
    with pytest.raises(ValueError, match=r"gradrules\.cross_entropy: vocab must be an int >= 1"):
        gradrules.cross_entropy(x, labels, block_sizes=BlockSizes(vocab=0))


# ------------------------------------------------ fused_linear_cross_entropy
@pytest.mark.parametrize("case", FLCE_KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_flce_kernels_agree_with_the_xla_lowering(case):
    """Through the public function (the tokens in one chunk) and through the
    primitives bound with chunks of 8 tokens (the last one partial)."""
    h, w, labels = case.arrays(np.random.default_rng(0))
    primals = tuple(jnp.asarray(a, case.dtype) for a in (h, w))
    rng = np.random.default_rng(1)
    tangents = tuple(jnp.asarray(rng.standard_normal(a.shape), case.dtype) for a in primals)
    labels = jnp.asarray(labels)
    assert flce_supports(*primals, labels) is None
    tol = tolerance(case.dtype)
    kwargs = dict(case.kwargs)
    assert_kernels_match_xla(
        lambda h, w: gradrules.fused_linear_cross_entropy(h, w, labels, **kwargs),
        primals, tangents, case.dtype)

    params = dict(ignore_index=-100, label_smoothing=0.1, z_loss=1e-3)
    g_loss, g_lse = (jnp.asarray(rng.standard_normal(labels.shape), jnp.float32)
                     for _ in range(2))
    out = {}
    for kernel in ("xla", "interpret"):
        impl = Implementation(kernel, _loss_xla.Blocks(tokens=8, vocab=256))
        loss, lse, lo = fused_linear_cross_entropy_p.bind(*primals, labels, **params,
                                                          implementation=impl)
        out[kernel] = [loss, _whole(lse, lo), fused_linear_cross_entropy_jvp_p.bind(
            *primals, labels, lse, lo, *tangents, **params, implementation=impl),
            fused_linear_cross_entropy_vjp_p.bind(*primals, labels, lse, lo, g_loss, g_lse,
                                                  **params, implementation=impl)]
    assert_close(out["xla"], out["interpret"], tol)


def _flce_modes(labels: np.ndarray):
    def f(h, w):
        return gradrules.fused_linear_cross_entropy(h, w, labels)

    def loss(h, w):
        return jnp.sum(f(h, w).astype(jnp.float32))
    return {"forward": f, "grad": jax.grad(loss, argnums=(0, 1)),
            "jvp": lambda h, w: jax.jvp(f, (h, w), (h, w))}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_flce_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(dtype):
    case = FLCE_KERNEL_CASES[0]
    tokens, hidden, vocab = case.shape
    _, _, labels = case.arrays(np.random.default_rng(0))
    structs = (jax.ShapeDtypeStruct((tokens, hidden), dtype),
               jax.ShapeDtypeStruct((hidden, vocab), dtype))
    assert_lowers_to_kernels(_flce_modes(labels), structs, _KERNELS)


def test_flce_with_leading_batch_axes_is_left_to_xla():
    h = jax.ShapeDtypeStruct((2, 5, 8), "float32")
    assert "the kernels take [tokens, hidden]" in flce_supports(
        h, jax.ShapeDtypeStruct((2, 8, 100), "float32"), None)
