"""Global configuration: which implementation a fused op lowers to.

The choice is a JAX configuration state (``gradrules_kernel``; the
environment variable ``GRADRULES_KERNEL`` sets it at import) that is part of
the jit cache key: a function jitted under one choice is traced again
under another, so ``with gradrules.config.using(kernel="xla"): f(x)`` always
runs the lowering it names. The public functions read it and pass it to the
primitives inside their ``implementation`` param, so it shows in the jaxpr.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .. import _jax

KERNELS = ("auto", "xla", "pallas", "interpret")

_KERNEL = _jax.config_state(
    "gradrules_kernel", KERNELS, "auto",
    help="gradrules: the lowering of the fused ops: 'auto' (the Pallas kernel on a CUDA GPU "
         "where one exists, else XLA), 'xla', 'pallas', or 'interpret' (the Pallas kernel run "
         "by the Pallas interpreter).")


class Config:
    """``kernel``: ``"auto"`` (Pallas on GPU where a kernel exists, else XLA),
    ``"xla"`` (the reference lowering), ``"pallas"`` or ``"interpret"`` (the
    Pallas kernel run by the Pallas interpreter, for CPU tests)."""

    @property
    def kernel(self) -> str:
        return str(_KERNEL.value)

    @kernel.setter
    def kernel(self, kernel: str) -> None:
        self.set_kernel(kernel)

    def set_kernel(self, kernel: str) -> None:
        """Set the choice for the rest of the process (``jax.config.update``)."""
        _jax.set_config("gradrules_kernel", validate_kernel("gradrules.config", kernel))

    @contextlib.contextmanager
    def using(self, *, kernel: str) -> Iterator[None]:
        """``with gradrules.config.using(kernel="interpret"): ...`` (this thread)."""
        with _KERNEL(validate_kernel("gradrules.config", kernel)):
            yield


def validate_kernel(op: str, kernel: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"{op}: kernel must be one of {KERNELS}, got {kernel!r}")
    return kernel


config = Config()
