"""The stated public API: what users import from sara_sim, real (the real-model half) and real.trl
(the TRL adapter). Each package's `__all__` is the list below, every name in it resolves, and no
other public name sits in the package's namespace; the docs' import lines name only these. Adding
or removing a public name without updating the list here fails."""

import importlib
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PUBLIC = {
    "sara_sim": [
        "p_eff", "decide", "decide_plan", "threshold_plan",
        "CONTINUE", "COMMIT", "ABANDON", "SATURATED",
        "make_collector", "STRATEGIES", "SaraParams", "DSParams", "HistoryParams",
        "Request", "StepResult",
        "simulate", "theory", "optimal", "BetaLaw", "parse_law",
        "ParameterError",
    ],
    "real": [
        "SaraRollout",
        "Engine", "VLLMEngine", "ServerEngine",
        "StrategyConfig",
        "build_tiny", "TinySettings",
        "make_task", "extract_integer",
    ],
    "real.trl": ["SaraRollout"],
}  # fmt: skip


@pytest.mark.parametrize("pkg", PUBLIC)
def test_all_is_the_stated_list(pkg):
    assert importlib.import_module(pkg).__all__ == PUBLIC[pkg]


@pytest.mark.parametrize("pkg", PUBLIC)
def test_every_public_name_resolves_and_no_other_is_public(pkg):
    mod = importlib.import_module(pkg)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name  # the lazy ones load here
    own = {
        name
        for name, value in vars(mod).items()
        if not name.startswith("_")
        and not (isinstance(value, types.ModuleType) and value.__name__.startswith(f"{pkg}."))
    }
    assert own <= set(mod.__all__), (
        f"{pkg}: public but not stated: {sorted(own - set(mod.__all__))}"
    )
    with pytest.raises(AttributeError):
        mod.no_such_name  # noqa: B018


IMPORT = re.compile(
    r"\bfrom (sara_sim|real)((?:\.\w+)*) import ([\w, ]+)|\bimport ((?:sara_sim|real)\.[\w.]+)"
)


def bad_imports(text: str) -> tuple[int, list[str]]:
    """(import lines of sara_sim / real in `text`, the ones that name an internal module or a
    name outside the stated lists)."""
    lines, bad = 0, []
    for m in IMPORT.finditer(text):
        lines += 1
        if m.group(4):  # `import real.x.y`: an internal module
            bad.append(f"{m.group(0)}: an internal module")
            continue
        pkg = m.group(1) + m.group(2)
        names = {n.strip() for n in m.group(3).split(",") if n.strip()}
        if pkg not in PUBLIC:
            bad.append(f"{m.group(0).strip()}: {pkg} is internal; import from {m.group(1)}")
        elif not names <= set(PUBLIC[pkg]):
            bad.append(f"{m.group(0).strip()}: not public: {sorted(names - set(PUBLIC[pkg]))}")
    return lines, bad


def test_the_docs_import_only_public_names():
    """Every `from sara_sim... import` / `from real... import` in README.md and the other docs
    imports stated public names from a public package, never from an internal module."""
    docs = [p for p in ROOT.rglob("*.md") if not {".venv", ".cache", "results"} & set(p.parts)]
    seen = 0
    for path in sorted(docs):
        lines, bad = bad_imports(path.read_text())
        assert not bad, f"{path.relative_to(ROOT)}: {bad}"
        seen += lines
    assert seen >= 5  # the quick start, the TRL example, sara_sim/README.md's API lines


def test_the_import_check_names_what_is_wrong():
    text = "from sara_sim.core.difficulty import BetaLaw\nfrom real import Config\n"
    text += "import real.base.env"
    lines, bad = bad_imports(text)
    assert lines == 3 and len(bad) == 3
    assert "sara_sim.core.difficulty is internal" in bad[0] and "['Config']" in bad[1]
    assert bad_imports("from sara_sim import BetaLaw, p_eff\nfrom real import SaraRollout") == (
        2,
        [],
    )
