"""The long-failure reasoning setting (claim 2): task `reasoning-long` keeps the exact
0/1 check; its SFT traces either are right or lose the thread — one step one too high, re-checked
until long, a wrong answer — with a probability growing with the problem's steps and carries;
deterministic; its recipe continues from the reasoning model under a key that covers both."""

import re
from argparse import Namespace
from dataclasses import replace

import numpy as np
import pytest

import real.tasks.reasoning as rt
from real.models.tiny import TinySettings, sft_target
from real.tasks import TASKS, make_task

_SLIP = re.compile(r"(\d+)([+*])(\d+)(?:\+(\d+))?=(\d+)")


def _targets(n: int):
    s, t = TinySettings.reasoning_long(), make_task("reasoning-long", seed=0)
    probs = [t.problem(u) for u in range(n)]
    return t, probs, [sft_target(p, s, u) for u, p in enumerate(probs)]


def test_task_is_reasoning_with_a_longer_budget():
    t, short = make_task("reasoning-long", seed=0), make_task("reasoning", seed=0)
    assert "reasoning-long" in TASKS and t.name == "reasoning-long" and t.max_tokens == 64
    assert t.eval_problems() == short.eval_problems() and t.problem(7) == short.problem(7)
    p = t.problem(3)
    lost = rt.lost_trace(p, np.random.default_rng(0))
    assert {t.reward(rt.trace(p), p), t.reward(lost, p), t.reward(rt.work(p), p)} == {0, 1}
    assert t.reward(rt.trace(p), p) == 1 and t.reward(lost, p) == 0


def test_lost_traces_are_long_wrong_and_their_slip_is_one_off():
    t, probs, traces = _targets(4000)
    assert traces == _targets(4000)[2]  # a pure function of (seed, uid)
    lost = [(p, tr) for p, tr in zip(probs, traces, strict=True) if tr != rt.trace(p)]
    right = [(p, tr) for p, tr in zip(probs, traces, strict=True) if tr == rt.trace(p)]
    assert all(t.reward(tr, p) == 1 and "?" not in tr for p, tr in right)
    # a long trace that slips late is long already: no re-check (a few in a hundred)
    assert 0.9 < np.mean(["?" in tr for _, tr in lost]) < 1
    assert all(t.reward(tr, p) == 0 and rt.final_answer(tr) is not None for p, tr in lost)
    for p, tr in lost:
        steps = tr.split("#")[0].split("?")
        assert len(set(steps[1:])) <= 1  # every re-check repeats the slipped step
        *before, slip = steps[0].split(rt.STEP)
        assert before == rt.work(p).split(rt.STEP)[: len(before)]  # right up to the slip
        x, op, y, c, v = _SLIP.fullmatch(slip).groups()
        assert (int(x) + int(y) if op == "+" else int(x) * int(y)) + int(c or 0) + 1 == int(v)
    n_lost = np.array([len(tr) + 1 for _, tr in lost])  # tokens with <eos>, as sampled
    n_right = np.array([len(tr) + 1 for _, tr in right])
    assert n_right.max() <= 39 and 32 <= n_lost.min() and n_lost.max() <= 99
    assert 2.5 < n_lost.mean() / n_right.mean() < 4.5  # a failure ~3x a success, whatever prompt
    assert 0.2 < (n_lost > t.max_tokens).mean() < 0.6  # a share is cut by the budget
    assert 0.25 < len(lost) / len(traces) < 0.4


def test_harder_problems_lose_the_thread_more_often():
    _, probs, traces = _targets(6000)
    by_p: dict = {}
    for p, tr in zip(probs, traces, strict=True):
        by_p.setdefault(rt.lose_p(p), []).append(tr != rt.trace(p))
    assert min(by_p) == 0.08 and max(by_p) == 0.56  # 1-digit sum; 3 columns, 3 carries
    for q, hits in by_p.items():
        if len(hits) >= 200:  # the observed rate is the designed one, within 4 standard errors
            assert abs(np.mean(hits) - q) < 4 * np.sqrt(q * (1 - q) / len(hits)) + 1e-9, q


def test_recipe_continues_from_the_reasoning_model_under_its_own_key():
    long, base = TinySettings.reasoning_long(), TinySettings.reasoning()
    assert base.digest() == "b23dd3dd5b71"  # the committed reasoning numbers' start is untouched
    assert long.base == "reasoning" and long.curriculum == "lost-thread"
    keys = {long.digest(), base.digest(), TinySettings.graded().digest()}
    assert len(keys) == 3
    assert replace(long, base="graded").digest() != long.digest()  # the base is in the key
    assert replace(long, base="").digest() != long.digest()


def test_benchmark_starts_reasoning_long_from_its_model_and_refuses_unknown_tasks(capsys, script):
    bench = script("benchmarks/real_learning.py")
    pick = bench.start_settings(Namespace(task="reasoning-long", test_model=False))
    assert pick == TinySettings.reasoning_long()
    assert bench.main(["--task", "reasoning-longer", "--out", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("real_learning: error: --task") and "reasoning-long" in err
    assert len(err.splitlines()) == 1


def test_length_benchmark_refuses_an_unknown_task_before_any_build(capsys, script):
    mod = script("benchmarks/investigations/claim_run/reasoning_lengths.py")
    assert mod.main(["--task", "arithmetic"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "reasoning_lengths: error: --task: must be one of reasoning, reasoning-long, "
        "got 'arithmetic'"
    )
    assert mod.MODELS["reasoning-long"] == "reasoning_long"


@pytest.mark.integration
def test_a_recipe_with_a_base_starts_from_the_base_build(tiny_dir, monkeypatch):
    """`base` continues from the named recipe's built weights (built first when not cached); no
    base: a fresh init."""
    import torch
    from safetensors.torch import load_file

    from real.models import tiny

    asked = []
    monkeypatch.setattr(tiny, "build_tiny", lambda out, s: asked.append(s) or tiny_dir)
    model = tiny._start_model(replace(TinySettings.test(), base="test"))
    assert asked == [TinySettings.test()]
    saved = load_file(str(tiny_dir / "model.safetensors"))
    state = model.state_dict()
    assert all(torch.equal(state[name], w) for name, w in saved.items())
    name, built = next(iter(saved.items()))
    fresh = tiny._start_model(TinySettings.test()).state_dict()
    assert asked == [TinySettings.test()] and not torch.equal(fresh[name], built)


def test_committed_claim_2_run_gives_its_pooled_verdicts():
    """The committed reasoning-long files, pooled: claim 2's verdicts, every seed's run whole."""
    from paper_figs.claims_data import load_claims
    from paper_figs.claims_table import REASONING_LONG, claim_tokens

    data = load_claims()
    assert data.sources[REASONING_LONG] == ["reasoning_long", "reasoning_long_more"]
    row = claim_tokens(data, REASONING_LONG, 0.02)
    want = (
        "sara: tokens 0.830x / rollouts 0.828x = 1.003 [0.978, 1.028]",
        "sara-auto: tokens 0.704x / rollouts 0.735x = 0.957 [0.939, 0.976]",
        "sara-dps: tokens 0.828x / rollouts 0.897x = 0.924 [0.906, 0.941]",
    )
    assert row["ours (90 % interval)"] == "; ".join(want) and row["seeds"] == "8"
    assert row["verdict"] == (
        "sara: no effect larger than 0.978x; sara-auto: confirmed; sara-dps: confirmed"
    )
    frame = data.setting(REASONING_LONG)
    assert sorted(frame["seed"].unique()) == list(range(8))
    assert set(frame["strategy"]) == {"ds", "sara", "sara-auto", "sara-dps"}
    assert (frame.groupby(["strategy", "seed"])["step"].max() == 6).all()  # no run cut short
