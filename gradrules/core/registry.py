"""The op registry: the manifest of every primitive and every public op.

Like PyTorch's derivatives.yaml or Paddle's backward.yaml, there is one entry
per op naming its primitives, its rules, what it is linear in (by operand
name), which operands are not differentiable (explicit markers) and which
derivatives are not implemented. ``gradrules list`` prints it, each rule
with the ``file:line`` of its code; ``gradrules list --missing`` prints only
the gaps.
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .._jax import Primitive

# Markers for register_rules.
NOT_DIFFERENTIABLE = "not differentiable"   # integer/bool output: float0 tangent
ZERO_DERIVATIVE = "zero derivative"         # float output, derivative 0 a.e.
NOT_LINEAR = "not linear"                   # transpose does not apply
RULE_KINDS = ("jvp", "transpose", "batch")

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOT = os.path.dirname(_PACKAGE)


@dataclass
class PrimitiveInfo:
    """What the registry knows of one primitive: its operand and param names,
    its infer_meta, its lowerings (``{"xla": impl}``, plus ``"pallas"`` where
    a kernel exists, and ``kernel_supports``, which calls the kernel takes:
    ``core.kernels``), its rules (kind -> rule or marker) and the operands it
    is jointly linear in (``()`` when it is not linear)."""

    prim: Primitive
    family: str
    operands: tuple[str, ...]          # "*name" for a variadic operand list
    params: tuple[str, ...]
    multiple_results: bool
    infer_meta: Callable[..., Any]
    lowerings: dict[str, Callable[..., Any]]
    outputs: tuple[str, ...] = ()      # names of the results, where given
    rules: dict[str, Any] = field(default_factory=dict)
    linear: tuple[tuple[str, ...], ...] = ()
    kernel_supports: Callable[..., Any] | None = None

    @property
    def name(self) -> str:
        return self.prim.name

    @property
    def has_implementation_param(self) -> bool:
        """Whether the primitive has an implementation table (``core.kernels``)."""
        return "implementation" in self.params

    def positions(self, names: Iterable[str], n_args: int | None = None) -> tuple[int, ...]:
        """The positions of the named operands (a TypeError for unknown names).
        A variadic operand (``*name``, always last) stands for every position
        from its own to ``n_args`` (the number of operands of a call) when that
        is given, else for its first position."""
        plain = [o.lstrip("*") for o in self.operands]
        out: list[int] = []
        for n in (n.lstrip("*") for n in names):
            if n not in plain:
                raise TypeError(f"{self.name}: no operand named {n!r}; its operands are "
                                f"{self.operands}")
            i = plain.index(n)
            variadic = self.operands[i].startswith("*") and n_args is not None
            out.extend(range(i, n_args) if variadic and n_args is not None else (i,))
        return tuple(out)

    def joint_linear(self) -> tuple[str, ...]:
        """The one group of operands the primitive is jointly linear in, for
        the generic rules: ``()`` when it is not linear, a TypeError when it
        declares several groups."""
        if not self.linear:
            return ()
        if len(self.linear) > 1:
            raise TypeError(f"{self.name}: the generic linear rules need one group of linear "
                            f"operands, it declares {self.linear}")
        return self.linear[0]

    def rule_status(self, kind: str) -> str:
        """The rule's name (``rule_name``), a marker, or ``"missing"``."""
        rule = self.rules.get(kind)
        return "missing" if rule is None else rule_name(rule)


@dataclass(kw_only=True)
class OpDef:
    """One public op of the catalog.

    ``linear`` lists groups of operands the op is jointly linear in (others
    held fixed): ``(("x", "y"),)`` for add, ``(("x",), ("y",))`` for multiply.
    ``nondiff`` operands take no tangent (integer indices, bool conditions);
    ``not_implemented`` operands have a derivative that is not implemented
    (differentiating raises). ``order``: the derivative order the checker
    verifies. Names are checked against ``operands`` at registration.
    """

    name: str
    family: str
    fn: Callable[..., Any]
    primitives: tuple[Primitive, ...]
    reference: Callable[..., Any] | None
    operands: tuple[str, ...]
    linear: tuple[tuple[str, ...], ...] = ()
    nondiff: tuple[str, ...] = ()
    not_implemented: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    order: int = 2

    @property
    def primitive_infos(self) -> list[PrimitiveInfo]:
        return [PRIMITIVES[p] for p in self.primitives]

    def gaps(self) -> list[str]:
        """Everything this op lacks: the derivatives its manifest entry
        declares not implemented, then what is ``missing``."""
        return ([f"d/d{name} (declared not implemented)" for name in self.not_implemented]
                + self.missing())

    def missing(self) -> list[str]:
        """What is missing for this op without being declared: unregistered
        rules and no reference (samples: ``gradrules.testing.manifest_gaps``)."""
        gaps = []
        for info in self.primitive_infos:
            for kind in RULE_KINDS:
                if info.rule_status(kind) != "missing":
                    continue
                if kind == "transpose" and not self.linear:
                    continue
                gaps.append(f"{info.name}: {kind}")
        if self.reference is None:
            gaps.append("reference")
        return gaps


PRIMITIVES: dict[Primitive, PrimitiveInfo] = {}
OPS: dict[str, OpDef] = {}
_ALIASES: dict[str, str] = {}


def register_op(op: OpDef) -> OpDef:
    """Add an op to the manifest; its primitives must come from
    ``define_primitive`` and its operand-name lists must name its operands."""
    if op.name in OPS or op.name in _ALIASES:
        raise ValueError(f"op {op.name!r} is registered twice")
    for p in op.primitives:
        if p not in PRIMITIVES:
            raise ValueError(f"op {op.name!r}: primitive {p.name!r} was not made by "
                             "define_primitive")
    known = {o.lstrip("*") for o in op.operands}
    named = ([n.lstrip("*") for g in op.linear for n in g] + list(op.nondiff)
             + list(op.not_implemented))
    unknown = sorted(set(named) - known)
    if unknown:
        raise ValueError(f"op {op.name!r}: {unknown} are not among its operands {op.operands}")
    OPS[op.name] = op
    for alias in op.aliases:
        _ALIASES[alias] = op.name
    return op


def get_op(name: str) -> OpDef:
    """The manifest entry of an op (aliases resolve to their op)."""
    name = _ALIASES.get(name, name)
    try:
        return OPS[name]
    except KeyError:
        close = close_matches(name)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"gradrules has no op named {name!r}{hint}") from None


def close_matches(name: str, extra: Iterable[str] = ()) -> list[str]:
    """Op names (and ``extra`` names) close to ``name``."""
    names = list(dict.fromkeys([*OPS, *_ALIASES, *extra]))
    return difflib.get_close_matches(name, names, n=4, cutoff=0.6)


def list_ops(family: str | None = None) -> list[OpDef]:
    """Every registered op, in registration order (optionally one family)."""
    return [op for op in OPS.values() if family is None or op.family == family]


def families() -> list[str]:
    """The families that have ops, in registration order."""
    return list(dict.fromkeys(op.family for op in OPS.values()))


def op_of_primitive(prim: Primitive) -> OpDef | None:
    for op in OPS.values():
        if prim in op.primitives:
            return op
    return None


def is_catalog_primitive(prim: Primitive) -> bool:
    return prim in PRIMITIVES


# ------------------------------------------------------- reading the rules
def rule_name(rule: Any) -> str:
    """How a rule reads in the manifest: a marker as is, a named function by
    its name, ``functools.partial(f, a, b, k=v)`` as ``f(a, b, k=v)``
    (primitives by name, functions by theirs), a factory-made rule by the
    name its factory gave it from the functions it combines
    (``chain_rule(_exp_dx)``)."""
    if isinstance(rule, str):
        return rule
    if isinstance(rule, partial):
        args = ", ".join([_arg_name(a) for a in rule.args]
                         + [f"{k}={_arg_name(v)}" for k, v in rule.keywords.items()])
        return f"{rule_name(rule.func)}({args})" if args else rule_name(rule.func)
    return str(getattr(rule, "__name__", type(rule).__name__))


def _arg_name(a: Any) -> str:
    if isinstance(a, Primitive):
        return a.name
    if callable(a):
        return rule_name(a)
    return repr(a)


def rule_functions(rule: Any) -> list[Callable[..., Any]]:
    """The functions a rule is made of, outermost first: through
    ``functools.partial`` (its function and its function arguments,
    positional or keyword), wrappers (``__wrapped__``) and factories (the
    ``parts`` they record)."""
    if isinstance(rule, str) or rule is None:
        return []
    if isinstance(rule, partial):
        out = rule_functions(rule.func)
        for a in (*rule.args, *rule.keywords.values()):
            if callable(a) and not isinstance(a, Primitive):
                out += rule_functions(a)
        return out
    out = [rule]
    if hasattr(rule, "__wrapped__"):
        out += rule_functions(rule.__wrapped__)
    for part in getattr(rule, "parts", ()):
        out += rule_functions(part)
    return out


def source_location(fn: Callable[..., Any]) -> str:
    """``path:line`` of a function's ``def`` (path relative to the checkout),
    or the qualified name of a function from outside gradrules
    (``jax.numpy.exp``); a ``functools.partial`` is located by its function."""
    fn = inspect.unwrap(fn)                          # a jitted function: the one it wraps
    while isinstance(fn, partial):                   # partial(_arg_reference, jnp.argmax)
        fn = inspect.unwrap(fn.func)
    code = getattr(fn, "__code__", None)
    if code is not None and os.path.abspath(code.co_filename).startswith(_PACKAGE):
        return f"{os.path.relpath(code.co_filename, _ROOT)}:{code.co_firstlineno}"
    module = getattr(fn, "__module__", None) or type(fn).__module__
    module = "jax.numpy" if module.startswith("jax.numpy") or module.startswith(
        "jax._src.numpy") else module
    return f"{module}.{getattr(fn, '__name__', type(fn).__name__)}"


def rule_locations(rule: Any) -> list[str]:
    """``path:line`` of every function a rule is made of (``rule_functions``)."""
    return list(dict.fromkeys(source_location(f) for f in rule_functions(rule)))
