"""real.trl.rewards on its own (no trainer): the pass rule, the datasets' row lookup and the
pass-through reward functions TRL calls."""

import math

import pytest
from datasets import Dataset

from real.trl.rewards import Datasets, Rewards
from sara_sim.core.errors import ParameterError


def _train():
    return Dataset.from_list([{"prompt": "1+1=", "answer": "2"}, {"prompt": "2+2=", "answer": "4"}])


def test_a_rollout_passes_on_the_weighted_sum_with_none_and_nan_as_zero():
    r = Rewards([len, len], [1.0, 0.5], threshold=1.0)
    assert r.passed([1.0, 0.0]) == 1
    assert r.passed([0.5, 1.0]) == 1  # 0.5 + 0.5 x 1.0
    assert r.passed([0.5, 0.8]) == 0
    assert r.passed([None, 2.0]) == 1  # None counts as 0
    assert r.passed([math.nan, 1.0]) == 0  # NaN counts as 0: 0.5 < 1


@pytest.mark.parametrize("bad", [math.inf, math.nan, "1", None])
def test_threshold_must_be_a_finite_number(bad):
    with pytest.raises(ParameterError, match="threshold"):
        Rewards([len], [1.0], threshold=bad)


def test_rows_are_found_by_prompt_and_eval_rows_first():
    ev = Dataset.from_list([{"prompt": "2+2=", "answer": "four"}])
    data = Datasets(_train(), ev)
    assert (data.size, data.columns, data.row("2+2=")) == (2, ["answer"], 1)
    assert data.record("2+2=")["answer"] == "four"  # the eval dataset's row
    assert data.record("1+1=")["answer"] == "2"  # not in the eval rows: the train row
    with pytest.raises(RuntimeError, match="not in the train dataset"):
        data.row("3+3=")


def test_a_dataset_without_a_prompt_column_is_refused():
    with pytest.raises(ParameterError, match="train_dataset"):
        Datasets(Dataset.from_list([{"question": "1+1="}]))


def test_the_first_pass_through_logs_the_step_and_the_held_metrics():
    r = Rewards([len, len], [1.0, 1.0], threshold=1.0)
    r.pending = [("user/x", 3.0)]
    metrics = {"rollouts": 12, "rollouts_per_effective_group": None, "capped": True}
    first = r.passthrough(0, len, lambda: metrics)
    second = r.passthrough(1, len, lambda: metrics)
    logged = []
    log = lambda name, value: logged.append((name, value))  # noqa: E731
    kw = {"sara_reward_0": [1.0], "sara_reward_1": [0.0]}
    assert first(["p"], ["c"], log_metric=log, **kw) == [1.0]
    assert second(["p"], ["c"], log_metric=log, **kw) == [0.0]
    # numbers only (None: undefined, a bool is no metric), then the held calls, once
    assert logged == [("sara/rollouts", 12.0), ("user/x", 3.0)] and r.pending == []
    assert first.__name__ == "len"
    with pytest.raises(RuntimeError, match="rollout_func"):
        first(["p"], ["c"], log_metric=log)


def test_nothing_is_logged_when_there_is_no_step_to_log():
    r = Rewards([len], [1.0], threshold=1.0)
    r.pending = [("user/x", 3.0)]
    logged = []
    reward = r.passthrough(0, len, lambda: None)  # e.g. an evaluation batch
    assert reward(["p"], ["c"], log_metric=lambda *a: logged.append(a), sara_reward_0=[1]) == [1]
    assert logged == [] and r.pending == []
