"""The plan is the rule: decide_plan(threshold_plan(...)) == decide on every state."""

import numpy as np
import pytest

from sara_sim.core.policy import (
    ABANDON,
    COMMIT,
    CONTINUE,
    NO_TAU_HIGH,
    SATURATED,
    abandonment_points,
    decide,
    decide_plan,
    next_request,
    side_terminal,
    threshold_plan,
)


def _configs(count=300, seed=3):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        k = int(rng.integers(2, 70))
        a0, b0 = np.exp(rng.uniform(-4, 4, 2))
        tau_low = float(rng.uniform(0, 1))
        tau_high = float(rng.uniform(tau_low, 1.2)) if rng.random() < 0.3 else NO_TAU_HIGH
        yield k, tau_low, tau_high, float(a0), float(b0)


def test_plan_reproduces_decide_on_every_state():
    for k, lo, hi, a0, b0 in _configs():
        plan = threshold_plan(k, lo, hi, a0, b0, True)
        for n in range(k + 1):
            for s in range(n + 1):
                assert decide_plan(n, s, k, plan) == decide(n, s, k, lo, hi, a0, b0), (
                    k,
                    lo,
                    hi,
                    a0,
                    b0,
                    n,
                    s,
                )


def test_uniform_prior_abandonment_points_follow_the_identity():
    for k in (4, 8, 16, 32):
        for tau in np.linspace(0.01, 0.99, 23):
            plan = threshold_plan(k, tau, np.inf, 1.0, 1.0, True)
            # p_eff(n, 0) = (k - n)/(k + 1) < tau  <=>  n > k - tau (k + 1)
            want = next(n for n in range(1, k + 1) if (k - n) / (k + 1) < tau)
            got = abandonment_points(k, plan)
            expect = want if want < k else None
            if (k - 1) / (k + 1) < tau:  # even the empty prefix is below tau: skip
                expect = 0
            assert got == (expect, expect), (k, tau, got, want)


def test_decisions_and_saturation():
    plan = threshold_plan(8, 0.3)
    assert decide_plan(3, 1, 8, plan) == COMMIT
    assert decide_plan(5, 0, 8, plan) == CONTINUE
    assert decide_plan(6, 6, 8, plan) == ABANDON
    assert decide(8, 0, 8, 0.0, NO_TAU_HIGH, 1.0, 1.0) == SATURATED  # tau_low = 0 never abandons


def test_auto_schedule_reaches_the_sequential_stop_in_one_round():
    for k, lo, hi, a0, b0 in _configs(100, seed=5):
        plan = threshold_plan(k, lo, hi, a0, b0)
        for side in (0, 1):
            e_seq, d_seq = side_terminal(k, plan, side, 1, 1)
            e_auto, d_auto = side_terminal(k, plan, side, 0, 0)
            assert (e_seq, d_seq) == (e_auto, d_auto)


def test_fixed_probe_and_increment_stop_at_the_first_evaluation_point_after_the_rule():
    plan = threshold_plan(16, 0.25)  # abandons from n = 12 on each side: (16-n)/17 < 0.25
    assert plan[2] == 12
    assert side_terminal(16, plan, 0, 5, 3) == (14, ABANDON)  # evaluated at 5, 8, 11, 14
    assert next_request(0, 0, 16, plan, 5, 3) == 5
    assert next_request(5, 0, 16, plan, 5, 3) == 3
    assert next_request(5, 2, 16, plan, 5, 3) == 11  # mixed: fill to k


@pytest.mark.parametrize("tau", [0.0, 1.0])
def test_extreme_thresholds(tau):
    plan = threshold_plan(8, tau, np.inf, 1.0, 1.0, True)
    if tau == 0.0:
        assert abandonment_points(8, plan) == (None, None)
    else:
        assert plan[0] == ABANDON and abandonment_points(8, plan) == (0, 0)
        # a shared prior never skips: the prompt is probed and abandoned after one rollout
        shared = threshold_plan(8, tau)
        assert shared[0] == CONTINUE and abandonment_points(8, shared) == (1, 1)
