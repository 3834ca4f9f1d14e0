"""define_primitive and register_rules: the two calls every op is made of.

A primitive is made by one ``define_primitive`` call that gives its name,
operand and param names, abstract evaluation (infer_meta) and its lowering:
``impl`` (plain ``jax.numpy``/``lax``, or a composition of gradrules ops;
the eager impl and the lowering on every platform), or an implementation
table (``implementations={"xla": ..., "pallas": ...}``, ``core.kernels``),
which adds the one ``implementation`` param. Its rules are registered right
after by one ``register_rules`` call; each rule is a short named function
whose signature is checked against the primitive's.

Rule contracts (as in JAX's own ``ad`` and ``batching`` modules; the types
are in ``gradrules._jax``):

* ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``; a
  ``Tangent`` may be a symbolic zero (``Zero``), and so may the returned one.
* ``transpose(ct, *operands, **params) -> list``: the operands the primitive
  is linear in (``linear=``, by name) arrive as ``UndefinedPrimal``
  (``MaybeUndefined``); the result holds one cotangent (or ``None`` / a
  symbolic zero) per operand. The rule never sees a cotangent that is a
  symbolic zero as a whole; with several outputs some entries may be.
* ``batch(args, dims, **params) -> (out, out_dim)``: ``dims[i]`` is the batch
  axis of ``args[i]`` or ``None`` (``BatchDim``); the rule binds the
  primitive once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import Any

from .. import _jax
from .._jax import Cotangent, JvpResult, MaybeUndefined, Tangent
from .kernels import (IMPLEMENTATION, check_implementation, check_table,
                      register_table_lowerings, xla_lowering)
from .meta import check_size, op_name
from .registry import NOT_DIFFERENTIABLE, NOT_LINEAR, PRIMITIVES, ZERO_DERIVATIVE, PrimitiveInfo

InferMeta = Callable[..., Any]


def define_primitive(name: str, *, family: str, operands: tuple[str, ...],
                     infer_meta: InferMeta, impl: Callable[..., Any] | None = None,
                     implementations: Mapping[str, Callable[..., Any]] | None = None,
                     params: tuple[str, ...] = (), multiple_results: bool = False,
                     outputs: tuple[str, ...] = (), invariant_over: str | None = None,
                     vary_operands: bool = True) -> _jax.Primitive:
    """Make and register a primitive.

    ``infer_meta(*avals, **params)`` returns the output ``ShapedArray`` (a
    list of them with ``multiple_results``) and raises ``TypeError`` /
    ``ValueError`` naming the op for bad input. Give either ``impl(*arrays,
    **params)``, the lowering on every platform, or ``implementations``, a
    table with an ``"xla"`` entry and optionally a ``"pallas"`` one, chosen by
    the ``implementation`` param this adds (``core.kernels``). ``outputs``
    names the results (a fused forward's: its output and residuals, which its
    tangent map takes by these names). ``invariant_over`` names the param
    holding a mesh axis name whose shards the primitive reduces over with a
    collective (``psum``): inside ``shard_map`` its results do not vary over
    that axis (they vary over the operands' other manual axes). Inside
    ``shard_map`` operands varying over different manual axes are made to
    vary over all of them (``pvary``), as for JAX's own primitives, unless
    ``vary_operands`` is False or ``invariant_over`` is given: then they are
    bound as they vary (a parallel op's labels and per-token cotangents stay
    the same on every shard, so its transposes give cotangents of their type).
    """
    if (impl is None) == (implementations is None):
        raise TypeError(f"define_primitive({name}): give exactly one of impl and implementations")
    table = check_table(name, implementations) if implementations is not None else None
    all_params = tuple(params) + ((IMPLEMENTATION,) if table is not None else ())
    check = partial(validate_params, name, frozenset(all_params))
    prim = _jax.new_primitive(name, multiple_results=multiple_results, validate_params=check,
                              vary_operands=vary_operands and invariant_over is None)
    lowering = impl if table is None else partial(xla_lowering, table)
    _jax.register_abstract_eval(prim, partial(checked_infer_meta, name, table, infer_meta,
                                              invariant_over, lowering))
    if table is None:
        assert impl is not None
        lowerings = {"xla": impl}
        _jax.register_lowering(prim, impl, multiple_results=multiple_results)
    else:
        lowerings = {key: fn for key, fn in table.items() if key != "supports"}
        register_table_lowerings(prim, table, multiple_results=multiple_results)
    PRIMITIVES[prim] = PrimitiveInfo(prim=prim, family=family, operands=tuple(operands),
                                     params=all_params, multiple_results=multiple_results,
                                     infer_meta=infer_meta, lowerings=lowerings,
                                     outputs=tuple(outputs),
                                     kernel_supports=(table or {}).get("supports"))
    return prim


def checked_infer_meta(name: str, table: Mapping[str, Callable[..., Any]] | None,
                       infer_meta: InferMeta, invariant_over: str | None,
                       lowering: Callable[..., Any], *avals: Any, **params: Any) -> Any:
    """The abstract eval of a primitive: its ``infer_meta``, after checking
    that the implementation it asks for exists; on operands sharded over
    Explicit mesh axes, with the output shardings of its XLA ``lowering``
    traced on them (``_jax.with_explicit_shardings``: the sharding rules of
    the jax.numpy composition it replaces); varying over the operands'
    manual mesh axes but the one named by the param ``invariant_over``."""
    if table is not None:
        check_implementation(name, table, avals, params)
    meta = infer_meta(*avals, **params)
    for aval in meta if isinstance(meta, (tuple, list)) else (meta,):
        check_size(name, "the output", aval.shape, partial(_given, params))
    out = _jax.with_explicit_shardings(meta, avals, partial(lowering, **params), op_name(name))
    invariant = params[invariant_over] if invariant_over is not None else None
    return _jax.with_varying_axes(out, avals, invariant)


def _given(params: Mapping[str, Any]) -> str:
    """The params of a bind, for an error message (cut at 300 characters)."""
    text = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return text if len(text) <= 300 else text[:297] + "..."


def validate_params(name: str, expected: frozenset[str], given: dict[str, Any]) -> None:
    """At every bind: exactly the declared params, all hashable."""
    if set(given) != expected:
        missing = sorted(expected - set(given))
        extra = sorted(set(given) - expected)
        raise TypeError(f"{name}: bad params (missing {missing}, unexpected {extra})")
    for k, v in given.items():
        if not isinstance(v, Hashable):
            raise TypeError(f"{name}: param {k}={v!r} is not hashable (use a tuple)")


_MARKERS = {
    "jvp": (NOT_DIFFERENTIABLE, ZERO_DERIVATIVE),
    "transpose": (NOT_LINEAR,),
    "batch": (),
}


def register_rules(prim: _jax.Primitive, *, jvp: Any = None, transpose: Any = None,
                   batch: Any = None, linear: Sequence[str] | Sequence[Sequence[str]] = (),
                   **unknown: Any) -> None:
    """Register a primitive's rules.

    ``jvp`` may be the marker ``NOT_DIFFERENTIABLE`` (integer or bool output:
    float0 symbolic-zero tangents) or ``ZERO_DERIVATIVE`` (float output whose
    derivative is zero wherever it exists, e.g. floor). ``transpose`` may be
    ``NOT_LINEAR``. A transpose rule needs ``linear``, the operands the
    primitive is linear in, by name: one group, ``("x", "src")``, for a
    primitive jointly linear in them, or several, ``(("x",), ("y",))``, for
    one linear in each group with the others held fixed (multiply, matmul);
    ``"*name"`` stands for each operand of a variadic list on its own. The
    generic rules (``linear_jvp``, ``composite_jvp``, ``transpose_to``) need a
    single group. Unknown rule or operand names and rules whose signature
    does not fit the primitive raise ``TypeError``.
    """
    info = PRIMITIVES.get(prim)
    if info is None:
        raise TypeError(f"register_rules: {prim} was not made by define_primitive")
    if unknown:
        raise TypeError(f"register_rules({info.name}): unknown rule {next(iter(unknown))!r}; "
                        f"expected one of {tuple(_MARKERS)} and linear=")
    rules = {k: r for k, r in (("jvp", jvp), ("transpose", transpose), ("batch", batch))
             if r is not None}
    for kind, rule in rules.items():
        if isinstance(rule, str):
            if rule not in _MARKERS[kind]:
                raise TypeError(f"register_rules({info.name}): {rule!r} is not a marker for "
                                f"{kind}; expected one of {_MARKERS[kind]}")
        else:
            _check_signature(info, kind, rule)
    groups = linear_groups(linear)
    has_transpose = transpose is not None and transpose != NOT_LINEAR
    if has_transpose and not groups:
        raise TypeError(f"register_rules({info.name}): a transpose rule needs linear=, the "
                        f"operands it is linear in (of {info.operands})")
    if groups and not has_transpose:
        raise TypeError(f"register_rules({info.name}): linear={linear!r} needs a transpose rule")
    for group in groups:
        info.positions(group)   # a TypeError for a name that is not an operand
    info.linear = groups
    for kind, rule in rules.items():
        info.rules[kind] = rule
        if kind == "jvp":
            _jax.register_jvp(prim, partial(zero_jvp, prim) if isinstance(rule, str) else rule)
        elif kind == "transpose" and not isinstance(rule, str):
            _jax.register_transpose(prim, partial(zero_aware_transpose, prim, rule))
        elif kind == "batch":
            _jax.register_batch(prim, rule)


def linear_groups(linear: Sequence[str] | Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    """``linear=`` as a tuple of groups: a flat sequence of names is one group."""
    if isinstance(linear, str):
        raise TypeError(f"linear must be a tuple of operand names, got {linear!r}")
    if all(isinstance(n, str) for n in linear):
        return (tuple(linear),) if linear else ()
    return tuple(tuple(g) for g in linear)


def zero_jvp(prim: _jax.Primitive, primals: Sequence[Any], tangents: Sequence[Tangent],
             **params: Any) -> JvpResult:
    """The JVP of a primitive marked NOT_DIFFERENTIABLE or ZERO_DERIVATIVE:
    symbolic-zero tangents for every output."""
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
        return out, [_jax.zero_tangent(o) for o in out]
    return out, _jax.zero_tangent(out)


def zero_aware_transpose(prim: _jax.Primitive, rule: Callable[..., Any], ct: Cotangent,
                         *operands: MaybeUndefined, **params: Any) -> list[Any]:
    """``rule``, except that a cotangent that is a symbolic zero as a whole
    transposes to zero cotangents (as JAX's linear_transpose2) without
    calling it, and that each cotangent gets its primal's sharding
    (``_jax.transpose_like_primal``)."""
    cts = ct if prim.multiple_results else [ct]
    if all(type(c) is _jax.Zero for c in cts):
        return [_jax.zero_cotangent(o) if _jax.is_undefined_primal(o) else None
                for o in operands]
    return _jax.transpose_like_primal(partial(rule, **params), ct, operands)


def _check_signature(info: PrimitiveInfo, kind: str, rule: Callable[..., Any]) -> None:
    """Check that ``rule`` takes the positional arguments and params of its kind."""
    target = getattr(rule, "func", rule)   # functools.partial of a named rule
    bound = len(getattr(rule, "args", ()))
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return
    ps = list(sig.parameters.values())
    positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in ps)
    varkw = any(p.kind == p.VAR_KEYWORD for p in ps)
    n_pos = len(positional) - bound
    variadic = any(o.startswith("*") for o in info.operands)
    want = {"jvp": 2, "batch": 2, "transpose": 1 + len(info.operands)}[kind]
    where = f"register_rules({info.name}): {kind} rule {getattr(target, '__name__', rule)}"
    if kind == "transpose" and (variadic or varargs):
        if n_pos < 1:
            raise TypeError(f"{where} must take the cotangent first")
    elif n_pos != want and not (varargs and n_pos <= want):
        raise TypeError(f"{where} takes {n_pos} positional arguments, expected {want}")
    keywords = {p.name for p in ps if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    missing = set(info.params) - keywords
    if missing and not varkw:
        raise TypeError(f"{where} does not accept params {sorted(missing)}")
