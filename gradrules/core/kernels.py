"""Kernel selection: the implementation table of a primitive with several
lowerings, and its one ``implementation`` param.

A fused primitive (DESIGN.md, "Fused ops and kernels") declares its
implementations when it is defined, as a table::

    define_primitive("softmax", ..., implementations={"xla": _softmax_xla,
                                                      "pallas": pallas.softmax.forward})

and carries one hashable param, ``implementation=Implementation(kernel,
blocks)``: the kernel choice the public function read from
``gradrules.config`` and a frozen dataclass of block sizes (or None), the way
the Pallas reference ops pass their ``BlockSizes``. The rules pass it on
untouched; only the lowering reads it:

* ``"auto"``: the ``"pallas"`` entry on a CUDA GPU where there is one, the
  ``"xla"`` entry elsewhere;
* ``"xla"``: the ``"xla"`` entry on every platform;
* ``"pallas"`` / ``"interpret"``: the ``"pallas"`` entry, called with
  ``interpret=False`` / ``True`` (the Pallas interpreter, on any platform).
  Asking for it where the table has none raises ``NotImplementedError`` at
  trace time.

A table may also have a ``"supports"`` entry: a function of the operands
(arrays or avals) and params, ``blocks`` among them, that returns None when
the Pallas kernel takes the call and otherwise a short reason. Under
``"auto"`` an unsupported call runs the ``"xla"`` entry; under ``"pallas"`` /
``"interpret"`` it raises ``NotImplementedError`` at trace time with that
reason. Its docstring says which calls the kernel takes (``gradrules list``).

An entry that takes a ``blocks`` keyword receives ``implementation.blocks``,
one that takes ``implementation`` (a composition binding fused primitives,
e.g. silu_rowsplit's) the param itself; every entry receives the primitive's
other params.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from .. import _jax
from .config import config, validate_kernel
from .meta import op_name

IMPLEMENTATION = "implementation"   # the name of the param
TABLE_KEYS = ("xla", "pallas", "supports")


@dataclass(frozen=True)
class Implementation:
    """Which lowering a primitive with an implementation table runs.

    ``kernel``: one of ``gradrules.core.config.KERNELS``; ``blocks``: a frozen
    (hashable) dataclass of block sizes that the chosen entry reads, or None.
    """

    kernel: str = "auto"
    blocks: Hashable | None = None


def implementation(blocks: Hashable | None = None) -> Implementation:
    """The ``implementation`` param a public function binds: the kernel of
    ``gradrules.config`` (a valid choice: the config state checks it) and
    ``blocks``."""
    return Implementation(config.kernel, blocks)


def check_table(name: str, table: Mapping[str, Callable[..., Any]]
                ) -> dict[str, Callable[..., Any]]:
    """An implementation table: an ``"xla"`` entry, optionally ``"pallas"``
    and, with it, ``"supports"``."""
    unknown = set(table) - set(TABLE_KEYS)
    if unknown or "xla" not in table or ("supports" in table and "pallas" not in table):
        raise TypeError(f"define_primitive({name}): implementations must have an 'xla' entry "
                        f"and optionally 'pallas' and 'supports', got {sorted(table)}")
    return dict(table)


def unsupported(table: Mapping[str, Callable[..., Any]], args: Sequence[Any],
                implementation: Implementation, params: Mapping[str, Any]) -> str | None:
    """Why the table's Pallas kernel does not take this call (None: it does)."""
    if "pallas" not in table:
        return "no Pallas kernel yet"
    if "supports" not in table:
        return None
    return table["supports"](*args, blocks=implementation.blocks, **params)


def check_implementation(name: str, table: Mapping[str, Callable[..., Any]],
                         args: Sequence[Any], params: Mapping[str, Any]) -> None:
    """At trace time: the ``implementation`` param is an ``Implementation``
    whose kernel exists and takes these operands (avals)."""
    params = dict(params)
    value = params.pop(IMPLEMENTATION)
    if not isinstance(value, Implementation):
        raise TypeError(f"{name}: param implementation must be an Implementation, got {value!r}")
    validate_kernel(op_name(name), value.kernel)
    if value.kernel not in ("pallas", "interpret"):
        return
    reason = unsupported(table, args, value, params)
    if reason is not None:
        what = (f"kernel={value.kernel!r} has no Pallas kernel yet" if "pallas" not in table
                else f"kernel={value.kernel!r}: the Pallas kernel does not take this call "
                f"({reason})")
        raise NotImplementedError(f"{op_name(name)}: {what}; use kernel='auto' or 'xla' "
                                  "(gradrules.config.using(kernel='xla'))")


def takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn``'s signature has a parameter ``name``."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def dispatch(table: Mapping[str, Callable[..., Any]], on_gpu: bool, *args: Any,
             implementation: Implementation, **params: Any) -> Any:
    """The lowering of a primitive with an implementation table (see the module
    docstring): the chosen entry, traced with the primitive's other params."""
    kernel = implementation.kernel
    if kernel == "auto":
        on_gpu = on_gpu and unsupported(table, args, implementation, params) is None
        kernel = "pallas" if on_gpu else "xla"
    fn = table["xla" if kernel == "xla" else "pallas"]
    extra: dict[str, Any] = {} if kernel == "xla" else {"interpret": kernel == "interpret"}
    if takes_keyword(fn, "blocks"):
        extra["blocks"] = implementation.blocks
    if takes_keyword(fn, IMPLEMENTATION):     # a composition that binds fused primitives
        extra[IMPLEMENTATION] = implementation
    return fn(*args, **params, **extra)


def on_xla(implementation: Implementation) -> Implementation:
    """``implementation`` with the ``"xla"`` kernel (its blocks kept), for a
    primitive only rules bind, which has no Pallas kernel whatever the call
    asked for (a fused op's second-order tangent)."""
    return replace(implementation, kernel="xla")


def xla_lowering(table: Mapping[str, Callable[..., Any]], *args: Any,
                 implementation: Implementation, **params: Any) -> Any:
    """The table's XLA entry, whatever kernel ``implementation`` names (the
    composition whose types give the primitive's output shardings)."""
    return dispatch(table, False, *args, implementation=on_xla(implementation), **params)


def register_table_lowerings(prim: _jax.Primitive, table: Mapping[str, Callable[..., Any]],
                             *, multiple_results: bool) -> None:
    """The lowering of ``prim`` on every platform, and on CUDA (where "auto"
    picks the Pallas entry)."""
    _jax.register_lowering(prim, partial(dispatch, table, False),
                           multiple_results=multiple_results)
    if "pallas" in table:
        _jax.register_lowering(prim, partial(dispatch, table, True),
                               multiple_results=multiple_results, platform="cuda")
