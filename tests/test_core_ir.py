"""PyTorch's Core ATen + Prims IR, the seed table the catalog was measured
against: every differentiable operator in it maps to gradrules ops that
exist, and the rows no op covers say why (gradrules.testing.core_ir)."""

from pathlib import Path

import gradrules
from gradrules.testing.core_ir import CORE_IR, NOT_APPLICABLE, core_ir_rows

TABLE = Path(__file__).parent / "data" / "core_ir_ops.tsv"
SEED = Path(__file__).parents[2] / "shared" / "seeds" / "core_ir_ops.tsv"


def test_the_table_is_the_seed():
    """tests/data holds the seed table as it is (where the seeds are here)."""
    if SEED.exists():
        assert TABLE.read_text() == SEED.read_text()
    assert len(core_ir_rows(str(TABLE))) == 163


def test_every_operator_maps_to_ops_of_the_catalog(capsys):
    ops = {op.name for op in gradrules.list_ops()}
    rows = core_ir_rows(str(TABLE))
    for operator, _, mapped in rows:
        print(f"{operator:45} {', '.join(mapped) or 'n/a: ' + NOT_APPLICABLE[operator]}")
    names = [operator for operator, _, _ in rows]
    assert sorted(names) == sorted(set(names))
    assert set(names) == set(CORE_IR) | set(NOT_APPLICABLE)
    assert not set(CORE_IR) & set(NOT_APPLICABLE)
    unknown = {operator: [o for o in mapped if o not in ops] for operator, _, mapped in rows}
    assert not {k: v for k, v in unknown.items() if v}, unknown
    assert all(reason for reason in NOT_APPLICABLE.values())
    shown = capsys.readouterr().out
    assert "aten.as_strided                               as_strided" in shown
