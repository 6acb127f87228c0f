"""Exact theory against a plain Monte-Carlo loop, the claims, and Bayes-optimality."""

import itertools
import math

import numpy as np
import pytest

from sara_sim.core.difficulty import BetaLaw, HistoryLaw, load_history, parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.policy import NO_TAU_HIGH, decide
from sara_sim.core.theory import best_tau, plan_law, sequential_law, tau_breakpoints


def mc_sequential(law_sampler, k, tau_low, prior, probe, increment, prompts, seed):
    """A plain loop: draw each prompt's k outcomes, then apply `decide` round by round."""
    rng = np.random.default_rng(seed)
    a0, b0 = prior
    rows = []
    for _ in range(prompts):
        outcomes = law_sampler(rng, k)
        n = 0
        while True:
            if n == 0:
                d = decide(0, 0, k, tau_low, NO_TAU_HIGH, a0, b0)
                if d != 0:
                    break
                n = probe
            s = int(outcomes[:n].sum())
            d = decide(n, s, k, tau_low, NO_TAU_HIGH, a0, b0)
            if d != 0:
                break
            n = min(n + increment, k)
        total = int(outcomes.sum())
        mixed = 0 < total < k
        abandoned = d == 2
        rows.append(
            (
                k if d in (1, 3) else n,
                abandoned,
                abandoned and mixed,
                mixed,
                (not abandoned) * mixed * total * (k - total) / k**2,
            )
        )
    return np.array(rows, float)


def beta_sampler(a, b):
    def draw(rng, k):
        return (rng.random(k) < rng.beta(a, b)).astype(int)

    return draw


def history_sampler(frame):
    c, n = frame["correct"].to_numpy(), frame["samples"].to_numpy()

    def draw(rng, k):
        i = rng.integers(len(c))
        record = np.r_[np.ones(c[i], int), np.zeros(n[i] - c[i], int)]
        return rng.permutation(record)[:k]

    return draw


CASES = [
    ("beta:1,1", beta_sampler(1, 1), 8, 0.3, (1.0, 1.0), 1, 1),
    ("beta:0.3,0.3", beta_sampler(0.3, 0.3), 16, 0.5, (0.3, 0.3), 1, 1),
    ("beta:0.2,0.8", beta_sampler(0.2, 0.8), 12, 0.4, (1.0, 1.0), 3, 2),
    ("history", None, 8, 0.5, (1.0, 1.0), 2, 2),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_theory_matches_monte_carlo_within_4_se(case, history_path):
    spec, sampler, k, tau, prior, probe, inc = case
    if spec == "history":
        law = parse_law(f"history:{history_path}", epochs="0-9")
        sampler = history_sampler(law.frame)
    else:
        law = parse_law(spec)
    th = sequential_law(law, k, tau, None, prior, probe, inc)
    sim = mc_sequential(sampler, k, tau, prior, probe, inc, 12_000, seed=11)
    names = [
        "rollouts_per_prompt",
        "p_abandon",
        "p_false_abandon",
        "p_mixed",
        "signal_proxy_per_prompt",
    ]
    for col, name in enumerate(names):
        mean = sim[:, col].mean()
        se = sim[:, col].std(ddof=1) / math.sqrt(len(sim))
        assert abs(mean - th[name]) <= 4 * se + 1e-12, (name, mean, th[name], se)


def test_abandonment_reliability_holds_when_the_prior_is_the_law():
    for a, b in [(1, 1), (0.3, 0.3), (0.2, 0.8), (2, 5), (0.5, 3)]:
        law = BetaLaw(a, b)
        for k in (4, 8, 16, 32, 64, 128):
            for tau in np.linspace(0.02, 0.98, 25):
                r = sequential_law(law, k, tau, prior=(a, b))
                if r["p_abandon"] > 0:
                    assert r["abandon_reliability"] < tau, (a, b, k, tau, r["abandon_reliability"])


def test_abandonment_reliability_fails_under_a_misspecified_prior():
    # Documented counterexample: prompts are mid-difficulty (Beta(5,5)) but the prior believes
    # they are polarized (Beta(0.1,0.1)); it abandons after 2 equal outcomes although such a
    # prompt's group of 8 is mixed ~93% of the time.
    r = sequential_law(BetaLaw(5, 5), 8, 0.2, prior=(0.1, 0.1))
    assert r["abandon_after_fail"] == 2 and r["abandon_after_pass"] == 2
    assert r["abandon_reliability"] > 0.9 > 0.2
    # the same rule with the true prior keeps its promise
    assert sequential_law(BetaLaw(5, 5), 8, 0.2, prior=(5, 5))["abandon_reliability"] < 0.2


def test_gradient_bound_below_signal_proxy_and_ds_identity():
    for law in (BetaLaw(1, 1), BetaLaw(0.3, 0.3)):
        for k in (4, 8, 32):
            r = sequential_law(law, k, 0.2)
            assert r["gradient_bound_per_prompt"] <= r["signal_proxy_per_prompt"] + 1e-15
            assert r["ds_cost_per_effective_group"] == pytest.approx(k / r["p_mixed"])
    r = sequential_law(BetaLaw(1, 1), 8, 0.0)
    assert r["p_mixed"] == pytest.approx(7 / 9, rel=1e-12)


def test_bayes_optimal_beats_every_fixed_tau_and_every_plan():
    for law in (BetaLaw(1, 1), BetaLaw(0.3, 0.3), BetaLaw(0.2, 0.8), BetaLaw(2, 0.4)):
        for k in (4, 6, 8, 16):
            opt = bayes_optimal(law, k)["cost_per_effective_group"]
            for prior in ((1.0, 1.0), (law.a, law.b)):
                taus = tau_breakpoints(k, prior)
                for tau in np.r_[taus, np.clip(taus + 1e-9, 0, 1), 0.0, 1.0]:
                    r = sequential_law(law, k, float(tau), prior=prior)
                    c = r["cost_per_effective_group"]
                    assert (c is None) == (r["p_effective"] == 0.0), (law, k, tau, r)
                    assert c is None or opt <= c * (1 + 1e-12), (law, k, tau, opt, c)
            if k <= 6:  # brute force over every (abandon-after-fail, abandon-after-pass) plan
                costs = [
                    plan_law(law, k, [0, 1, f, 1, p])["cost_per_effective_group"]
                    for f, p in itertools.product(range(1, k + 1), repeat=2)
                ]
                assert costs[0] is None  # abandon after one fail and after one pass: undefined
                best = min(c for c in costs if c is not None)
                assert opt == pytest.approx(best, rel=1e-12)


def test_best_tau_is_the_minimum_over_a_fine_grid():
    law = BetaLaw(0.3, 0.5)
    tau, cost, (lo, hi) = best_tau(law, 16)
    grid = [sequential_law(law, 16, t)["cost_per_effective_group"] for t in np.linspace(0, 1, 401)]
    grid = [c for c in grid if c is not None]  # tau_low near 1 abandons every prompt at once
    assert cost <= min(grid) * (1 + 1e-12) and lo < tau < hi


def test_history_moments_are_hypergeometric(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("prompt_id,epoch,correct,samples\n0,0,2,4\n1,0,0,4\n")
    law = HistoryLaw(load_history(path))
    # record 0: P(first two fail) = (2/4)(1/3); record 1: 1.  Mean = (1/6 + 1)/2
    assert math.exp(law.log_moment(0, 2)) == pytest.approx((1 / 6 + 1) / 2)
    assert math.exp(law.log_moment(1, 1)) == pytest.approx((2 / 4) * (2 / 3) / 2)
    assert math.exp(law.log_moment(3, 0)) == 0.0
    r = sequential_law(law, 4, 0.0)
    assert r["p_mixed"] == pytest.approx(0.5)
