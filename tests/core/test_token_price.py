"""Plans priced in tokens (``optimal.bayes_optimal(..., lengths=...)``): a passing and a failing
rollout cost their own mean lengths, and the plan minimises expected tokens (plus request_cost
mean rollouts per request) per effective group.  Held against an independent brute force: every
plan [0, 1, e_fail, 1, e_pass] (every sequential policy stops each side once) evaluated by
walking all 2^k ordered outcome sequences with their probabilities M(s, k - s)."""

import itertools
import math

import numpy as np
import pytest

from sara_sim.core.difficulty import BetaLaw, parse_law
from sara_sim.core.errors import ParameterError
from sara_sim.core.optimal import bayes_optimal, learned_lengths, token_weights
from sara_sim.core.theory import outcome_counts, plan_law


def _walk(seq, k, e_fail, e_pass):
    """(rollouts drawn, passes drawn, requests, effective) of one ordered outcome sequence under
    the plan, stage by stage as the auto schedule sends them: a probe to the nearer stop, a
    continue to the farther one, a fill once mixed."""
    stops = {0: e_fail, 1: e_pass}
    n, requests = min(e_fail, e_pass), 1
    while True:
        head = seq[:n]
        if 0 < sum(head) < n:  # mixed: filled to k (one more request when short of it)
            return k, sum(seq), requests + (n < k), 0 < sum(seq) < k
        side = head[0]
        if n >= stops[side] or n == k:  # abandoned on this side (or a saturated full group)
            return n, sum(head), requests, False
        n, requests = stops[side], requests + 1


def _brute(law, k, lengths, request_cost):
    """{(e_fail, e_pass): (tokens, requests, p_effective)} by enumeration."""
    lp, lf = lengths
    out = {}
    for e_fail, e_pass in itertools.product(range(1, k + 1), repeat=2):
        tok = req = eff = 0.0
        for seq in itertools.product((0, 1), repeat=k):
            s = sum(seq)
            p = math.exp(float(law.log_moment(s, k - s)))
            n, passes, r, mixed = _walk(seq, k, e_fail, e_pass)
            tok += p * (passes * lp + (n - passes) * lf)
            req += p * r
            eff += p * mixed
        out[e_fail, e_pass] = (tok, req, eff)
    return out


LAWS = [BetaLaw(0.3, 0.3), BetaLaw(2.0, 0.5), BetaLaw(0.4, 1.5)]


@pytest.mark.parametrize("law", LAWS, ids=str)
@pytest.mark.parametrize("k", [3, 5, 7])
@pytest.mark.parametrize("lengths", [(2000.0, 3500.0), (300.0, 90.0)])
@pytest.mark.parametrize("request_cost", [0.0, 0.7])
def test_the_token_priced_plan_is_the_brute_force_optimum(law, k, lengths, request_cost):
    res = bayes_optimal(law, k, lengths=lengths, request_cost=request_cost)
    brute = _brute(law, k, lengths, request_cost)
    mean = token_weights(law, lengths)  # a request costs request_cost mean rollouts
    unit = lengths[1] / mean[0]  # the mean rollout's tokens
    price = {e: (t + request_cost * unit * r) / p for e, (t, r, p) in brute.items() if p > 0}
    best = min(price.values())
    plan = (res["plan"][2], res["plan"][4])
    assert price[plan] == pytest.approx(best, rel=1e-9)
    tok, _, p_eff = brute[plan]
    assert res["tokens_per_effective_group"] == pytest.approx(tok / p_eff, rel=1e-9)
    ds_tok, _, ds_eff = brute[k, k]
    assert res["ds_tokens_per_effective_group"] == pytest.approx(ds_tok / ds_eff, rel=1e-9)
    assert res["priced_cost_per_effective_group"] == pytest.approx(best / unit, rel=1e-9)


def test_pricing_in_tokens_moves_the_plan_and_saves_tokens():
    """On DeepScaleR's law at k 8 with failing traces 1.75x passing, the token-priced plan
    stops the fail side sooner and the pass side later than the rollout-priced one: fewer
    tokens, more rollouts per effective group."""
    law = parse_law("history:deepscaler", epochs="0-52")
    tokens, rolls = bayes_optimal(law, 8, lengths=(2000, 3500)), bayes_optimal(law, 8)
    assert tokens["plan"] != rolls["plan"]
    assert tokens["abandon_after_fail"] < rolls["abandon_after_fail"]
    assert tokens["cost_per_effective_group"] > rolls["cost_per_effective_group"]
    passes, fails = outcome_counts(law, 8, plan_law(law, 8, rolls["plan"]))
    rolls_tokens = (2000 * passes + 3500 * fails) / rolls["p_effective"]
    assert tokens["tokens_per_effective_group"] < rolls_tokens


def test_equal_lengths_price_as_rollouts():
    law = BetaLaw(0.3, 0.3)
    for k in (4, 8, 16):
        a, b = bayes_optimal(law, k), bayes_optimal(law, k, lengths=(700, 700))
        assert a["plan"] == b["plan"]
        assert b["tokens_per_effective_group"] == pytest.approx(700 * a["cost_per_effective_group"])


def test_learned_lengths_wait_for_both_outcomes():
    assert learned_lengths([0, 0, 700, 2]) is None  # no pass seen yet: priced in rollouts
    assert learned_lengths([300, 3, 700, 2]) == (100.0, 350.0)


@pytest.mark.parametrize("bad", [(0, 10), (10, -1), (float("nan"), 5), (5,)])
def test_bad_lengths_are_refused(bad):
    with pytest.raises(ParameterError, match="--len"):
        bayes_optimal(BetaLaw(1, 1), 8, lengths=bad)


def test_only_priced_plans_take_tokens():
    from sara_sim.collect.collectors import make_collector

    with pytest.raises(ParameterError, match="priced_in"):
        make_collector("sara", k=8, groups=4, priced_in="tokens")
    with pytest.raises(ParameterError, match="priced_in"):
        make_collector("sara-auto", k=8, groups=4, priced_in="words")
    assert make_collector("sara-auto", k=8, groups=4, priced_in="tokens").priced_in == "tokens"


def test_the_simulator_learns_the_lengths_and_prices_its_plans_in_tokens():
    """The kernel's sara-auto priced in tokens: from the second step its plan is the one exact
    theory gives its fitted prior with the kernel's lengths (learned from the first step's
    rollouts), and its tokens per effective group are within 2 % of the token-priced bound."""
    from sara_sim.core.optimal import prior_plan
    from sara_sim.sim.laws import TokenModel
    from sara_sim.sim.simulate import simulate, summarize

    law = BetaLaw(0.3, 0.3)
    res = simulate(
        "sara-auto",
        law,
        k=8,
        groups=64,
        steps=60,
        replicates=2,
        seed=3,
        priced_in="tokens",
        tokens=TokenModel(2000, 3500),
    )
    f = res.frame
    plan_cols = [f"plan{j}" for j in range(5)]
    for _, row in f[f["step"] >= 1].iterrows():
        want = prior_plan(
            "sara-auto", 8, 0.2, np.inf, (row["prior_a"], row["prior_b"]), lengths=(2000.0, 3500.0)
        )
        assert [int(row[c]) for c in plan_cols] == [int(x) for x in want]
    bound = bayes_optimal(law, 8, lengths=(2000, 3500))["tokens_per_effective_group"]
    got = summarize(res)["tokens_per_effective_group"]
    assert abs(got / bound - 1) < 0.02
