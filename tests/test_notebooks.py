"""The notebooks run top to bottom (each cell within nbclient's timeout), and
those that plot show their plots."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
PLOTTING = {"01_tour.ipynb", "03_higher_order.ipynb", "04_fused_ops.ipynb"}


def test_the_six_notebooks_are_there_without_outputs():
    assert [p.stem for p in NOTEBOOKS] == ["01_tour", "02_writing_a_rule", "03_higher_order",
                                           "04_fused_ops", "05_vmap_and_transforms",
                                           "06_scaling_out"]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert bool(images) == (path.name in PLOTTING), path.name
