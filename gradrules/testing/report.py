"""The checker's report: one row per (op, sample, check)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

PASS, FAIL, NA = "pass", "FAIL", "n/a"


@dataclass
class CheckResult:
    op: str
    sample: str
    check: str
    status: str
    max_abs: float = 0.0
    max_rel: float = 0.0
    tol: str = ""
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status != FAIL


class CheckFailure(AssertionError):
    """Raised by ``Report.raise_if_failed`` with the failing rows."""


@dataclass
class Report:
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.passed]

    def extend(self, other: Report) -> None:
        self.results.extend(other.results)

    def counts(self) -> dict[str, int]:
        out = {PASS: 0, FAIL: 0, NA: 0}
        for r in self.results:
            out[r.status] += 1
        return out

    def table(self, only_failures: bool = False) -> str:
        rows = self.failures if only_failures else self.results
        head = ("op", "sample", "check", "status", "max abs err", "max rel err", "tolerance")
        body = [(r.op, r.sample[:48], r.check, r.status, f"{r.max_abs:.2e}", f"{r.max_rel:.2e}",
                 r.tol) for r in rows]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)) for row in [head, *body]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        for r in rows:
            if r.detail and r.status == FAIL:
                lines.append(f"  {r.op} / {r.check} / {r.sample[:40]}: {r.detail}")
        c = self.counts()
        lines.append(f"{c[PASS]} passed, {c[FAIL]} failed, {c[NA]} not applicable")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("op", "sample", "check", "status",
                                                   "max abs err", "max rel err", "tolerance",
                                                   "detail"))
        rows = []
        for r in self.results:
            color = {PASS: "#e6f4ea", FAIL: "#fce8e6", NA: "#f1f3f4"}[r.status]
            cells = (r.op, r.sample, r.check, r.status, f"{r.max_abs:.2e}", f"{r.max_rel:.2e}",
                     r.tol, r.detail)
            rows.append(f'<tr style="background:{color}">' +
                        "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        c = self.counts()
        return (f"<p>{c[PASS]} passed, {c[FAIL]} failed, {c[NA]} not applicable</p>"
                f"<table><tr>{head}</tr>{''.join(rows)}</table>")

    def raise_if_failed(self) -> None:
        if not self.passed:
            raise CheckFailure("gradrules.check failed:\n" + self.table(only_failures=True))
