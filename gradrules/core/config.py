"""Global configuration: which implementation a fused op lowers to, and the
mesh axes its batch and heads are sharded on where the mesh cannot say.

The kernel choice is a JAX configuration state (``gradrules_kernel``; the
environment variable ``GRADRULES_KERNEL`` sets it at import) that is part of
the jit cache key: a function jitted under one choice is traced again
under another, so ``with gradrules.config.using(kernel="xla"): f(x)`` always
runs the lowering it names. The public functions read it and pass it to the
primitives inside their ``implementation`` param, so it shows in the jaxpr.

``batch_axes`` / ``head_axes`` (states ``gradrules_batch_axes`` /
``gradrules_head_axes``, also in the jit cache key): the mesh axes a fused
op's batch and head dims are sharded on, for meshes with Auto axes, whose
array types do not carry their sharding (``primitives/_sharding``). On a
mesh with Explicit axes the types say it and these are not read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from .. import _jax

KERNELS = ("auto", "xla", "pallas", "interpret")

_KERNEL = _jax.config_state(
    "gradrules_kernel", KERNELS, "auto",
    help="gradrules: the lowering of the fused ops: 'auto' (the Pallas kernel on a CUDA GPU "
         "where one exists, else XLA), 'xla', 'pallas', or 'interpret' (the Pallas kernel run "
         "by the Pallas interpreter).")


_AXES = {name: _jax.optional_string_config_state(
    f"gradrules_{name}", help=f"gradrules: the mesh axes (comma-separated) the {dim} dims of "
    "the fused ops are sharded on, on meshes with Auto axes.")
    for name, dim in (("batch_axes", "batch"), ("head_axes", "head"))}


def _axes_value(name: str, axes: str | Sequence[str] | None) -> str | None:
    if axes is None or isinstance(axes, str):
        return axes or None
    if not all(isinstance(a, str) for a in axes):
        raise TypeError(f"gradrules.config: {name} must be a mesh axis name or a sequence of "
                        f"them, got {axes!r}")
    return ",".join(axes) or None


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

    @property
    def batch_axes(self) -> tuple[str, ...]:
        return _axes_tuple(_AXES["batch_axes"].value)

    @property
    def head_axes(self) -> tuple[str, ...]:
        return _axes_tuple(_AXES["head_axes"].value)

    @contextlib.contextmanager
    def using(self, *, kernel: str | None = None, batch_axes: str | Sequence[str] | None = None,
              head_axes: str | Sequence[str] | None = None) -> Iterator[None]:
        """``with gradrules.config.using(kernel="interpret"): ...`` (this
        thread); ``batch_axes="data", head_axes="model"``: the mesh axes of
        the fused ops' batch and heads on an Auto mesh. What is not given
        keeps its value."""
        with contextlib.ExitStack() as stack:
            if kernel is not None:
                stack.enter_context(_KERNEL(validate_kernel("gradrules.config", kernel)))
            for name, axes in (("batch_axes", batch_axes), ("head_axes", head_axes)):
                if axes is not None:
                    stack.enter_context(_AXES[name](_axes_value(name, axes)))
            yield


def validate_kernel(op: str, kernel: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"{op}: kernel must be one of {KERNELS}, got {kernel!r}")
    return kernel


def _axes_tuple(value: str | None) -> tuple[str, ...]:
    return tuple(value.split(",")) if value else ()


config = Config()
