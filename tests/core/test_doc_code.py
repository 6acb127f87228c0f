"""The code blocks of README.md and docs/*.md (tests/doc_code.py says how they are read): each
has a language and a test that runs it; the library's python blocks run here as printed and
print what the page says they print; the blocks that cannot run on this machine (marked
``# check-only:``) are checked as far as it allows — installs name extras that exist, set-up
scripts take the flags shown, a GPU recipe's flags parse and pass every check of their values,
a benchmark's flags pass its own argument check, check-only python compiles. And every relative
link of the pages users read reaches a file, and a heading where it names one."""

import contextlib
import io
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
from doc_code import (
    CHECK_ONLY,
    LANGUAGES,
    ROOT,
    blocks,
    commands,
    documented,
    kind,
    python_blocks,
)

# the kinds only check-only blocks may hold (module docstring of tests/doc_code.py)
CHECKED = {"setup", "verl", "benchmark"}


def test_every_block_names_its_language_and_every_command_has_a_test():
    bad = [f"{b}: language {b.lang!r}" for b in blocks() if b.lang not in LANGUAGES]
    for b in blocks():
        if b.lang == "bash":
            for c in commands(b):
                k = kind(c)
                if k is None:
                    bad.append(f"{b}: no test runs {c!r}")
                elif k in CHECKED and not b.check_only:
                    bad.append(f"{b}: {c!r} cannot run here: open its block with {CHECK_ONLY}")
    assert not bad, "\n".join(bad)
    here = python_blocks(real=False)
    assert len(here) >= 2 and all(b.expected for b in here)  # each says what it prints
    assert python_blocks(real=True)  # TRL's example: tests/real/test_trl.py


@pytest.mark.parametrize("block", python_blocks(real=False), ids=str)
def test_a_python_block_runs_as_printed_and_prints_what_the_page_says(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.text, str(block), "exec"), {"__name__": "__doc__"})  # noqa: S102
    assert printed.getvalue() == block.expected


def test_check_only_python_compiles():
    checked = [b for b in blocks() if b.lang == "python" and b.check_only]
    assert checked  # the GPU recipe of TRL (docs/trl.md)
    for b in checked:
        compile(b.text, str(b), "exec")


def _extras():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_installs_name_extras_that_exist_and_scripts_take_the_flags_shown():
    extras, seen = _extras(), set()
    for b, line in documented("setup"):
        for step in line.split("&&"):
            words = shlex.split(step)
            if words[0] == "bash":  # bash scripts/NAME.sh [--flag] [OPTIONAL]
                script = ROOT / words[1]
                assert script.is_file(), (str(b), line)
                flags = [w for w in words[2:] if w.startswith("--")]
                assert all(f'"{f}"' in script.read_text() for f in flags), (str(b), line)
                seen.add(words[1])
            elif words[0].startswith("HF_HUB_OFFLINE="):  # a download: the CLI is installed
                assert (Path(sys.executable).parent / Path(words[1]).name).is_file(), line
            elif "install" in words:
                targets = [w for w in words if w.startswith((".", "sara-toolkit"))]
                assert targets, (str(b), line)
                for target in targets:
                    named = re.findall(r"\[([^\]]*)\]", target)
                    for extra in (x for group in named for x in group.split(",")):
                        assert extra in extras, f"{b}: {line}: no extra {extra!r}"
                        seen.add(extra)
    assert {"scripts/run.sh", "scripts/test.sh", "trl", "verl", "real-cpu", "real-gpu"} <= seen


def test_the_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci/run").read_text()
    assert any(line == "bash scripts/test.sh" for _, line in documented("setup"))
    assert "scripts/test.sh" in ci


def test_gpu_recipes_parse_and_pass_every_check_of_their_values():
    """The checks `sara-real` makes before any engine, short of those that need the machine the
    recipe is for: the CUDA device, the hub model and the task files."""
    from real.app.cli import build_parser, run_config
    from real.app.run import check_engine, check_grpo, check_knobs, check_run_fields
    from real.base.config import build_collector

    checked = documented("sara-real", check_only=True)
    assert checked  # the R1-Distill recipe (docs/real-loop.md)
    for b, line in checked:
        a = build_parser().parse_args(shlex.split(line)[1:])
        cfg = run_config(a)
        check_run_fields(cfg)
        check_engine(cfg.engine)
        check_grpo(cfg.grpo)
        check_knobs(cfg.knobs, cfg.k)
        build_collector(cfg.strategy, cfg.knobs, k=cfg.k, groups=cfg.groups, seed=cfg.seed)
        assert cfg.grpo.device == "cuda", str(b)


def test_benchmark_commands_pass_their_argument_check(script, tmp_path, monkeypatch):
    """A benchmark the docs show but that needs another environment: its own argument check
    (`parse`, then `check`) accepts the flags shown; the peer environment's own check is
    recorded, not made (it is not on this machine)."""
    shown = documented("benchmark", check_only=True)
    assert shown  # the peer benchmark (docs/peers.md)
    for b, line in shown:
        words = shlex.split(line)
        words = words[1:] if words[0] == "nice" else words
        bench = script(words[1])
        peer = []
        monkeypatch.setattr(bench, "check_peer", peer.append, raising=False)
        argv = [str(tmp_path / "out") if w == "OUT" else w for w in words[2:]]
        plan = bench.check(bench.parse(argv))
        assert plan and peer, (str(b), line)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, markup and punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def test_every_relative_link_reaches_its_file_and_heading():
    pages = [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]
    pages += [p for p in ROOT.glob("benchmarks/**/*.md") if "results" not in p.parts]
    pages += [ROOT / "sara_sim/README.md"]
    bad, n = [], 0
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            n += 1
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                bad.append(f"{page.relative_to(ROOT)}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                bad.append(f"{page.relative_to(ROOT)}: {target}: no such heading")
    assert not bad, "\n".join(bad)
    assert n >= 30
