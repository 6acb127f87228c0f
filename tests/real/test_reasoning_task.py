"""The reasoning setting (issue 19, claim 2): the task's exact 0/1 check of the answer after the
scratchpad, its SFT traces (deterministic, unsure ones longer by the recheck count), the tiny
build's length laws, and that adding it left the graded and test models' cache keys alone."""

import doctest

import numpy as np
import pytest

import real.tasks.reasoning as rt
from real.models import tiny_sample, tiny_targets
from real.models.tiny import TinySettings, sft_target
from real.tasks import TASKS, make_task

pytestmark = pytest.mark.real


def test_doctests():
    for mod in (rt, tiny_targets, tiny_sample):
        assert doctest.testmod(mod).failed == 0


def test_reward_is_the_exact_answer_after_one_mark():
    t = make_task("reasoning", seed=0)
    assert "reasoning" in TASKS and t.name == "reasoning"
    assert t.eval_problems() == make_task("arithmetic", seed=0).eval_problems()  # same problems
    p = t.problem(5)
    confident = rt.scratch(p.answer) + "#" + p.answer
    assert t.reward(confident, p) == 1
    assert t.reward(" " + confident + "\n", p) == 1
    assert t.reward(p.answer, p) == 0  # no scratchpad mark: not this format
    assert t.reward(confident + "1", p) == 0  # a near miss
    assert t.reward(rt.scratch(p.answer) + "?" + rt.scratch(p.answer), p) == 0  # cut: no answer
    assert t.reward(confident + "#" + p.answer, p) == 0  # two marks
    assert t.reward(rt.scratch(p.answer) + "#+" + p.answer, p) == 0
    rewards = {t.reward(c, p) for c in ("", "#", "x#y", confident, "9#9")}
    assert rewards <= {0, 1}


def test_sft_traces_are_deterministic_and_unsure_ones_long():
    s, t = TinySettings.reasoning(), make_task("reasoning", seed=0)
    probs = [t.problem(u) for u in range(3000)]
    traces = [sft_target(p, s, u) for u, p in enumerate(probs)]
    assert traces == [sft_target(p, s, u) for u, p in enumerate(probs)]
    sure = [tr for tr in traces if rt.RETRY not in tr]
    unsure = [tr for tr in traces if rt.RETRY in tr]
    for p, tr in zip(probs, traces, strict=True):
        ok = t.reward(tr, p) == 1
        assert ok == (rt.RETRY not in tr)  # the confident trace is right, the unsure one is not
        if not ok:
            assert tr.count(rt.RETRY) in rt.RETRIES and tr.endswith(p.answer + p.answer[-1])
    ratio = np.mean([len(x) for x in unsure]) / np.mean([len(x) for x in sure])
    assert 2.5 < ratio < 5  # the SFT law; the sampled model's law is in its build report
    q = np.mean([tiny_targets.graded_q(p) for p in probs])
    assert abs(len(sure) / len(traces) - q) < 3 * np.sqrt(q * (1 - q) / len(traces))


def test_cache_keys_of_earlier_models_are_unchanged():
    assert TinySettings.graded().digest() == "98c02bfc30c0"
    assert TinySettings.test().digest() == "ddbdd1b58ddb"
    assert TinySettings.reasoning().digest() not in ("98c02bfc30c0", "ddbdd1b58ddb")


def test_length_laws_per_outcome():
    laws = tiny_sample.length_laws([(5, True), (7, True), (20, False), (32, False), (9, False)], 32)
    assert laws["pass"] == {"n": 2, "mean": 6.0, "median": 6.0, "p90": pytest.approx(6.8),
                            "at_cap": 0.0}  # fmt: skip
    assert laws["fail"]["n"] == 3 and laws["fail"]["at_cap"] == pytest.approx(1 / 3)
    assert tiny_sample.length_laws([(5, True)], 32)["fail"]["mean"] is None
