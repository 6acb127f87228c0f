"""Every notebook in notebooks/ is committed without outputs and runs top to bottom.

The notebooks run in a kernel of *this* interpreter (a kernelspec written to a temporary
JUPYTER_PATH that points at sys.executable), so the test needs no user-level Jupyter setup and
cannot pick up another environment's `python3` kernel.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
KERNEL = "sara-test-python"
EXPECTED = {
    "threshold_sweep.ipynb",
    "theory_vs_simulation.ipynb",
    "real_history_replay.ipynb",
    "real_run_analysis.ipynb",
    "real_learning.ipynb",
}


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory):
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )
    return root


def test_every_notebook_is_there():
    assert EXPECTED <= set(NAMES), f"missing notebooks: {EXPECTED - set(NAMES)}"


@pytest.mark.parametrize("name", NAMES)
def test_committed_stripped(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name}: cell {i} has committed outputs"
            assert cell.execution_count is None, f"{name}: cell {i} has an execution count"


@pytest.mark.parametrize("name", NAMES)
def test_opens_with_question_and_parameters(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    assert "**Answers:**" in first.source, f"{name}: first cell must say what it answers"
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code", f"{name}: one parameters cell"
    assert nb.cells.index(tagged[0]) == 1, f"{name}: the parameter cell comes right after"


def test_built_from_the_generator():
    """The committed notebooks are exactly what notebooks/build_notebooks.py writes."""
    proc = subprocess.run(
        [sys.executable, str(NOTEBOOKS / "build_notebooks.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", NAMES)
def test_executes(name, kernel_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=600,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError (with the traceback) if any cell fails
    print(f"{name}: executed in {time.perf_counter() - t0:.1f} s")
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors
    # the committed file is untouched by execution
    assert all(
        c.outputs == []
        for c in nbformat.read(NOTEBOOKS / name, as_version=4).cells
        if c.cell_type == "code"
    )
