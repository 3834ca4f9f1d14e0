"""The one comparison every kernel test makes: a function's forward, the
grads of its float inputs, ``jax.jvp`` and a Hessian-vector product, in one
jitted program, under ``kernel="interpret"`` (the Pallas kernels run by the
Pallas interpreter) against ``kernel="xla"`` (the oracle).

Tolerances: float32 round-off for float32 (``2e-5`` of the largest reference
entry, both paths accumulating in float32), bfloat16 / float16 rounding of
the outputs otherwise (``2e-2``). Infinite entries (a log_softmax of a
``-inf`` logit) must sit at the same places in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ..core.config import config

__all__ = ["assert_close", "assert_kernels_match_xla", "everything", "lowering_matrix",
           "tolerance"]


KERNEL_DTYPES = ("float16", "bfloat16", "float32")


def lowering_matrix(cases: Sequence[Any]) -> list[tuple[Any, str]]:
    """The (case, dtype) pairs a CUDA-lowering test lowers: every case in its
    own dtype, and each dtype the kernels take that no case has on the first
    case (every case and every dtype, without their product)."""
    seen = {case.dtype for case in cases}
    return ([(case, case.dtype) for case in cases]
            + [(cases[0], dtype) for dtype in KERNEL_DTYPES if dtype not in seen])


def tolerance(dtype: Any) -> float:
    return 2e-5 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64)) else 2e-2


def everything(f: Callable[..., Any], weight: Callable[[jax.Array], jax.Array] = jnp.square
               ) -> Callable[..., dict[str, Any]]:
    """``run(primals, tangents)``: f's output, the grads of ``sum(weight(out))``
    with respect to every primal, the jvp of f and the HVP of that loss, jitted."""
    def loss(*args: Any) -> jax.Array:
        return jnp.sum(weight(f(*args).astype(jnp.float32)))

    def run(primals: Sequence[Any], tangents: Sequence[Any]) -> dict[str, Any]:
        primals, tangents = tuple(primals), tuple(tangents)
        grad = jax.grad(loss, argnums=tuple(range(len(primals))))
        return {"out": f(*primals), "grad": grad(*primals),
                "jvp": jax.jvp(f, primals, tangents)[1],
                "hvp": jax.jvp(grad, primals, tangents)[1]}
    return jax.jit(run)


def assert_kernels_match_xla(f: Callable[..., Any], primals: Sequence[Any],
                             tangents: Sequence[Any], dtype: Any,
                             weight: Callable[[jax.Array], jax.Array] = jnp.square) -> None:
    """``everything(f)`` under "interpret" agrees with "xla" (module docstring)."""
    results = {}
    for kernel in ("xla", "interpret"):
        with config.using(kernel=kernel):
            results[kernel] = everything(f, weight)(primals, tangents)
    assert_close(results["xla"], results["interpret"], tolerance(dtype))


def assert_close(want: Any, got: Any, tol: float) -> None:
    """Every leaf of ``got`` has the shape of ``want``'s, non-finite entries
    (NaN, inf) at the same places, and the others within ``tol`` times the
    largest finite entry of ``want``."""
    flat_ref, _ = jax.tree_util.tree_flatten_with_path(want)
    for (path, ref), got in zip(flat_ref, jax.tree_util.tree_leaves(got)):
        ref, got = np.asarray(ref, np.float32), np.asarray(got, np.float32)
        where = jax.tree_util.keystr(path)
        assert got.shape == ref.shape, where
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref), err_msg=where)
        ok = np.isfinite(ref)
        if not ok.any():
            continue
        scale = max(np.abs(ref[ok]).max(), 1e-30)
        err = np.abs(got[ok] - ref[ok]).max() / scale
        assert err <= tol, (where, err)
