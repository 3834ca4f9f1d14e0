"""``gradrules.explain(op)`` / ``gradrules explain OP``: everything about one
op in one place, for reading its rules.

The op's signature and docstring (its maths); each of its primitives with
its params, its infer_meta, lowerings and kernels, and each rule as source
(through partials and factories) with ``file:line``; what it is linear in;
the jaxprs of ``jax.jvp``, of ``jax.vjp``'s two halves (``jax.linearize``'s
linear map and its ``jax.linear_transpose``) and of a second derivative
(forward over reverse) on its first sample in float64, each with the set of
primitives it binds; and the checker's table. ``Explanation`` has a text
(``str``) and an HTML repr for Jupyter; ``.html()`` is a standalone page.
"""

from __future__ import annotations

import html
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import jax

from . import _jax
from .core.registry import (RULE_KINDS, OpDef, PrimitiveInfo, get_op, is_catalog_primitive,
                            list_ops, rule_functions, rule_locations, rule_name,
                            source_location)
from .testing.case import like, make_case, scalarize
from .testing.check import check, seed
from .testing.report import Report
from .testing.samples import opinfo, sample_fn, samples_for


@dataclass
class Section:
    """A titled part of an explanation: prose lines and code blocks."""

    title: str
    lines: list[str] = field(default_factory=list)
    code: list[tuple[str, str]] = field(default_factory=list)    # (caption, source)


@dataclass
class Explanation:
    """What ``explain`` found: sections, and the checker's report (or None)."""

    op: str
    sections: list[Section]
    report: Report | None = None

    @property
    def text(self) -> str:
        out = []
        for s in self.sections:
            out += [s.title, "=" * len(s.title), *s.lines]
            for caption, src in s.code:
                out += [f"-- {caption}" if caption else "", _indent(src), ""]
            out.append("")
        if self.report is not None:
            out += ["checker", "=======", self.report.table(), ""]
        return "\n".join(out).rstrip() + "\n"

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        parts = [f"<h2>gradrules.explain({self.op!r})</h2>"]
        for s in self.sections:
            parts.append(f"<h3>{html.escape(s.title)}</h3>")
            if s.lines:
                parts.append(f"<pre>{html.escape(chr(10).join(s.lines))}</pre>")
            for caption, src in s.code:
                if caption:
                    parts.append(f"<p><b>{html.escape(caption)}</b></p>")
                parts.append(f"<pre style='background:#f6f8fa;padding:6px'>"
                             f"{html.escape(src)}</pre>")
        if self.report is not None:
            parts += ["<h3>checker</h3>", self.report._repr_html_()]
        return "\n".join(parts)

    def html(self) -> str:
        """A standalone HTML page."""
        return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>gradrules: "
                f"{html.escape(self.op)}</title></head>\n<body style='font-family:sans-serif'>"
                f"\n{self._repr_html_()}\n</body></html>\n")


def _indent(src: str) -> str:
    return "\n".join("    " + line if line else "" for line in src.rstrip().splitlines())


def explain(op: str | Callable[..., Any], *, checks: Iterable[str] | None = None,
            run_checks: bool = True) -> Explanation:
    """Explain an op (its name, an alias, or its public function). The
    checker runs every check on its samples (``checks``: a subset; with
    ``run_checks=False`` none)."""
    op_def = _op(op)
    sections = [_overview(op_def)]
    sections += [_primitive(info) for info in op_def.primitive_infos]
    sections.append(_derivatives(op_def))
    report = check(op_def.name, checks=checks) if run_checks else None
    return Explanation(op_def.name, sections, report)


def _op(op: str | Callable[..., Any]) -> OpDef:
    if isinstance(op, str):
        return get_op(op)
    found = next((o for o in list_ops() if o.fn is op), None)
    if found is None:
        raise TypeError(f"gradrules.explain: {op!r} is not an op of the catalog (a name, an "
                        "alias or a public function)")
    return found


def _overview(op: OpDef) -> Section:
    try:
        signature = f"{op.name}{inspect.signature(op.fn)}"
    except (TypeError, ValueError):
        signature = op.name
    linear = " | ".join(",".join(g) for g in op.linear) or "nothing"
    s = Section(f"{op.name} (family {op.family})", [
        signature, "",
        *(inspect.getdoc(op.fn) or "(no docstring)").splitlines(), "",
        f"operands: {', '.join(op.operands)}",
        f"linear in: {linear}",
        f"not differentiable in: {', '.join(op.nondiff) or '-'}",
        f"derivatives checked to order {op.order}",
        f"primitives: {', '.join(p.name for p in op.primitives)}",
    ])
    if op.reference is not None:
        s.code.append((f"reference ({source_location(op.reference)})", _source(op.reference)))
    return s


def _primitive(info: PrimitiveInfo) -> Section:
    lines = [f"params: {', '.join(info.params) or '-'}",
             f"operands: {', '.join(info.operands)}"
             + (f"; results: {', '.join(info.outputs)}" if info.outputs else ""),
             f"linear in: {' | '.join(','.join(g) for g in info.linear) or '-'}",
             f"lowerings: {', '.join(info.lowerings)}"]
    if info.kernel_supports is not None:
        doc = inspect.getdoc(info.kernel_supports) or ""
        lines.append(f"Pallas kernel takes: {' '.join(doc.split(chr(10) * 2)[0].split())}")
    s = Section(f"primitive {info.name}", lines)
    s.code.append((f"infer_meta: {rule_name(info.infer_meta)}", _sources(info.infer_meta)))
    for key, fn in info.lowerings.items():
        s.code.append((f"lowering[{key}]: {rule_name(fn)}", _sources(fn)))
    for kind in RULE_KINDS:
        rule = info.rules.get(kind)
        if rule is None or isinstance(rule, str):
            s.lines.append(f"{kind}: {info.rule_status(kind)}")
            continue
        s.code.append((f"{kind}: {rule_name(rule)}", _sources(rule)))
    return s


def _sources(rule: Any) -> str:
    """The source of every function a rule is made of, each under its
    ``file:line``."""
    out = []
    for fn in dict.fromkeys(rule_functions(rule)):
        out.append(f"# {source_location(fn)}\n{_source(fn)}")
    return "\n\n".join(out) if out else f"# {', '.join(rule_locations(rule))}"


def _source(fn: Callable[..., Any]) -> str:
    target = inspect.unwrap(fn)
    while hasattr(target, "func"):                 # functools.partial
        target = inspect.unwrap(target.func)
    try:
        return inspect.getsource(target).rstrip()
    except (TypeError, OSError):
        return f"{getattr(target, '__module__', '?')}.{getattr(target, '__name__', target)}"


def _derivatives(op: OpDef) -> Section:
    """The derivative jaxprs on the op's first sample, in float64."""
    s = Section("derivatives on the first sample (float64)")
    try:
        sample = samples_for(op.name)[0]
        info = opinfo(op.name)
    except (KeyError, IndexError):
        s.lines.append("no samples: gradrules.register_samples adds them")
        return s
    with jax.enable_x64(True):
        case = make_case(op.name, op, sample_fn(op.name), sample, info)
        s.lines.append(f"sample: {op.name}({sample.describe()})")
        xs = [case.leaves[i] for i in case.diff_idx]
        f = case.float_outputs(case.call)
        if not xs or not f(*xs):
            s.lines.append("no differentiable operand with a float output")
            return s
        rng = np.random.default_rng(seed(op.name, "explain"))
        ts, ws = like(rng, xs), like(rng, f(*xs))
        programs = _programs(f, xs, ts, ws)
        for caption, closed in programs:
            s.code.append((f"{caption}; binds {_binds(closed)}", str(closed)))
    return s


def _programs(f: Callable[..., list[Any]], xs: Sequence[Any], ts: Sequence[Any],
              ws: Sequence[Any]) -> list[tuple[str, Any]]:
    n = len(xs)
    _, f_lin = jax.linearize(f, *xs)
    h = scalarize(f, ws)
    grad = jax.grad(h, argnums=tuple(range(n)))
    return [
        ("jax.jvp(f, primals, tangents)",
         jax.make_jaxpr(lambda *a: jax.jvp(f, a[:n], a[n:]))(*xs, *ts)),
        ("jax.linearize(f, *primals): the linear map (the JVP's tangent part)",
         jax.make_jaxpr(f_lin)(*ts)),
        ("jax.linear_transpose of that map: the VJP's backward pass",
         jax.make_jaxpr(jax.linear_transpose(f_lin, *ts))(ws)),
        ("second derivative: jax.jvp of jax.grad of <w, f> (Hessian-vector product)",
         jax.make_jaxpr(lambda *a: jax.jvp(grad, a[:n], a[n:]))(*xs, *ts)),
    ]


def _binds(closed: Any) -> str:
    """The primitives a jaxpr binds: catalog ones, then JAX's own (marked)."""
    prims = dict.fromkeys(p for p, _ in _jax.jaxpr_primitives(closed))
    ours = sorted(p.name for p in prims if is_catalog_primitive(p))
    other = sorted(p.name for p in prims if not is_catalog_primitive(p))
    return ", ".join(ours) + (f"; from JAX itself: {', '.join(other)}" if other else "")
