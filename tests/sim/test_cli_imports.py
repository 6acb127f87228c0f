"""The `sara-sim` modules import in one direction: cli/app -> cli/sim, cli/replay -> cli/common,
and only the `figures` subcommand reaches up to paper_figs (lazily, inside its function)."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "sara_sim" / "cli"


def _imports(path):
    """(module imported, at top level?) for every import of a file."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            name = "." * node.level + (node.module or "")
            out.append((name, id(node) in top))
        elif isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
    return out


def test_cli_modules_have_no_cycle():
    assert not [m for m, _ in _imports(PKG / "common.py") if m[:1] == "." and m[:2] != ".."]
    for name in ("sim.py", "replay.py"):
        assert ".app" not in {m for m, _ in _imports(PKG / name)}, name


def test_only_the_figures_command_imports_paper_figs_lazily():
    users = {}
    for path in sorted(PKG.glob("*.py")):
        for mod, top in _imports(path):
            if mod.split(".")[0] == "paper_figs":
                users[path.name] = top
    assert users == {"app.py": False}
