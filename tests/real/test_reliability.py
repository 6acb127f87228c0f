"""Nothing lost, nothing misleading, on the tiny model with the real in-process engine
and real tmpfs mounts: a torn or damaged metrics file on --resume, a full disk in `validate` and
`audit`, and a run that failed on its first step."""

import json
import shutil

import pytest

import real.base.config
import real.rollout.collect
from real.app.cli import main
from real.io.runlog import read_metrics

COMMON = ["--k", "4", "--groups", "4", "--eval-every", "2", "--eval-problems", "16",
          "--eval-samples", "2", "--ckpt-every", "1", "--no-progress"]  # fmt: skip


@pytest.fixture
def cli(tiny_dir, engine, hf_model, monkeypatch, capsys):
    """`sara-real ARGS` in process on the shared engine -> (exit status, stderr lines but the
    progress bar of transformers' weight loading); the engine gets the untrained weights back
    afterwards (other tests expect them)."""
    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)

    def run(*args):
        capsys.readouterr()
        rc = main([args[0], "--model", str(tiny_dir), *COMMON, *args[1:]])
        err = capsys.readouterr().err.strip().splitlines()
        return rc, [e for e in err if "Loading weights" not in e]  # transformers' own bar

    yield run
    engine.push_weights(hf_model)


def _no_engine(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("an engine started before the arguments were checked")

    monkeypatch.setattr(real.rollout.collect, "make_engine", refuse)


@pytest.mark.integration
def test_a_torn_last_line_is_restored_on_resume(cli, tmp_path):
    out = tmp_path / "run"
    assert cli("validate", "--steps", "2", "--out", str(out))[0] == 0
    path = out / "metrics.jsonl"
    whole = read_metrics(path)
    data = path.read_bytes()
    path.write_bytes(data[:-40])  # step 1's line cut off mid-write; its checkpoint is there
    rc, err = cli("validate", "--steps", "3", "--resume", "--out", str(out))
    assert rc == 0, err
    assert any("restored from the checkpoint" in e for e in err), err
    rows = read_metrics(path)
    assert [r["step"] for r in rows] == [0, 1, 2]  # contiguous and complete
    assert rows[:2] == whole  # the restored line is the one written
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["rollouts"] == rows[-1]["cum_rollouts"]


@pytest.mark.integration
def test_damaged_metrics_is_one_line_before_any_engine(cli, tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert cli("validate", "--steps", "2", "--out", str(out))[0] == 0
    path = out / "metrics.jsonl"
    good = path.read_bytes()
    # a torn tail that ends inside a UTF-8 character: repaired (dropped, the step runs again)
    path.write_bytes(good + '{"step": 2, "strategy": "sa\u00e9'.encode()[:-1])
    rc, err = cli("validate", "--steps", "3", "--resume", "--out", str(out))
    assert rc == 0, err
    assert [r["step"] for r in read_metrics(path)] == [0, 1, 2]
    # non-UTF-8 bytes inside an earlier line: one line naming the file and the line, no engine
    path.write_bytes(path.read_bytes().replace(b'"strategy"', b'"\xff\xfestrategy"', 1))
    _no_engine(monkeypatch)
    rc, err = cli("validate", "--steps", "4", "--resume", "--out", str(out))
    assert rc == 2 and len(err) == 1, err
    assert f"{path} line 1 is not UTF-8" in err[0]


@pytest.mark.integration
def test_a_full_disk_in_validate_is_one_line_and_the_checkpoint_stays(cli, tmp_path, tmpfs):
    first = tmp_path / "first"
    assert cli("validate", "--steps", "1", "--out", str(first))[0] == 0
    size = (first / "checkpoint.pt").stat().st_size
    disk = tmpfs.mount(f"{4 * size // 1024 + 256}k")
    out = disk / "run"
    shutil.copytree(first, out)
    filler = tmpfs.fill(disk, leave=size // 2)  # room for step 1's line, not its checkpoint
    rc, err = cli("validate", "--steps", "2", "--resume", "--out", str(out))
    assert rc == 1 and len(err) == 1, err
    assert err[0].startswith(f"sara-real: error: cannot write {out / 'checkpoint.pt'}: No space")
    assert not list(out.glob("*.tmp"))  # the half-written temp file is gone, not left behind
    filler.unlink()
    rc, err = cli("validate", "--steps", "2", "--resume", "--out", str(out))
    assert rc == 0, err
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1]


@pytest.mark.integration
def test_a_run_that_failed_on_its_first_step_starts_again(cli, tmpfs, monkeypatch):
    disk = tmpfs.mount("64m")  # room for the checkpoints once the filler is gone
    out = disk / "run"
    filler = tmpfs.fill(disk, leave=4096)  # the lock file's page; the first metrics line fails
    rc, err = cli("validate", "--steps", "2", "--out", str(out))
    assert rc == 1 and len(err) == 1, err
    assert f"cannot write {out / 'metrics.jsonl'}: No space left on device" in err[0]
    assert (out / "metrics.jsonl").read_bytes() == b""  # the failed append was cut back off
    assert not (out / "checkpoint.pt").exists()
    filler.unlink()
    from real.app.run import check_config

    cfg = real.base.config.Config.from_dict(
        dict(model=None, k=4, groups=4, steps=2, out=str(out), eval_problems=16, progress=False)
    )
    check_config(cfg)  # a plain start is accepted: nothing to resume, nothing to lose
    rc, err = cli("validate", "--steps", "2", "--resume", "--out", str(out))  # so is --resume
    assert rc == 0, err
    assert any("holds no completed step; the run starts at step 0" in e for e in err), err
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1]


@pytest.mark.integration
def test_a_full_disk_in_audit_leaves_no_partial_audit(tiny_dir, engine, tmpfs, monkeypatch, capsys):
    import real.sampling.engine

    monkeypatch.setattr(real.sampling.engine, "VLLMEngine", lambda *a, **kw: engine)
    disk = tmpfs.mount("1m")
    out = disk / "audit"
    argv = ["audit", "--model", str(tiny_dir), "--prompts", "16", "--k", "4", "--bootstrap", "20",
            "--no-progress", "--out", str(out)]  # fmt: skip
    filler = tmpfs.fill(disk, leave=4096)  # history.csv fits; audit.json does not
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"sara-real: error: cannot write {out / 'audit.json'}: No space left on device"]
    # no partial audit.json (engine.log: what the engine printed, real.io.enginelog)
    assert sorted(p.name for p in out.iterdir()) == ["engine.log", "history.csv"]
    filler.unlink()
    assert main(argv) == 0  # the unfinished audit does not block a rerun
    assert "holds an unfinished audit (no audit.json): redone" in capsys.readouterr().err
    res = json.loads((out / "audit.json").read_text())
    assert res["task"] == "arithmetic"
    assert main(argv) == 2 and "already holds an audit" in capsys.readouterr().err


def test_undefined_compare_ratios_are_null_and_dashes():
    """DS without an effective group: its cost per effective group is undefined, so is every
    ratio to it — null in compare.json, an empty cell in compare.csv, '-' in the table."""
    import pandas as pd

    from real.app.compare import COLUMNS, format_table, vs_ds
    from sara_sim.core.files import dumps_json

    rows = [
        {c: None for c in COLUMNS} | {"strategy": "ds", "rollouts": 64, "effective_groups": 0},
        {c: None for c in COLUMNS}
        | {"strategy": "sara", "rollouts_per_effective_group": 9.5, "effective_groups": 4},
    ]
    table = vs_ds(pd.DataFrame(rows, columns=COLUMNS), ["ds", "sara"])
    record = json.loads(dumps_json(table.to_dict("records")), parse_constant=lambda c: 1 / 0)
    assert [r["rollouts_vs_ds"] for r in record] == [None, None]
    assert record[1]["rollouts_per_effective_group"] == 9.5
    assert "nan" not in table.to_csv(index=False).lower()
    curves = pd.DataFrame(columns=["strategy", "steps_done", "cum_rollouts", "eval_accuracy"])
    text = format_table(table, curves)
    sara = next(line for line in text.splitlines() if line.startswith("sara "))
    assert sara.split()[1:3] == ["9.50", "-"] and "nan" not in text


def test_a_long_compare_entry_keeps_its_name_and_its_columns():
    """An entry with suffixes (sara-auto+stream+tokens) is longer than the name column: the
    column widens, every row's cells stay under their headers, and the name is never cut."""
    import pandas as pd

    from real.app.compare import COLUMNS, format_table, vs_ds

    names = ["ds", "sara-auto+stream+tokens"]
    rows = [
        {c: None for c in COLUMNS}
        | {"strategy": a, "rollouts_per_effective_group": r, "effective_groups": 4}
        for a, r in zip(names, (20.0, 17.5), strict=True)
    ]
    table = vs_ds(pd.DataFrame(rows, columns=COLUMNS), names)
    curves = pd.DataFrame(
        [(a, n, 100 * (n + 1), 0.25) for a in names for n in (0, 2)],
        columns=["strategy", "steps_done", "cum_rollouts", "eval_accuracy"],
    )
    lines = format_table(table, curves).splitlines()
    head = lines[2]  # the header under the two lines of title
    body = [line for line in lines if line.split(" ")[0] in names]
    assert [line.split()[0] for line in body] == names
    end = head.index("roll/eff") + len("roll/eff")
    assert [line[end - 5 : end] for line in body] == ["20.00", "17.50"]
    steps = next(line for line in lines if line.startswith("steps done"))
    assert steps.split() == ["steps", "done", *names]
    assert all(len(line) == len(steps) for line in lines[lines.index(steps) + 1 :])
