"""The numbers README.md states as measured facts are derived here from the code: a change that
moves one of them fails this test instead of leaving the README wrong."""

import re
from pathlib import Path

import numpy as np

from sara_sim.core.difficulty import parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.theory import best_tau, sequential_law
from sara_sim.sim.replay import INFORMED_DEFAULTS, SELECTOR_RATIO, load_history, replay

REPO = Path(__file__).resolve().parents[2]

README = (REPO / "README.md").read_text()
NUM = r"([\d.]+)"


def _facts(pattern):
    m = re.search(pattern, re.sub(r"\s+", " ", README))
    assert m, f"README no longer states: {pattern}"
    return [float(x) for x in m.groups()]


def test_exact_theory_facts_for_deepscaler_epoch_0(history_path):
    ds, tau, sara, sara_pct, opt, opt_pct = _facts(
        rf"epoch 0: DS {NUM} rollouts per effective group; paper-faithful SARA with the best "
        rf"tau_low \({NUM}\) {NUM} \(-{NUM} %\); Bayes-optimal stopping for the recorded law "
        rf"{NUM} \(-{NUM} %"
    )
    law, k = parse_law(f"history:{history_path}", epochs="0"), 8
    ds_cost = sequential_law(law, k, 0.0)["cost_per_effective_group"]  # tau 0: never abandons
    best, best_cost, _ = best_tau(law, k)
    res = bayes_optimal(law, k)
    assert round(ds_cost, 2) == ds
    assert round(best, 2) == tau and round(best_cost, 2) == sara
    assert round(100 * (1 - best_cost / ds_cost)) == sara_pct
    assert round(res["cost_per_effective_group"], 2) == opt
    assert round(100 * res["savings_vs_ds"]) == opt_pct
    assert round(res["ds_cost_per_effective_group"], 2) == ds
    # "abandon after 2 fails, never on passes"
    assert res["abandon_after_fail"] == 2 and res["abandon_after_pass"] is None


def test_cross_validated_replay_numbers(history_path):
    """benchmarks/fit_informed.py's held-out report (fold B, epochs 26-52, seeds 0 and 1) with
    the defaults it chose — the same calls, so the README's line is what the code gives."""
    ds, sara, hist, pct, dps, mopps = _facts(
        rf"ds {NUM}, sara {NUM}, sara-history {NUM} \(-{NUM} %\), sara-dps {NUM}, "
        rf"sara-mopps {NUM}"
    )
    frame = load_history(history_path)
    pids = np.array(sorted(frame.prompt_id.unique()))
    fold_b = frame[frame.prompt_id.isin(pids[1::2])]
    best = {x: INFORMED_DEFAULTS[x] for x in ("rho", "kappa", "rule")}

    def cost(name, **kw):
        runs = [replay(fold_b, name, range(26, 53), s, **kw) for s in (0, 1)]
        return float(np.mean([r["cost_per_effective_group"] for r in runs]))

    got_ds, got_hist = cost("ds"), cost("sara-history", **best)
    assert round(got_ds, 2) == ds and round(got_hist, 2) == hist
    assert round(100 * (1 - got_hist / got_ds), 1) == pct
    assert round(cost("sara", tau_low=0.5), 2) == sara
    assert round(cost("sara-dps", ratio=SELECTOR_RATIO, **best), 2) == dps
    assert round(cost("sara-mopps", ratio=SELECTOR_RATIO, **best), 2) == mopps


def test_ds_as_run_and_sara_without_carrying(history_path):
    """The README's `sara-sim compare` line on DeepScaleR epoch 0 (N 64, 100 steps x 4 seeds):
    ds, verl's 3N batch, sara carrying and not — the same simulate calls compare makes."""
    from sara_sim.sim.laws import parse_sim_law
    from sara_sim.sim.simulate import simulate, summarize

    stated = _facts(
        rf"epoch 0: ds \(ours, a generation batch of N\) {NUM}, ds-verl3n \(verl's DAPO run "
        rf"scripts, 3N\) {NUM}, sara {NUM}, sara --no-carry {NUM};"
    )
    law = parse_sim_law(f"history:{history_path}", epochs="0")
    kw = dict(k=8, groups=64, steps=100, replicates=4, seed=0)
    runs = [("ds", {}), ("ds-verl3n", {}), ("sara", {}), ("sara", {"carry": False})]
    got = [summarize(simulate(n, law, **kw, **c))["cost_per_effective_group"] for n, c in runs]
    assert stated == [round(x, 2) for x in got]
    assert stated[3] > stated[2] and stated[3] < stated[0]  # the rule saves without carrying
