"""The Pallas kernels of silu_gated and gelu_gated, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, the grads of gate and
  up, ``jax.jvp`` and a Hessian-vector product agree with the XLA lowering
  on every case of ``KERNEL_CASES`` (float32 round-off for float32;
  bfloat16 rounding of the outputs for bfloat16); the erfc the exact gelu
  kernels use is within 1.2e-7 relative of ``lax.erfc``.
* Lowered for CUDA (without a GPU), forward, grad and jvp under
  ``kernel="auto"`` hold a Triton kernel call for every primitive of the op,
  for each dtype the kernels take; a call they do not take lowers to XLA
  under "auto" and raises under "pallas".
* On 8 simulated CPU devices, sharded operands give the unsharded values
  with no all-gather.
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.cli import main as cli_main
from gradrules.core.numerics import erfc_from_exp
from gradrules.pallas.gated import BlockSizes, supports
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls, triton_kernels
from gradrules.testing.kernels import assert_kernels_match_xla, lowering_matrix
from gradrules.testing.samples.gated import KERNEL_CASES, KernelCase


def _kwargs(case: KernelCase, kwargs: dict) -> dict:
    return dict(kwargs, block_sizes=None if case.blocks is None else BlockSizes(*case.blocks))


def _inputs(case: KernelCase, seed: int = 0) -> tuple[list[jax.Array], dict]:
    arrays, kwargs = case.arrays(np.random.default_rng(seed))
    return [jnp.asarray(a, case.dtype) for a in arrays], _kwargs(case, kwargs)


def _op(case: KernelCase, kwargs: dict):
    fn = getattr(gradrules, case.op)
    return lambda gate, up: fn(gate, up, **kwargs)


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernels_agree_with_the_xla_lowering(case):
    primals, kwargs = _inputs(case)
    tangents, _ = _inputs(case, seed=1)
    assert supports(*primals, blocks=kwargs["block_sizes"]) is None
    assert_kernels_match_xla(_op(case, kwargs), primals, tangents, case.dtype)


def test_the_kernels_erfc_is_within_1_2e_7_relative_of_lax_erfc():
    x = np.linspace(-9.0, 9.0, 200001)           # erfc(9) = 4e-37: float32's normal range
    want = np.asarray(jax.lax.erfc(jnp.asarray(x, jnp.float64)))
    got = np.asarray(jax.jit(erfc_from_exp)(jnp.asarray(x, jnp.float64)))
    assert np.max(np.abs(got - want) / want) < 1.2e-7


def test_the_kernels_pass_derivatives_only_inside_the_clamps():
    gate = jnp.asarray([[1.0, 1.5, 0.2, 0.2]], jnp.float32)   # at, beyond, inside, inside
    up = jnp.asarray([[0.5, 0.5, -1.0, 1.5]], jnp.float32)    # inside, inside, at, beyond
    f = lambda g, u: jnp.sum(gradrules.silu_gated(g, u, limit=1.0))  # noqa: E731
    with gradrules.config.using(kernel="interpret"):
        dg, du = jax.grad(f, (0, 1))(gate, up)
    assert dg[0, 1] == 0 and du[0, 3] == 0
    assert (dg[0, [0, 2, 3]] != 0).all() and (du[0, :3] != 0).all()


# ------------------------------------------------------------ CUDA lowering
def _kernels(op: str) -> dict[str, set[str]]:
    return {"forward": {f"{op}_forward"}, "grad": {f"{op}_vjp"},
            "jvp": {f"{op}_forward", f"{op}_jvp"}}


def _modes(f):
    def loss(gate, up):
        return jnp.sum(f(gate, up).astype(jnp.float32))
    return {"forward": f, "grad": jax.grad(loss, argnums=(0, 1)),
            "jvp": lambda *a: jax.jvp(f, a, a)}


def _structs(case: KernelCase, dtype: str) -> tuple[list[jax.ShapeDtypeStruct], dict]:
    arrays, kwargs = case.arrays(np.random.default_rng(0))
    return [jax.ShapeDtypeStruct(a.shape, dtype) for a in arrays], _kwargs(case, kwargs)


@pytest.mark.parametrize("case, dtype", lowering_matrix(KERNEL_CASES),
                         ids=lambda x: getattr(x, "name", x))
def test_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(case, dtype):
    structs, kwargs = _structs(case, dtype)
    assert_lowers_to_kernels(_modes(_op(case, kwargs)), structs, _kernels(case.op))


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
def test_silu_rowsplit_reaches_the_kernels_under_auto(activation):
    x = jax.ShapeDtypeStruct((4, 2000), "bfloat16")
    grad = jax.grad(lambda x: jnp.sum(gradrules.silu_rowsplit(x, activation=activation)
                                      .astype(jnp.float32)))
    assert triton_kernels(cuda_hlo(grad, x)) == [f"{activation[:4]}_gated_vjp"]


def test_a_call_the_kernels_do_not_take_runs_xla_under_auto_and_raises_under_pallas():
    structs, kwargs = _structs(KERNEL_CASES[0], "float32")
    kwargs = dict(kwargs, block_sizes=BlockSizes(block_cols=24))     # not a power of two
    f = _modes(_op(KERNEL_CASES[0], kwargs))["grad"]
    assert triton_calls(cuda_hlo(f, *structs)) == 0
    with gradrules.config.using(kernel="pallas"):
        with pytest.raises(NotImplementedError, match=r"gradrules\.silu_gated: kernel='pallas': "
                           r"the Pallas kernel does not take this call \(block_cols=24"):
            jax.make_jaxpr(f)(*structs)
    f64 = jax.ShapeDtypeStruct((3, 8), "float64")
    assert triton_calls(cuda_hlo(_modes(gradrules.gelu_gated)["forward"], f64, f64)) == 0


@pytest.mark.parametrize("op", ["silu_gated", "gelu_gated"])
def test_gradrules_list_says_which_calls_the_kernels_take(op, capsys):
    assert cli_main(["list", op]) == 0
    out = capsys.readouterr().out
    assert out.count("lowering[pallas]") == 3
    assert out.count("pallas takes: float16, bfloat16 and float32, any shape") == 3


def test_block_sizes_reach_the_primitive_and_bad_ones_are_refused():
    x = jnp.zeros((2, 8), jnp.float32)
    blocks = BlockSizes(block_rows=2, block_cols=4, num_warps=2)
    jaxpr = str(jax.make_jaxpr(lambda x: gradrules.silu_gated(x, x, block_sizes=blocks))(x))
    assert repr(blocks) in jaxpr
    with pytest.raises(TypeError, match=r"gradrules\.silu_gated: block_sizes must be a"):
        gradrules.silu_gated(x, x, block_sizes=(2, 4))
    with pytest.raises(ValueError, match=r"gradrules\.silu_gated: block_rows must be an int >= 1"):
        gradrules.silu_gated(x, x, block_sizes=BlockSizes(block_rows=0))
