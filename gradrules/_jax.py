"""The one module of gradrules that imports JAX internals.

Everything that reaches into ``jax._src`` or into the transformation
registries (``ad.primitive_jvps``, ``batching.primitive_batchers``,
``mlir.register_lowering``) goes through the small functions below, so a change
of JAX's internals between releases (0.10.x and 0.11.x are supported) is
absorbed here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

import jax
from jax._src import dispatch as _dispatch
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import mlir as _mlir
from jax._src.interpreters import partial_eval as _pe
from jax.core import ShapedArray
from jax.extend.core import ClosedJaxpr, Jaxpr, Primitive

__all__ = [
    "ClosedJaxpr", "Jaxpr", "Primitive", "ShapedArray", "UndefinedPrimal", "Zero",
    "float0", "is_undefined_primal", "is_zero", "iter_eqns",
    "jaxpr_primitives", "new_primitive", "register_batch", "register_jvp",
    "register_lowering", "register_transpose", "zero_tangent",
]

Zero = _ad.Zero
UndefinedPrimal = _ad.UndefinedPrimal
float0 = jax.dtypes.float0


_typeof = getattr(jax, "typeof", None) or getattr(jax.core, "get_aval")


class _ValidatedPrimitive(Primitive):
    """A Primitive that validates its params before JAX hashes them."""

    validate_params: Callable[[dict[str, Any]], None] | None = None

    def bind(self, *args: Any, **params: Any) -> Any:
        if self.validate_params is not None:
            self.validate_params(params)
        return super().bind(*args, **params)


def new_primitive(name: str, *, multiple_results: bool = False,
                  validate_params: Callable[[dict[str, Any]], None] | None = None
                  ) -> Primitive:
    """A JAX primitive whose eager impl compiles it through its lowering;
    ``validate_params(params)`` runs at every bind."""
    prim = _ValidatedPrimitive(name)
    prim.validate_params = validate_params
    prim.multiple_results = multiple_results
    prim.def_impl(partial(_dispatch.apply_primitive, prim))
    return prim


def register_abstract_eval(prim: Primitive, rule: Callable[..., Any]) -> None:
    prim.def_abstract_eval(rule)


def register_lowering(prim: Primitive, fn: Callable[..., Any], *, multiple_results: bool,
                      platform: str | None = None) -> None:
    """Lower ``prim`` by tracing ``fn`` (a function of arrays and params)."""
    _mlir.register_lowering(prim, _mlir.lower_fun(fn, multiple_results=multiple_results),
                            platform=platform)


def register_jvp(prim: Primitive, rule: Callable[..., Any]) -> None:
    """``rule(primals, tangents, **params) -> (primal_out, tangent_out)``."""
    _ad.primitive_jvps[prim] = rule


def register_transpose(prim: Primitive, rule: Callable[..., Any]) -> None:
    """``rule(ct, *operands, **params) -> list`` (one cotangent or None per operand)."""
    _ad.primitive_transposes[prim] = rule


def register_batch(prim: Primitive, rule: Callable[..., Any]) -> None:
    """``rule(args, dims, **params) -> (out, out_dim)``; an unbatched dim is None."""
    _batching.primitive_batchers[prim] = rule


def has_jvp(prim: Primitive) -> bool:
    return prim in _ad.primitive_jvps


def has_transpose(prim: Primitive) -> bool:
    return prim in _ad.primitive_transposes


def has_batch(prim: Primitive) -> bool:
    return prim in _batching.fancy_primitive_batchers


def is_undefined_primal(x: Any) -> bool:
    return isinstance(x, UndefinedPrimal)


def is_zero(t: Any) -> bool:
    """True for a symbolic zero tangent/cotangent (or a float0 array)."""
    if type(t) is Zero or t is None:
        return True
    return getattr(t, "dtype", None) == float0


def tangent_dtype(dtype: Any) -> Any:
    dtype = np.dtype(dtype)
    return dtype if jax.numpy.issubdtype(dtype, jax.numpy.inexact) else float0


def zero_tangent(aval_or_value: Any) -> Zero:
    """A symbolic zero tangent for a primal value or aval."""
    aval = getattr(aval_or_value, "aval", aval_or_value)
    if not isinstance(aval, ShapedArray):
        aval = _typeof(aval_or_value)
    return Zero(ShapedArray(aval.shape, tangent_dtype(aval.dtype)))


def aval_of(x: Any) -> ShapedArray:
    """The abstract value of an array, tracer or UndefinedPrimal."""
    if isinstance(x, UndefinedPrimal):
        return x.aval
    if isinstance(x, ShapedArray):
        return x
    return _typeof(x)


def iter_eqns(jaxpr: Jaxpr | ClosedJaxpr) -> Iterator[Any]:
    """Every equation of a jaxpr, recursing into sub-jaxprs (pjit, scan, ...)."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from iter_eqns(sub)


def dce(closed: ClosedJaxpr) -> Jaxpr:
    """The jaxpr without equations whose outputs are unused."""
    jaxpr = closed.jaxpr
    new, _ = _pe.dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))
    return new


def jaxpr_primitives(closed: ClosedJaxpr) -> list[tuple[Primitive, tuple[str, ...]]]:
    """(primitive, output dtypes) of every live equation, recursively."""
    out = []
    for eqn in iter_eqns(dce(closed)):
        out.append((eqn.primitive, tuple(str(v.aval.dtype) for v in eqn.outvars
                                         if hasattr(v.aval, "dtype"))))
    return out


def jax_version() -> tuple[int, ...]:
    return tuple(int(p) for p in jax.__version__.split(".")[:3] if p.isdigit())
