"""`sara-sim verify`: the method's four claims, each cell simulated beside its exact value.

For every scenario (a difficulty law and the prior SARA uses), k in {4, ..., 128} and tau_low in a
grid, the τ rule is simulated (fixed-yield for claims 1, 2, 4; fixed-budget for claim 3) and the
per-prompt estimates are set beside ``theory.sequential_law``.  A cell *passes* when the exact
value satisfies the claim and the simulation agrees with it within 4 standard errors.  Where a
claim's assumption does not hold the cell is shown (``holds`` / ``breaks``) but never fails.

1. **abandonment reliability** — P(group would have mixed | abandoned) < tau_low.
   Assumption: the prior is the difficulty law (then each abandonment state has p_eff < tau_low,
   which is exactly that conditional probability).  Breaks: an over-confident prior, drift.
2. **rollout savings** — k - E[rollouts per prompt] > 0 wherever the plan abandons before k, and
   non-decreasing in k.  Assumption: saturation mass — a Beta law with a < 1 or b < 1 (density
   diverging at 0 or 1: P(all-fail through e) decays slower than 1/e, so the saved k - e rollouts
   win), and a plan that does not skip every prompt.  A law with bounded density (beta:1,1)
   shows savings that level off.
3. **yield dominance at a fixed budget** — effective groups per rollout >= uniform's p_mixed / k.
   Exact condition tested (sufficient, from the Dinkelbach argument): at every abandonment state
   P_true(group mixes | state) <= (k - n) p_mixed / k, i.e. abandoning is worth it at uniform's
   price.  The Bayes-optimal plan for the law (``optimal.bayes_optimal``) always satisfies
   ratio >= 1; with a uniform law and prior abandoning never pays (p_eff(n, 0) = (k - n)/(k + 1)
   > (k - n)(k - 1)/(k (k + 1))), so there the τ rule's cells are shown, not failed.
4. **gradient link** — signal proxy sum s(k-s)/k^2 >= (k-1)/k^2 x effective groups (per prompt),
   both simulated and exact.

>>> rows = run_claims(quick=True, steps=8, replicates=2, scenarios=["polarized"], ks=(8,),
...                   taus=(0.3,))
>>> sorted(set(rows["claim"]))[:2], bool((rows["status"] != "FAIL").all())
(['1 abandonment reliability', '2 rollout savings'], True)
"""

import math
import sys
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..core.difficulty import BetaLaw, MixtureLaw
from ..core.errors import check_budget, check_int, check_seed
from ..core.optimal import bayes_optimal
from ..core.policy import ABANDON, FAIL, PASS, side_terminal, threshold_plan
from ..core.theory import plan_law
from .laws import DriftLaw, parse_sim_law
from .simulate import simulate, summarize

KS = (4, 8, 16, 32, 64, 128)
TAUS = (0.1, 0.2, 0.3, 0.5)
Z = 4.0


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    spec: str
    prior: tuple
    epoch: str | None = None


SCENARIOS = (
    Scenario("polarized", "beta:0.3,0.3, prior = law", "beta:0.3,0.3", (0.3, 0.3)),
    Scenario("uniform", "beta:1,1, prior = law", "beta:1,1", (1.0, 1.0)),
    Scenario("paper-prior", "beta:0.3,0.3, paper's uniform prior", "beta:0.3,0.3", (1.0, 1.0)),
    Scenario("over-confident", "beta:1,1, prior 0.2,0.2", "beta:1,1", (0.2, 0.2)),
    Scenario(
        "replay", "DeepScaleR replay epoch 0, uniform prior", "history:deepscaler", (1, 1), "0"
    ),
    Scenario(
        "drift",
        "drift:0.5,0.5,0.02,0.3 (prior = step-0 law)",
        "drift:0.5,0.5,0.02,0.3,2048",
        (0.5, 0.5),
    ),
)


def _well_specified(law, prior):
    return isinstance(law, BetaLaw) and (law.a, law.b) == tuple(prior)


def _saturation_mass(law):
    comps = law.components if isinstance(law, MixtureLaw) else (law,)
    return all(isinstance(c, BetaLaw) for c in comps) and any(min(c.a, c.b) < 1 for c in comps)


def worth_abandoning(law, k, plan):
    """The exact sufficient condition of claim 3 (see module docstring)."""
    if plan[0] == ABANDON:
        return False
    lm = law.log_moment
    p_mixed = 1.0 - math.exp(lm(0, k)) - math.exp(lm(k, 0))
    for side in (FAIL, PASS):
        e, d = (int(x) for x in side_terminal(k, plan, side, 0, 0))
        if d != ABANDON:
            continue
        here = math.exp(lm(0, e) if side == FAIL else lm(e, 0))
        full = math.exp(lm(0, k) if side == FAIL else lm(k, 0))
        if here > 0 and (here - full) / here > (k - e) * p_mixed / k + 1e-12:
            return False
    return True


def _agree(sim, se, exact):
    if not (math.isfinite(sim) and math.isfinite(exact)):
        return sim == exact
    return abs(sim - exact) <= Z * se + 1e-9 * max(1.0, abs(exact))


class Check(NamedTuple):
    """One claim's quantity in one cell: the exact value, the simulated one (± se), its bound."""

    claim: str
    policy: str
    k: int
    tau: float | None
    quantity: str
    exact: float
    sim: float
    se: float
    bound: float


class Run(NamedTuple):
    """How each cell is simulated."""

    steps: int
    replicates: int
    seed: int
    groups: int


def _row(sc, c, assumed, holds_exact):
    agree = _agree(c.sim, c.se, c.exact)
    if assumed:
        status = "pass" if (holds_exact and agree) else "FAIL"
    else:
        status = "holds" if holds_exact else "breaks"
    return {
        "claim": c.claim,
        "scenario": sc.key,
        "policy": c.policy,
        "k": c.k,
        "tau_low": c.tau,
        "quantity": c.quantity,
        "exact": c.exact,
        "simulated": c.sim,
        "se": c.se,
        "bound": c.bound,
        "agrees": bool(agree),
        "assumption": bool(assumed),
        "status": status,
    }


def _cell(sc, law, k, tau, run):
    plan = threshold_plan(k, tau, np.inf, *sc.prior)
    base = law.base if isinstance(law, DriftLaw) else law
    th = plan_law(base, k, plan)
    common = dict(
        k=k, steps=run.steps, replicates=run.replicates, seed=run.seed, tau_low=tau, prior=sc.prior
    )
    fy = summarize(simulate("sara", law, groups=run.groups, **common))
    fb = summarize(simulate("sara", law, budget=run.groups * k, **common))
    return plan, th, fy, fb


def _sizes(quick, steps, replicates):
    """steps / replicates per cell: None = the grid's default; anything else an integer >= 1."""
    steps = (20 if quick else 80) if steps is None else check_int(steps, "--steps", 1)
    reps = (2 if quick else 4) if replicates is None else check_int(replicates, "--replicates", 1)
    return steps, reps


def check_verify_size(quick=False, steps=None, replicates=None, force=False, groups=64):
    """Refuse a grid that would not finish in a few minutes (see simulate.ROLLOUT_LIMIT)."""
    from .budget import ROLLOUT_LIMIT

    steps, reps = _sizes(quick, steps, replicates)
    ks, taus = ((4, 8, 16), (0.2, 0.3)) if quick else (KS, TAUS)
    # each (scenario, tau, k) cell: a fixed-yield and a fixed-budget run of ~groups x k / step,
    # ~2x that for the saturated laws; plus one Bayes-optimal run per (scenario, k)
    rollouts = len(SCENARIOS) * (2 * len(taus) + 1) * sum(ks) * groups * 2.0 * steps * reps
    name = (
        "--steps" if steps / (20 if quick else 80) >= reps / (2 if quick else 4) else "--replicates"
    )
    check_budget(rollouts, ROLLOUT_LIMIT, name, "simulated rollouts of the grid", force)


def _tau_cells(sc, law, ks, tau, run, add):
    """Claims 1, 3 and 4 for each k at one tau_low; returns claim 2's savings per k."""
    base = law.base if isinstance(law, DriftLaw) else law
    static = not isinstance(law, DriftLaw)
    well = static and _well_specified(law, sc.prior)
    savings = []
    for k in ks:
        plan, th, fy, fb = _cell(sc, law, k, tau, run)
        degenerate = plan[0] == ABANDON or th["p_effective"] <= 0
        ab = th["p_abandon"] > 0 and not degenerate
        rel = fy["per_prompt_abandon_reliability"]
        if ab:
            add(
                Check(
                    "1 abandonment reliability",
                    "tau",
                    k,
                    tau,
                    "P(mixed | abandoned)",
                    th["abandon_reliability"],
                    rel,
                    fy["per_prompt_abandon_reliability_se"],
                    tau,
                ),
                well,
                th["abandon_reliability"] < tau,
                rel < tau,
            )
        if degenerate:
            continue
        sim_r = fy["per_prompt_rollouts_per_prompt"]
        savings.append(
            (
                k,
                k - th["rollouts_per_prompt"],
                k - sim_r,
                fy["per_prompt_rollouts_per_prompt_se"],
                ab,
            )
        )
        y_uni = th["uniform_yield_per_rollout"]
        ratio, sim_ratio = th["yield_ratio_vs_uniform"], fb["yield_per_rollout"] / y_uni
        add(
            Check(
                "3 yield dominance (fixed budget)",
                "tau",
                k,
                tau,
                "yield / uniform yield",
                ratio,
                sim_ratio,
                fb["yield_per_rollout_se"] / y_uni,
                1.0,
            ),
            static and worth_abandoning(base, k, plan),
            ratio >= 1 - 1e-12,
            sim_ratio >= 1,
        )
        proxy = fy["per_prompt_signal_proxy_per_prompt"]
        sim_bound = fy["per_prompt_p_effective"] * (k - 1) / k**2
        bound = th["gradient_bound_per_prompt"]
        add(
            Check(
                "4 gradient link",
                "tau",
                k,
                tau,
                "signal proxy per prompt",
                th["signal_proxy_per_prompt"],
                proxy,
                fy["per_prompt_signal_proxy_per_prompt_se"],
                bound,
            ),
            static,
            th["signal_proxy_per_prompt"] >= bound - 1e-12 and proxy >= sim_bound - 1e-12,
            proxy >= sim_bound - 1e-12,
        )
    return savings


def _savings_cells(savings, tau, assumed, add):
    """Claim 2: savings positive where the plan abandons, and non-decreasing in k."""
    prev, sim_prev = -math.inf, -math.inf
    for k, sav, sim_sav, se, abandons in savings:
        grows = (sav > 0 or not abandons) and sav >= prev - 1e-12
        sim_grows = (sim_sav > 0 or not abandons) and sim_sav >= sim_prev - 2 * Z * se
        prev, sim_prev = sav, sim_sav
        add(
            Check("2 rollout savings", "tau", k, tau, "k - E[rollouts]", sav, sim_sav, se, 0.0),
            assumed,
            grows,
            sim_grows,
        )


def _bayes_cells(law, ks, run, add):
    """Claim 3 for the Bayes-optimal plan of the law itself: yield >= uniform always."""
    for k in ks:
        opt = bayes_optimal(law, k)
        sim = simulate(
            "sara",
            law,
            k=k,
            budget=run.groups * k,
            steps=run.steps,
            replicates=run.replicates,
            seed=run.seed,
            plan=opt["plan"],
        )
        fb = summarize(sim)
        y_uni = opt["uniform_yield_per_rollout"]
        ratio = opt["yield_ratio_vs_uniform"]
        add(
            Check(
                "3 yield dominance (fixed budget)",
                "bayes-optimal",
                k,
                None,
                "yield / uniform yield",
                ratio,
                fb["yield_per_rollout"] / y_uni,
                fb["yield_per_rollout_se"] / y_uni,
                1.0,
            ),
            True,
            ratio >= 1 - 1e-9,
            True,
        )


def _scenario_rows(sc, ks, taus, run):
    """Every cell of one scenario.  Under drift exact theory (of the step-0 law) does not apply:
    whether a claim holds there is judged on the simulated value."""
    law = parse_sim_law(sc.spec, sc.epoch)
    base = law.base if isinstance(law, DriftLaw) else law
    static = not isinstance(law, DriftLaw)
    rows = []

    def add(check, assumed, holds, sim_holds):
        rows.append(_row(sc, check, assumed, holds if static else sim_holds))

    ks_here = [k for k in ks if law.max_k is None or k <= law.max_k]
    for tau in taus:
        savings = _tau_cells(sc, law, ks_here, tau, run, add)
        _savings_cells(savings, tau, static and _saturation_mass(base), add)
    if static:
        _bayes_cells(law, ks_here, run, add)
    return rows


def run_claims(
    quick=False,
    steps=None,
    replicates=None,
    seed=0,
    scenarios=None,
    ks=None,
    taus=None,
    groups=64,
    progress=False,
):
    """All cells as a tidy DataFrame (one row per claim x scenario x policy x k x tau_low).

    `progress` shows a bar over scenarios on a terminal."""
    ks = ks or ((4, 8, 16) if quick else KS)
    taus = taus or ((0.2, 0.3) if quick else TAUS)
    steps, replicates = _sizes(quick, steps, replicates)
    seed = check_seed(seed, "--seed")
    groups = check_int(groups, "groups", 1)
    run = Run(steps, replicates, seed, groups)
    chosen = [s for s in SCENARIOS if scenarios is None or s.key in scenarios]
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        chosen = tqdm(chosen, desc="verify", unit="scenario", leave=False)
    rows = []
    for sc in chosen:
        rows += _scenario_rows(sc, ks, taus, run)
    return pd.DataFrame(rows)


def report(rows):
    """JSON-able summary: per claim, whether it held wherever its assumption holds."""
    out = {"ok": bool((rows["status"] != "FAIL").all()), "claims": {}}
    for claim, grp in rows.groupby("claim"):
        assumed = grp[grp["assumption"]]
        out["claims"][claim] = {
            "cells": len(grp),
            "cells_assumed": len(assumed),
            "passed": int((assumed["status"] == "pass").sum()),
            "failed": int((assumed["status"] == "FAIL").sum()),
            "shown_holds": int((grp["status"] == "holds").sum()),
            "shown_breaks": int((grp["status"] == "breaks").sum()),
            "sim_vs_exact_within_4se_static_laws": float(
                grp[grp["scenario"] != "drift"]["agrees"].mean()
            ),
        }
    out["failures"] = rows[rows["status"] == "FAIL"].to_dict("records")
    return out


def format_tables(rows):
    """One text table per claim, at most 100 columns: per (scenario, policy, tau_low) a `sim` line
    (the simulated value and its mark) and an `exact` line, one column per k."""
    lines = []
    mark = {"pass": " ", "FAIL": "!", "holds": "~", "breaks": "x"}
    for claim, grp in rows.groupby("claim"):
        lines.append(f"\n== {claim}: {grp['quantity'].iloc[0]}")
        lines.append("   (! FAIL; ~ holds / x breaks where the assumption does not hold)")
        ks = sorted(grp["k"].unique())
        lines.append(
            f"{'scenario':<15}{'policy':<14}{'tau':>5}{'':6}"
            + "".join(f"{'k=' + str(k):>10}" for k in ks)
        )
        for (sc, pol, tau), g in grp.groupby(["scenario", "policy", "tau_low"], dropna=False):
            by_k = {r.k: r for r in g.itertuples()}
            tau_s = (
                "-" if tau is None or (isinstance(tau, float) and math.isnan(tau)) else f"{tau:g}"
            )
            sim = "".join(
                f"{by_k[k].simulated:>9.3f}{mark[by_k[k].status]}" if k in by_k else " " * 10
                for k in ks
            )
            exact = "".join(f"{by_k[k].exact:>9.3f} " if k in by_k else " " * 10 for k in ks)
            lines.append((f"{sc:<15}{pol:<14}{tau_s:>5}{'   sim':<6}" + sim).rstrip())
            lines.append((f"{'':<34}{' exact':<6}" + exact).rstrip())
    return "\n".join(lines)
