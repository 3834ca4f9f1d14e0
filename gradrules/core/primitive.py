"""define_primitive and register_rules: the two calls every op is made of.

A primitive is made by one ``define_primitive`` call that gives its name,
operand and param names, abstract evaluation (infer_meta) and reference
implementation (which serves as eager impl and as XLA lowering). Its rules are
registered right after by one ``register_rules`` call; each rule is a short
named function whose signature is checked against the primitive's.

Rule contracts (as in JAX's own ``ad`` and ``batching`` modules):

* ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``; a tangent
  may be a symbolic zero (``_jax.Zero``), and so may the returned tangent.
* ``transpose(ct, *operands, **params) -> list``: the operands the primitive
  is linear in arrive as ``UndefinedPrimal``; the result holds one cotangent
  (or ``None`` / a symbolic zero) per operand. ``ct`` may be a symbolic zero.
* ``batch(args, dims, **params) -> (out, out_dim)``: ``dims[i]`` is the batch
  axis of ``args[i]`` or ``None``; the rule binds the primitive once.
"""

from __future__ import annotations

import inspect
from functools import partial
from collections.abc import Callable, Hashable
from typing import Any

from .. import _jax
from .registry import (NOT_DIFFERENTIABLE, NOT_LINEAR, PRIMITIVES, ZERO_DERIVATIVE,
                       PrimitiveInfo)

InferMeta = Callable[..., Any]


def define_primitive(name: str, *, family: str, operands: tuple[str, ...],
                     infer_meta: InferMeta, impl: Callable[..., Any],
                     params: tuple[str, ...] = (), multiple_results: bool = False
                     ) -> _jax.Primitive:
    """Make and register a primitive.

    ``infer_meta(*avals, **params)`` returns the output ``ShapedArray`` (a tuple
    of them with ``multiple_results``) and raises ``TypeError``/``ValueError``
    naming the op for bad input. ``impl(*arrays, **params)`` is plain
    ``jax.numpy``/``lax`` and is both the eager implementation (compiled) and
    the XLA lowering on every platform.
    """
    param_set = frozenset(params)
    prim = _jax.new_primitive(name, multiple_results=multiple_results,
                              validate_params=partial(_validate_params, name, param_set))

    def abstract_eval(*avals: Any, **kw: Any) -> Any:
        return infer_meta(*avals, **kw)

    abstract_eval.__name__ = f"_{name}_abstract_eval"
    _jax.register_abstract_eval(prim, abstract_eval)
    _jax.register_lowering(prim, impl, multiple_results=multiple_results)
    PRIMITIVES[prim] = PrimitiveInfo(prim=prim, family=family, operands=tuple(operands),
                                     params=tuple(params),
                                     multiple_results=multiple_results,
                                     rules={"infer_meta": infer_meta, "impl": impl})
    return prim


def _validate_params(name: str, expected: frozenset[str], given: dict[str, Any]) -> None:
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


def register_rules(prim: _jax.Primitive, **rules: Any) -> None:
    """Register a primitive's rules: ``jvp=``, ``transpose=``, ``batch=``.

    ``jvp`` may be the marker ``NOT_DIFFERENTIABLE`` (integer or bool output:
    float0 symbolic-zero tangents) or ``ZERO_DERIVATIVE`` (float output whose
    derivative is zero wherever it exists, e.g. floor). ``transpose`` may be
    ``NOT_LINEAR``. Unknown rule names and rules whose signature does not fit
    the primitive raise ``TypeError``.
    """
    info = PRIMITIVES.get(prim)
    if info is None:
        raise TypeError(f"register_rules: {prim} was not made by define_primitive")
    for kind, rule in rules.items():
        if kind not in _MARKERS:
            raise TypeError(f"register_rules({info.name}): unknown rule {kind!r}; "
                            f"expected one of {tuple(_MARKERS)}")
        if isinstance(rule, str):
            if rule not in _MARKERS[kind]:
                raise TypeError(f"register_rules({info.name}): {rule!r} is not a marker for "
                                f"{kind}; expected one of {_MARKERS[kind]}")
        else:
            _check_signature(info, kind, rule)
        info.rules[kind] = rule
        if kind == "jvp":
            _jax.register_jvp(prim, _zero_jvp(prim) if isinstance(rule, str) else rule)
        elif kind == "transpose" and not isinstance(rule, str):
            _jax.register_transpose(prim, _zero_aware_transpose(prim, rule))
        elif kind == "batch":
            _jax.register_batch(prim, rule)


def _zero_jvp(prim: _jax.Primitive) -> Callable[..., Any]:
    def zero_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], **params: Any) -> Any:
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [_jax.zero_tangent(o) for o in out]
        return out, _jax.zero_tangent(out)
    zero_jvp.__name__ = f"_{prim.name}_zero_jvp"
    return zero_jvp


def _zero_aware_transpose(prim: _jax.Primitive, rule: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a transpose rule so it never sees a symbolic-zero cotangent: a
    zero cotangent transposes to zero cotangents (as JAX's linear_transpose2);
    with several outputs, the zero ones are instantiated."""
    def transpose(ct: Any, *operands: Any, **params: Any) -> Any:
        if prim.multiple_results:
            if all(_jax.is_zero(c) for c in ct):
                return [_jax.Zero(o.aval.to_ct_aval()) if _jax.is_undefined_primal(o) else None
                        for o in operands]
            from ..rules._common import zeros   # catalog zeros, not lax's
            ct = [zeros(c.aval.shape, c.aval.dtype) if type(c) is _jax.Zero else c for c in ct]
        elif type(ct) is _jax.Zero:
            return [_jax.Zero(o.aval.to_ct_aval()) if _jax.is_undefined_primal(o) else None
                    for o in operands]
        return rule(ct, *operands, **params)
    transpose.__name__ = getattr(rule, "__name__", "transpose")
    transpose.__wrapped__ = rule  # type: ignore[attr-defined]
    return transpose


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
