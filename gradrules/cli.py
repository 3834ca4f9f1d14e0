"""``gradrules list | check | bench | demo``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from .core.registry import RULE_KINDS, list_ops


def _cmd_list(args: argparse.Namespace) -> int:
    rows = []
    for op in list_ops():
        gaps = op.gaps()
        if args.missing and not gaps:
            continue
        for info in op.primitive_infos:
            rules = [info.rule_status(k) for k in RULE_KINDS]
            rows.append((op.name, op.family, info.name, *rules,
                         " | ".join(",".join(g) for g in op.linear) or "-",
                         op.kernel or "-", "; ".join(gaps) or "ok"))
    if not rows:
        return 0
    head = ("op", "family", "primitive", "jvp", "transpose", "batch", "linear in", "kernel",
            "missing")
    if args.missing:
        for r in rows:
            print(f"{r[0]} ({r[2]}): missing {r[-1]}")
        return 0
    widths = [min(max(len(str(x)) for x in col), 40) for col in zip(head, *rows)]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(x)[:40].ljust(w) for x, w in zip(row, widths)))
    print(f"{len(list_ops())} ops")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .testing.check import CHECKS, check_all
    names = args.ops or [o.name for o in list_ops()]
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


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import builtin_rows, format_table
    print(format_table(builtin_rows(args.size)))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from . import demo
    return demo.main(args.rest)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gradrules", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="print the op manifest")
    p.add_argument("--missing", action="store_true",
                   help="only ops with missing pieces (declared not-implemented "
                        "derivatives included)")
    p = sub.add_parser("check", help="run the rule checker")
    p.add_argument("ops", nargs="*", help="ops to check (default: all)")
    p.add_argument("--checks", nargs="*", help="a subset of the checks")
    p.add_argument("-v", "--verbose", action="store_true", help="print every row")
    p = sub.add_parser("bench", help="time / memory / flops ratios against jax.numpy")
    p.add_argument("--size", type=int, default=1 << 20)
    p = sub.add_parser("demo", help="train a small transformer built from gradrules ops",
                       add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    import gradrules  # noqa: F401  (registers every op)
    return {"list": _cmd_list, "check": _cmd_check, "bench": _cmd_bench,
            "demo": _cmd_demo}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
