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

from sara_sim.core.registry import SARA, names
from sara_sim.core.theory import outcome_counts
from sara_sim.sim.baselines import DS_3N, DS_ROUNDS, DS_STREAM, decomposition, decomposition_text

TAU_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
INFORMED = names("replay", needs_history=True)
# replayed on two or more passes: DS and the paper's rule beside the history-informed ones
REPLAYED = ("ds", "sara", *INFORMED)
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


def mean_lengths(frame):
    """(mean tokens of a passing rollout, of a failing one) of a history.csv frame (0.0 where
    the frame holds none of that outcome)."""
    n_pass, n_all = int(frame["correct"].sum()), int(frame["samples"].sum())
    return (
        frame["pass_tokens"].sum() / n_pass if n_pass else 0.0,
        frame["fail_tokens"].sum() / (n_all - n_pass) if n_all > n_pass else 0.0,
    )


def references(law, k, groups, lengths) -> dict:
    """DS streamed (k / P(mixed): every group it samples is used) and DS by rounds — generation
    batches of N prompts, and verl's 3N (``ds-verl3n``), capped at 10 batches, the surplus
    thrown away: ``theory.ds_rounds_law``, exact — in rollouts and tokens per effective group
    (a DS rollout is any rollout of the law: its mean length).  {name: (rollouts, tokens)}, the
    names of ``sara_sim.sim.baselines``; None where no group can mix."""
    from sara_sim.core.registry import DSParams, row
    from sara_sim.core.theory import ds_rounds_law, plan_law

    m10 = float(np.exp(law.log_moment(1, 0)))
    per_rollout = m10 * lengths[0] + (1.0 - m10) * lengths[1]
    p_mixed = plan_law(law, k, [0, 1, k, 1, k])["p_mixed"]
    out = {DS_STREAM: _ratio(k, p_mixed)}
    for name, ref in (("ds", DS_ROUNDS), ("ds-verl3n", DS_3N)):
        batch = groups * row(name).gen_batch_factor
        res = ds_rounds_law(p_mixed, k, groups, batch, DSParams().max_num_gen_batches)
        out[ref] = res["rollouts_per_effective_group"]
    return {n: None if r is None else (r, r * per_rollout) for n, r in out.items()}


def analyze(frame, k, taus=TAU_GRID, bootstrap=200, seed=0, replay_groups=None) -> dict:
    """Every strategy's exact cost on the recorded law of `frame` (a history.csv frame), against
    DS streamed and DS by rounds (N = `replay_groups`, the replay's groups a step), where each
    saving comes from, and the strategy to train with."""
    from sara_sim.core.difficulty import HistoryLaw
    from sara_sim.core.optimal import bayes_optimal
    from sara_sim.core.theory import best_tau, sequential_law

    law = HistoryLaw(frame)
    n_pass, n_all = int(frame["correct"].sum()), int(frame["samples"].sum())
    lengths = mean_lengths(frame)
    groups = replay_groups or max(1, min(32, frame["prompt_id"].nunique() // 4))
    ds_res = sequential_law(law, k, 0.0)  # tau_low 0 never abandons: DS's k / P(mixed)
    ds_row = _row("ds", law, k, ds_res, lengths, None)
    ds = (ds_res["ds_cost_per_effective_group"], ds_row["tokens_per_effective_group"])
    rows = [ds_row | {"savings_vs_ds": 0.0, "token_savings_vs_ds": 0.0}]
    for t in taus:
        rows.append(_row("sara", law, k, sequential_law(law, k, t), lengths, ds) | {"tau_low": t})
    best = opt = opt_tok = None
    if ds_res["p_mixed"] > 0:  # else no strategy gets an effective group: nothing to optimise
        tau, _, (lo, hi) = best_tau(law, k)
        best = _row("sara", law, k, sequential_law(law, k, tau), lengths, ds)
        best |= {"tau_low": tau, "tau_interval": [lo, hi]}
        opt = _row("bayes-optimal", law, k, bayes_optimal(law, k), lengths, ds)
        if min(lengths) > 0:  # both outcomes measured: the plan of fewest tokens
            res = bayes_optimal(law, k, lengths=lengths)
            opt_tok = _row("bayes-optimal tokens", law, k, res, lengths, ds)

    out = {
        "k": k,
        "groups": groups,
        "prompts": int(frame["prompt_id"].nunique()),
        "passes": int(frame["epoch"].nunique()),
        "rollouts_sampled": n_all,
        "mean_success": n_pass / n_all,
        "p_mixed": ds_res["p_mixed"],
        "mean_tokens_pass": lengths[0] if n_pass else None,
        "mean_tokens_fail": lengths[1] if n_all > n_pass else None,
        "references": _references_out(references(law, k, groups, lengths)),
        "ds": rows[0],
        "sara": rows[1:],
        "best_tau": best,
        "bayes_optimal": opt,
        "bayes_optimal_tokens": opt_tok,
    }
    if best is None:
        out["recommended"] = {
            "strategy": "ds",
            "schedule": "stream",
            "flags": f"--strategy ds --k {k} --schedule stream",
            "reason": "no mixed group in the sample: every prompt all-pass or all-fail at this k",
        }
        return out
    default = _row("sara", law, k, sequential_law(law, k, SARA.tau_low), lengths, ds)
    plans = {"sara": default, "best_tau": best, "bayes-optimal": opt}
    if opt_tok is not None:
        plans["bayes-optimal tokens"] = opt_tok
    if bootstrap:
        out["bootstrap"] = _bootstrap(
            frame, k, groups, [rows[0], *rows[1:], best, opt, opt_tok], plans, bootstrap, seed
        )
    if out["passes"] >= 2:
        out["replay"] = replay_table(frame, k, best["tau_low"], seed, groups, lengths)
    out["variants"] = variants(out, plans)
    out["decomposition"] = chain(out, plans)
    out["recommended"] = recommend(out)
    return out


def _references_out(refs) -> dict:
    return {
        name: {
            "rollouts_per_effective_group": None if c is None else c[0],
            "tokens_per_effective_group": None if c is None else c[1],
        }
        for name, c in refs.items()
    }


def _bootstrap(frame, k, groups, rows, plans, n_boot, seed) -> dict:
    """95 % percentile intervals over prompts (each plan held fixed; the lengths re-measured on
    the resample): each row's cost and savings against DS streamed, each plan's ratio to DS
    streamed in rollouts and tokens (``variants``), and DS streamed's ratio to DS by rounds (N,
    3N).

    A resample can leave a statistic undefined (no effective group under the plan, or no mixed
    group for DS); its interval is then null, never computed over the other resamples only (that
    would condition on the resample being favourable), and `undefined_resamples` says in how many
    resamples it was undefined."""
    import pandas as pd

    from sara_sim.core.difficulty import HistoryLaw
    from sara_sim.core.theory import plan_law, plan_tokens

    rng = np.random.default_rng([seed, 0xB007])
    rows = [r for r in rows if r is not None]
    by_plan = {tuple(r["plan"]): [] for r in [*rows, *plans.values()]}
    refs = []
    groups_of = {p: g for p, g in frame.groupby("prompt_id")}
    pids = np.array(list(groups_of))
    for _ in range(n_boot):
        pick = rng.choice(pids, size=len(pids), replace=True)
        sample = pd.concat([groups_of[p] for p in pick], ignore_index=True)
        law, lengths = HistoryLaw(sample), mean_lengths(sample)
        for plan in by_plan:
            res = plan_law(law, k, plan)
            by_plan[plan].append(
                (res["cost_per_effective_group"], plan_tokens(law, k, res, lengths)[1])
            )
        refs.append(references(law, k, groups, lengths))

    out = {"resamples": n_boot}
    stream = [r[DS_STREAM] for r in refs]
    out["ds_rollouts_per_effective_group"] = percentile_interval([_at(s, 0) for s in stream])
    for r in rows:
        costs = by_plan[tuple(r["plan"])]
        savings = [_savings(c, _at(d, 0)) for (c, _), d in zip(costs, stream, strict=True)]
        key = r["strategy"] + (f"@{r['tau_low']:g}" if "tau_low" in r else "")
        if "tau_interval" in r:  # the best tau_low's row
            key = "best_tau"
        out[key] = {
            "rollouts_per_effective_group": percentile_interval([c for c, _ in costs]),
            "savings_vs_ds": percentile_interval(savings),
            "token_savings_vs_ds": percentile_interval(
                [_savings(t, _at(d, 1)) for (_, t), d in zip(costs, stream, strict=True)]
            ),
            "undefined_resamples": sum(x is None for x in savings),
        }
    ratios = {}
    for name, r in plans.items():
        costs = by_plan[tuple(r["plan"])]
        ratios[name] = {
            f"{unit}_vs_ds_stream": percentile_interval(
                [_ratio(c[i], _at(d, i)) for c, d in zip(costs, stream, strict=True)]
            )
            for i, unit in enumerate(("rollouts", "tokens"))
        }
    for ref in (DS_ROUNDS, DS_3N):  # what streaming DS alone saves
        ratios[f"ds stream / {ref}"] = {
            f"{unit}": percentile_interval(
                [_ratio(_at(x[DS_STREAM], i), _at(x[ref], i)) for x in refs]
            )
            for i, unit in enumerate(("rollouts", "tokens"))
        }
    out["ratios"] = ratios
    return out


def _at(pair, i):
    return None if pair is None else pair[i]


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


def replay_table(frame, k, tau, seed=0, groups=None, lengths=(0.0, 0.0)) -> list[dict]:
    """ds, sara (best tau) and the history-informed strategies replayed on the
    recorded passes, by rounds with N = `groups` a step; tokens at the mean `lengths`."""
    from sara_sim.core.difficulty import HISTORY_COLUMNS
    from sara_sim.sim.replay import replay

    epochs = sorted(int(e) for e in frame["epoch"].unique())
    groups = groups or max(1, min(32, frame["prompt_id"].nunique() // 4))
    rows = []
    for name in REPLAYED:
        kw = {"tau_low": tau} if name == "sara" else {}
        out = replay(frame[list(HISTORY_COLUMNS)], name, epochs, seed, k=k, groups=groups, **kw)
        passes = sum(sum(x) for x in out["drawn"].values())
        tokens = passes * lengths[0] + (out["rollouts"] - passes) * lengths[1]
        rows.append(
            {
                "strategy": name,
                "rollouts": out["rollouts"],
                "tokens": tokens,
                "effective_groups": out["effective_groups"],
                "rollouts_per_effective_group": _ratio(out["rollouts"], out["effective_groups"]),
                "tokens_per_effective_group": _ratio(tokens, out["effective_groups"]),
            }
        )
    ds = rows[0]
    for r in rows:
        r["savings_vs_ds"] = _savings(
            r["rollouts_per_effective_group"], ds["rollouts_per_effective_group"]
        )
        r["token_savings_vs_ds"] = _savings(
            r["tokens_per_effective_group"], ds["tokens_per_effective_group"]
        )
    return rows


def variants(out, plans) -> list[dict]:
    """What a user can run, each against DS streamed (the reference) and DS by rounds (N, 3N):
    DS streamed itself, sara (the paper's rule, tau_low 0.2), sara at the best tau_low, sara-auto
    priced in rollouts and in tokens (exact: the Bayes-optimal plan for the recorded law, its
    intervals from the bootstrap), and with two or more passes the history-informed strategies
    (replayed by rounds: their cost is DS by rounds' exact cost x their replayed ratio to the
    replay's DS, no interval)."""
    k, refs = out["k"], out["references"]
    boot = (out.get("bootstrap") or {}).get("ratios", {})
    tau = out["best_tau"]["tau_low"]
    rows = [
        ("ds", "ds stream", f"--strategy ds --k {k}", None, None),
        ("sara", "sara", f"--strategy sara --k {k}", plans.get("sara"), "sara"),
        ("sara", f"sara tau={tau:.3g}", f"--strategy sara --k {k} --tau-low {tau:.3g}",
         plans.get("best_tau"), "best_tau"),
        ("sara-auto", "sara-auto", f"--strategy sara-auto --k {k}", plans.get("bayes-optimal"),
         "bayes-optimal"),
        ("sara-auto", "sara-auto tokens", f"--strategy sara-auto --k {k} --priced-in tokens",
         plans.get("bayes-optimal tokens"), "bayes-optimal tokens"),
    ]  # fmt: skip
    ds_stream = refs[DS_STREAM]
    found = []
    for strategy, label, flags, row, key in rows:
        cost = ds_stream if row is None else row
        entry = {"strategy": strategy, "label": label, "source": "exact",
                 "flags": f"{flags} --schedule stream",
                 "rollouts_per_effective_group": cost["rollouts_per_effective_group"],
                 "tokens_per_effective_group": cost["tokens_per_effective_group"]}  # fmt: skip
        if key is not None and row is None:
            continue
        if key is not None:
            entry["interval"] = boot.get(key)
        found.append(entry)
    replayed = {r["strategy"]: r for r in out.get("replay", [])}
    ds_rounds = refs[DS_ROUNDS]
    for name in INFORMED:
        r, ref = replayed.get(name), replayed.get("ds")
        if r is None:
            continue
        scaled = {
            unit: _scaled(ds_rounds[unit], r[unit], ref[unit])
            for unit in ("rollouts_per_effective_group", "tokens_per_effective_group")
        }
        flags = f"--strategy {name} --k {k} --schedule stream --task-size N"
        found.append(
            {"strategy": name, "label": name, "source": "replay", "flags": flags, **scaled}
        )
    for entry in found:
        for ref, tag in ((DS_STREAM, "ds_stream"), (DS_ROUNDS, "ds_rounds"), (DS_3N, "ds_verl3n")):
            for unit in ("rollouts", "tokens"):
                entry[f"{unit}_vs_{tag}"] = _ratio(
                    entry[f"{unit}_per_effective_group"], refs[ref][f"{unit}_per_effective_group"]
                )
    return found


def _scaled(exact_ref, cost, replay_ref):
    """A replayed cost told in exact units: exact DS by rounds x (cost / the replay's DS)."""
    ratio = _ratio(cost, replay_ref)
    return None if ratio is None or exact_ref is None else exact_ref * ratio


def chain(out, plans) -> dict:
    """Where the saving over DS by rounds comes from (``sara_sim.sim.baselines``), in rollouts
    and in tokens: DS by rounds -> DS streamed -> sara (tau_low 0.2) -> sara-auto (the plan
    priced in that unit) -> sara-history (replayed, with two or more passes)."""
    refs = out["references"]
    by_label = {v["label"]: v for v in out["variants"]}
    parts = {}
    for unit, auto in (("rollouts", "sara-auto"), ("tokens", "sara-auto tokens")):
        key = f"{unit}_per_effective_group"
        costs = {DS_ROUNDS: refs[DS_ROUNDS][key], DS_STREAM: refs[DS_STREAM][key]}
        labels = {"sara": "sara", "sara-auto": auto if auto in by_label else "sara-auto"}
        labels["sara-history"] = "sara-history"
        for name, label in labels.items():
            if label in by_label:
                costs[name] = by_label[label][key]
        parts[unit] = decomposition(costs)
    return parts


def recommend(out) -> dict:
    """Should I stream DS, or use SARA, and which variant?  Tokens are what a step's generation
    costs, so the variants are judged by tokens per effective group against DS streamed (by
    rollouts where a length is missing): the cheapest exact variant whose whole 95 % interval is
    below DS streamed's; else DS streamed.  Streaming DS alone is told beside it (DS streamed /
    DS by rounds, with its interval), and a history-informed strategy whose replayed cost is
    lower still is named for a finite pool of revisited prompts."""
    k = out["k"]
    unit = "tokens" if out["mean_tokens_pass"] and out["mean_tokens_fail"] else "rollouts"
    key = f"{unit}_vs_ds_stream"
    exact = [v for v in out["variants"] if v["source"] == "exact" and v["strategy"] != "ds"]
    sure = [v for v in exact if (v.get("interval") or {}).get(key) and v["interval"][key][1] < 1]
    boot = (out.get("bootstrap") or {}).get("ratios", {})
    stream = boot.get(f"ds stream / {DS_ROUNDS}", {}).get(unit)
    ref_rounds = out["references"][DS_ROUNDS][f"{unit}_per_effective_group"]
    ref_stream = out["references"][DS_STREAM][f"{unit}_per_effective_group"]
    streaming = {"ratio": _ratio(ref_stream, ref_rounds), "interval": stream}
    if sure:
        top = min(sure, key=lambda v: v[key])
        rec = {"strategy": top["strategy"], "label": top["label"], "flags": top["flags"],
               key: top[key], "interval": top["interval"][key]}  # fmt: skip
        if top["strategy"] == "sara" and "--tau-low" in top["flags"]:
            rec["tau_low"] = out["best_tau"]["tau_low"]
        lo, hi = top["interval"][key]
        why = (
            f"{top['label']} streamed takes {top[key]:.3f}x DS streamed's {unit} per effective "
            f"group (95% CI {lo:.3f}..{hi:.3f})"
        )
    else:
        rec = {"strategy": "ds", "label": "ds stream", "flags": f"--strategy ds --k {k} "
               "--schedule stream", key: 1.0, "interval": None}  # fmt: skip
        best = min(exact, key=lambda v: v[key] if v[key] is not None else math.inf, default=None)
        why = "no SARA variant's interval is below DS streamed's"
        if best is not None and best[key] is not None:
            why += f" (the best, {best['label']}: {best[key]:.3f}x)"
    rec["schedule"] = "stream"
    rec["unit"] = unit
    rec["streaming"] = streaming
    s_int = "" if stream is None else f", CI {stream[0]:.3f}..{stream[1]:.3f}"
    rec["reason"] = (
        f"exact theory on this history: {why}; streaming DS alone takes "
        f"{_fmt(streaming['ratio'])}x DS by rounds' {unit} (N = {out['groups']}{s_int})"
    )
    informed = [v for v in out["variants"] if v["source"] == "replay" and v[key] is not None]
    if informed:
        top = min(informed, key=lambda v: v[key])
        if rec[key] is None or top[key] < rec[key]:
            rec["informed"] = {
                "strategy": top["strategy"],
                "flags": top["flags"],
                key: top[key],
                "replay_savings_vs_ds": next(
                    r["savings_vs_ds"] for r in out["replay"] if r["strategy"] == top["strategy"]
                ),
            }
    return rec


def _fmt(x, spec=".3f"):
    return "-" if x is None or not math.isfinite(x) else format(x, spec)


def format_report(out) -> str:
    f = _fmt
    boot = out.get("bootstrap") or {}
    lines = [
        f"audit: {out['prompts']} prompts x {out['passes']} pass(es) x k={out['k']}: "
        f"mean success {out['mean_success']:.3f}, P(mixed group) {out['p_mixed']:.3f}; "
        f"tokens a passing / failing rollout {f(out['mean_tokens_pass'], '.1f')} / "
        f"{f(out['mean_tokens_fail'], '.1f')}",
        f"references (exact; N = {out['groups']} groups a step):",
    ]
    names = {DS_STREAM: "DS streamed (k / P(mixed))", DS_ROUNDS: "DS by rounds (batches of N)",
             DS_3N: "DS by rounds (3N, verl)"}  # fmt: skip
    for ref, label in names.items():
        r = out["references"][ref]
        lines.append(
            f"  {label:<30}{f(r['rollouts_per_effective_group'], '.2f'):>9} rollouts"
            f"{f(r['tokens_per_effective_group'], '.1f'):>10} tokens per effective "
            "group"
        )
    lines.append(
        f"{'strategy':<22}{'roll/eff':>9}{'tok/eff':>10}{'roll/DSs':>9}{'tok/DSs':>9}"
        f"{'95% CI tok/DSs':>18}"
    )
    entries = [("ds stream", out["ds"], boot.get("ds"))]
    entries += [
        (f"sara tau={r['tau_low']:g}", r, boot.get(f"sara@{r['tau_low']:g}")) for r in out["sara"]
    ]
    if out["best_tau"] is not None:
        entries += [
            (f"best tau={out['best_tau']['tau_low']:.3g}", out["best_tau"], boot.get("best_tau")),
            ("bayes-optimal", out["bayes_optimal"], boot.get("bayes-optimal")),
        ]
    if out.get("bayes_optimal_tokens") is not None:
        entries.append(
            ("bayes-optimal tokens", out["bayes_optimal_tokens"], boot.get("bayes-optimal tokens"))
        )
    for name, r, b in entries:
        ci = (b or {}).get("token_savings_vs_ds")
        cis = f"{1 - ci[1]:.3f}..{1 - ci[0]:.3f}" if ci else "-"
        lines.append(
            f"{name:<22}{f(r['rollouts_per_effective_group'], '.2f'):>9}"
            f"{f(r['tokens_per_effective_group'], '.1f'):>10}"
            f"{f(_complement(r['savings_vs_ds'])):>9}{f(_complement(r['token_savings_vs_ds'])):>9}"
            f"{cis:>18}"
        )
    for r in out.get("replay", []):
        lines.append(
            f"replay {r['strategy']:<15}{f(r['rollouts_per_effective_group'], '.2f'):>9}"
            f"{f(r['tokens_per_effective_group'], '.1f'):>10}   (replayed by rounds: "
            f"{f(_complement(r['token_savings_vs_ds']))}x its DS by rounds' tokens)"
        )
    for unit in ("rollouts", "tokens"):
        parts = (out.get("decomposition") or {}).get(unit)
        if parts:
            lines.append(f"where the saving over DS by rounds comes from (share of its {unit}):")
            lines += decomposition_text(parts)
    rec = out["recommended"]
    lines.append(f"recommended: {rec['flags']}  ({rec['reason']})")
    if "informed" in rec:
        lines.append(f"  with revisited prompts (a finite pool): {rec['informed']['flags']}")
    return "\n".join(lines)


def _complement(saving):
    return None if saving is None else 1.0 - saving
