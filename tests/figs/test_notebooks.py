"""Every notebook in notebooks/ is committed without outputs, holds exactly the cells of its
jupytext source notebooks/NAME.py, and runs top to bottom.

The notebooks run in a kernel of *this* interpreter (a kernelspec written to a temporary
JUPYTER_PATH that points at sys.executable), so the test needs no user-level Jupyter setup and
cannot pick up another environment's `python3` kernel.
"""

import json
import math
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from sara_sim.core.difficulty import parse_law
from sara_sim.core.theory import sequential_law

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
def notebook_kernel(tmp_path_factory):
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
def test_the_parameters_cell_comes_second(name):
    """The tests (and papermill-style runs) set a notebook's inputs by a cell right after it."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code", f"{name}: one parameters cell"
    assert nb.cells.index(tagged[0]) == 1, f"{name}: the parameter cell comes right after"


def _cells(nb):
    return [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]


def test_every_source_has_its_notebook():
    sources = {p.stem for p in NOTEBOOKS.glob("*.py")}
    assert sources == {Path(name).stem for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_in_sync_with_its_jupytext_source(name):
    """The .py (jupytext percent format) is the source; the committed .ipynb is paired to it and
    rebuilt by `jupytext --update --to ipynb notebooks/*.py` (see notebooks/README.md)."""
    source = jupytext.read(NOTEBOOKS / name.replace(".ipynb", ".py"))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert nb.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent", name
    stale = [i for i, (a, b) in enumerate(zip(_cells(nb), _cells(source))) if a != b]
    assert len(nb.cells) == len(source.cells) and not stale, (
        f"{name} differs from its .py source (cells {stale}); run "
        "jupytext --update --to ipynb notebooks/*.py"
    )


def _execute(nb, notebook_kernel, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(notebook_kernel))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=600,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError (with the traceback) if any cell fails


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_executes(name, notebook_kernel, monkeypatch):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    t0 = time.perf_counter()
    _execute(nb, notebook_kernel, monkeypatch)
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


# every sns.heatmap call of the notebook, recorded (data and keywords) before it draws
SPY = """\
_heatmaps, _draw_heatmap = [], sns.heatmap
def _spy(data, **kw):
    _heatmaps.append((data.copy(), kw))
    return _draw_heatmap(data, **kw)
sns.heatmap = _spy"""
REPORT = """\
import json as _json
print("HEATMAPS" + _json.dumps([{
    "k": [int(k) for k in data.index], "tau": [float(t) for t in data.columns],
    "values": [[None if v != v else float(v) for v in row] for row in data.to_numpy()],
    "mask": kw["mask"].to_numpy().tolist() if kw.get("mask") is not None else None,
    "vmin": float(kw["vmin"]) if kw.get("vmin") is not None else None,
    "vmax": float(kw["vmax"]) if kw.get("vmax") is not None else None,
} for data, kw in _heatmaps]))"""


@pytest.mark.integration
def test_threshold_sweep_heatmaps_mask_the_undefined_cells(notebook_kernel, monkeypatch):
    """On the issue's law (beta:1,1), the heatmaps get NaN and a mask exactly where no group can
    be effective (the cost and savings panels), and a colour range from the defined cells only —
    never the 1e16 that a rounding residue made of those cells."""
    nb = nbformat.read(NOTEBOOKS / "threshold_sweep.ipynb", as_version=4)
    law = "beta:1,1"
    nb.cells.insert(2, nbformat.v4.new_code_cell(f"LAW = {law!r}"))  # after the parameters
    nb.cells.insert(4, nbformat.v4.new_code_cell(SPY))  # after the imports
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    _execute(nb, notebook_kernel, monkeypatch)
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    panels = json.loads(text.split("HEATMAPS", 1)[1])
    assert len(panels) == 3  # savings vs DS, P(false abandon), cost / DS cost
    ks, taus = panels[0]["k"], panels[0]["tau"]
    assert ks == [4, 8, 16, 32, 64] and len(taus) == 19
    undefined = [
        [sequential_law(parse_law(law), k, t)["p_effective"] == 0.0 for t in taus] for k in ks
    ]
    assert sum(map(sum, undefined)) == 14  # e.g. k = 4 from tau_low 0.65 (p_eff(1) = 0.6) on
    for i, panel in enumerate(panels):
        want = undefined if i != 1 else [[False] * len(taus) for _ in ks]  # P(false) is defined
        nan = [[v is None for v in row] for row in panel["values"]]
        assert nan == want and panel["mask"] == want, i
        defined = [v for row in panel["values"] for v in row if v is not None]
        assert (panel["vmin"], panel["vmax"]) == (min(defined), max(defined)), i
        assert all(math.isfinite(v) and abs(v) <= 100 for v in defined), i


@pytest.mark.integration
def test_real_run_analysis_reports_a_torn_or_damaged_metrics_file(
    notebook_kernel, monkeypatch, tmp_path
):
    """A torn last line (a kill mid-write) is said, not silently dropped; a damaged line before
    the last stops the notebook with the file and line named (the project's metrics reader)."""
    import shutil

    from nbclient.exceptions import CellExecutionError

    runs = tmp_path / "runs"
    shutil.copytree(NOTEBOOKS / "example_run", runs)
    path = runs / "ds/metrics.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:-20])  # the last line torn

    def run():
        nb = nbformat.read(NOTEBOOKS / "real_run_analysis.ipynb", as_version=4)
        nb.cells.insert(2, nbformat.v4.new_code_cell(f"RUN_DIRS = [{str(runs)!r}]"))
        _execute(nb, notebook_kernel, monkeypatch)
        return "".join(o.get("text", "") for c in nb.cells[:8] for o in c.get("outputs", []))

    out = run()
    assert f"note: {path} line {len(lines)} is torn" in out
    folders = sorted(runs.glob("*/metrics.jsonl"))
    steps = sum(len(p.read_bytes().splitlines()) for p in folders) - 1  # the torn one left out
    assert f"{steps} steps from {len(folders)} run folder(s)" in out
    path.write_bytes(b"".join(lines[:1]) + b"\xff\n" + b"".join(lines[2:]))
    with pytest.raises(CellExecutionError, match=f"{path} line 2 is not UTF-8"):
        run()


@pytest.mark.integration
def test_real_learning_claims_section_runs_with_only_some_claim_files(
    notebook_kernel, monkeypatch, claim_files
):
    """The claims section on a clone mid-run: reinforcepp absent (the toy folder's), and k8_more
    without its meta file — each named, the rest tabled (claims, rollouts to target) and drawn."""
    (claim_files / "k8_more.meta.json").unlink()
    nb = nbformat.read(NOTEBOOKS / "real_learning.ipynb", as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell(f"CLAIMS = {str(claim_files)!r}"))
    _execute(nb, notebook_kernel, monkeypatch)
    text = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        for o in c.get("outputs", [])
    )
    assert "reinforcepp: reinforcepp.csv not found" in text
    assert "k8_more: k8_more.meta.json not found" in text
    assert "GRPO: k8" in text and "RLOO: rloo" in text
    assert "same accuracy: confirmed" in text  # claim 1 on k8 alone (6 seeds)
    # the budget table on k8 alone: sara's 0.78x rollouts; uniform (5 points behind) never
    # reaches the target, so its ratio is '-' with the reason, not a number
    assert "GRPO, k 8" in text and "0.785x [0.772, 0.797] (5 paired)" in text
    assert "0/6 (5/6)" in text and "- (no paired seed reached it)" in text
    assert "figure 13 not drawn" not in text and "(c) tokens vs rollouts" in text
