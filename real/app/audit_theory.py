"""The audit's numbers: every strategy's exact cost on a recorded outcome history.

Given `history.csv` (sara-sim's `history:` format plus pass_tokens / fail_tokens), the costs are
exact theory for the recorded law (`sara_sim.core.theory`, `sara_sim.core.optimal`): DS's
k / P(mixed),
SARA at each tau_low, the best tau_low, the Bayes-optimal stopping policy; the history-informed
strategies are replayed on the passes (`sara_sim.sim.replay`); intervals are a percentile bootstrap
over prompts with each plan held fixed.

Tokens: a rollout's expected count of passes and fails under a plan is exact
(``sara_sim.core.theory.outcome_counts``); tokens = passes x mean passing length + fails x mean
failing length, the lengths measured by the audit."""

import math

import numpy as np

from sara_sim.core.registry import names
from sara_sim.core.theory import outcome_counts

TAU_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
INFORMED = names("replay", needs_history=True)
# What `analyze` costs, measured on this machine: a bootstrap resample rebuilds the resampled
# history (~3e-5 s a record) and re-evaluates every plan (~0.05 s at k 8, ~200 k records'
# worth); 6e6 record-equivalents is about three minutes (the default, 200 resamples of 256
# prompts at k 8, is 7e5).
BOOTSTRAP_LIMIT = 6e6


def bootstrap_work(prompts: int, passes: int, k: int, resamples: int) -> float:
    """Record-equivalents of `analyze`'s bootstrap (see BOOTSTRAP_LIMIT)."""
    return float(resamples) * (float(prompts) * passes + 200.0 * k)


def replay_visits(prompts: int, passes: int) -> float:
    """Prompt visits `analyze` replays (two or more passes: ds, sara and INFORMED, every record
    once each), against sara_sim.sim.replay.REPLAY_VISIT_LIMIT."""
    return float(prompts) * passes * (2 + len(INFORMED)) if passes >= 2 else 0.0


def _ratio(num, den):
    """num / den; None (undefined) when either is undefined or den is 0 (theory's impossible
    events are exactly 0, so this never divides by a rounding residue)."""
    return None if num is None or den is None or den == 0 else num / den


def _savings(cost, ref):
    """1 - cost / ref: the fraction saved against DS; None where either cost is undefined."""
    ratio = _ratio(cost, ref)
    return None if ratio is None else 1.0 - ratio


def _row(name, law, k, res, lengths, ds):
    passes, fails = outcome_counts(law, k, res)
    tokens = passes * lengths[0] + fails * lengths[1]
    row = {
        "strategy": name,
        "rollouts_per_effective_group": res["cost_per_effective_group"],
        "tokens_per_effective_group": _ratio(tokens, res["p_effective"]),
        "rollouts_per_prompt": res["rollouts_per_prompt"],
        "p_effective": res["p_effective"],
        "p_false_abandon": res["p_false_abandon"],
        "abandon_after_fail": res["abandon_after_fail"],
        "abandon_after_pass": res["abandon_after_pass"],
        "plan": [int(x) for x in res["plan"]],
    }
    if ds is not None:
        row["savings_vs_ds"] = _savings(row["rollouts_per_effective_group"], ds[0])
        row["token_savings_vs_ds"] = _savings(row["tokens_per_effective_group"], ds[1])
    return row


def analyze(frame, k, taus=TAU_GRID, bootstrap=200, seed=0, replay_groups=None) -> dict:
    """Every strategy's exact cost on the recorded law of `frame` (a history.csv frame)."""
    from sara_sim.core.difficulty import HistoryLaw
    from sara_sim.core.optimal import bayes_optimal
    from sara_sim.core.theory import best_tau, sequential_law

    law = HistoryLaw(frame)
    n_pass, n_all = int(frame["correct"].sum()), int(frame["samples"].sum())
    lengths = (
        frame["pass_tokens"].sum() / n_pass if n_pass else 0.0,
        frame["fail_tokens"].sum() / (n_all - n_pass) if n_all > n_pass else 0.0,
    )
    ds_res = sequential_law(law, k, 0.0)  # tau_low 0 never abandons: DS's k / P(mixed)
    ds_row = _row("ds", law, k, ds_res, lengths, None)
    ds = (ds_res["ds_cost_per_effective_group"], ds_row["tokens_per_effective_group"])
    rows = [ds_row | {"savings_vs_ds": 0.0, "token_savings_vs_ds": 0.0}]
    for t in taus:
        rows.append(_row("sara", law, k, sequential_law(law, k, t), lengths, ds) | {"tau_low": t})
    best = opt = None
    if ds_res["p_mixed"] > 0:  # else no strategy gets an effective group: nothing to optimise
        tau, _, (lo, hi) = best_tau(law, k)
        best = _row("sara", law, k, sequential_law(law, k, tau), lengths, ds)
        best |= {"tau_low": tau, "tau_interval": [lo, hi]}
        opt = _row("bayes-optimal", law, k, bayes_optimal(law, k), lengths, ds)

    out = {
        "k": k,
        "prompts": int(frame["prompt_id"].nunique()),
        "passes": int(frame["epoch"].nunique()),
        "rollouts_sampled": n_all,
        "mean_success": n_pass / n_all,
        "p_mixed": ds_res["p_mixed"],
        "mean_tokens_pass": lengths[0] if n_pass else None,
        "mean_tokens_fail": lengths[1] if n_all > n_pass else None,
        "ds": rows[0],
        "sara": rows[1:],
        "best_tau": best,
        "bayes_optimal": opt,
    }
    if best is None:
        out["recommended"] = {
            "strategy": "ds",
            "flags": f"--strategy ds --k {k}",
            "reason": "no mixed group in the sample: every prompt all-pass or all-fail at this k",
        }
        return out
    if bootstrap:
        out["bootstrap"] = _bootstrap(frame, k, [rows[0], *rows[1:], best, opt], bootstrap, seed)
    if out["passes"] >= 2:
        out["replay"] = replay_table(frame, k, best["tau_low"], seed, replay_groups)
    out["recommended"] = recommend(out)
    return out


def _bootstrap(frame, k, rows, n_boot, seed) -> dict:
    """95 % percentile intervals over prompts for each row's cost and savings (plan held fixed).

    A resample can leave a statistic undefined (no effective group under the plan, or no mixed
    group for DS); its interval is then null, never computed over the other resamples only (that
    would condition on the resample being favourable), and `undefined_resamples` says in how many
    resamples it was undefined."""
    import pandas as pd

    from sara_sim.core.difficulty import HistoryLaw
    from sara_sim.core.theory import plan_law

    rng = np.random.default_rng([seed, 0xB007])
    by_plan = {tuple(r["plan"]): [] for r in rows}
    ds_costs = []
    groups = {p: g for p, g in frame.groupby("prompt_id")}
    pids = np.array(list(groups))
    for _ in range(n_boot):
        pick = rng.choice(pids, size=len(pids), replace=True)
        law = HistoryLaw(pd.concat([groups[p] for p in pick], ignore_index=True))
        ds_cost = None
        for plan in by_plan:
            res = plan_law(law, k, plan)
            ds_cost = res["ds_cost_per_effective_group"]
            by_plan[plan].append(res["cost_per_effective_group"])
        ds_costs.append(ds_cost)

    out = {"resamples": n_boot, "ds_rollouts_per_effective_group": percentile_interval(ds_costs)}
    for r in rows:
        costs = by_plan[tuple(r["plan"])]
        savings = [_savings(c, d) for c, d in zip(costs, ds_costs, strict=True)]
        key = r["strategy"] + (f"@{r['tau_low']:g}" if "tau_low" in r else "")
        if r is rows[-2]:
            key = "best_tau"
        out[key] = {
            "rollouts_per_effective_group": percentile_interval(costs),
            "savings_vs_ds": percentile_interval(savings),
            "undefined_resamples": sum(x is None for x in savings),
        }
    return out


def percentile_interval(values) -> list[float] | None:
    """[2.5 %, 97.5 %] quantiles of the resampled values; None when there are none or any is
    undefined (None): an interval over the defined ones only would hide the undefined mass.

    >>> percentile_interval([1.0, 2.0, 3.0]), percentile_interval([1.0, None, 3.0])
    ([1.05, 2.95], None)
    """
    if not values or any(v is None for v in values):
        return None
    x = np.asarray(values, float)
    return [float(np.quantile(x, 0.025)), float(np.quantile(x, 0.975))]


def replay_table(frame, k, tau, seed=0, groups=None) -> list[dict]:
    """ds, sara (best tau) and the history-informed strategies replayed on the recorded passes."""
    from sara_sim.core.difficulty import HISTORY_COLUMNS
    from sara_sim.sim.replay import replay

    epochs = sorted(int(e) for e in frame["epoch"].unique())
    groups = groups or max(1, min(32, frame["prompt_id"].nunique() // 4))
    rows = []
    for name in ("ds", "sara", *INFORMED):
        kw = {"tau_low": tau} if name == "sara" else {}
        out = replay(frame[list(HISTORY_COLUMNS)], name, epochs, seed, k=k, groups=groups, **kw)
        rows.append(
            {
                "strategy": name,
                "rollouts": out["rollouts"],
                "effective_groups": out["effective_groups"],
                "rollouts_per_effective_group": _ratio(out["rollouts"], out["effective_groups"]),
            }
        )
    ds = rows[0]["rollouts_per_effective_group"]
    for r in rows:
        r["savings_vs_ds"] = _savings(r["rollouts_per_effective_group"], ds)
    return rows


def recommend(out) -> dict:
    """The strategy to train with: SARA's best tau_low only when its interval says it saves."""
    best, k = out["best_tau"], out["k"]
    ci = (out.get("bootstrap") or {}).get("best_tau", {}).get("savings_vs_ds")
    sure = ci is not None and ci[0] > 0
    rec = {"strategy": "ds", "flags": f"--strategy ds --k {k}"}
    if best["savings_vs_ds"] > 0 and (sure or ci is None):
        rec = {
            "strategy": "sara",
            "tau_low": best["tau_low"],
            "flags": f"--strategy sara --k {k} --tau-low {best['tau_low']:.3g}",
        }
    rec["reason"] = (
        f"exact theory on this history: ds {out['ds']['rollouts_per_effective_group']:.2f} "
        f"rollouts per effective group, sara(tau_low={best['tau_low']:.3g}) "
        f"{best['rollouts_per_effective_group']:.2f} ({best['savings_vs_ds']:+.1%} saved"
        + (f", 95% CI {ci[0]:+.1%}..{ci[1]:+.1%}" if ci else "")
        + f"); Bayes-optimal stopping {out['bayes_optimal']['rollouts_per_effective_group']:.2f}"
    )
    informed = [
        r
        for r in out.get("replay", [])
        if r["strategy"] in INFORMED and r["rollouts_per_effective_group"] is not None
    ]
    if informed:
        top = min(informed, key=lambda r: r["rollouts_per_effective_group"])
        sara = {r["strategy"]: r for r in out["replay"]}["sara"]["rollouts_per_effective_group"]
        if sara is None or top["rollouts_per_effective_group"] < sara:
            rec["informed"] = {
                "strategy": top["strategy"],
                "flags": f"--strategy {top['strategy']} --k {k} --task-size N",
                "replay_savings_vs_ds": top["savings_vs_ds"],
            }
    return rec


def format_report(out) -> str:
    def f(x, spec=".2f"):
        return "-" if x is None or not math.isfinite(x) else format(x, spec)

    boot = out.get("bootstrap") or {}
    lines = [
        f"audit: {out['prompts']} prompts x {out['passes']} pass(es) x k={out['k']}: "
        f"mean success {out['mean_success']:.3f}, P(mixed group) {out['p_mixed']:.3f}",
        f"{'strategy':<22}{'roll/eff':>9}{'tok/eff':>10}{'vs ds':>8}{'95% CI':>18}",
    ]
    entries = [("ds", out["ds"], boot.get("ds"))]
    entries += [
        (f"sara tau={r['tau_low']:g}", r, boot.get(f"sara@{r['tau_low']:g}")) for r in out["sara"]
    ]
    if out["best_tau"] is not None:
        entries += [
            (f"best tau={out['best_tau']['tau_low']:.3g}", out["best_tau"], boot.get("best_tau")),
            ("bayes-optimal", out["bayes_optimal"], boot.get("bayes-optimal")),
        ]
    for name, r, b in entries:
        ci = (b or {}).get("savings_vs_ds")
        cis = f"{ci[0]:+.1%}..{ci[1]:+.1%}" if ci else "-"
        lines.append(
            f"{name:<22}{f(r['rollouts_per_effective_group']):>9}"
            f"{f(r['tokens_per_effective_group'], '.1f'):>10}{f(r['savings_vs_ds'], '+.1%'):>8}"
            f"{cis:>18}"
        )
    for r in out.get("replay", []):
        lines.append(
            f"replay {r['strategy']:<15}{f(r['rollouts_per_effective_group']):>9}{'':>10}"
            f"{f(r['savings_vs_ds'], '+.1%'):>8}"
        )
    lines.append(f"recommended: {out['recommended']['flags']}  ({out['recommended']['reason']})")
    if "informed" in out["recommended"]:
        lines.append(f"  with revisited prompts: {out['recommended']['informed']['flags']}")
    return "\n".join(lines)
