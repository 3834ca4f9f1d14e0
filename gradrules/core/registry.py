"""The op registry: the manifest of every primitive and every public op.

Like PyTorch's derivatives.yaml or Paddle's backward.yaml, there is one entry
per op naming its primitives, its rules, what it is linear in, which operands
are not differentiable (explicit markers) and which derivatives are not
implemented. ``gradrules list`` prints it; ``gradrules list --missing`` prints
only the gaps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._jax import Primitive

# Markers for register_rules.
NOT_DIFFERENTIABLE = "not differentiable"   # integer/bool output: float0 tangent
ZERO_DERIVATIVE = "zero derivative"         # float output, derivative 0 a.e.
NOT_LINEAR = "not linear"                   # transpose does not apply
RULE_KINDS = ("jvp", "transpose", "batch")


@dataclass
class PrimitiveInfo:
    """What the registry knows of one primitive."""

    prim: Primitive
    family: str
    operands: tuple[str, ...]          # "*name" for a variadic operand list
    params: tuple[str, ...]
    multiple_results: bool
    rules: dict[str, Any] = field(default_factory=dict)  # kind -> fn or marker

    @property
    def name(self) -> str:
        return self.prim.name

    def rule_status(self, kind: str) -> str:
        rule = self.rules.get(kind)
        if rule is None:
            return "missing"
        if isinstance(rule, str):
            return rule
        return getattr(rule, "__name__", None) or getattr(getattr(rule, "func", None),
                                                          "__name__", "rule")


@dataclass
class OpDef:
    """One public op of the catalog.

    ``linear`` lists groups of operands the op is jointly linear in (others
    held fixed): ``(("x", "y"),)`` for add, ``(("x",), ("y",))`` for multiply.
    ``nondiff`` operands take no tangent (integer indices, bool conditions);
    ``not_implemented`` operands have a derivative that is not implemented
    (differentiating raises).
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
    kernel: str | None = None
    aliases: tuple[str, ...] = ()
    order: int = 2            # derivative order the checker verifies

    @property
    def primitive_infos(self) -> list[PrimitiveInfo]:
        return [PRIMITIVES[p] for p in self.primitives]

    @property
    def samples(self) -> list[Any]:
        from ..testing.samples import samples_for
        return samples_for(self.name)

    def gaps(self) -> list[str]:
        """Everything this op lacks: the derivatives its manifest entry
        declares not implemented, then what is ``missing``."""
        return ([f"d/d{name} (declared not implemented)" for name in self.not_implemented]
                + self.missing())

    def missing(self) -> list[str]:
        """What is missing for this op without being declared: unregistered
        rules, no reference, no samples."""
        gaps = []
        linear_prims = bool(self.linear)
        for info in self.primitive_infos:
            for kind in RULE_KINDS:
                status = info.rule_status(kind)
                if status != "missing":
                    continue
                if kind == "transpose" and not linear_prims:
                    continue
                gaps.append(f"{info.name}: {kind}")
        if self.reference is None:
            gaps.append("reference")
        try:
            if not self.samples:
                gaps.append("samples")
        except KeyError:
            gaps.append("samples")
        return gaps


PRIMITIVES: dict[Primitive, PrimitiveInfo] = {}
OPS: dict[str, OpDef] = {}
_ALIASES: dict[str, str] = {}


def register_op(op: OpDef) -> OpDef:
    if op.name in OPS or op.name in _ALIASES:
        raise ValueError(f"op {op.name!r} is registered twice")
    for p in op.primitives:
        if p not in PRIMITIVES:
            raise ValueError(f"op {op.name!r}: primitive {p.name!r} was not made by define_primitive")
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
        raise KeyError(f"gradrules has no op named {name!r}") from None


def list_ops(family: str | None = None) -> list[OpDef]:
    """Every registered op, in registration order (optionally one family)."""
    return [op for op in OPS.values() if family is None or op.family == family]


def op_of_primitive(prim: Primitive) -> OpDef | None:
    for op in OPS.values():
        if prim in op.primitives:
            return op
    return None


def is_catalog_primitive(prim: Primitive) -> bool:
    return prim in PRIMITIVES
