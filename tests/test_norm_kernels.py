"""The Pallas rms_norm and layer_norm kernels, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, the grads of every
  float input, ``jax.jvp`` and a Hessian-vector product agree with the XLA
  lowering on every case of ``KERNEL_CASES`` (float32 round-off for float32;
  bfloat16 rounding of the outputs for bfloat16), the column-loop path
  (a forced small column block) among them.
* Lowered for CUDA (without a GPU), forward, grad and jvp under
  ``kernel="auto"`` hold a Triton kernel call for every primitive of the op,
  for each dtype the kernels take; a call they do not take lowers to XLA
  under "auto" and raises under "pallas".
* Rows sharded on 8 simulated CPU devices (this file run as a script in a
  process of its own) give the unsharded values with no all-gather.
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp


import gradrules
from gradrules.cli import main as cli_main
from gradrules.pallas.norm import BlockSizes, supports
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls
from gradrules.testing.kernels import assert_kernels_match_xla, lowering_matrix
from gradrules.testing.samples.norm import KERNEL_CASES, KernelCase


def _fn(case: KernelCase):
    op = getattr(gradrules, case.op)
    kwargs = case.call_kwargs()
    return lambda *args: op(*args, **kwargs)


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernels_agree_with_the_xla_lowering(case):
    primals = tuple(jnp.asarray(a, case.dtype) for a in case.arrays(np.random.default_rng(0)))
    tangents = tuple(jnp.asarray(a, case.dtype) for a in case.arrays(np.random.default_rng(1)))
    assert supports(*primals, primals[0], blocks=case.blocks) is None
    assert_kernels_match_xla(_fn(case), primals, tangents, case.dtype,
                             weight=lambda out: out * jnp.sin(out))


# ------------------------------------------------------------ CUDA lowering
def _kernels(op: str, wide: bool) -> dict[str, set[str]]:
    backward = {f"{op}_forward", f"{op}_backward", f"{op}_dweight"}
    return {"forward": {f"{op}_forward"},
            "grad": backward | ({f"{op}_backward_stats"} if wide else set()),
            "jvp": {f"{op}_forward", f"{op}_jvp"}}


def _modes(case: KernelCase):
    f = _fn(case)

    def loss(*args):
        return jnp.sum(f(*args).astype(jnp.float32))
    return {"forward": f, "grad": jax.grad(loss, argnums=(0, 1)),
            "jvp": lambda *a: jax.jvp(f, a, a)}


def _structs(case: KernelCase, dtype: str) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(a.shape, dtype) for a in case.arrays(np.random.default_rng(0))]


@pytest.mark.parametrize("case, dtype",
                         lowering_matrix([KERNEL_CASES[0], KERNEL_CASES[2], KERNEL_CASES[4]]),
                         ids=lambda x: getattr(x, "name", x))
def test_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(case, dtype):
    expected = _kernels(case.op, wide=case.blocks is not None)
    assert_lowers_to_kernels(_modes(case), _structs(case, dtype), expected)


def test_a_row_of_65536_lowers_and_a_wider_one_runs_xla_under_auto():
    case = KERNEL_CASES[0]
    for width, calls in ((65536, 4), (65537, 0)):
        x, w = jax.ShapeDtypeStruct((8, width), "bfloat16"), jax.ShapeDtypeStruct((width,),
                                                                                 "bfloat16")
        assert triton_calls(cuda_hlo(_modes(case)["grad"], x, w)) == calls


def test_a_call_the_kernels_do_not_take_runs_xla_under_auto_and_raises_under_pallas():
    x = jax.ShapeDtypeStruct((4, 100), "float32")
    f = jax.grad(lambda x: jnp.sum(gradrules.rms_norm(x, block_sizes=BlockSizes(block_cols=24))))
    assert triton_calls(cuda_hlo(f, x)) == 0
    with gradrules.config.using(kernel="pallas"):
        with pytest.raises(NotImplementedError, match=r"gradrules\.rms_norm: kernel='pallas': "
                           r"the Pallas kernel does not take this call \(block_cols=24"):
            jax.make_jaxpr(f)(x)


def test_block_sizes_reach_the_primitive_and_bad_ones_are_refused():
    x = jnp.zeros((2, 8), jnp.float32)
    blocks = BlockSizes(block_rows=2, block_cols=16)
    assert repr(blocks) in str(jax.make_jaxpr(
        lambda x: gradrules.layer_norm(x, block_sizes=blocks))(x))
    with pytest.raises(TypeError, match=r"gradrules\.rms_norm: block_sizes must be a"):
        gradrules.rms_norm(x, block_sizes=(16, 16))
    with pytest.raises(ValueError, match=r"gradrules\.layer_norm: block_rows must be an int >= 1"):
        gradrules.layer_norm(x, block_sizes=BlockSizes(block_rows=0))


@pytest.mark.parametrize("op", ["rms_norm", "layer_norm"])
def test_gradrules_list_says_which_calls_the_kernels_take(op, capsys):
    assert cli_main(["list", op]) == 0
    out = capsys.readouterr().out
    assert out.count("lowering[pallas]") == 3
    assert out.count("pallas takes: float16, bfloat16 and float32; rows of any width from 1 "
                     "to 65536") == 3
