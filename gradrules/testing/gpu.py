"""CUDA lowering on any machine: proof that a function's Pallas kernels lower
with the Triton backend, without a GPU.

``cuda_hlo(fn, *args)`` is the StableHLO text of ``jax.jit(fn)`` lowered for
the ``cuda`` platform (``jax.jit(fn).trace(*args).lower(lowering_platforms=
("cuda",))``) inside ``_jax.gpu_lowering_context()``, the abstract GPU that
JAX 0.11 needs there. Lowering runs the Pallas-to-Triton lowering of every
kernel (power-of-two block shapes, supported ops), so a kernel that lowers
here compiles on the GPU unless Triton's own compiler rejects it. Each kernel
call is a custom call to ``TRITON_CALL``; ``triton_calls(text)`` counts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import jax

from .. import _jax

__all__ = ["TRITON_CALL", "assert_lowers_to_kernels", "assert_triton_kernels", "cuda_hlo",
           "triton_calls", "triton_kernels"]

TRITON_CALL = "__gpu$xla.gpu.triton"
"""The custom-call target of a Pallas kernel lowered by the Triton backend."""


def cuda_hlo(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The StableHLO text of ``jax.jit(partial(fn, **kwargs))`` traced at
    ``args`` and lowered for CUDA. ``args`` may be arrays or
    ``jax.ShapeDtypeStruct`` (nothing is allocated or run); ``kwargs`` are
    closed over, so they may be static Python values (``causal=True``)."""
    with _jax.gpu_lowering_context():
        traced = jax.jit(partial(fn, **kwargs)).trace(*args)
        return traced.lower(lowering_platforms=("cuda",)).as_text()


def triton_calls(text: str) -> int:
    """The number of Triton kernel calls in lowered text (call sites: a kernel
    inside a loop body counts once)."""
    return text.count(f"@{TRITON_CALL}(")


def triton_kernels(text: str) -> list[str]:
    """The names of the Pallas kernels the Triton calls of lowered text run,
    one per call site, sorted."""
    return sorted(name for line in text.splitlines() if f"@{TRITON_CALL}(" in line
                  for name in re.findall(r'name = "([^"]+)"', line)[:1])


def assert_triton_kernels(text: str, expected: Iterable[str], what: str = "") -> None:
    """Lowered text calls exactly the kernels ``expected`` (a set: each once;
    a list: with its repeats)."""
    got = triton_kernels(text)
    assert got == sorted(expected), (what, got)


def assert_lowers_to_kernels(programs: dict[str, Callable[..., Any]], args: Sequence[Any],
                             expected: dict[str, Iterable[str]]) -> None:
    """Each program (forward, grad, jvp, ...) lowered for CUDA at ``args``
    calls exactly the kernels ``expected[name]``."""
    for name, fn in programs.items():
        assert_triton_kernels(cuda_hlo(fn, *args), expected[name], name)
