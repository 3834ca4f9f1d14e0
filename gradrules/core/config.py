"""Global configuration: which implementation a fused op lowers to.

The choice is read by the public functions and passed to the primitives as
their ``kernel`` param, so it shows in the jaxpr and jit caches stay correct.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

KERNELS = ("auto", "xla", "pallas", "interpret")


@dataclass
class Config:
    """``kernel``: ``"auto"`` (Pallas on GPU where a kernel exists, else XLA),
    ``"xla"`` (the reference lowering), ``"pallas"`` or ``"interpret"`` (the
    Pallas kernel run by the Pallas interpreter, for CPU tests)."""

    kernel: str = "auto"

    def set_kernel(self, kernel: str) -> None:
        self.kernel = validate_kernel("gradrules.config", kernel)

    @contextlib.contextmanager
    def using(self, *, kernel: str) -> Iterator[None]:
        """``with gradrules.config.using(kernel="interpret"): ...``"""
        old = self.kernel
        self.set_kernel(kernel)
        try:
            yield
        finally:
            self.kernel = old


def validate_kernel(op: str, kernel: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"{op}: kernel must be one of {KERNELS}, got {kernel!r}")
    return kernel


config = Config()
