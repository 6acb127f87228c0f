"""Summaries of a simulation with standard errors.

``summarize`` aggregates a ``simulate`` result: per-step means and ratios (cost = rollouts /
effective groups) with standard errors from batch means — each replicate's steps are cut into
blocks of consecutive steps (so carried groups and drift stay inside a block) and the delta
method is applied over the replicate x block units.  The ``per_prompt_*`` entries book every fresh
prompt once, when its fate is sealed; they estimate the exact per-prompt quantities of
``theory.plan_law``.

>>> from sara_sim.core.difficulty import BetaLaw
>>> from sara_sim.sim.simulate import simulate
>>> res = simulate("sara", BetaLaw(0.5, 0.5), k=8, groups=32, steps=20, replicates=2, seed=1)
>>> s = summarize(res)
>>> s["effective_groups_per_step"], s["effective_fraction"]
(32.0, 1.0)
"""

import math

import numpy as np


def _units(frame, blocks):
    steps = int(frame["step"].max()) + 1
    nb = max(1, min(blocks, steps))
    block = (frame["step"].to_numpy() * nb) // steps
    return (
        frame.assign(_unit=frame["replicate"].to_numpy() * nb + block)
        .groupby("_unit")
        .sum(numeric_only=True)
    )


def ratio_se(num, den):
    """Ratio of sums and its delta-method standard error over independent units."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    tot = den.sum()
    if tot <= 0:
        return math.inf, math.nan
    r = num.sum() / tot
    n = len(num)
    if n < 2:
        return float(r), math.nan
    resid = num - r * den
    return float(r), float(math.sqrt(np.sum(resid**2) / (n * (n - 1))) / (tot / n))


def summarize(res, blocks=10):
    """Per-step means / ratios with standard errors (see the module docstring)."""
    f = res.frame
    u = _units(f, blocks)
    cnt = _units(f.assign(_one=1.0), blocks)["_one"]

    def per_step(column):
        return ratio_se(u[column], cnt)

    def ratio(a, b):
        return ratio_se(u[a], u[b])

    out = {"strategy": res.config["strategy"], "steps": int(res.config["steps"])}
    out["replicates"] = int(res.config["replicates"])
    for key, column in (
        ("rollouts_per_step", "rollouts"),
        ("tokens_per_step", "tokens"),
        ("effective_groups_per_step", "effective"),
        ("groups_per_step", "groups"),
        ("rounds_per_step", "rounds"),
        ("waste_per_step", "waste"),
        ("abandoned_per_step", "abandoned"),
        ("signal_proxy_per_step", "signal_proxy"),
        ("fresh_prompts_per_step", "fresh_prompts"),
    ):
        out[key], out[key + "_se"] = per_step(column)
    out["cost_per_effective_group"], out["cost_per_effective_group_se"] = ratio(
        "rollouts", "effective"
    )
    out["tokens_per_effective_group"], out["tokens_per_effective_group_se"] = ratio(
        "tokens", "effective"
    )
    out["effective_fraction"], out["effective_fraction_se"] = ratio("effective", "groups")
    fa, fa_se = ratio("false_abandons", "abandoned")
    out["false_abandon_rate"] = fa if math.isfinite(fa) else 0.0
    out["false_abandon_rate_se"] = fa_se if math.isfinite(fa) else 0.0
    out["capped_steps"] = int(f["capped"].sum())
    # per prompt (each fresh prompt booked once, when decided): estimates of theory.plan_law
    for key, a in (
        ("rollouts_per_prompt", "decided_rollouts"),
        ("p_effective", "decided_effective"),
        ("p_abandon", "decided_abandoned"),
        ("p_false_abandon", "decided_false_abandons"),
        ("signal_proxy_per_prompt", "decided_proxy"),
    ):
        out["per_prompt_" + key], out["per_prompt_" + key + "_se"] = ratio(a, "decided")
    out["per_prompt_cost"], out["per_prompt_cost_se"] = ratio(
        "decided_rollouts", "decided_effective"
    )
    ab, ab_se = ratio("decided_false_abandons", "decided_abandoned")
    out["per_prompt_abandon_reliability"] = ab if math.isfinite(ab) else 0.0
    out["per_prompt_abandon_reliability_se"] = ab_se if math.isfinite(ab) else 0.0
    out["yield_per_rollout"], out["yield_per_rollout_se"] = ratio("effective", "rollouts")
    return out


__all__ = ["ratio_se", "summarize"]
