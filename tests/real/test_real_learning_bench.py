"""benchmarks/real_learning.py end to end at a tiny size (one seed, few steps, the test model):
the learning.csv schema, its step-0 rows, cumulative columns, the audit columns, --resume and
the refusal to overwrite. The scientific result is the committed CSV's business, not this test's."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "real_learning", ROOT / "benchmarks/real_learning.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.integration
def test_learning_csv_pipeline(tiny_dir, engine, hf_model, tmp_path, monkeypatch, capsys):
    import pandas as pd

    import real.rollout.collect

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    bench = _bench()
    out = tmp_path / "bench"
    argv = ["--strategies", "uniform,ds,sara,sara-history", "--k", "4", "--seeds", "0",
            "--steps", "3", "--groups", "4", "--eval-every", "2", "--eval-problems", "16",
            "--task-size", "32", "--model", str(tiny_dir), "--no-progress",
            "--out", str(out)]  # fmt: skip
    try:
        assert bench.main(argv) == 0, capsys.readouterr().err
    finally:
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    t = pd.read_csv(out / "learning.csv")
    assert list(t.columns) == list(bench.COLUMNS)
    assert set(t.strategy) == {"uniform", "ds", "sara", "sara-history"}
    for _, g in t.groupby("strategy"):
        assert list(g.step) == [0, 1, 2, 3] and set(g.k) == {4} and set(g.seed) == {0}
        start = g.iloc[0]
        assert start.cum_rollouts == 0 and start.wall_s == 0 and 0 <= start.eval_accuracy <= 1
        assert g.cum_rollouts.is_monotonic_increasing and g.cum_tokens.is_monotonic_increasing
        assert (g.cum_rollouts.iloc[1:] == g.rollouts.iloc[1:].cumsum()).all()
        assert g.eval_accuracy.notna().tolist() == [True, False, True, True]  # every 2 and last
        for col in ("eval_se", "eval_se_sampling"):  # where evaluated, and only there
            assert (g[col].notna() == g.eval_accuracy.notna()).all()
            assert (g[col].dropna() >= 0).all()
    # uniform trains on its 4 groups, saturated or not; the others on <= 4 effective groups
    # (DS stops at --max-num-gen-batches on this barely trained model)
    steps = t[t.step > 0]
    assert (steps[steps.strategy == "uniform"].groups == 4).all() and (steps.groups <= 4).all()
    fixed = steps[(steps.strategy != "uniform") & (steps.groups > 0)]
    assert (fixed.effective_fraction == 1).all()
    audited = t[t.audited > 0]
    rate = audited.audit_mixed / audited.audited
    assert ((audited.false_abandon_rate - rate).abs() < 1e-5).all()
    assert (t[t.strategy.isin(["uniform", "ds"])].audited.fillna(0) == 0).all()
    meta = json.loads((out / "learning.meta.json").read_text())
    assert meta["command"].startswith("python benchmarks/real_learning.py")
    assert meta["packages"]["torch"]

    # a finished benchmark is never overwritten silently; --resume reuses its runs
    assert bench.main(argv) == 2
    assert "--resume or --overwrite" in capsys.readouterr().err
    before = (out / "learning.csv").read_text()
    assert bench.main([*argv, "--resume"]) == 0
    assert (out / "learning.csv").read_text() == before
    meta_text = (out / "learning.meta.json").read_text()
    assert str(tmp_path) not in meta_text  # the model by its cache key, runs relative to OUT
    # changed settings on --resume: refused in one line naming the setting; data and meta kept
    capsys.readouterr()
    assert bench.main([*argv, "--resume", "--steps", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "steps=3, not 4" in err[0], err
    assert (out / "learning.meta.json").read_text() == meta_text
    # the estimator is recorded, and a change of it on --resume refused the same way
    assert meta["args"]["estimator"] == meta["config"]["grpo"]["estimator"] == "grpo"
    assert bench.main([*argv, "--resume", "--estimator", "rloo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "estimator='grpo', not 'rloo'" in err[0], err
    assert (out / "learning.meta.json").read_text() == meta_text
    assert (out / "learning.csv").read_text() == before


@pytest.mark.integration
def test_two_paired_seeds_end_to_end_print_the_verdicts(
    tiny_dir, engine, hf_model, tmp_path, monkeypatch, capsys
):
    """The claims pipeline at toy size — 2 seeds chosen up front, 2 steps, ds and sara on the same
    seeds — down to its verdict lines; --summary prints the same lines from the table alone. What
    the verdicts say is the committed run's business, not this test's."""
    import real.rollout.collect

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    bench, out = _bench(), tmp_path / "claims"
    argv = ["--strategies", "ds,sara", "--k", "4", "--seeds", "3,5", "--steps", "2",
            "--groups", "3", "--eval-every", "1", "--eval-problems", "16", "--task-size", "32",
            "--model", str(tiny_dir), "--no-progress", "--out", str(out)]  # fmt: skip
    try:
        assert bench.main(argv) == 0, capsys.readouterr().err
    finally:
        engine.push_weights(hf_model)
    lines = capsys.readouterr().out.strip().splitlines()
    verdicts = [x for x in lines if x.startswith("k=4 sara vs ds")]
    assert len(verdicts) == 3, lines
    assert all("2 seeds" in x for x in verdicts)
    assert "same accuracy:" in verdicts[0] and "fewer rollouts:" in verdicts[1]
    assert "tokens saved beyond rollouts:" in verdicts[2]
    meta = json.loads((out / "learning.meta.json").read_text())
    assert [(r["k"], r["seed"]) for r in meta["runs"]] == [(4, 3), (4, 5)]  # all seeds reported
    assert bench.main(["--summary", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines() == verdicts


@pytest.mark.integration
def test_learning_benchmark_runs_ds_both_ways_and_sara_both_ways(
    tiny_dir, engine, hf_model, tmp_path, monkeypatch, capsys
):
    """DS ours (N) and as verl runs it (ds-verl3n: 3N), SARA carrying and not
    (sara+no-carry), side by side on one seed — each its own folder, rows and recorded config."""
    import pandas as pd

    import real.rollout.collect
    from real.io.runlog import read_metrics

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    out, names = tmp_path / "bench", ["ds", "ds-verl3n", "sara", "sara+no-carry"]
    argv = ["--strategies", ",".join(names), "--k", "4", "--seeds", "0", "--steps", "3",
            "--groups", "4", "--eval-every", "3", "--eval-problems", "16", "--task-size", "32",
            "--audit", "0", "--model", str(tiny_dir), "--no-progress",
            "--out", str(out)]  # fmt: skip
    try:
        assert _bench().main(argv) == 0, capsys.readouterr().err
    finally:
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    t = pd.read_csv(out / "learning.csv")
    assert list(dict.fromkeys(t.strategy)) == names and len(t) == 4 * 4
    runs = out / "runs" / "k4-seed0"
    for name in names:
        config = json.loads((runs / name / "summary.json").read_text())["config"]
        assert config["strategy"] == name.removesuffix("+no-carry")
        assert config["knobs"]["carry"] is (name != "sara+no-carry")
    # (the test model passes too rarely for sara to carry anything at this size: what
    # dropping does is test_no_carry_drops_what_sara_carries's)
    for r in read_metrics(runs / "ds-verl3n" / "metrics.jsonl"):  # 12 prompts x 4 per batch
        assert set(r["round_sizes"]) == {48}, r["round_sizes"]
    for r in read_metrics(runs / "ds" / "metrics.jsonl"):
        assert set(r["round_sizes"]) == {16}, r["round_sizes"]
    for r in read_metrics(runs / "sara+no-carry" / "metrics.jsonl"):  # nothing enters the next
        assert r["carried"] == 0 and r["carried_open"] == 0, r
    steps = t[t.step > 0]
    assert (steps[steps.strategy == "sara+no-carry"].effective_fraction.dropna() == 1).all()
    meta = json.loads((out / "learning.meta.json").read_text())
    assert meta["args"]["strategies"] == ",".join(names)
    table = pd.read_csv(runs / "compare.csv")
    assert list(table.strategy) == names


def test_summary_reads_a_committed_table_by_its_path(capsys):
    """--summary --out accepts the committed CSV itself (the claim-run notes' command)."""
    table = Path(__file__).resolve().parents[2] / "benchmarks/results/real_learning.csv"
    assert _bench().main(["--summary", "--out", str(table)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(x.startswith("k=8 sara vs ds: rollouts 0.785x") for x in lines), lines


def test_eval_se_accounts_for_problems():
    """Two problems, one always solved and one never: sampling cannot move pass@1 (its SE is
    0), the choice of problems can (clustered SE: sd 0.71 of the rates / sqrt 2 = 0.5)."""
    r = _bench().eval_se([4, 0], 4)
    assert r["eval_se_sampling"] == 0 and abs(r["eval_se"] - 0.5) < 1e-12
    assert _bench().eval_se(None, 4) == {"eval_se": None, "eval_se_sampling": None}


def test_bad_arguments_exit_2_before_any_engine(tmp_path, capsys):
    bench = _bench()
    for argv, flag in (
        (["--k", "8,x"], "--k"),
        (["--strategies", "ds,nope"], "--strategies"),
        (["--seeds", "0,0"], "--seeds"),
        (["--audit", "-1"], "--audit"),
        (["--resume", "--overwrite"], "--resume"),
        (["--estimator", "ppo"], "--estimator: must be one of grpo, dr-grpo, rloo, reinforce++"),
        (["--task", "countdown"], "--task: must be one of arithmetic, reasoning"),
        (["--margin", "0"], "--margin"),
        (["--summary"], "does not exist: run the benchmark first"),
    ):
        assert bench.main([*argv, "--out", str(tmp_path / "o")]) == 2
        assert flag in capsys.readouterr().err


def test_graded_curriculum_targets():
    """The graded model's SFT targets: a pure function of (seed, uid), right with probability
    graded_q(problem), otherwise the near miss (last digit said twice); exact builds keep their
    cache key, so adding the curriculum rebuilt no earlier model."""
    import hashlib
    from dataclasses import asdict

    import numpy as np

    from real.models.tiny import FORMAT_VERSION, TinySettings, graded_q, near_miss, sft_target
    from real.tasks.arithmetic import ArithmeticTask

    s, task = TinySettings.graded(), ArithmeticTask(seed=0)
    probs = [task.problem(u) for u in range(4000)]
    targets = [sft_target(p, s, u) for u, p in enumerate(probs)]
    assert targets == [sft_target(p, s, u) for u, p in enumerate(probs)]
    assert all(t in (p.answer, near_miss(p.answer)) for t, p in zip(targets, probs, strict=True))
    right = np.array([t == p.answer for t, p in zip(targets, probs, strict=True)])
    q = np.array([graded_q(p) for p in probs])
    assert abs(right.mean() - q.mean()) < 3 * np.sqrt(q.mean() * (1 - q.mean()) / len(q))
    assert right[q >= 0.8].mean() > right[q <= 0.4].mean() + 0.3  # graded by difficulty
    assert all(sft_target(p, TinySettings(), u) == p.answer for u, p in enumerate(probs[:50]))
    assert s.digest() != TinySettings().digest()
    # the digest of an exact build is what it was before the curriculum and base fields existed
    new = ("curriculum", "base")
    legacy = {k: v for k, v in asdict(TinySettings.test()).items() if k not in new}
    blob = json.dumps({"v": FORMAT_VERSION, **legacy}, sort_keys=True)
    assert TinySettings.test().digest() == hashlib.sha1(blob.encode()).hexdigest()[:12]


def test_each_task_starts_from_its_own_tiny_model(tmp_path):
    """--task picks the start model (graded for arithmetic, the reasoning build for reasoning,
    the tests' model with --test-model), and the meta file names it by its cache key."""
    from argparse import Namespace

    from real.models.tiny import STAMP, TinySettings

    bench = _bench()
    pick = [
        bench.start_settings(Namespace(task=t, test_model=m))
        for t, m in (("arithmetic", False), ("reasoning", False), ("reasoning", True))
    ]
    assert pick == [TinySettings.graded(), TinySettings.reasoning(), TinySettings.test()]
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / STAMP).write_text(TinySettings.reasoning().digest())
    label = bench.model_label(folder)
    assert label == f"tiny reasoning settings, cache key {TinySettings.reasoning().digest()}"
