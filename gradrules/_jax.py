"""The one module of gradrules that imports JAX internals.

Everything that reaches into ``jax._src`` or into the transformation
registries (``ad.primitive_jvps``, ``batching.primitive_batchers``,
``mlir.register_lowering``, JAX's configuration states) goes through the
small functions below, so a change of JAX's internals between releases
(0.10.x and 0.11.x are supported) is absorbed here and nowhere else.

It also names the types of the rule contracts, used in every rule signature:

* ``Tangent``: an array or a symbolic zero (``Zero``), what a JVP rule
  receives per operand and may return per output;
* ``Cotangent``: the same for transpose rules;
* ``MaybeUndefined``: a transpose rule's operand, an array (held fixed) or an
  ``UndefinedPrimal`` (an operand the primitive is linear in);
* ``BatchDim``: the vmapped axis of a batching rule's operand, ``None`` when
  the operand is not batched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeAlias

import numpy as np

import jax
from jax._src import config as _config
from jax._src import core as _core
from jax._src import dispatch as _dispatch
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import mlir as _mlir
from jax._src.interpreters import partial_eval as _pe
from jax.core import ShapedArray
from jax.extend.core import ClosedJaxpr, Jaxpr, Primitive

__all__ = [
    "Array", "BatchDim", "BatchResult", "ClosedJaxpr", "Cotangent", "Jaxpr", "JvpResult",
    "MaybeUndefined", "Primitive", "ShapedArray", "ShardingTypeError", "Tangent",
    "UndefinedPrimal", "Zero",
    "aval_of", "config_state", "float0", "gpu_lowering_context", "is_undefined_primal",
    "is_zero", "iter_eqns", "jaxpr_primitives", "mesh_of", "new_primitive",
    "optional_string_config_state", "register_abstract_eval", "register_batch",
    "register_jvp", "register_lowering", "register_transpose", "registered_rules",
    "set_config", "spec_of", "traced_shardings", "transpose_like_primal",
    "with_explicit_shardings", "with_varying_axes", "zero_cotangent", "zero_tangent",
]

Zero = _ad.Zero
ShardingTypeError = _core.ShardingTypeError
"""What JAX raises where a sharding in types is ambiguous (not public API)."""
UndefinedPrimal = _ad.UndefinedPrimal
float0 = jax.dtypes.float0

# ---------------------------------------------------- rule-contract types
Array: TypeAlias = jax.Array
Tangent: TypeAlias = "jax.Array | Zero"
"""A tangent: an array, or a symbolic zero (``Zero``) for an operand that does not move."""
Cotangent: TypeAlias = "jax.Array | Zero"
"""A cotangent: an array, or a symbolic zero."""
MaybeUndefined: TypeAlias = "jax.Array | UndefinedPrimal"
"""A transpose rule's operand: a known array, or ``UndefinedPrimal`` (linear in it)."""
BatchDim: TypeAlias = "int | None"
"""The vmapped axis of a batching rule's operand (``None``: not batched)."""
JvpResult: TypeAlias = "tuple[Any, Any]"
"""``(primal_out, tangent_out)``; lists for a primitive with several results."""
BatchResult: TypeAlias = "tuple[Any, Any]"
"""``(out, out_dim)``; lists for a primitive with several results."""

_typeof = getattr(jax, "typeof", None) or getattr(jax.core, "get_aval")


class _ValidatedPrimitive(Primitive):
    """A Primitive that validates its params before JAX hashes them."""

    validate_params: Callable[[dict[str, Any]], None] | None = None
    vary_operands: bool = True

    def bind(self, *args: Any, **params: Any) -> Any:
        if self.validate_params is not None:
            self.validate_params(params)
        # inside shard_map, operands varying over different manual axes vary
        # over all of them (pvary, whose transpose psums the cotangent of an
        # invariant operand), as for JAX's own primitives
        if self.vary_operands:
            args = _core.auto_insert_reshard(*args)
        return super().bind(*args, **params)


def new_primitive(name: str, *, multiple_results: bool = False,
                  validate_params: Callable[[dict[str, Any]], None] | None = None,
                  vary_operands: bool = True) -> Primitive:
    """A JAX primitive whose eager impl compiles it through its lowering;
    ``validate_params(params)`` runs at every bind. Inside ``shard_map`` its
    operands are made to vary over the same manual axes (``pvary``), unless
    ``vary_operands`` is False: a primitive with collectives takes them as
    they are (an operand the same on every shard, such as labels, stays so)."""
    prim = _ValidatedPrimitive(name)
    prim.validate_params = validate_params
    prim.vary_operands = vary_operands
    prim.multiple_results = multiple_results
    prim.def_impl(partial(_dispatch.apply_primitive, prim))
    return prim


def register_abstract_eval(prim: Primitive, rule: Callable[..., Any]) -> None:
    prim.def_abstract_eval(rule)


def register_lowering(prim: Primitive, fn: Callable[..., Any], *, multiple_results: bool,
                      platform: str | None = None) -> None:
    """Lower ``prim`` by tracing ``fn`` (a function of arrays and params) on
    ``platform`` (every platform when None)."""
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


def registered_rules(prim: Primitive) -> dict[str, Any]:
    """The JVP and transpose rules JAX holds for ``prim`` (None where it has
    none), as ``register_jvp`` / ``register_transpose`` left them. (JAX wraps
    batching rules in a closure of its own, so there is no batching entry.)"""
    return {"jvp": _ad.primitive_jvps.get(prim),
            "transpose": _ad.primitive_transposes.get(prim)}


def config_state(name: str, values: Sequence[str], default: str, help: str) -> Any:
    """A JAX configuration state (``jax.config.update(name, v)``, or ``with
    state(v):``) that is part of the jit cache key and of the trace context,
    so a jitted function traced under one value is traced again under another."""
    return _config.enum_state(name, tuple(values), default, help, include_in_jit_key=True,
                              include_in_trace_context=True)


def optional_string_config_state(name: str, help: str) -> Any:
    """A string-or-None JAX configuration state, part of the trace context
    (and so of the jit cache key), like ``config_state``."""
    return _config.optional_string_state(name, None, help, include_in_trace_context=True)


def with_varying_axes(out: Any, avals: Sequence[Any], invariant: str | None = None) -> Any:
    """The output aval(s) of a primitive varying over the manual mesh axes
    (inside ``shard_map``) its operands vary over, which ``bind`` made equal,
    except ``invariant``, an axis the primitive reduces over (``psum``)."""
    varying = frozenset().union(*(a.mat.varying for a in avals if isinstance(a, ShapedArray)))
    varying -= {invariant}
    if not varying:
        return out
    mat = _core.ManualAxisType(varying=varying)

    def vary(a: ShapedArray) -> ShapedArray:
        sharding = _core.get_cur_mesh_sharding(jax.sharding.PartitionSpec(*[None] * a.ndim))
        return a.update(sharding=sharding).update_manual_axis_type(mat)
    return type(out)(map(vary, out)) if isinstance(out, (list, tuple)) else vary(out)


def _explicit_sharded(aval: Any) -> bool:
    """Whether ``aval``'s type is sharded over a mesh axis of type Explicit."""
    sharding = getattr(aval, "sharding", None)
    if not isinstance(aval, ShapedArray) or sharding is None:
        return False
    mesh = sharding.mesh
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types)
                if t == jax.sharding.AxisType.Explicit}
    used = (e for entry in sharding.spec if entry is not None
            for e in ((entry,) if isinstance(entry, str) else entry))
    return any(e in explicit for e in used)


def traced_shardings(fn: Callable[..., Any], avals: Sequence[Any]) -> list[Any]:
    """The shardings of the results of ``fn`` traced on ``avals``: JAX's own
    sharding rules applied through a lax/jax.numpy composition."""
    closed = jax.make_jaxpr(fn)(*avals)
    return [v.aval.sharding for v in closed.jaxpr.outvars]


def with_explicit_shardings(out: Any, avals: Sequence[Any], fn: Callable[..., Any],
                            op: str) -> Any:
    """The output aval(s) of a primitive whose operands are sharded over
    Explicit mesh axes, with the shardings its lowering ``fn`` (a lax /
    jax.numpy composition, or gradrules ops whose types carry theirs) gives:
    as the jax.numpy code it replaces. A ``ShardingTypeError`` of that trace
    (an ambiguous sharding) is raised again naming ``op``. Unsharded operands
    leave ``out`` as it is."""
    if not any(_explicit_sharded(a) for a in avals):
        return out
    try:
        shardings = traced_shardings(fn, avals)
    except ShardingTypeError as exc:
        raise ShardingTypeError(f"{op}: {exc}") from None
    if isinstance(out, (list, tuple)):
        return type(out)(o.update(sharding=s) for o, s in zip(out, shardings))
    return out.update(sharding=shardings[0])


def transpose_like_primal(rule: Callable[..., list[Any]], ct: Any,
                          operands: Sequence[MaybeUndefined]) -> list[Any]:
    """``rule(ct, *operands)``, the cotangents of a transpose; where anything
    is sharded over Explicit mesh axes, run with those axes Auto
    (``jax.sharding.auto_axes``: XLA places the contractions over sharded
    dims, as for JAX's own transposes given their ``out_sharding``) and each
    cotangent resharded to its primal's cotangent type (a symbolic zero among
    several cotangents is then instantiated)."""
    leaves, tree = jax.tree.flatten((ct, list(operands)),
                                    is_leaf=lambda x: isinstance(x, (Zero, UndefinedPrimal)))
    if not any(_explicit_sharded(aval_of(x)) for x in leaves):
        return rule(ct, *operands)
    arrays = [i for i, x in enumerate(leaves) if not isinstance(x, (Zero, UndefinedPrimal))]
    undefined = [i for i, o in enumerate(operands) if isinstance(o, UndefinedPrimal)]

    def run(*xs: Any) -> list[Any]:
        filled = list(leaves)
        for i, x in zip(arrays, xs):
            filled[i] = x
        ct_in, ops_in = jax.tree.unflatten(tree, filled)
        cts = rule(ct_in, *ops_in)
        return [_ad.instantiate_zeros(cts[i]) if cts[i] is not None
                else jax.numpy.zeros(operands[i].aval.shape, operands[i].aval.dtype)
                for i in undefined]
    wanted = [operands[i].aval.to_ct_aval().sharding.spec for i in undefined]
    out = jax.sharding.auto_axes(run, out_sharding=wanted)(*(leaves[i] for i in arrays))
    result: list[Any] = [None] * len(operands)
    for i, c in zip(undefined, out):
        result[i] = c
    return result


def mesh_of(x: Any) -> Any:
    """The mesh ``x`` lives on: the concrete mesh of a concrete array, the
    abstract mesh of a tracer's type, else the context's (empty outside any
    mesh)."""
    sharding = getattr(x, "sharding", None) if not isinstance(x, jax.core.Tracer) else None
    if isinstance(sharding, jax.sharding.NamedSharding):
        return sharding.mesh
    mesh = _typeof(x).sharding.mesh
    return mesh if mesh.axis_names else jax.sharding.get_abstract_mesh()


def spec_of(x: Any) -> tuple[Any, ...]:
    """The partition spec of ``x``'s type, one entry per dim (None: unsharded
    or, on an Auto mesh, unknown until XLA propagates)."""
    spec = tuple(_typeof(x).sharding.spec)
    return spec + (None,) * (len(np.shape(x)) - len(spec))


def set_config(name: str, value: Any) -> None:
    jax.config.update(name, value)


def gpu_lowering_context(device_kind: str = "NVIDIA H200", num_cores: int = 132
                         ) -> contextlib.AbstractContextManager[Any]:
    """A context in which ``jax.jit(f).trace(...).lower(lowering_platforms=
    ("cuda",))`` lowers Pallas Triton kernels on a machine without a GPU.

    It is the current abstract mesh (the empty one outside any mesh) with an
    abstract GPU device of ``device_kind`` (with ``num_cores`` SMs). JAX 0.11
    reads the GPU's compute capability from that device kind and refuses to
    lower a Triton ``pallas_call`` without a GPU or such a device; JAX 0.10
    ignores it (it falls back to compute capability 9.0 without a GPU), so the
    one context serves both."""
    device = jax.sharding.AbstractDevice(device_kind=device_kind, num_cores=num_cores,
                                         platform="gpu")
    mesh = jax.sharding.get_abstract_mesh().update(abstract_device=device)
    return jax.sharding.use_abstract_mesh(mesh)


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
    return Zero(aval.to_tangent_aval())


def zero_cotangent(operand: MaybeUndefined) -> Zero:
    """The symbolic-zero cotangent of an undefined (linear) transpose operand."""
    return Zero(operand.aval.to_ct_aval())


def aval_of(x: Any) -> ShapedArray:
    """The abstract value of an array, tracer, UndefinedPrimal or symbolic zero."""
    if isinstance(x, (UndefinedPrimal, Zero)):
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
