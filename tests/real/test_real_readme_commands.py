"""Every `sara-real` / real-benchmark command that README.md and docs/*.md show is run here, at
small sizes, so a documented command can never fail silently again (as `validate --strategy
sara-history --task-size 256` once did on its first argument check).

Commands are read from the ```bash blocks (tests/doc_code.py); sizes are shrunk (steps, groups,
evaluation), the model is the test-sized tiny model and every --out goes under a temporary folder
(keeping the names, so a documented `--resume` continues the run the block before it started).
The shared engine stands in for building one per command. The commands that need a server run
in test_serve.py against its servers; those for a GPU (a check-only block: a CUDA device, a hub
model) are parsed and checked in tests/core/test_doc_code.py."""

import shlex
from pathlib import Path

import pytest
from doc_code import documented

SMALL = {"--steps": "2", "--groups": "4", "--eval-every": "2", "--eval-problems": "8"}


def served(line: str) -> bool:
    """Commands that need a running vLLM server: test_serve.py runs them against its own servers."""
    return " serve " in line or "--engine-url" in line or " audit " in line


def documented_commands() -> list[tuple[str, str]]:
    """(page, command line) for every documented command of the real half that runs here."""
    return [(b.page, line) for b, line in documented("sara-real", check_only=False)]


def _shrink(args: list[str], tmp: Path, tiny_dir) -> list[str]:
    args = [a for a in args if not (a.startswith("[") or a.endswith("]"))]  # optional parts
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a in SMALL and a != "--steps":
            out += [a, SMALL[a]]
            i += 2
            continue
        if a == "--steps":  # a resume continues the run: one step more than the first call
            out += [a, "3" if "--resume" in args else SMALL[a]]
            i += 2
            continue
        if a == "--out":
            out += [a, str(tmp / args[i + 1])]
            i += 2
            continue
        out.append(a)
        i += 1
    if "--model" not in out:
        out += ["--model", str(tiny_dir)]
    for flag, v in SMALL.items():
        if flag not in out:
            out += [flag, v]
    return out + ["--eval-samples", "2", "--no-progress"]


def test_the_docs_show_the_commands_we_expect():
    cmds = [c for _, c in documented_commands()]
    assert any("sara-history" in c and "--task-size" in c for c in cmds)
    assert any(" compare " in c for c in cmds) and any("--resume" in c for c in cmds)
    assert any("make-tiny" in c for c in cmds) and any("real_compare.py" in c for c in cmds)


@pytest.fixture
def shared_engine(engine, hf_model):
    """The session's engine, given back holding the tiny model's own weights: later tests
    compare it with the untrained model."""
    yield engine
    engine.push_weights(hf_model)


@pytest.mark.integration
def test_every_documented_command_runs(
    tiny_dir, shared_engine, tmp_path, monkeypatch, capsys, script
):
    import real.rollout.collect
    from real.app.cli import main

    engine = shared_engine

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    real_compare = script("benchmarks/real_compare.py")

    ran = []
    for doc, line in documented_commands():
        if served(line):
            continue
        words = shlex.split(line)
        if line.startswith(".venv/bin/python"):
            argv = _bench_args(_shrink(words[2:], tmp_path, tiny_dir))
            if "--out" not in argv:
                argv += ["--out", str(tmp_path / f"bench{len(ran)}")]  # shown twice
            assert real_compare.main(argv) == 0, (doc, line, capsys.readouterr().err)
            ran.append(line)
            continue
        cmd, rest = words[1], words[2:]
        if cmd == "make-tiny":
            assert main(["make-tiny", "--test-size", "--out", str(tiny_dir)]) == 0
            ran.append(line)
            continue
        argv = [cmd, *_shrink(rest, tmp_path, tiny_dir)]
        rc = main(argv)
        assert rc == 0, (doc, line, argv, capsys.readouterr().err)
        ran.append(line)
    assert len(ran) == len([c for _, c in documented_commands() if not served(c)])


def _bench_args(argv: list[str]) -> list[str]:
    """real_compare.py takes --steps/--groups/--k/--seed/--tau-low/--model/--out only."""
    keep = {"--steps", "--groups", "--k", "--seed", "--tau-low", "--model", "--out", "--also"}
    out, i = [], 0
    while i < len(argv):
        if argv[i] in keep:
            out += argv[i : i + 2]
            i += 2
        else:
            i += 1 if argv[i].startswith("--no-") or not argv[i].startswith("--") else 2
    return [*out, "--no-progress"]
