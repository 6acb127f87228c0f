"""SARA and DS inside TRL's real GRPOTrainer (no mock trainer), on the test tiny model, CPU.

What must hold: every group TRL trains on is mixed, judged from the rewards TRL itself
passed to its reward functions; the adapter always returns exactly the rows it was handed;
replacement prompts' dataset columns reach the reward function; a resumed run continues the
adapter's prompt iterator without repeats or gaps; bad configuration fails before training."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

trl = pytest.importorskip("trl", reason="the trl extra is not installed")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ROOT = Path(__file__).resolve().parents[2]
K, GROUPS = 8, 4


def _dataset(n=256):
    from datasets import Dataset

    from real.tasks.arithmetic import ArithmeticTask

    task = ArithmeticTask(seed=0)
    return Dataset.from_list(
        [{"prompt": p.prompt, "answer": p.answer} for p in map(task.problem, range(n))]
    )


def _truth(prompt: str) -> str:
    a, op, b = re.fullmatch(r"(\d+)([+*])(\d+)=", prompt).groups()
    return str(int(a) + int(b) if op == "+" else int(a) * int(b))


def _args(out, steps=3, **kw):
    from real.trl.backends import cpu_grpo_config

    return cpu_grpo_config(out, k=K, groups=GROUPS, steps=steps, **kw)


class Spy:
    """Reward functions as TRL calls them: `correct` decides pass/fail (and checks that the
    answer column belongs to the prompt really generated from), `seen` records what TRL saw."""

    def __init__(self):
        self.batches, self.replaced, self.calls, self.prompts = [], 0, [], []

    def correct(self, completions, answer, sara_prompt, **kw):
        from real.tasks.arithmetic import extract_integer

        for a, p in zip(answer, sara_prompt):
            assert a == _truth(p), f"answer column {a!r} does not belong to prompt {p!r}"
        return [1.0 if extract_integer(c) == a else 0.0 for c, a in zip(completions, answer)]

    def seen(self, prompts, completions, sara_reward_0, sara_prompt, **kw):
        self.batches.append(list(sara_reward_0))
        self.prompts.append(list(sara_prompt))  # the prompt each row was really sampled from
        self.replaced += sum(p != q for p, q in zip(prompts, sara_prompt))
        return [0.0] * len(completions)


def _trainer(tiny_dir, args, sara, spy, ds, engine_rollout=None):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    def rollout(prompts, trainer):  # count what goes in and out of the adapter
        out = sara(prompts, trainer)
        spy.calls.append((len(prompts), {k: len(v) for k, v in out.items() if v is not None}))
        return out

    return GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_dir, dtype="float32"),
        reward_funcs=sara.reward_funcs + [spy.seen],
        args=args,
        train_dataset=ds,
        processing_class=AutoTokenizer.from_pretrained(tiny_dir),
        rollout_func=rollout,
        callbacks=[sara.callback],
    )


@pytest.mark.integration
@pytest.mark.parametrize("strategy", ["sara", "ds"])
def test_trl_trains_only_on_mixed_groups(tiny_dir, tmp_path, strategy):
    from real.trl.adapter import SaraRollout

    ds, spy = _dataset(), Spy()
    args = _args(tmp_path / "out")
    sara = SaraRollout(args, ds, [spy.correct], strategy)
    tr = _trainer(tiny_dir, args, sara, spy, ds)
    tr.train()
    assert len(spy.batches) == 3 and tr.state.global_step == 3
    for rewards in spy.batches:  # what TRL handed its reward functions, in its group layout
        assert len(rewards) == GROUPS * K
        for g in range(GROUPS):
            assert 0 < sum(rewards[g * K : (g + 1) * K]) < K, rewards
    for n_in, lens in spy.calls:  # every returned column has exactly one entry per input row
        assert n_in == GROUPS * K and set(lens.values()) == {GROUPS * K}, lens
    assert spy.replaced > 0  # replacement prompts did enter TRL's batch (answers checked above)
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert [h["frac_reward_zero_std"] for h in logs] == [0.0] * 3
    assert all(h["sara/effective_groups"] == GROUPS and h["sara/groups"] == GROUPS for h in logs)
    assert all(h["sara/rollouts"] >= GROUPS * K for h in logs)  # our metrics reached TRL's logs
    assert all(h["padded"] == 0 for h in sara.step_log)
    key = "abandoned" if strategy == "sara" else "waste"
    assert sum(h[key] for h in sara.step_log) > 0  # the collector really worked around prompts


@pytest.mark.integration
def test_trl_evaluation_scores_eval_rows(tiny_dir, tmp_path):
    """TRL's evaluate() also goes through rollout_func: plain samples, eval rows' columns."""
    from datasets import Dataset

    from real.tasks.arithmetic import ArithmeticTask
    from real.trl.adapter import SaraRollout

    held = ArithmeticTask(seed=0).eval_problems()[:8]
    ev = Dataset.from_list([{"prompt": p.prompt, "answer": p.answer} for p in held])
    ds, spy = _dataset(), Spy()
    args = _args(tmp_path / "out", 1, per_device_eval_batch_size=16, num_generations_eval=2)
    sara = SaraRollout(args, ds, [spy.correct], eval_dataset=ev)
    tr = _trainer(tiny_dir, args, sara, spy, ds)
    tr.train()
    metrics = tr.evaluate(ev)  # spy.correct asserts every answer belongs to its prompt
    assert 0.0 <= metrics["eval_rewards/correct/mean"] <= 1.0
    assert spy.batches[-1] and len(spy.batches) >= 2  # TRL scored the eval rows too


@pytest.mark.integration
def test_resumed_trl_run_continues_the_prompt_iterator(tiny_dir, tmp_path):
    from real.trl.adapter import SaraRollout

    ds = _dataset()
    out = tmp_path / "out"
    args = _args(out, 4, save_strategy="steps", save_steps=2)
    full = SaraRollout(args, ds, [Spy().correct])
    _trainer(tiny_dir, args, full, Spy(), ds).train()
    assert (out / "checkpoint-2" / "sara_rollout_rank0.pt").is_file()
    # a fresh process: new adapter and trainer, resumed from the step-2 checkpoint
    args = _args(out, 4, save_strategy="steps", save_steps=2)
    again = SaraRollout(args, ds, [Spy().correct])
    _trainer(tiny_dir, args, again, Spy(), ds).train(
        resume_from_checkpoint=str(out / "checkpoint-2")
    )
    assert len(full.step_log) == 4 and len(again.step_log) == 2
    # the adapter's own prompt source: positions continue exactly where the checkpoint left them
    assert again.step_log[0]["prompts"][0] == full.step_log[1]["prompts"][1]
    assert again.step_log[0]["prompts"][0] > 0  # replacements had been drawn before the save
    spans = [h["prompts"] for h in full.step_log[:2] + again.step_log]
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # no gap, no repeat
    # same weights, same seeds: the resumed steps are the uninterrupted run's steps
    assert [h["rows"] for h in again.step_log] == [h["rows"] for h in full.step_log[2:]]
    assert [h["prompts"] for h in again.step_log] == [h["prompts"] for h in full.step_log[2:]]


@pytest.mark.integration
def test_resume_without_adapter_state_is_refused(tiny_dir, tmp_path):
    from real.trl.adapter import SaraRollout
    from real.trl.backends import STATE_FILE
    from sara_sim.core.errors import ParameterError

    ds, out = _dataset(), tmp_path / "out"
    args = _args(out, 2, save_strategy="steps", save_steps=2)
    _trainer(tiny_dir, args, SaraRollout(args, ds, [Spy().correct]), Spy(), ds).train()
    (out / "checkpoint-2" / STATE_FILE.format(rank=0)).unlink()
    args = _args(out, 3, save_strategy="steps", save_steps=2)
    tr = _trainer(tiny_dir, args, SaraRollout(args, ds, [Spy().correct]), Spy(), ds)
    with pytest.raises(ParameterError, match="resume_from_checkpoint.*would repeat prompts"):
        tr.train(resume_from_checkpoint=str(out / "checkpoint-2"))


@pytest.mark.integration
def test_bad_configuration_fails_before_training(tiny_dir, tmp_path):
    from real.trl.adapter import SaraRollout
    from sara_sim.core.errors import ParameterError

    ds, ok = _dataset(64), Spy().correct
    with pytest.raises(ValueError, match="at least 2 generations"):  # TRL's own check
        _args(tmp_path, num_generations=1, per_device_train_batch_size=4)
    args = _args(tmp_path)
    args.num_generations = 1  # changed after TRL's check: ours still catches it
    with pytest.raises(ParameterError, match="^num_generations: group size must be"):
        SaraRollout(args, ds, [ok])
    msg = r"^tau_low: must be a finite number in \[0, 1\], got 1.5"
    with pytest.raises(ParameterError, match=msg):
        SaraRollout(_args(tmp_path), ds, [ok], "sara", tau_low=1.5)
    with pytest.raises(ParameterError, match="^strategy: unknown strategy 'greedy'"):
        SaraRollout(_args(tmp_path), ds, [ok], "greedy")
    with pytest.raises(ParameterError, match="^schedule: must be one of rounds, stream"):
        SaraRollout(_args(tmp_path), ds, [ok], schedule="streaming")
    with pytest.raises(ParameterError, match="^schedule: stream needs a vLLM backend"):
        SaraRollout(_args(tmp_path), ds, [ok], schedule="stream")  # HF generate: rounds only
    args = _args(tmp_path)  # TRL checks only the global batch; 2 processes x 12 rows pass it
    args.per_device_train_batch_size = 12
    with pytest.raises(ParameterError, match="^per_device_train_batch_size: .* 12 rows per proc"):
        SaraRollout(args, ds, [ok])

    def words(completions, **kw):
        return ["right" for _ in completions]

    with pytest.raises(ParameterError, match="^reward_funcs: words must return numbers"):
        SaraRollout(_args(tmp_path), ds, [words])

    def words_later(completions, **kw):  # fine on the probe, wrong on real completions
        return [0.0 if c == "" else "right" for c in completions]

    args = _args(tmp_path)
    sara = SaraRollout(args, ds, [words_later])
    tr = _trainer(tiny_dir, args, sara, Spy(), ds)
    with pytest.raises(ParameterError, match="^reward_funcs: words_later must return numbers"):
        tr.train()
    assert tr.state.global_step == 0  # no optimizer step was taken


def test_allocator_keyword_is_a_deprecated_alias(tmp_path, capsys):
    """SaraRollout(..., allocator="ds") still works as strategy="ds" and says so in one line."""
    from real.trl.adapter import SaraRollout

    sara = SaraRollout(_args(tmp_path), _dataset(64), [Spy().correct], allocator="ds")
    assert sara.strategy == "ds" and sara.collector.name == "ds"
    assert capsys.readouterr().err == "allocator= is deprecated; use strategy=\n"


@pytest.mark.integration
def test_cli_validate_and_compare_through_trl(tiny_dir, engine, tmp_path, monkeypatch):
    """`sara-real validate/compare --trainer trl`: the native metrics contract, on our engine."""
    import real.app.run
    import real.rollout.collect
    from real.app.cli import main
    from real.base.config import Config
    from real.io.runlog import read_metrics
    from sara_sim.core.errors import ParameterError

    monkeypatch.setattr(
        real.rollout.collect, "make_engine", lambda cfg, model_dir: engine
    )  # share it

    def common(steps=2):
        size = ["--k", "8", "--groups", "4", "--steps", str(steps), "--eval-every", "2"]
        return ["--model", str(tiny_dir), *size, "--eval-problems", "8", "--no-progress"]

    n_out, t_out = tmp_path / "n", tmp_path / "t"
    assert main(["validate", *common(), "--strategy", "sara", "--out", str(n_out)]) == 0
    trl_argv = ["--trainer", "trl", "--strategy", "sara", "--out", str(t_out)]
    assert main(["validate", *common(), *trl_argv]) == 0
    native, trl_rows = read_metrics(n_out / "metrics.jsonl"), read_metrics(t_out / "metrics.jsonl")
    assert len(trl_rows) == 2 and set(native[0]) <= set(trl_rows[0])  # same keys (+ trainer)
    assert all(r["effective_groups"] == r["groups"] == 4 for r in trl_rows)
    s_native = json.loads((n_out / "summary.json").read_text())
    s_trl = json.loads((t_out / "summary.json").read_text())
    assert set(s_native) == set(s_trl) and s_trl["config"]["trainer"] == "trl"
    assert s_trl["eval_final"] is not None and s_trl["effective_fraction"] == 1.0
    # a used --out is refused; --resume continues it without lost or repeated lines
    assert main(["validate", *common(4), *trl_argv]) == 2
    data = (t_out / "metrics.jsonl").read_bytes()
    (t_out / "metrics.jsonl").write_bytes(data[:-40])  # step 1's line torn; its checkpoint kept
    assert main(["validate", *common(4), *trl_argv, "--resume"]) == 0
    rows = read_metrics(t_out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3] and rows[:2] == trl_rows  # restored
    assert json.loads((t_out / "summary.json").read_text())["steps"] == 4
    # a run folder is resumed only by the trainer that wrote it (no silent fresh start)
    with pytest.raises(ParameterError, match="^--resume: .* holds a --trainer trl run"):
        real.app.run.train(
            Config.from_dict({**s_trl["config"], "trainer": "native", "resume": True})
        )
    with pytest.raises(ParameterError, match="^--resume: .* holds a --trainer native run"):
        real.app.run.train(
            Config.from_dict({**s_native["config"], "trainer": "trl", "resume": True})
        )
    assert len(read_metrics(n_out / "metrics.jsonl")) == 2  # nothing was deleted
    cmp = ["compare", *common(), "--trainer", "trl", "--strategies", "ds,sara"]
    assert main([*cmp, "--out", str(tmp_path / "c")]) == 0
    table = json.loads((tmp_path / "c/compare.json").read_text())["table"]
    assert [r["strategy"] for r in table] == ["ds", "sara"]
    assert all(r["effective_fraction"] == 1.0 for r in table)


def test_cli_rejects_bad_trainer_flags(tmp_path, capsys):
    from real.app.cli import main

    assert main(["validate", "--trainer", "verl", "--out", str(tmp_path / "a")]) == 2
    assert "--trainer: must be one of native, trl" in capsys.readouterr().err
    bad = ["validate", "--trainer", "trl", "--groups", "3", "--minibatches", "5"]
    assert main([*bad, "--out", str(tmp_path / "b")]) == 2
    assert "--minibatches: must divide groups x k = 24" in capsys.readouterr().err


def _run_example(cmd, tmp_path, timeout):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(x) for x in res.stdout.splitlines() if x.startswith('{"rank"')]


def _documented_examples():
    """The example's command lines docs/trl.md shows: (examples/trl_sara.py runs, the
    accelerate launch)."""
    from doc_code import documented

    lines = [line for _, line in documented("example")]
    return [x for x in lines if "accelerate" not in x], [x for x in lines if "accelerate" in x]


@pytest.mark.integration
def test_documented_example_runs(tiny_dir, tmp_path, monkeypatch, capsys):
    """examples/trl_sara.py run with the flags docs/trl.md shows, one command after the other
    (in this process: TRL is imported once per session): 3 steps, then resumed for one more."""
    import runpy

    monkeypatch.chdir(tmp_path)
    main = runpy.run_path(str(ROOT / "examples/trl_sara.py"), run_name="example")["main"]

    def run(line):
        main(["--model", str(tiny_dir), *line.split()[2:]])
        lines = capsys.readouterr().out.splitlines()
        return [json.loads(x) for x in lines if x.startswith('{"rank"')]

    first, resumed = _documented_examples()[0]
    assert "--resume" in resumed
    rows = run(first)
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert all(r["effective_groups"] == r["groups"] == 4 for r in rows)
    assert (tmp_path / "runs/trl-sara/checkpoint-2/sara_rollout_rank0.pt").is_file()
    assert [r["step"] for r in run(resumed)] == [3]  # one more step


@pytest.mark.integration
def test_two_processes_with_accelerate_launch(tiny_dir, tmp_path):
    """The scale-out path: each process collects its own share (gloo on CPU)."""
    (line,) = _documented_examples()[1]  # as docs/trl.md shows it, on a port of our own
    words = line.split()
    words[0] = str(Path(sys.executable).parent / "accelerate")
    at = words.index("examples/trl_sara.py")
    words[at] = str(ROOT / words[at])
    cmd = [*words[:at], "--main_process_port", "29533", *words[at:], "--model", str(tiny_dir)]
    rows = _run_example(cmd, tmp_path, 500)
    assert sorted((r["rank"], r["step"]) for r in rows) == [
        (a, s) for a in (0, 1) for s in range(3)
    ]
    assert all(r["effective_groups"] == r["groups"] == 4 for r in rows)
    ck = tmp_path / "runs/trl-sara/checkpoint-2"
    assert (ck / "sara_rollout_rank0.pt").is_file() and (ck / "sara_rollout_rank1.pt").is_file()


@pytest.mark.integration
def test_benchmark_runs_small(tiny_dir, capsys):
    """benchmarks/trl_compare.py at a small size: four TRL runs, one table of ratios."""
    import runpy

    bench = runpy.run_path(str(ROOT / "benchmarks/trl_compare.py"), run_name="trl_compare")
    bench["main"](["--model", str(tiny_dir), "--steps", "2", "--groups", "2"])
    out = capsys.readouterr().out
    for name in ("trl-default", "trl+uniform", "trl+ds", "trl+sara", "rollouts_per_eff_ratio"):
        assert name in out
    sara_row = next(x for x in out.splitlines() if x.strip().startswith("trl+sara"))
    assert float(sara_row.split()[6]) == 1.0  # effective_fraction: every group mixed


@pytest.mark.integration
def test_documented_trl_code_runs_as_printed(tiny_dir, tmp_path, monkeypatch):
    """The python block of the docs that uses the real half — docs/trl.md's core of the example
    — executed as printed (the tiny model and the run folder redirected): the example a reader
    copies must train."""
    from doc_code import python_blocks

    import real.models.tiny

    (block,) = python_blocks(real=True)
    monkeypatch.setattr(real.models.tiny, "build_tiny", lambda *a, **kw: tiny_dir)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(block.text, str(block), "exec"), scope)  # noqa: S102  (our own documentation)
    state = scope["trainer"].state
    assert state.global_step == 5
    rollouts = [
        h["sara/effective_groups"] for h in state.log_history if "sara/effective_groups" in h
    ]
    assert rollouts and all(r == 4 for r in rollouts)  # 32 rows / 8 = 4 mixed groups per step


def test_the_documented_gpu_recipe_names_only_settings_that_exist():
    """docs/trl.md's GPU block (check-only: CUDA, a hub model) compiles, and every keyword it
    gives GRPOConfig, SaraRollout and GRPOTrainer is one they take."""
    import ast
    import dataclasses
    import inspect

    from doc_code import blocks
    from trl import GRPOConfig, GRPOTrainer

    from real import SaraRollout, StrategyConfig

    (block,) = [b for b in blocks() if b.lang == "python" and b.check_only]
    takes = {
        "GRPOConfig": {f.name for f in dataclasses.fields(GRPOConfig)},
        "SaraRollout": set(inspect.signature(SaraRollout).parameters)
        | {f.name for f in dataclasses.fields(StrategyConfig)},
        "GRPOTrainer": set(inspect.signature(GRPOTrainer).parameters),
    }
    calls = [n for n in ast.walk(ast.parse(block.text)) if isinstance(n, ast.Call)]
    given = {
        (c.func.id, kw.arg)
        for c in calls
        if getattr(c.func, "id", None) in takes
        for kw in c.keywords
    }
    assert {name for name, _ in given} == set(takes)
    assert not [(n, kw) for n, kw in given if kw not in takes[n]]
