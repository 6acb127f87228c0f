"""Every `sara-sim` command documented in README.md and docs/*.md (```bash blocks, lines starting
`.venv/bin/sara-sim`; tests/doc_code.py reads them) and in the sara-sim module docstrings runs,
at small sizes, and exits 0 with strict JSON where it prints JSON — so a documented command can
never break silently again. So does the documented `python -m paper_figs` (two figures).

Optional parts ``[--flag VALUE]`` are run *with* the option; placeholders (PATH, A0,B0, a,b) are
filled in (PATH: the packaged histories' file, so a path works where the built-in name does);
size flags (--steps, --replicates, --groups, --epochs, --seeds, --out) are replaced by small
values or appended (--quick for verify / bench, --only 1 for figures).  Each runs from an empty
folder: a documented command needs no file of the checkout."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from doc_code import documented

from sara_sim.cli import app as cli
from sara_sim.cli import replay as cli_replay
from sara_sim.cli import sim as cli_sim
from sara_sim.cli.app import main
from sara_sim.core.difficulty import builtin_history

REPO = Path(__file__).resolve().parents[2]
HISTORY = builtin_history("deepscaler")
PLACEHOLDERS = {"PATH.csv": str(HISTORY), "PATH": str(HISTORY), "A0,B0": "1,1", "a,b": "ds,sara"}
SMALL = {  # subcommand -> flags replaced (or appended) to keep each run to a few seconds
    "simulate": {"--steps": "3", "--replicates": "1", "--groups": "8"},
    "compare": {"--steps": "3", "--replicates": "1", "--groups": "8"},
    "verify": {"--quick": None, "--steps": "10", "--replicates": "2"},
    "bench": {"--quick": None},
    "replay": {"--epochs": "26-27", "--seeds": "2"},
    "figures": {"--only": "1"},
    "wallclock": {"--steps": "2", "--groups": "8"},
}


def readme_commands():
    """The documented `sara-sim` command lines of every page, in order."""
    return [line for _, line in documented("sara-sim")]


def docstring_commands():
    out = []
    for mod in (cli, cli_sim, cli_replay):
        text = re.sub(r"\\\n\s*", " ", mod.__doc__)  # join continuation lines
        out += [ln.strip() for ln in text.splitlines() if ln.strip().startswith("sara-sim ")]
    return out


def to_argv(line, out_dir):
    line = line.split("#")[0]
    line = re.sub(r"\[([^\]]*)\]", r"\1", line)  # run the optional parts too
    argv = shlex.split(line)[1:]
    argv = [PLACEHOLDERS.get(a, a) for a in argv]
    argv = [a.replace("history:PATH.csv", f"history:{HISTORY}") for a in argv]
    argv = [a.replace("history:PATH", f"history:{HISTORY}") for a in argv]
    small = dict(SMALL.get(argv[0], {}))
    if argv[0] == "figures":
        small["--out"] = str(out_dir)
    for flag, value in small.items():
        if flag in argv:
            if value is not None:
                argv[argv.index(flag) + 1] = value
        else:
            argv += [flag] if value is None else [flag, value]
    return argv


def test_the_docs_document_every_subcommand():
    used = {line.split()[1] for line in readme_commands()}
    assert {"theory", "optimal", "simulate", "compare", "verify", "bench", "replay"} <= used
    assert "figures" in used and len(readme_commands()) >= 9
    # the recorded histories by their built-in name, so the commands run from any folder
    assert any("history:deepscaler" in line for line in readme_commands())
    assert any("--history deepscaler" in line for line in readme_commands())
    assert not any("shared" in line for line in readme_commands())


@pytest.mark.parametrize("line", readme_commands() + docstring_commands())
def test_documented_command_runs(line, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # any folder: a documented command needs no file of the checkout
    argv = to_argv(line, tmp_path / "figs")
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, (argv, out.err[-2000:])
    assert "Traceback" not in out.err
    if "--json" in argv:
        json.loads(out.out, parse_constant=lambda tok: pytest.fail(f"non-strict JSON {tok}"))
    else:
        assert out.out.strip()
    if argv[0] in ("compare", "verify") and "--json" not in argv:
        table = out.out.splitlines()[argv[0] == "compare" :]  # compare's line 1 names the law
        assert max(len(x) for x in table) <= 100 and "e+" not in out.out
    if argv[0] == "figures":
        assert (tmp_path / "figs" / "fig1_p_eff.png").is_file()


def test_documented_figures_command_runs(tmp_path, monkeypatch):
    """`python -m paper_figs` as the docs show it, its optional parts included (so its --only
    keeps it to a few figures), into an empty folder."""
    from paper_figs.__main__ import main as figures

    (line,) = [line for _, line in documented("figures")]
    argv = shlex.split(re.sub(r"\[([^\]]*)\]", r"\1", line))[3:]
    argv[argv.index("--out") + 1] = str(tmp_path / "figs")
    assert "--only" in argv
    monkeypatch.chdir(tmp_path)
    assert figures(argv) == 0
    only = argv[argv.index("--only") + 1].split(",")
    assert len(list((tmp_path / "figs").glob("*.png"))) == len(only)


def test_readme_command_through_the_console_script():
    """The first documented command exactly as a user types it (the installed `sara-sim`
    script)."""
    script = Path(sys.executable).parent / "sara-sim"
    assert script.is_file(), f"console script missing beside {sys.executable}"
    argv = to_argv(readme_commands()[0], None)
    proc = subprocess.run(
        [str(script), *argv], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    if "--json" in argv:
        assert json.loads(proc.stdout)["k"] == 8
