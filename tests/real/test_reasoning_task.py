"""The reasoning setting (claim 2): the task's exact 0/1 check of the answer after the
scratchpad, its SFT traces (right, deterministic, every step's arithmetic true, long for hard
problems), the tiny build's length laws, and that the new recipe has a new cache key and left the
graded and test models' keys alone."""

import doctest
import re
from dataclasses import replace

import numpy as np
import pytest

import real.tasks.reasoning as rt
from real.models import tiny_sample, tiny_targets
from real.models.tiny import TinySettings, sft_target
from real.tasks import TASKS, make_task

_STEP = re.compile(r"(\d+)([+*])(\d+)(?:\+(\d+))?=(\d+)")


def test_doctests():
    for mod in (rt, tiny_targets, tiny_sample):
        assert doctest.testmod(mod).failed == 0


def test_reward_is_the_exact_answer_after_one_mark():
    t = make_task("reasoning", seed=0)
    assert "reasoning" in TASKS and t.name == "reasoning"
    assert t.eval_problems() == make_task("arithmetic", seed=0).eval_problems()  # same problems
    p = t.problem(5)
    right = rt.trace(p)
    assert right == rt.work(p) + "#" + p.answer
    assert t.reward(right, p) == 1
    assert t.reward(" " + right + "\n", p) == 1
    assert t.reward(p.answer, p) == 0  # no scratchpad mark: not this format
    assert t.reward(right + "1", p) == 0  # a near miss
    assert t.reward(rt.work(p), p) == 0  # cut by the budget: no answer
    assert t.reward(right + "#" + p.answer, p) == 0  # two marks
    assert t.reward(rt.work(p) + "#+" + p.answer, p) == 0
    assert t.reward("#" + p.answer, p) == 1  # the scratchpad is not graded, only the answer
    rewards = {t.reward(c, p) for c in ("", "#", "x#y", right, "9#9", "#0" + p.answer)}
    assert rewards == {0, 1}


def _check_step(step: str) -> None:
    """One scratchpad step is true arithmetic: x+y[+carry]=s or x*y[+carry]=v (a column, a digit
    product, a partial product or the sum of the two partials)."""
    m = _STEP.fullmatch(step)
    assert m is not None, step
    x, op, y, c, v = m.groups()
    base = int(x) + int(y) if op == "+" else int(x) * int(y)
    assert base + int(c or 0) == int(v), step


def test_sft_traces_are_right_deterministic_and_every_step_true():
    s, t = TinySettings.reasoning(), make_task("reasoning", seed=0)
    probs = [t.problem(u) for u in range(3000)]
    traces = [sft_target(p, s, u) for u, p in enumerate(probs)]
    assert traces == [sft_target(p, s, u) for u, p in enumerate(probs)]
    for p, tr in zip(probs, traces, strict=True):
        assert t.reward(tr, p) == 1 and len(tr) + 1 <= t.max_tokens  # fits, with its <eos>
        for step in tr.split("#")[0].split(rt.STEP):
            _check_step(step)
    with pytest.raises(ValueError, match="unknown curriculum 'reasoning'"):
        sft_target(probs[0], replace(s, curriculum="reasoning"), 0)  # the retired recipe
    with pytest.raises(ValueError, match="not an arithmetic prompt"):
        rt.work(make_task("countdown", seed=0).problem(0))


def test_trace_length_is_set_by_the_problem():
    """The recipe's length law: one step per column or digit, so the hard shapes (more digits,
    products of two 2-digit numbers) are 2-4x the 1-digit ones whatever the policy does."""
    t = make_task("reasoning", seed=0)
    by_shape: dict = {}
    for u in range(4000):
        p = t.problem(u)
        by_shape.setdefault((p.meta["op"], p.meta["digits"]), []).append(len(rt.trace(p)) + 1)
    mean = {shape: np.mean(v) for shape, v in by_shape.items()}
    easy = (mean["+", 2] + mean["*", 2]) / 2  # 1-digit sums and products: 8-10 tokens
    assert 8 <= easy <= 10 and 36 <= mean["*", 4] <= 39  # 2x2 products
    assert mean["+", 2] < mean["+", 3] < mean["+", 5] < mean["*", 4]
    assert 2.5 < mean["+", 6] / mean["+", 2] < 3.5  # 3+3-digit sums: three columns and a carry
    assert max(max(v) for v in by_shape.values()) == 39


def test_cache_keys_of_earlier_models_are_unchanged():
    assert TinySettings.graded().digest() == "98c02bfc30c0"
    assert TinySettings.test().digest() == "ddbdd1b58ddb"
    # the scratchpad recipe replaced the recheck recipe (631fdf86f4d0): a new key, not its build
    assert TinySettings.reasoning().digest() not in ("98c02bfc30c0", "ddbdd1b58ddb", "631fdf86f4d0")


def test_length_laws_per_outcome():
    laws = tiny_sample.length_laws([(5, True), (7, True), (20, False), (32, False), (9, False)], 32)
    assert laws["pass"] == {
        "n": 2,
        "mean": 6.0,
        "median": 6.0,
        "p90": pytest.approx(6.8),
        "at_cap": 0.0,
    }
    assert laws["fail"]["n"] == 3 and laws["fail"]["at_cap"] == pytest.approx(1 / 3)
    assert tiny_sample.length_laws([(5, True)], 32)["fail"]["mean"] is None


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--k", "1"], "--k: must be an integer in [2, 64], got 1"),
        (["--problems", "513"], "--problems: must be an integer in [1, 512], got 513"),
        (["--seed", "-1"], "--seed: must be an integer in [0, 2147483647], got -1"),
    ],
)
def test_length_benchmark_refuses_bad_input_before_any_build(argv, line, capsys, script):
    mod = script("benchmarks/investigations/claim_run/reasoning_lengths.py")
    assert mod.main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"reasoning_lengths: error: {line}"


def test_committed_reasoning_pilot_gives_its_verdicts(capsys, script):
    """real_learning.py --summary on the committed reasoning pilot: claim 2's verdicts."""
    mod = script("benchmarks/real_learning.py")
    assert mod.main(["--summary", "--out", "benchmarks/results/claims/reasoning.csv"]) == 0
    out = capsys.readouterr().out
    assert "rollouts 0.867x [0.729, 1.031] (2 seeds)" in out
    assert "tokens 0.874x / rollouts 0.867x = 1.008 [0.963, 1.055] (2 seeds)" in out
