"""The Pallas rope kernel, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, the grad of x,
  ``jax.jvp`` and a Hessian-vector product agree with the XLA lowering on
  every case of ``KERNEL_CASES`` (float32 round-off for float32; bfloat16
  rounding of the outputs for bfloat16).
* Lowered for CUDA (without a GPU), forward, grad and jvp under
  ``kernel="auto"`` hold a Triton call of the kernel (the inverse rotation in
  the grad), for each dtype it takes; a call it does not take lowers to XLA
  under "auto" and raises under "pallas".
* On 8 simulated CPU devices, x sharded on batch and heads gives the
  unsharded values with no all-gather.
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.cli import main as cli_main
from gradrules.pallas.rope import BlockSizes, supports
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls
from gradrules.testing.kernels import assert_kernels_match_xla, lowering_matrix
from gradrules.testing.samples.rope import KERNEL_CASES, KernelCase


def _kwargs(case: KernelCase, kwargs: dict) -> dict:
    return dict(kwargs, block_sizes=None if case.blocks is None else BlockSizes(*case.blocks))


def _inputs(case: KernelCase, seed: int = 0) -> tuple[jax.Array, dict]:
    (x,), kwargs = case.arrays(np.random.default_rng(seed))
    return jnp.asarray(x, case.dtype), _kwargs(case, kwargs)


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernel_agrees_with_the_xla_lowering(case):
    x, kwargs = _inputs(case)
    t, _ = _inputs(case, seed=1)
    positions = np.zeros(x.shape[1], np.int32)
    assert supports(x, positions, blocks=kwargs["block_sizes"]) is None
    assert_kernels_match_xla(lambda x: gradrules.rope(x, **kwargs), (x,), (t,), case.dtype,
                             weight=lambda out: out * jnp.sin(out))


def test_the_kernel_rotates_by_the_angle_and_back():
    """Against plain numpy: rope at position p rotates each pair by p f_i,
    and the grad of <rope(x), c> is the inverse rotation of c."""
    rng = np.random.default_rng(3)
    x, c = (rng.standard_normal((1, 3, 1, 6)).astype(np.float32) for _ in range(2))
    pos = np.array([0, 1, 40])
    freq = 10000.0 ** (-np.arange(3) * 2 / 6)
    ang = pos[:, None] * freq                                # [S, D/2]
    cos, sin = np.cos(ang)[None, :, None], np.sin(ang)[None, :, None]
    x1, x2 = x[..., :3], x[..., 3:]
    want = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    c1, c2 = c[..., :3], c[..., 3:]
    want_grad = np.concatenate([c1 * cos + c2 * sin, c2 * cos - c1 * sin], -1)
    with gradrules.config.using(kernel="interpret"):
        out = gradrules.rope(x, positions=pos)
        grad = jax.grad(lambda x: jnp.sum(gradrules.rope(x, positions=pos) * c))(x)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------ CUDA lowering
_KERNELS = {"forward": ["rope"], "grad": ["rope_inverse"], "jvp": ["rope", "rope"]}


def _modes(kwargs: dict):
    def f(x):
        return gradrules.rope(x, **kwargs)
    return {"forward": f, "grad": jax.grad(lambda x: jnp.sum(f(x).astype(jnp.float32))),
            "jvp": lambda x: jax.jvp(f, (x,), (x,))}


def _struct(case: KernelCase, dtype: str) -> tuple[jax.ShapeDtypeStruct, dict]:
    (x,), kwargs = case.arrays(np.random.default_rng(0))
    return jax.ShapeDtypeStruct(x.shape, dtype), _kwargs(case, kwargs)


@pytest.mark.parametrize("case, dtype", lowering_matrix(KERNEL_CASES),
                         ids=lambda x: getattr(x, "name", x))
def test_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(case, dtype):
    struct, kwargs = _struct(case, dtype)
    assert_lowers_to_kernels(_modes(kwargs), [struct], _KERNELS)


def test_a_call_the_kernel_does_not_take_runs_xla_under_auto_and_raises_under_pallas():
    struct, kwargs = _struct(KERNEL_CASES[0], "float32")
    kwargs = dict(kwargs, block_sizes=BlockSizes(block_rows=12))     # not a power of two
    f = _modes(kwargs)["grad"]
    assert triton_calls(cuda_hlo(f, struct)) == 0
    with gradrules.config.using(kernel="pallas"):
        with pytest.raises(NotImplementedError, match=r"gradrules\.rope: kernel='pallas': "
                           r"the Pallas kernel does not take this call \(block_rows=12"):
            jax.make_jaxpr(f)(struct)
    f64 = jax.ShapeDtypeStruct((1, 4, 2, 8), "float64")
    assert triton_calls(cuda_hlo(_modes({})["forward"], f64)) == 0


def test_gradrules_list_says_which_calls_the_kernel_takes(capsys):
    assert cli_main(["list", "rope"]) == 0
    out = capsys.readouterr().out
    assert out.count("lowering[pallas]") == 1
    assert out.count("pallas takes: float16, bfloat16 and float32 x, non-empty") == 1


def test_block_sizes_reach_the_primitive_and_bad_ones_are_refused():
    x = jnp.zeros((1, 4, 2, 8), jnp.float32)
    blocks = BlockSizes(block_rows=2, block_cols=4, num_warps=2)
    jaxpr = str(jax.make_jaxpr(lambda x: gradrules.rope(x, block_sizes=blocks))(x))
    assert repr(blocks) in jaxpr
    with pytest.raises(TypeError, match=r"gradrules\.rope: block_sizes must be a"):
        gradrules.rope(x, block_sizes=(2, 4))
    with pytest.raises(ValueError, match=r"gradrules\.rope: block_cols must be an int >= 1"):
        gradrules.rope(x, block_sizes=BlockSizes(block_cols=0))
