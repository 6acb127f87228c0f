"""End to end on the tiny model: GRPO steps with sara and ds, the metrics file, rewards and
weights that change, engine/transformers parity after the pushes, an isolated raising verifier,
resume after SIGKILL with no lost or duplicated lines, compare, and one-line argument errors."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from real.app.run import train
from real.base.config import Config
from real.io.runlog import METRICS_KEYS, read_metrics, truncate_metrics

ROOT = Path(__file__).resolve().parents[2]


def _cfg(tiny_dir, out, **kw):
    base = dict(
        model=str(tiny_dir),
        k=8,
        groups=6,
        steps=3,
        eval_every=2,
        eval_problems=32,
        eval_samples=2,
        out=str(out),
        progress=False,
        lr=5e-4,
    )
    base.update(kw)
    return Config.from_flat(base)  # lr lands in cfg.grpo


@pytest.fixture(scope="module")
def runs(tiny_dir, engine, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    return {
        a: (train(_cfg(tiny_dir, out / a, strategy=a), engine=engine), out / a)
        for a in ("sara", "ds")
    }


@pytest.mark.integration
@pytest.mark.parametrize("alloc", ["sara", "ds"])
def test_metrics_file_and_summary(runs, alloc):
    summary, out = runs[alloc]
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for r in rows:
        assert list(r)[: len(METRICS_KEYS)] == list(METRICS_KEYS) and r["strategy"] == alloc
        if r["capped"]:  # a cap (DS: max_num_gen_batches, SARA: max_rounds) hit: fewer, said so
            assert r["effective_groups"] < r["groups"] == 6
        else:  # fixed yield
            assert r["effective_groups"] == r["groups"] == 6
        assert r["rollouts"] >= 6 * 8 and r["tokens"] >= r["rollouts"]  # >= 1 token each
        assert r["rounds"] == len(r["round_sizes"]) and sum(r["round_sizes"]) == r["rollouts"]
        assert 0 < r["batch_reward_mean"] < 1  # committed groups are mixed
        assert r["wall_s"] >= r["gen_s"] + r["train_s"] + r["sync_s"]
    assert "eval_accuracy" in rows[1] and "eval_accuracy" in rows[2]
    assert "eval_accuracy" not in rows[0]
    assert summary["steps"] == 3 and summary["rollouts"] == sum(r["rollouts"] for r in rows)
    assert json.loads((out / "summary.json").read_text())["rollouts"] == summary["rollouts"]


@pytest.mark.integration
def test_rewards_and_weights_change_and_parity_holds(runs, engine, tiny_dir):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from real.sampling.engine import parity_check

    rows = read_metrics(runs["sara"][1] / "metrics.jsonl")
    assert len({r["reward_mean"] for r in rows}) > 1
    start = load_file(tiny_dir / "model.safetensors")
    for alloc in ("sara", "ds"):
        trained = torch.load(runs[alloc][1] / "checkpoint.pt", weights_only=False)["model"]
        moved = [n for n, t in start.items() if not torch.equal(t, trained[n])]
        assert len(moved) > len(start) // 2, alloc
    # the engine holds the last pushed weights (ds ran last): greedy and logprobs agree
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)
    model.load_state_dict(trained)
    check = parity_check(engine, model, ["12+34=", "7*8=", "123+456=", "5+5=", "99*9="])
    assert check["ok"], check


@pytest.mark.integration
def test_raising_reward_function_is_isolated(tiny_dir, engine, tmp_path, monkeypatch, caplog):
    from real.tasks.arithmetic import ArithmeticTask

    original = ArithmeticTask.reward

    def flaky(self, completion, problem):
        if len(completion) % 2:  # deterministic, and frequent
            raise ZeroDivisionError("verifier bug")
        return original(self, completion, problem)

    monkeypatch.setattr(ArithmeticTask, "reward", flaky)
    s = train(_cfg(tiny_dir, tmp_path, strategy="uniform", steps=2), engine=engine)
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert len(rows) == 2 and s["reward_errors"] == sum(r["reward_errors"] for r in rows) > 0
    assert "verifier bug" in caplog.text


def test_truncate_drops_later_steps_duplicates_and_a_torn_line(tmp_path):
    p = tmp_path / "metrics.jsonl"
    lines = [json.dumps({"step": s}) for s in (0, 1, 1, 2, 3)] + ['{"step": 4, "rol']
    p.write_text("\n".join(lines))
    assert [r["step"] for r in truncate_metrics(p, 3)] == [0, 1, 2]
    assert [r["step"] for r in read_metrics(p)] == [0, 1, 2]


@pytest.mark.integration
def test_resume_after_sigkill_loses_and_duplicates_nothing(tiny_dir, engine, tmp_path):
    out = tmp_path / "killed"
    cmd = [
        sys.executable,
        *"-m real.app.cli validate --model".split(),
        str(tiny_dir),
        *"--strategy sara --k 8 --groups 6 --steps 7 --eval-every 2 --eval-problems 32".split(),
        *"--eval-samples 2 --lr 5e-4 --seed 3 --out".split(),
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    try:
        while len(read_metrics(out / "metrics.jsonl")) < 3:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    done_before = len(read_metrics(out / "metrics.jsonl"))
    assert done_before < 7
    cfg = _cfg(tiny_dir, out, strategy="sara", steps=7, seed=3, resume=True)
    train(cfg, engine=engine)
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(7))  # none lost, none twice
    assert rows[-1]["cum_rollouts"] == sum(r["rollouts"] for r in rows)  # totals restored
    # the same run without the kill samples the same rollouts: the state was fully restored
    ref = train(replace(cfg, out=str(tmp_path / "ref"), resume=False), engine=engine)
    ref_rows = read_metrics(tmp_path / "ref" / "metrics.jsonl")
    assert [r["rollouts"] for r in rows] == [r["rollouts"] for r in ref_rows]
    assert [r["reward_mean"] for r in rows] == [r["reward_mean"] for r in ref_rows]
    assert ref["rollouts"] == rows[-1]["cum_rollouts"]


@pytest.mark.integration
def test_compare_table_and_plots(tiny_dir, engine, tmp_path, monkeypatch):
    import sara_sim.collect.collectors
    from real.app.compare import format_table, plot_compare, run_compare

    built, make = [], sara_sim.collect.collectors.make_collector
    monkeypatch.setattr(
        sara_sim.collect.collectors,
        "make_collector",
        lambda *a, **kw: built.append(a) or make(*a, **kw),
    )
    cfg = _cfg(tiny_dir, tmp_path, steps=2)
    table, curves = run_compare(cfg, ["ds", "sara"], engine=engine)
    assert built == [("ds",), ("sara",)]  # one collector per run: checked, then used
    assert list(table["strategy"]) == ["ds", "sara"]
    assert table.loc[0, "rollouts_vs_ds"] == 1.0 and table["rollouts_vs_ds"].notna().all()
    assert set(curves["strategy"]) == {"ds", "sara"}
    assert (curves["cum_rollouts"] == 0).sum() == 2  # both start from the same evaluated model
    assert curves[curves.cum_rollouts == 0]["eval_accuracy"].nunique() == 1
    text = format_table(table, curves)
    assert "roll/eff" in text and "sara" in text and "nan" not in text and "e+" not in text
    assert max(len(line) for line in text.splitlines()) <= 100
    for p in plot_compare(tmp_path, table, curves, ["ds", "sara"]):
        assert p.stat().st_size > 1000


@pytest.mark.integration
def test_cli_validate_and_compare_in_process(tiny_dir, engine, tmp_path, monkeypatch, capsys):
    import real.rollout.collect
    from real.app.cli import main

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    common = ["--model", str(tiny_dir), "--k", "4", "--groups", "4", "--steps", "2",
              "--eval-every", "1", "--eval-problems", "16", "--eval-samples", "2",
              "--no-progress"]  # fmt: skip
    assert main(["validate", "--strategy", "sara-auto", "--out", str(tmp_path / "v"), *common]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["strategy"] == "sara-auto" and line["steps"] == 2
    # a used run directory is refused without --resume / --overwrite, in one line
    assert main(["validate", "--strategy", "sara", "--out", str(tmp_path / "v"), *common]) == 2
    assert "--out" in capsys.readouterr().err
    out = tmp_path / "c"
    assert main(["compare", "--strategies", "uniform,sara-eb", "--out", str(out), *common]) == 0
    text = capsys.readouterr().out
    assert "strategy comparison" in text and "sara-eb" in text and "uniform" in text
    for name in (
        "compare_eval_vs_rollouts.png",
        "compare_cost.png",
        "compare_rounds.png",
        "compare.csv",
        "compare.json",
    ):
        assert (out / name).stat().st_size > 0
    # a second compare into the same folder: refused without a flag, nothing changed
    before = (out / "sara-eb" / "metrics.jsonl").read_text()
    assert main(["compare", "--strategies", "uniform,sara-eb", "--out", str(out), *common]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "sara-eb" / "metrics.jsonl").read_text() == before
    # --resume continues every run of the compare (3 steps now), the lines of steps 0-1 kept
    more = [*common, "--steps", "3"]  # the later --steps wins
    assert (
        main(["compare", "--strategies", "uniform,sara-eb", "--out", str(out), *more, "--resume"])
        == 0
    )
    rows = read_metrics(out / "sara-eb" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert (out / "sara-eb" / "metrics.jsonl").read_text().startswith(before)
    # a changed experiment is refused on resume, naming what changed
    assert (
        main(
            [
                *"compare --strategies uniform,sara-eb --out".split(),
                str(out),
                *more,
                *"--resume --lr 0.01".split(),
            ]
        )
        == 2
    )
    assert "lr=" in capsys.readouterr().err
    # --overwrite starts over: the earlier compare's runs are not left stale beside the new one
    assert main(["compare", "--strategies", "ds", "--out", str(out), *common, "--overwrite"]) == 0
    capsys.readouterr()
    assert not (out / "sara-eb" / "metrics.jsonl").exists()
    assert len(read_metrics(out / "ds" / "metrics.jsonl")) == 2


@pytest.mark.integration
def test_other_tasks_run_and_an_overlong_budget_is_one_clear_error(tiny_dir, engine, tmp_path):
    from sara_sim.core.errors import ParameterError

    s = train(
        _cfg(tiny_dir, tmp_path / "cd", task="countdown", strategy="uniform", steps=1),
        engine=engine,
    )
    assert s["steps"] == 1 and s["rollouts"] == 6 * 8  # the arithmetic model cannot solve it
    with pytest.raises(ParameterError, match="--max-tokens"):
        train(_cfg(tiny_dir, tmp_path / "long", max_tokens=5000), engine=engine)


@pytest.mark.integration
def test_cli_validate_runs_a_peer_selector(tiny_dir, engine, tmp_path, monkeypatch, capsys):
    """mopps in the real loop: whole groups of k for the prompts its posterior ranks best,
    3 ratio x groups candidates passed over per step, on a finite task of 64 prompts."""
    import real.rollout.collect
    from real.app.cli import main

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    argv = ["validate", "--strategy", "mopps", "--task-size", "64", "--steps", "3",
            "--model", str(tiny_dir), "--k", "4", "--groups", "4", "--eval-every", "3",
            "--eval-problems", "8", "--eval-samples", "1", "--no-progress",
            "--out", str(tmp_path / "m")]  # fmt: skip
    assert main(argv) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["strategy"] == "mopps" and line["steps"] == 3
    rows = read_metrics(tmp_path / "m" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for r in rows:
        assert r["rollouts"] == 16 and r["rounds"] == 1  # 4 whole groups of 4, one round
        assert 0 <= r["effective_groups"] <= 4
