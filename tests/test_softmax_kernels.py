"""The Pallas softmax and log_softmax kernels, proven on the CPU.

* In interpret mode (the Pallas interpreter), forward, grad, ``jax.jvp``
  and a Hessian-vector product agree with the XLA lowering on every case of
  ``KERNEL_CASES`` (float32 round-off for float32; bfloat16 rounding of the
  outputs for bfloat16): widths 1000 and 1100, one block and the column
  loop, a leading axis moved to the end, ``-inf`` entries and rows.
* Lowered for CUDA (without a GPU), forward, grad and jvp hold a Triton
  kernel call for every primitive, for each dtype the kernels take; a call
  they do not take lowers to XLA under "auto" and raises under "pallas".
* On 8 simulated CPU devices, rows sharded on a mesh give the unsharded
  values, without gathering x.
"""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp

import gradrules
from gradrules.cli import main as cli_main
from gradrules.core.kernels import Implementation
from gradrules.pallas.softmax import BlockSizes, supports
from gradrules.primitives.softmax import log_softmax_jvp_p, log_softmax_p, log_softmax_vjp_p
from gradrules.testing.gpu import assert_lowers_to_kernels, cuda_hlo, triton_calls
from gradrules.testing.kernels import assert_kernels_match_xla, lowering_matrix
from gradrules.testing.samples.softmax import KERNEL_CASES, KernelCase

OPS = {"softmax": gradrules.softmax, "log_softmax": gradrules.log_softmax}


def _kwargs(case: KernelCase) -> dict:
    blocks = None if case.blocks is None else BlockSizes(*case.blocks)
    return {"axis": case.axis, "block_sizes": blocks}


@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: c.name)
def test_the_interpreted_kernels_agree_with_the_xla_lowering(case):
    x = jnp.asarray(case.array(np.random.default_rng(0)), case.dtype)
    t = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, case.shape), case.dtype)
    rows = jnp.moveaxis(x, case.axis, -1)                   # what the kernels are given
    assert supports(rows, axis=rows.ndim - 1, blocks=_kwargs(case)["block_sizes"]) is None
    op, kwargs = OPS[case.op], _kwargs(case)
    assert_kernels_match_xla(lambda x: op(x, **kwargs), (x,), (t,), case.dtype)


@pytest.mark.parametrize("blocks", [None, BlockSizes(4, 16)], ids=["one-block", "loop"])
def test_all_inf_rows_in_the_kernels(blocks):
    """softmax: 0 with zero gradient; log_softmax: -inf, its tangent map
    and backward passing the tangent and cotangent through."""
    x = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)
    x[2] = -np.inf
    x = jnp.asarray(x)
    impl = Implementation("interpret", blocks)
    with gradrules.config.using(kernel="interpret"):
        y = gradrules.softmax(x, block_sizes=blocks)
        w = jnp.cos(jnp.arange(40.0, dtype=jnp.float32))
        dx = jax.grad(lambda x: jnp.sum(gradrules.softmax(x, block_sizes=blocks) * w))(x)
    np.testing.assert_array_equal(y[2], 0)
    np.testing.assert_array_equal(dx[2], 0)
    logp = log_softmax_p.bind(x, axis=1, implementation=impl)
    assert np.isneginf(logp[2]).all() and np.isfinite(logp[3]).all()
    t = jnp.ones_like(x)
    for prim in (log_softmax_jvp_p, log_softmax_vjp_p):
        out = prim.bind(x, logp, t, axis=1, implementation=impl)
        np.testing.assert_array_equal(out[2], 1)
        assert np.isfinite(out).all()


# ------------------------------------------------------------ CUDA lowering
def _expected(op: str) -> dict[str, set[str]]:
    return {"forward": {f"{op}_forward"}, "grad": {f"{op}_forward", f"{op}_vjp"},
            "jvp": {f"{op}_forward", f"{op}_jvp"}}


def _modes(case: KernelCase):
    op, kwargs = OPS[case.op], _kwargs(case)

    def f(x):
        return op(x, **kwargs)
    return {"forward": f, "grad": jax.grad(lambda x: jnp.sum(f(x).astype(jnp.float32))),
            "jvp": lambda x: jax.jvp(f, (x,), (x,))}


@pytest.mark.parametrize("case, dtype",
                         lowering_matrix(KERNEL_CASES[:3] + [KERNEL_CASES[4]]),
                         ids=lambda x: getattr(x, "name", x))
def test_forward_grad_and_jvp_lower_to_triton_kernels_for_cuda(case, dtype):
    """Under "auto" for the last axis; another axis is moved to the end where
    a kernel may run ("auto" on a GPU, or "pallas": here, with no GPU)."""
    last = case.axis in (-1, len(case.shape) - 1)
    struct = jax.ShapeDtypeStruct(case.shape, dtype)
    with gradrules.config.using(kernel="auto" if last else "pallas"):
        assert_lowers_to_kernels(_modes(case), [struct], _expected(case.op))


def test_the_widest_rows_lower_with_the_column_loop():
    struct = jax.ShapeDtypeStruct((8192, 131072), jnp.bfloat16)
    case = KernelCase("wide", "log_softmax", struct.shape, "bfloat16")
    assert triton_calls(cuda_hlo(_modes(case)["grad"], struct)) == 2


@pytest.mark.parametrize("kwargs, reason", [
    ({"dtype": "float64"}, r"dtype float64"),
    ({"block_sizes": BlockSizes(block_cols=24)}, r"block_cols=24"),
    ({"axis": 0, "kernel": "auto"}, None),
])
def test_a_call_the_kernels_do_not_take_runs_xla_under_auto_and_raises_under_pallas(
        kwargs, reason):
    kwargs = dict(kwargs)
    struct = jax.ShapeDtypeStruct((4, 100), kwargs.pop("dtype", "float32"))
    kernel = kwargs.pop("kernel", None)

    def grad(x):
        return jax.grad(lambda x: jnp.sum(gradrules.softmax(x, **kwargs)))(x)
    with gradrules.config.using(kernel="auto"):
        text = cuda_hlo(grad, struct)
    assert triton_calls(text) == 0
    if kernel == "auto":             # on this CPU: axis 0 stays put, no transposes
        assert "transpose" not in str(jax.make_jaxpr(grad)(struct))
        return
    with gradrules.config.using(kernel="pallas"):
        with pytest.raises(NotImplementedError, match=r"gradrules\.softmax: kernel='pallas': "
                           rf"the Pallas kernel does not take this call \({reason}"):
            jax.make_jaxpr(grad)(struct)


def test_gradrules_list_says_which_calls_the_kernels_take(capsys):
    for op in ("softmax", "log_softmax"):
        assert cli_main(["list", op]) == 0
        out = capsys.readouterr().out
        assert out.count("lowering[pallas]") == 3
        assert out.count("pallas takes: float16, bfloat16 and float32 over the last axis") == 3


def test_block_sizes_reach_the_primitive_and_bad_ones_are_refused():
    x = jnp.zeros((2, 8), jnp.float32)
    blocks = BlockSizes(2, 16, num_warps=2)
    jaxpr = str(jax.make_jaxpr(lambda x: gradrules.log_softmax(x, block_sizes=blocks))(x))
    assert repr(blocks) in jaxpr
    with pytest.raises(TypeError, match=r"gradrules\.softmax: block_sizes must be a"):
        gradrules.softmax(x, block_sizes=(2, 16))
    with pytest.raises(ValueError, match=r"gradrules\.log_softmax: block_rows must be an int"):
        gradrules.log_softmax(x, block_sizes=BlockSizes(block_rows=0))
