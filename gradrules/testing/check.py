"""``gradrules.check``: the rule checker's driver.

It runs the property checks of ``testing.properties`` (their list and what
each verifies is there) on every sample call of an op from the sample table
(``testing.samples``), or on the arguments given, in float64, and returns a
``Report``. Tangents and cotangents are drawn from a generator seeded by a
stable digest of the op's and the check's names, so two runs draw the same.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import jax

from ..core.registry import OpDef, get_op, list_ops
from .case import Case, Mismatch, NotApplicable, in_float64, make_case, rank_variety
from .properties import PROPERTIES
from .report import FAIL, NA, PASS, CheckResult, Report
from .samples import OpInfo, Sample, opinfo, sample_fn, samples_for

CHECKS = tuple(PROPERTIES)


def seed(*names: str) -> int:
    """A seed that is the same in every process (unlike ``hash`` of a string)."""
    return zlib.crc32("/".join(names).encode())


def _run_one(case: Case, check_name: str) -> CheckResult:
    rng = np.random.default_rng(seed(case.name, check_name))
    desc = case.sample.describe()
    try:
        e, r, tol = PROPERTIES[check_name](case, rng)
        return CheckResult(case.name, desc, check_name, PASS, e, r, tol)
    except NotApplicable as exc:
        return CheckResult(case.name, desc, check_name, NA, detail=str(exc))
    except Mismatch as exc:
        return CheckResult(case.name, desc, check_name, FAIL, exc.abs_err, exc.rel_err,
                           detail=str(exc))
    except Exception as exc:  # a rule that crashes is a failure, reported in the table
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return CheckResult(case.name, desc, check_name, FAIL, np.inf, np.inf,
                           detail=f"{type(exc).__name__}: {msg[:300]}")


def check(op: str | Callable[..., Any], *args: Any, checks: Iterable[str] | None = None,
          **params: Any) -> Report:
    """Check an op's rules; returns a ``Report``.

    ``check("softmax")`` runs every check on the op's registered samples
    (``register_samples`` for an op of yours); ``check("add", x, y, axis=1)``
    or ``check(gradrules.add, x, y)`` on one given call; ``check(my_fn, x)``
    on any function (every float array argument is treated as
    differentiable; with no reference composition and no linearity, those
    checks are n/a, and so is ``closure`` for a function that binds no
    gradrules op). Everything runs with float64 enabled, float arrays of
    lower precision upcast (the ``dtypes`` property runs the op at its
    dtypes). ``checks`` picks a subset of ``CHECKS``.
    ``report.raise_if_failed()`` raises with the failures.
    """
    names = tuple(checks) if checks is not None else CHECKS
    unknown = set(names) - set(CHECKS)
    if unknown:
        raise ValueError(f"gradrules.check: unknown checks {sorted(unknown)}; known: {CHECKS}")
    op_def, info, fn, name = _resolve(op)
    if args or params:
        samples = [Sample(tuple(args), dict(params))]
    elif op_def is not None:
        if info is None:
            raise ValueError(f"gradrules.check: op {name!r} has no samples; add them with "
                             f"gradrules.register_samples({name!r}, [(x, ...), ...]) or "
                             f"give the arguments: gradrules.check({name!r}, x, ...)")
        samples = samples_for(op_def.name)
    else:
        raise ValueError("gradrules.check: give sample arguments for a function "
                         "that is not a registered op")
    report = Report()
    with jax.enable_x64(True):
        cases = [make_case(name, op_def, fn, in_float64(sample), info) for sample in samples]
        richest = max(range(len(cases)), key=lambda i: (rank_variety(cases[i]), -i))
        for index, case in enumerate(cases):
            case.index, case.full_vmap = index, index == richest
            for c in names:
                report.results.append(_run_one(case, c))
    return report


def _resolve(op: str | Callable[..., Any]) -> tuple[OpDef | None, OpInfo | None,
                                                     Callable[..., Any], str]:
    if isinstance(op, str):
        d = get_op(op)
    else:
        d = next((o for o in list_ops() if o.fn is op), None)
        if d is None:
            return None, None, op, getattr(op, "__name__", "fn")
    try:
        info = opinfo(d.name)
    except KeyError:
        info = None
    return d, info, sample_fn(d.name), d.name


def check_all(ops: Iterable[str] | None = None, checks: Iterable[str] | None = None,
              progress: Callable[[str, Report, float], None] | None = None) -> Report:
    """Run ``check`` over many ops (all registered ones by default)."""
    report = Report()
    for name in (ops if ops is not None else [o.name for o in list_ops()]):
        t0 = time.perf_counter()
        r = check(name, checks=checks)
        report.extend(r)
        if progress:
            progress(name, r, time.perf_counter() - t0)
    return report


def manifest_gaps(op: OpDef) -> list[str]:
    """Everything an op lacks: ``op.gaps()`` (declared not-implemented
    derivatives, unregistered rules, no reference), then samples."""
    gaps = op.gaps()
    try:
        if not samples_for(op.name):
            gaps.append("samples")
    except KeyError:
        gaps.append("samples")
    return gaps
