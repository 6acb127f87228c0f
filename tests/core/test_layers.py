"""The package's layers import only downward: core -> collect -> sim -> cli (sara_sim/README.md).

Read from the source with ``ast`` (nothing is imported), so a new upward import fails here with
the file, the line and the two layers named."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "sara_sim"
ORDER = ["core", "collect", "sim", "cli"]


def modules():
    return sorted(p for p in PKG.rglob("*.py") if p.parent != PKG)


def imports(path):
    """(line, imported module, at module level?) for every import of sara_sim or paper_figs."""
    layer = path.parent.name
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # relative: resolve against this file's package
                base = ["sara_sim", layer][: 3 - node.level]
                mod = ".".join(base + ([mod] if mod else []))
            # `from sara_sim.core import policy` names the module sara_sim.core.policy
            names = [f"{mod}.{a.name}" for a in node.names] if mod.count(".") == 1 else [mod]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith(("sara_sim", "paper_figs")):
                yield node.lineno, name, id(node) in top


def layer_of(name):
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ORDER else None


def test_every_module_sits_in_a_layer():
    flat = [p.name for p in PKG.glob("*.py") if p.name != "__init__.py"]
    assert flat == [], f"modules outside a layer: {flat}"
    assert {p.parent.name for p in modules()} <= set(ORDER)


@pytest.mark.parametrize("path", modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_imports_go_only_downward(path):
    here = ORDER.index(path.parent.name)
    for line, name, _ in imports(path):
        if name.startswith("paper_figs"):
            assert path.parent.name == "cli", f"{path.name}:{line} imports {name} (only cli may)"
            continue
        there = layer_of(name)
        if name == "sara_sim" or there is None:
            raise AssertionError(
                f"{path.name}:{line} imports the package top ({name}); import the module"
            )
        assert ORDER.index(there) <= here, (
            f"{path.parent.name}/{path.name}:{line} imports {name}: "
            f"layer {path.parent.name} may not import the higher layer {there}"
        )


def test_paper_figs_only_lazily():
    for path in modules():
        for line, name, top in imports(path):
            if name.startswith("paper_figs"):
                assert not top, (
                    f"{path.name}:{line}: import paper_figs inside the function that needs it"
                )


def test_no_import_cycles():
    """Module-level imports between sara_sim modules form no cycle (a lazy import may close one)."""
    graph = {}
    for path in modules():
        me = f"sara_sim.{path.parent.name}.{path.stem}"
        graph[me] = {n for _, n, top in imports(path) if top and n.count(".") >= 2}
    seen, stack = set(), []

    def visit(m):
        if m in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(m) :] + [m]))
        if m in seen:
            return
        stack.append(m)
        for n in graph.get(m, ()):
            visit(".".join(n.split(".")[:3]))
        stack.pop()
        seen.add(m)

    for m in graph:
        visit(m)
