"""A new user, played for real: the committed repository cloned into an empty folder (nothing
beside it), its main job and every documented command run there; and the wheel built from it,
installed into a clean virtual environment without the real-model extras, answering
`sara-sim theory` on the built-in histories from an unrelated folder without importing torch.

The clone runs on this interpreter's packages (its `.venv` points at them, so `scripts/setup.sh`
finds its stamp and installs nothing) and on its own code (`PYTHONPATH=<clone>`, asserted). Only
committed files reach a clone: CI, which tests a clean checkout, sees exactly the user's view."""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


REPO = Path(__file__).resolve().parents[1]
STAMP = ".sara-installed"  # scripts/setup.sh: sha1 of pyproject.toml, written after installing


def _run(cmd, *, cwd, env, timeout, what):
    """Run `cmd`; a timeout or a non-zero exit fails the test with the command's last output."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        tail = exc.stdout or b""  # bytes or str, depending on where the timeout struck
        pytest.fail(f"{what}: still running after {timeout} s; last output:\n{tail[-3000:]!r}")
    if proc.returncode != 0:
        pytest.fail(
            f"{what}: exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
            f"--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc, time.perf_counter() - t0


def _bare_env(**extra):
    """The environment without anything that points Python at this checkout or this venv."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _give_venv(clone: Path) -> None:
    """clone/.venv: this interpreter's venv when its setup stamp matches the clone's
    pyproject.toml (CI: both are HEAD's), so setup.sh sees a finished install; otherwise (a
    developer's venv installed from another pyproject revision) a stand-in whose python runs this
    interpreter and whose stamp matches, so setup.sh can never reinstall the shared venv."""
    venv = Path(sys.prefix)
    assert venv != Path(sys.base_prefix), f"the tests must run in a virtual env, not {venv}"
    want = hashlib.sha1((clone / "pyproject.toml").read_bytes()).hexdigest()
    stamp = venv / STAMP
    if stamp.is_file() and stamp.read_text().strip() == want:
        (clone / ".venv").symlink_to(venv, target_is_directory=True)
        return
    (clone / ".venv" / "bin").mkdir(parents=True)
    python = clone / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (clone / ".venv" / STAMP).write_text(want + "\n")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    root = tmp_path_factory.mktemp("new-user")
    dest = root / "sara-toolkit"
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = _bare_env()
    _run(
        ["git", "clone", "--quiet", str(REPO), str(dest)],
        cwd=root,
        env=env,
        timeout=300,
        what="git clone",
    )
    _run(
        ["git", "-C", str(dest), "checkout", "--quiet", "--detach", head],
        cwd=root,
        env=env,
        timeout=120,
        what="git checkout HEAD",
    )
    assert sorted(p.name for p in root.iterdir()) == ["sara-toolkit"]
    assert not (dest.parent / "shared").exists()  # the team's workbench is not beside it
    _give_venv(dest)
    return dest


def _clone_env(clone):
    return _bare_env(PYTHONPATH=str(clone), MPLBACKEND="Agg")


def test_the_main_job_on_a_clone_with_nothing_beside_it(clone):
    env = _clone_env(clone)
    probe = "import sara_sim, paper_figs; print(sara_sim.__file__); print(paper_figs.__file__)"
    proc, _ = _run(
        [str(clone / ".venv/bin/python"), "-c", probe],
        cwd=clone,
        env=env,
        timeout=120,
        what="import from the clone",
    )
    for line in proc.stdout.split():
        assert Path(line).resolve().is_relative_to(clone.resolve()), line  # the clone's code
    stamp = Path(sys.prefix) / STAMP
    stamp_before = stamp.read_bytes() if stamp.exists() else None
    out = clone / "figs"
    proc, wall = _run(
        _main_job(out),
        cwd=clone,
        env=env,
        timeout=1500,
        what="bash scripts/run.sh DIR (the README's main job)",
    )
    print(f"main job on the clone: {wall:.0f} s wall")
    assert (stamp.read_bytes() if stamp.exists() else None) == stamp_before  # nothing installed
    assert "skipped" not in proc.stdout, proc.stdout[-3000:]
    assert "Traceback" not in proc.stderr and "error:" not in proc.stderr, proc.stderr[-3000:]
    names = _figure_names(clone, env)
    missing = [
        f"{n}{ext}"
        for n in names
        for ext in (".png", ".csv", ".txt")
        if not (out / f"{n}{ext}").is_file()
    ]
    assert not missing, f"run.sh did not write {missing}\n{proc.stdout[-3000:]}"
    assert f"({len(names)} figures in {out})" in proc.stdout


def _main_job(out) -> list[str]:
    """The main job's command as README.md shows it (`bash scripts/run.sh [DIR]`), DIR = out."""
    from doc_code import documented

    (line,) = [x for _, x in documented("setup") if "scripts/run.sh" in x]
    return [str(out) if w == "[DIR]" else w for w in line.split()]


def _figure_names(clone, env):
    code = "import paper_figs; print(' '.join(paper_figs.FIGURES))"
    proc, _ = _run(
        [str(clone / ".venv/bin/python"), "-c", code],
        cwd=clone,
        env=env,
        timeout=120,
        what="paper_figs.FIGURES",
    )
    names = proc.stdout.split()
    assert len(names) >= 10 and "fig8_replay_strategies" in names, names
    return names


def test_every_documented_command_on_the_clone(clone, tmp_path):
    """The README-command test module of the simulator, run inside the clone on the clone's
    code: each documented `sara-sim` command at small sizes, from the clone's folder. (The
    `sara-real` commands' module builds a model and starts an engine: CI runs it in its own
    checkout, itself a clean clone, so running it again here would prove nothing more.)"""
    tests = ["tests/sim/test_readme_commands.py"]
    cmd = [str(clone / ".venv/bin/python"), "-m", "pytest", *tests, "-q", "-x",
           "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'inner'}"]  # fmt: skip
    proc, wall = _run(
        cmd,
        cwd=clone,
        env=_clone_env(clone),
        timeout=1500,
        what="the README-command tests inside the clone",
    )
    print(f"README commands on the clone: {wall:.0f} s wall")
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "deselected" not in summary, (
        proc.stdout[-3000:]
    )


# The README's numbers for the DeepScaleR histories, epoch 0, k 8 (paper_figs.doc_blocks)
THEORY = ["theory", "--difficulty", "history:deepscaler", "--epoch", "0", "--k", "8",
          "--tau-low", "0.5", "--json"]  # fmt: skip
IN_PROCESS = f"""
import contextlib, importlib.util, io, json, sys
from sara_sim.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = main({THEORY!r})
got = json.loads(buf.getvalue())
print(json.dumps({{"rc": rc, "torch_imported": "torch" in sys.modules,
                  "torch_installed": importlib.util.find_spec("torch") is not None,
                  "sara_sim": __import__("sara_sim").__file__,
                  "ds": got["ds_cost_per_effective_group"],
                  "sara": got["cost_per_effective_group"]}}))
"""


def test_the_wheel_in_a_clean_venv_answers_theory_on_the_built_in_histories(clone, tmp_path):
    env = _bare_env()
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels)]
    if importlib.util.find_spec("setuptools") is not None:  # build offline with what is here
        build.append("--no-build-isolation")
    _run([*build, str(clone)], cwd=tmp_path, env=env, timeout=600, what="pip wheel")
    (wheel,) = wheels.glob("sara_toolkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {"sara_sim/data/deepscaler_pass_history.csv", "sara_sim/data/README.md"} <= names
    venv = tmp_path / "venv"
    _run(
        [sys.executable, "-m", "venv", str(venv)],
        cwd=tmp_path,
        env=env,
        timeout=300,
        what="python -m venv",
    )
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg, cfg
    py = str(venv / "bin" / "python")
    _, wall = _run(
        [py, "-m", "pip", "install", "-q", str(wheel)],
        cwd=tmp_path,
        env=env,
        timeout=1200,
        what="pip install the wheel (base dependencies)",
    )
    print(f"clean venv install of the wheel: {wall:.0f} s wall")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc, _ = _run(
        [py, "-c", IN_PROCESS],
        cwd=elsewhere,
        env=env,
        timeout=300,
        what="sara-sim theory in-process in the clean venv",
    )
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0 and not got["torch_imported"] and not got["torch_installed"], got
    assert Path(got["sara_sim"]).resolve().is_relative_to(venv.resolve()), got["sara_sim"]
    assert (round(got["ds"], 2), round(got["sara"], 2)) == (14.36, 13.77), got
    proc, _ = _run(
        [str(venv / "bin" / "sara-sim"), *THEORY],
        cwd=elsewhere,
        env=env,
        timeout=300,
        what="the sara-sim console script in the clean venv",
    )
    assert round(json.loads(proc.stdout)["cost_per_effective_group"], 2) == 13.77
