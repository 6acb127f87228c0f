"""Both packages' layers import only downward (docs/design.md §6): sara_sim's core -> collect ->
sim -> cli and real's base -> io -> tasks -> models -> sampling -> rollout -> train | trl | verl
-> app (train, trl and verl are siblings: none imports another).

Read from the source with ``ast`` (nothing is imported), so a new upward import fails here with
the file, the line and the two layers named. real/ may import sara_sim; sara_sim never imports
real."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# layer -> rank: a module may import its own layer and any layer of a lower rank
RANKS = {
    "sara_sim": {"core": 0, "collect": 1, "sim": 2, "cli": 3},
    "real": {
        "base": 0,
        "io": 1,
        "tasks": 2,
        "models": 3,
        "sampling": 4,
        "rollout": 5,
        "train": 6,
        "trl": 6,
        "verl": 6,
        "app": 7,
    },
}
OURS = ("sara_sim", "real", "paper_figs")


def modules(pkg):
    return sorted(p for p in (ROOT / pkg).rglob("*.py") if p.parent != ROOT / pkg)


def module_name(path):
    """real/tasks/__init__.py -> real.tasks; real/app/cli.py -> real.app.cli."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path):
    """(line, imported name, at module level?) for every import of one of our packages."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # relative: resolve against this file's package
                base = module_name(path).split(".")
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                mod = ".".join(base + ([mod] if mod else []))
            # `from real.sampling import engine` names the module real.sampling.engine
            names = [f"{mod}.{a.name}" for a in node.names] if mod.count(".") == 1 else [mod]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in OURS:
                yield node.lineno, name, id(node) in top


def layer_of(name):
    parts = name.split(".")
    ranks = RANKS.get(parts[0], {})
    return parts[1] if len(parts) > 1 and parts[1] in ranks else None


def where(path):
    return f"{path.parent.name}/{path.name}"


ALL = [(pkg, p) for pkg in RANKS for p in modules(pkg)]


@pytest.mark.parametrize("pkg", RANKS)
def test_every_module_sits_in_a_layer(pkg):
    flat = [p.name for p in (ROOT / pkg).glob("*.py") if p.name != "__init__.py"]
    assert flat == [], f"{pkg}: modules outside a layer: {flat}"
    outside = {p.relative_to(ROOT / pkg).parts[0] for p in modules(pkg)} - set(RANKS[pkg])
    assert not outside, f"{pkg}: folders that are no layer: {sorted(outside)}"


def upward(pkg, here, path):
    """One message per import in `path` (a module of layer `here`) that breaks the layers."""
    ranks = RANKS[pkg]
    for line, name, _ in imports(path):
        top, at = name.split(".")[0], f"{pkg}/{here}/{path.name}:{line} imports {name}"
        if top == "paper_figs":
            if (pkg, here) != ("sara_sim", "cli"):
                yield f"{at} (only sara_sim's cli may)"
            continue
        if top != pkg:  # real may import sara_sim (its strategies); sara_sim never imports real
            if (pkg, top) != ("real", "sara_sim"):
                yield f"{at}: {pkg} may not import {top}"
            continue
        there = layer_of(name)
        if name == pkg or there is None:
            yield f"{at}: the package top; import the module"
        elif ranks[there] > ranks[here] or (ranks[there] == ranks[here] and there != here):
            kind = "sibling" if ranks[there] == ranks[here] else "higher"
            yield f"{at}: layer {here} may not import the {kind} layer {there}"


@pytest.mark.parametrize(("pkg", "path"), ALL, ids=lambda x: x if isinstance(x, str) else where(x))
def test_imports_go_only_downward(pkg, path):
    """Module-level and function-level imports alike: a lazy import is no way around a layer."""
    here = path.relative_to(ROOT / pkg).parts[0]
    assert list(upward(pkg, here, path)) == []


def test_paper_figs_only_lazily():
    for path in modules("sara_sim"):
        for line, name, top in imports(path):
            if name.startswith("paper_figs"):
                assert not top, (
                    f"{path.name}:{line}: import paper_figs inside the function that needs it"
                )


def graph(pkg, lazy):
    """{module: modules it imports} within `pkg` (function-level imports too when `lazy`)."""
    mods = {module_name(p): p for p in modules(pkg)}

    def resolve(name):  # `real.tasks.TASKS` is the module real.tasks
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    return {
        me: {resolve(n) for _, n, top in imports(p) if (top or lazy) and resolve(n)}
        for me, p in mods.items()
    }


def find_cycle(g):
    seen, stack = set(), []

    def visit(m):
        if m in stack:
            return stack[stack.index(m) :] + [m]
        if m in seen:
            return None
        stack.append(m)
        for n in sorted(g.get(m, ())):
            if n != m and (cycle := visit(n)):
                return cycle
        stack.pop()
        seen.add(m)
        return None

    for m in sorted(g):
        if cycle := visit(m):
            return cycle
    return None


def test_no_import_cycles_in_sara_sim():
    """Module-level imports between sara_sim modules form no cycle (a lazy import may close one)."""
    cycle = find_cycle(graph("sara_sim", lazy=False))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_cycles_in_real():
    """real/'s imports form no cycle, lazy ones included: none is left hiding a circle."""
    cycle = find_cycle(graph("real", lazy=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_can_fail(tmp_path):
    """An upward import (lazy), a sibling import, a circle: each is caught, naming the file, the
    line and the two layers."""
    bad = tmp_path / "bad.py"
    bad.write_text("import json\n\n\ndef f():\n    from real.app.cli import main\n")
    assert list(upward("real", "io", bad)) == [
        "real/io/bad.py:5 imports real.app.cli: layer io may not import the higher layer app"
    ]
    bad.write_text("from real.trl import adapter\nfrom real.train.grpo import GRPO\n")
    assert list(upward("real", "train", bad)) == [
        "real/train/bad.py:1 imports real.trl.adapter: layer train may not import the sibling "
        "layer trl"
    ]
    bad.write_text("import real.app.cli\n")
    assert len(list(upward("sara_sim", "core", bad))) == 1  # sara_sim never imports real
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
