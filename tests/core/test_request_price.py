"""Plans priced in requests as well as rollouts (``optimal.plan_family`` / ``request_cost``):
every plan's terms against ``plan_law`` and against a plain Monte-Carlo loop that counts a plan's
stages, the family's optimum against the backward induction at price 0, the optimum's move toward
DS's plan as a request grows dearer, and the knob's checks."""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sara_sim.collect.collectors import make_collector
from sara_sim.core.difficulty import (
    BetaLaw,
    HistoryLaw,
    MixtureLaw,
    PointLaw,
    fit_beta_binomial,
)
from sara_sim.core.errors import ParameterError
from sara_sim.core.optimal import bayes_optimal, plan_family
from sara_sim.core.theory import plan_law

HISTORY = HistoryLaw(pd.DataFrame({"correct": [0, 1, 3, 8, 4, 0, 7], "samples": [8] * 7}))
LAWS = [
    BetaLaw(1, 1),
    BetaLaw(0.2, 0.8),
    BetaLaw(2.0, 0.4),
    MixtureLaw((0.5, 0.3, 0.2), (PointLaw(0.0), BetaLaw(1, 3), PointLaw(1.0))),
    HISTORY,
]


@pytest.mark.parametrize("law", LAWS, ids=str)
@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_every_plan_of_the_family_is_plan_laws(law, k):
    rollouts, requests, effective = plan_family(law, k)
    for f, p in itertools.product(range(1, k + 1), repeat=2):
        ref = plan_law(law, k, [0, 1, f, 1, p])
        got = (rollouts[f - 1, p - 1], requests[f - 1, p - 1], effective[f - 1, p - 1])
        want = (ref["rollouts_per_prompt"], ref["rounds_per_prompt"], ref["p_effective"])
        assert got == pytest.approx(want, rel=1e-12, abs=1e-14), (f, p)
        assert (got[2] == 0.0) == (want[2] == 0.0), (f, p)  # impossible is exactly 0


def stages(outcomes, k, e_fail, e_pass):
    """A plan's requests for one prompt's outcomes, counted by hand: a probe to the nearer stop,
    a continue to the farther one while the prefix stays on its side, a fill once mixed."""
    m, n, sent = min(e_fail, e_pass), 0, 0
    while True:
        stop = m if n == 0 else (e_pass if outcomes[0] else e_fail)
        sent, n = sent + 1, stop
        if 0 < outcomes[:n].sum() < n:  # mixed
            return sent + (n < k)
        side_stop = e_pass if outcomes[0] else e_fail
        if n >= side_stop:  # abandoned there, or full at k
            return sent


@pytest.mark.parametrize("plan", [(3, 6), (2, 8), (5, 5), (8, 1)])
def test_requests_per_prompt_match_a_monte_carlo_count(plan):
    law, k, rng = BetaLaw(0.4, 0.6), 8, np.random.default_rng(sum(plan))
    g = law.sample(rng, 40000)
    x = np.array([stages((rng.random(k) < p).astype(int), k, *plan) for p in g], float)
    want = plan_family(law, k)[1][plan[0] - 1, plan[1] - 1]
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert abs(x.mean() - want) < 4 * se, (x.mean(), want, se)


@pytest.mark.parametrize("law", LAWS[:4], ids=str)
@pytest.mark.parametrize("k", [4, 8, 16, 32])
def test_at_price_zero_the_family_optimum_is_the_backward_induction(law, k):
    """Every sequential policy stops each side once: at price 0 the cheapest plan of the family
    costs what the backward induction's does (a tiny price picks among its ties)."""
    r, _, e = plan_family(law, k)
    best = np.min(np.where(e > 0, r / np.where(e > 0, e, 1.0), np.inf))
    dp = bayes_optimal(law, k)["cost_per_effective_group"]
    assert best == pytest.approx(dp, rel=1e-10)
    tiny = bayes_optimal(law, k, request_cost=1e-9)["cost_per_effective_group"]
    assert tiny == pytest.approx(dp, rel=1e-6)


@pytest.mark.parametrize("law", LAWS, ids=str)
def test_a_dearer_request_never_buys_more_requests_and_ends_at_ds(law):
    """Over a finite set, the optimum's requests per effective group cannot rise with their price
    (nor its rollouts per effective group fall); priced high enough, DS's plan (one request)."""
    k, last = 8, None
    for c in [0.0, 0.1, 0.3, 0.5, 1.0, 2.0, 4.0, 1e6]:
        res = bayes_optimal(law, k, request_cost=c)
        now = np.array([res["requests_per_prompt"], res["rollouts_per_prompt"]])
        now /= res["p_effective"]
        if last is not None:
            assert now[0] <= last[0] * (1 + 1e-9) and now[1] >= last[1] * (1 - 1e-9), c
        last = now
    assert res["plan"] == [0, 1, k, 1, k] and res["requests_per_prompt"] == 1.0
    assert res["priced_cost_per_effective_group"] == pytest.approx(
        res["ds_priced_cost_per_effective_group"]
    )


def test_on_the_served_runs_law_two_rollouts_a_request_price_sara_out():
    """The served benchmark's own law (DS's prompts of its committed 64-step run): at price 0
    the optimum abandons, at two rollouts a request (what a request cost there:
    benchmarks/investigations/stream_real) DS's plan is the cheapest of all, for the law as the
    belief and for sara-auto's fitted Beta."""
    runs = Path(__file__).parents[2] / "benchmarks/results/stream_real"
    path = runs / "served_whole_requests_decision.json"
    rec = np.asarray(json.loads(path.read_text())["law"]["prompts"]).reshape(-1, 2)
    law = HistoryLaw(pd.DataFrame({"correct": rec[:, 0], "samples": rec[:, 1]}))
    fitted = BetaLaw(*fit_beta_binomial(rec[:, 0], rec[:, 1]))
    assert bayes_optimal(law, 8)["plan"] != [0, 1, 8, 1, 8]
    for belief in (law, fitted):
        assert bayes_optimal(law, 8, belief, request_cost=2.0)["plan"] == [0, 1, 8, 1, 8]


def test_the_collector_prices_sara_autos_plan_and_refuses_the_price_elsewhere():
    col = make_collector("sara-auto", k=8, groups=4, request_cost=2.0, prior=(0.3, 0.3))
    want = bayes_optimal(BetaLaw(0.3, 0.3), 8, request_cost=2.0)["plan"]
    assert list(col.plan) == want
    for name, knobs, words in [
        ("sara", {"request_cost": 1.0}, "prices sara-auto's plan only"),
        ("sara-auto", {"request_cost": -1.0}, ">= 0"),
        ("sara-auto", {"request_cost": 1.0, "probe": 2}, "needs probe 0, increment 0"),
    ]:
        with pytest.raises(ParameterError, match=words) as e:
            make_collector(name, k=8, groups=4, **knobs)
        assert e.value.parameter == "request_cost"
    with pytest.raises(ParameterError, match="--request-cost"):
        bayes_optimal(BetaLaw(1, 1), 8, request_cost=float("nan"))
