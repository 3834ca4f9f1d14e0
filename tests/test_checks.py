"""One test per (op, check) over the whole registry, driven by the sample
table in gradrules.testing.samples: a new op is tested by adding its samples."""

import pytest

import gradrules
from gradrules.testing.check import CHECKS, check, manifest_gaps

OPS = [op.name for op in gradrules.list_ops()]


@pytest.mark.parametrize("check_name", CHECKS)
@pytest.mark.parametrize("op", OPS)
def test_rule_check(op: str, check_name: str) -> None:
    report = check(op, checks=[check_name])
    report.raise_if_failed()
    assert report.results, f"no samples were checked for {op}"


def test_manifest_has_no_gaps() -> None:
    """Every op has its rules, a reference and samples; the only gaps are the
    derivatives the manifest declares not implemented."""
    missing = {op.name: gaps for op in gradrules.list_ops()
               if (gaps := [g for g in manifest_gaps(op) if "declared" not in g])}
    assert not missing, missing
