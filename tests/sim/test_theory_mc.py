"""Monte Carlo of the kernels against the exact theory (``theory.py``), within 4 standard errors,
on several laws and on the replay of the recorded DeepScaleR histories."""

import numpy as np
import pytest

from sara_sim.core.difficulty import BetaLaw
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.policy import threshold_plan
from sara_sim.core.theory import plan_law, sequential_law
from sara_sim.sim.laws import parse_sim_law
from sara_sim.sim.simulate import simulate, summarize

HISTORY = "deepscaler"  # the histories shipped in sara_sim/data, by their built-in name
Z = 4.0

LAWS = [
    ("beta:0.3,0.3", None, 8, 0.3, (1.0, 1.0)),
    ("beta:0.3,0.3", None, 16, 0.3, (0.3, 0.3)),
    ("beta:1,1", None, 8, 0.5, (1.0, 1.0)),
    ("mix:0.5*beta:0.2,2+0.5*beta:3,0.3", None, 8, 0.25, (1.0, 1.0)),
    ("point:0.15", None, 6, 0.2, (0.5, 0.5)),
    (f"history:{HISTORY}", "0", 8, 0.3, (1.0, 1.0)),
    (f"history:{HISTORY}", "0-9", 8, 0.5, (1.0, 1.0)),
    (f"history:{HISTORY}", "40", 4, 0.3, (0.5, 0.5)),
]


def close(sim, se, exact):
    assert abs(sim - exact) <= Z * se + 1e-9, (sim, se, exact)


@pytest.mark.parametrize("spec,epoch,k,tau,prior", LAWS)
def test_sara_matches_exact_theory(spec, epoch, k, tau, prior):
    law = parse_sim_law(spec, epoch)
    th = sequential_law(law, k, tau, prior=prior)
    res = simulate(
        "sara", law, k=k, groups=48, steps=60, replicates=3, seed=11, tau_low=tau, prior=prior
    )
    s = summarize(res)
    close(
        s["per_prompt_rollouts_per_prompt"],
        s["per_prompt_rollouts_per_prompt_se"],
        th["rollouts_per_prompt"],
    )
    close(s["per_prompt_cost"], s["per_prompt_cost_se"], th["cost_per_effective_group"])
    close(s["per_prompt_p_abandon"], s["per_prompt_p_abandon_se"], th["p_abandon"])
    close(
        s["per_prompt_p_false_abandon"], s["per_prompt_p_false_abandon_se"], th["p_false_abandon"]
    )
    close(
        s["per_prompt_signal_proxy_per_prompt"],
        s["per_prompt_signal_proxy_per_prompt_se"],
        th["signal_proxy_per_prompt"],
    )
    # the batch view: N groups per step, all of them effective (the rule commits only mixed)
    assert s["effective_groups_per_step"] == 48 and s["effective_fraction"] == 1.0
    close(
        s["cost_per_effective_group"],
        s["cost_per_effective_group_se"],
        th["cost_per_effective_group"],
    )


@pytest.mark.parametrize("spec,epoch,k,tau,prior", LAWS[::2])
def test_fixed_budget_yield_matches_exact_theory(spec, epoch, k, tau, prior):
    law = parse_sim_law(spec, epoch)
    th = sequential_law(law, k, tau, prior=prior)
    res = simulate(
        "sara", law, k=k, budget=40 * k, steps=60, replicates=3, seed=5, tau_low=tau, prior=prior
    )
    s = summarize(res)
    close(s["yield_per_rollout"], s["yield_per_rollout_se"], th["yield_per_rollout"])
    assert abs(s["rollouts_per_step"] - 40 * k) <= k  # the budget is spent, not exceeded much
    assert res.frame["rollouts"].max() <= 40 * k


@pytest.mark.parametrize("spec,epoch,k", [(s, e, k) for s, e, k, _, _ in LAWS])
def test_uniform_matches_exact_theory(spec, epoch, k):
    law = parse_sim_law(spec, epoch)
    p_mixed = plan_law(law, k, threshold_plan(k, 0.0))["p_mixed"]
    s = summarize(simulate("uniform", law, k=k, groups=48, steps=60, replicates=3, seed=3))
    close(s["effective_fraction"], s["effective_fraction_se"], p_mixed)
    close(s["cost_per_effective_group"], s["cost_per_effective_group_se"], k / p_mixed)
    assert s["rollouts_per_step"] == 48 * k


def _plans_theory(law, k, frame):
    """Exact cost of the plans a run used, weighted by the fresh prompts each plan served."""
    cols = [f"plan{j}" for j in range(5)]
    num = den = 0.0
    for plan, grp in frame.groupby(cols):
        r = plan_law(law, k, np.array(plan, np.int64))
        w = grp["fresh_prompts"].sum()
        num += w * r["rollouts_per_prompt"]
        den += w * r["p_effective"]
    return num / den


@pytest.mark.parametrize(
    "spec,epoch,k",
    [
        ("beta:0.3,0.3", None, 8),
        ("beta:0.2,0.8", None, 16),
        ("mix:0.5*beta:0.2,2+0.5*beta:3,0.3", None, 8),
        (f"history:{HISTORY}", "0", 8),
    ],
)
def test_sara_auto_matches_exact_theory_of_its_plans(spec, epoch, k):
    law = parse_sim_law(spec, epoch)
    res = simulate("sara-auto", law, k=k, groups=48, steps=60, replicates=3, seed=2)
    s = summarize(res)
    close(s["per_prompt_cost"], s["per_prompt_cost_se"], _plans_theory(law, k, res.frame))
    if isinstance(law, BetaLaw):  # plans for the fitted (noisy) prior are near-optimal for the law
        best = bayes_optimal(law, k)["cost_per_effective_group"]
        assert best <= _plans_theory(law, k, res.frame) <= 1.05 * best


@pytest.mark.parametrize("spec,epoch,k", [(s, e, k) for s, e, k, _, _ in LAWS])
def test_ds_cost_never_below_k_over_p_mixed(spec, epoch, k):
    law = parse_sim_law(spec, epoch)
    p_mixed = plan_law(law, k, threshold_plan(k, 0.0))["p_mixed"]
    s = summarize(simulate("ds", law, k=k, groups=48, steps=40, replicates=2, seed=4))
    assert s["cost_per_effective_group"] >= k / p_mixed
    f = summarize(
        simulate("ds", law, k=k, groups=48, steps=40, replicates=2, seed=4, gen_batch_size=16)
    )
    assert f["cost_per_effective_group"] >= k / p_mixed  # surplus is waste, never free
