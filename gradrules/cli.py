"""``gradrules list | check | explain | bench | demo``."""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from .core.registry import (RULE_KINDS, PrimitiveInfo, OpDef, close_matches, families,
                            get_op, list_ops, rule_locations, rule_name, source_location)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit status 2):
    what is wrong and where the help is, without the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (`{self.prog} -h` for help)\n")


def _resolve_names(names: Sequence[str], family: bool = False) -> list[OpDef] | str:
    """The ops named (an op or alias, else a family, each; families only with
    ``family``), or a one-line error listing close matches for the first
    unknown name."""
    ops: list[OpDef] = []
    for name in names:
        try:
            if family:
                raise KeyError(name)
            found = [get_op(name)]
        except KeyError:
            if name not in families():
                close = (difflib.get_close_matches(name, families(), n=4, cutoff=0.6) if family
                         else close_matches(name, families()))
                what = "family" if family else "op or family"
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                return f"gradrules: no {what} named {name!r}{hint}"
            found = list_ops(name)
        ops += [op for op in found if op not in ops]
    return ops


def kernel_scope(supports: Any) -> str:
    """The calls a Pallas kernel takes: the first paragraph of its table's
    ``supports`` docstring, on one line (the others run the XLA lowering
    under kernel="auto")."""
    return " ".join((inspect.getdoc(supports) or "").split("\n\n")[0].split())


def _rule_rows(info: PrimitiveInfo) -> list[tuple[str, str, str]]:
    """(what, rule, where) for the infer_meta, lowerings and rules of a primitive."""
    rows = [("infer_meta", rule_name(info.infer_meta), ", ".join(rule_locations(info.infer_meta)))]
    for key, fn in info.lowerings.items():
        rows.append((f"lowering[{key}]", rule_name(fn), ", ".join(rule_locations(fn))))
    for kind in RULE_KINDS:
        rule = info.rules.get(kind)
        rows.append((kind, info.rule_status(kind), ", ".join(rule_locations(rule))))
    return rows


def _print_op(op: OpDef) -> None:
    linear = " | ".join(",".join(g) for g in op.linear) or "-"
    ref = source_location(op.reference) if op.reference is not None else "-"
    print(f"{op.name}  (family {op.family}; operands {', '.join(op.operands)}; "
          f"linear in {linear}; reference {ref})")
    for info in op.primitive_infos:
        lin = f"  linear in {' | '.join(','.join(g) for g in info.linear)}" if info.linear else ""
        print(f"  {info.name}{lin}")
        rows = _rule_rows(info)
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        for what, rule, where in rows:
            print(f"    {what.ljust(w0)}  {rule.ljust(w1)}  {where}".rstrip())
        if info.kernel_supports is not None:
            print(f"    pallas takes: {kernel_scope(info.kernel_supports)}")


def ops_markdown() -> str:
    """The catalog as a Markdown table, one row per family (in import order):
    README.md's op list is this text (``gradrules list --markdown``)."""
    by_family: dict[str, list[str]] = {}
    for op in list_ops():
        by_family.setdefault(op.family, []).append(f"`{op.name}`")
    rows = ["| family | ops |", "|---|---|"]
    rows += [f"| {family} | {', '.join(names)} |" for family, names in by_family.items()]
    return "\n".join(rows) + f"\n\n{len(list_ops())} ops.\n"


def _cmd_list(args: argparse.Namespace) -> int:
    if args.markdown:
        print(ops_markdown(), end="")
        return 0
    if args.names:
        found = _resolve_names(args.names, args.family)
        if isinstance(found, str):
            print(found, file=sys.stderr)
            return 2
        ops = found
    else:
        ops = list_ops()
    if args.missing:
        from .testing import manifest_gaps   # the sample table: only when --missing asks
        for op in ops:
            gaps = manifest_gaps(op)
            for info in op.primitive_infos if gaps else ():
                print(f"{op.name} ({info.name}): missing {'; '.join(gaps)}")
        return 0
    if args.names:
        for op in ops:
            _print_op(op)
        return 0
    rows = []
    for op in ops:
        for info in op.primitive_infos:
            rows.append((op.name, op.family, info.name, *(info.rule_status(k) for k in RULE_KINDS),
                         " | ".join(",".join(g) for g in op.linear) or "-",
                         ",".join(info.lowerings)))
    head = ("op", "family", "primitive", "jvp", "transpose", "batch", "linear in", "lowerings")
    widths = [min(max(len(str(x)) for x in col), 40) for col in zip(head, *rows)]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(x)[:40].ljust(w) for x, w in zip(row, widths)).rstrip())
    print(f"{len(ops)} ops; `gradrules list OP|FAMILY` shows each rule's file:line")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .testing.check import CHECKS, check_all
    if args.ops:
        found = _resolve_names(args.ops, args.family)
        if isinstance(found, str):
            print(found, file=sys.stderr)
            return 2
        names = [op.name for op in found]
    else:
        names = [o.name for o in list_ops()]
    unknown = sorted(set(args.checks or ()) - set(CHECKS))
    if unknown:
        print(f"gradrules: unknown checks {unknown}; known: {', '.join(CHECKS)}",
              file=sys.stderr)
        return 2
    total = len(names)
    done = [0]
    start = time.perf_counter()

    def progress(name: str, report, seconds: float) -> None:  # type: ignore[no-untyped-def]
        done[0] += 1
        c = report.counts()
        bar = "#" * int(30 * done[0] / total)
        status = "ok" if report.passed else "FAILED"
        sys.stderr.write(f"\r[{bar:<30}] {done[0]}/{total} {name:<24} {status} "
                         f"({c['pass']} pass, {c['FAIL']} fail) {seconds:5.1f}s")
        sys.stderr.write("\n" if not report.passed or args.verbose else "")
        sys.stderr.flush()

    report = check_all(names, checks=args.checks or CHECKS, progress=progress)
    sys.stderr.write("\n")
    if args.verbose:
        print(report.table())
    elif not report.passed:
        print(report.table(only_failures=True))
    c = report.counts()
    print(f"gradrules check: {len(names)} ops, {c['pass']} passed, {c['FAIL']} failed, "
          f"{c['n/a']} not applicable, in {time.perf_counter() - start:.0f} s")
    return 0 if report.passed else 1


def _cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain
    from .testing.check import CHECKS
    found = _resolve_names([args.op])
    if isinstance(found, str):
        print(found, file=sys.stderr)
        return 2
    unknown = sorted(set(args.checks or ()) - set(CHECKS))
    if unknown:
        print(f"gradrules: unknown checks {unknown}; known: {', '.join(CHECKS)}",
              file=sys.stderr)
        return 2
    if not args.no_check:
        sys.stderr.write(f"gradrules explain: running the checker on {found[0].name}...\n")
    result = explain(found[0].name, checks=args.checks or None, run_checks=not args.no_check)
    print(result.text, end="")
    if args.html:
        with open(args.html, "w", encoding="utf-8") as page:
            page.write(result.html())
        sys.stderr.write(f"gradrules explain: wrote {args.html}\n")
    return 0 if result.report is None or result.report.passed else 1


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import all_cases, bench_rows, format_table, summary
    from .core.registry import get_op
    cases = all_cases()
    families = sorted({get_op(c.op).family for c in cases if c.op in _op_names()})
    names = [c.name for c in cases]
    for wanted, known, what in ((args.op, names + [c.op for c in cases], "benchmark"),
                                (args.family, families, "family")):
        unknown = [n for n in wanted or () if n not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            print(f"gradrules: no {what} named {unknown[0]!r}{hint}", file=sys.stderr)
            return 2
    if args.op:
        cases = [c for c in cases if c.name in args.op or c.op in args.op]
    if args.family:
        cases = [c for c in cases if c.op in _op_names() and get_op(c.op).family in args.family]

    def progress(name: str) -> None:
        sys.stderr.write(f"\rgradrules bench: {name:<48}")
        sys.stderr.flush()

    failures: list[tuple[str, str]] = []
    rows = bench_rows(cases, quick=args.quick, progress=progress, failures=failures)
    sys.stderr.write("\n")
    if args.json:
        json.dump([r.as_dict() for r in rows] + [{"name": name, "error": error}
                                                  for name, error in failures],
                  sys.stdout, indent=1)
        print()
    else:
        print(format_table(rows))
        print()
        print(summary(rows, failures))
    return 1 if failures else 0


def _op_names() -> set[str]:
    from .core.registry import OPS
    return set(OPS)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["demo"]:           # its own flags (argparse's REMAINDER would refuse them)
        from . import demo
        return demo.main(argv[1:])
    parser = OneLineParser(prog="gradrules", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="print the op manifest (an op's or family's rules with "
                                    "their file:line when named)")
    p.add_argument("names", nargs="*", metavar="OP|FAMILY",
                   help="ops or families to show in detail (default: the whole manifest); "
                        "a name that is both (softmax, gather) is the op, unless --family")
    p.add_argument("-f", "--family", action="store_true",
                   help="the names are families (for one that is also an op's name)")
    p.add_argument("--missing", action="store_true",
                   help="only ops with missing pieces (declared not-implemented "
                        "derivatives included)")
    p.add_argument("--markdown", action="store_true",
                   help="the catalog as README.md's Markdown table of ops by family")
    p = sub.add_parser("check", help="run the rule checker")
    p.add_argument("ops", nargs="*", metavar="OP|FAMILY", help="ops to check (default: all)")
    p.add_argument("-f", "--family", action="store_true", help="the names are families")
    p.add_argument("--checks", nargs="*", help="a subset of the checks")
    p.add_argument("-v", "--verbose", action="store_true", help="print every row")
    p = sub.add_parser("explain", help="one op's signature, maths, rules (as source, with "
                                       "file:line), derivative jaxprs and checker table")
    p.add_argument("op", metavar="OP")
    p.add_argument("--html", metavar="FILE", help="also write a standalone HTML page")
    p.add_argument("--checks", nargs="+", help="run only these checks")
    p.add_argument("--no-check", action="store_true", help="do not run the checker")
    p = sub.add_parser("bench", help="time / memory / flops / bytes ratios against jax.numpy "
                                     "for every op: forward, grad, Hessian-vector product")
    p.add_argument("--op", nargs="+", metavar="NAME", help="only these benchmarks (or ops)")
    p.add_argument("--family", nargs="+", metavar="FAMILY", help="only these families")
    p.add_argument("--quick", action="store_true", help="tiny sizes (seconds, not minutes)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    sub.add_parser("demo", help="train a small transformer built from gradrules ops "
                                "(`gradrules demo --help` for its flags)")
    args = parser.parse_args(argv)
    import gradrules  # noqa: F401  (registers every op)
    return {"list": _cmd_list, "check": _cmd_check, "explain": _cmd_explain,
            "bench": _cmd_bench}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
