"""Figure 9 — history-informed priors (sara-history, sara-mopps, sara-dps) on the DeepScaleR replay:
cost per effective group, what the committed groups look like, and starvation with / without the
guards."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sara_sim.sim.replay import (
    INFORMED_DEFAULTS,
    SELECTOR_RATIO,
    load_history,
    replay,
    signal_report,
)
from sara_sim.sim.simulate import ratio_se

from ._common import Figure, history_path
from ._sim import Z95, cell_seed

K, GROUPS = 8, 32
EPOCHS = range(30, 40)  # after the tuning epochs (0-25); small enough for a few s on 2 cores
STARVE = 5  # a prompt "starves" when learnable and unsampled this many epochs in a row
NO_GUARDS = {"max_skip": 10_000, "explore": 0.0}
VARIANTS = (  # (strategy, label, kwargs, guards)
    ("ds", "ds", {}, "n/a"),
    ("sara", "sara (τ_low = 0.5)", {"tau_low": 0.5}, "n/a"),
    ("sara-history", "sara-history", {}, "on"),
    ("sara-mopps", "sara-mopps", {}, "on"),
    ("sara-dps", "sara-dps", {}, "on"),
    ("sara-history", "sara-history, no guards", NO_GUARDS, "off"),
)
RATE_STRATEGIES = ("ds", "sara-history", "sara-dps")  # panel B
COLORS = {
    "ds": "#949494",
    "sara (τ_low = 0.5)": "#56b4e9",
    "sara-history": "#0173b2",
    "sara-mopps": "#029e73",
    "sara-dps": "#de8f05",
    "sara-history, no guards": "#d55e00",
}


def per_epoch(out):
    """(rollouts, effective groups) per replayed epoch: the units of the 95 % interval."""
    roll, eff = {}, {}
    for ((_, e), _), seq in out["drawn"].items():  # key: ((prompt, epoch), visit)
        roll[e] = roll.get(e, 0) + len(seq)
    for step in out["steps"]:
        for (_, e), _ in step.groups:
            eff[e] = eff.get(e, 0) + 1
    epochs = sorted(roll)
    return np.array([roll[e] for e in epochs]), np.array([eff.get(e, 0) for e in epochs])


def data(seed, history=None):
    frame = load_history(history_path(history))
    window = frame[frame["epoch"].isin(EPOCHS)]  # starvation is judged on the replayed epochs only
    rec = {(r.prompt_id, r.epoch): r.correct / r.samples for r in window.itertuples()}
    rseed = cell_seed(seed, 9)  # one seed for all: same prompt order and urns (common numbers)
    summary, rates = [], []
    for name, label, kw, guards in VARIANTS:
        out = replay(frame, name, EPOCHS, seed=rseed, k=K, groups=GROUPS, **kw)
        rep = signal_report(out, window, starve_epochs=STARVE)
        cost, se = ratio_se(*per_epoch(out))
        q = dict(zip(("q10", "q25", "q50", "q75", "q90"), rep.pop("committed_rate_quantiles")))
        informed = {**INFORMED_DEFAULTS, **kw} if name.startswith("sara-") else kw
        if name in ("sara-mopps", "sara-dps"):
            informed = {**informed, "ratio": SELECTOR_RATIO}
        summary.append(
            {
                "panel": "summary",
                "strategy": name,
                "label": label,
                "guards": guards,
                "params": ", ".join(f"{a}={b}" for a, b in informed.items()) or "defaults",
                "rollouts": out["rollouts"],
                "effective_groups": out["effective_groups"],
                "cost_per_effective_group": out["cost_per_effective_group"],
                "cost_per_effective_group_ci95": Z95 * se,
                **{key: v for key, v in rep.items() if key != "strategy"},
                **{f"committed_rate_{key}": v for key, v in q.items()},
            }
        )
        if label in RATE_STRATEGIES:
            committed = [rec[sid] for step in out["steps"] for sid, _ in step.groups]
            values, counts = np.unique(np.round(committed, 6), return_counts=True)
            for v, c in zip(values, counts):
                rates.append(
                    {
                        "panel": "committed rates",
                        "strategy": name,
                        "label": label,
                        "success_rate": v,
                        "groups": int(c),
                        "share": c / counts.sum(),
                    }
                )
    df = pd.DataFrame(summary)
    ds = df.set_index("label").loc["ds", "cost_per_effective_group"]
    df["savings_vs_ds_pct"] = 100 * (1 - df["cost_per_effective_group"] / ds)
    df = pd.concat([df, pd.DataFrame(rates)], ignore_index=True)
    df["k"], df["groups_per_step"] = K, GROUPS
    df["epochs"], df["replay_seed"] = f"{EPOCHS.start}-{EPOCHS.stop - 1}", rseed
    return df


def build(seed=0, history=None):
    df = data(seed, history)
    s = df[df["panel"] == "summary"].reset_index(drop=True)
    r = df[df["panel"] == "committed rates"]
    fig, (ax_a, ax_b, ax_c1, ax_c2) = plt.subplots(
        1, 4, figsize=(19, 5.2), gridspec_kw={"width_ratios": (1.25, 1.25, 0.6, 0.6)}
    )
    colors = [COLORS[lab] for lab in s["label"]]
    y = np.arange(len(s))[::-1]

    # A: rollouts per effective group
    ds = s.set_index("label").loc["ds"]
    cost, ci = s["cost_per_effective_group"], s["cost_per_effective_group_ci95"]
    ax_a.barh(y, cost, xerr=ci, color=colors, capsize=3)
    ax_a.axvline(ds["cost_per_effective_group"], color="black", ls="--", lw=1, label="DS")
    for yi, row, end in zip(y, s.itertuples(), cost + ci):
        note = f" {row.cost_per_effective_group:.3g}"
        if row.label != "ds":
            note += f"  (−{row.savings_vs_ds_pct:.0f} %)"
        ax_a.text(end, yi, note, va="center", fontsize=8)
    ax_a.set_yticks(y, s["label"])
    ax_a.set_xlabel("rollouts per effective group [rollouts]")
    ax_a.set_xlim(0, 1.3 * (cost + ci).max())
    ax_a.legend(loc="lower right", fontsize=8)
    ax_a.set_title("A  rollout cost, savings vs ds (95 % CI)")

    # B: committed prompts' success rates
    width = 0.8 / len(RATE_STRATEGIES)
    for j, lab in enumerate(RATE_STRATEGIES):
        sub = r[r["label"] == lab]
        mean = s.set_index("label").loc[lab, "committed_rate_mean"]
        ax_b.bar(
            sub["success_rate"] * K + (j - 1) * width,
            sub["share"],
            width=width,
            color=COLORS[lab],
            label=f"{lab} (mean {mean:.3f}, {int(sub['groups'].sum())} groups)",
        )
    ax_b.set_xticks(range(1, K), [f"{i}/{K}" for i in range(1, K)])
    ax_b.set_xlabel("success rate of the committed prompt's record [fraction]")
    ax_b.set_ylabel("share of committed groups [fraction]")
    ax_b.set_ylim(0, 1.3 * r["share"].max())
    ax_b.legend(loc="upper center", fontsize=8, ncol=1)
    ax_b.set_title("B  which prompts enter the batch")

    # C: starvation, with and without the guards (same rows as A)
    hatch = ["//" if g == "off" else "" for g in s["guards"]]
    for ax, col, scale, label in (
        (ax_c1, "starved_learnable_visit_share", 100, "learnable visits not sampled [%]"),
        (ax_c2, "longest_starvation_epochs", 1, "longest starvation run [epochs]"),
    ):
        vals = s[col] * scale
        ax.barh(y, vals, color=colors, hatch=hatch, edgecolor="white")
        for yi, v in zip(y, vals):
            ax.text(v, yi, f" {v:.3g}", va="center", fontsize=8)
        ax.set_xlabel(label)
        ax.set_xlim(0, 1.3 * max(vals.max(), 1))
        ax.set_yticks(y, [])
    ax_c2.axvline(STARVE, color="black", ls=":", lw=1)
    ax_c1.set_title("C  starvation (hatched: guards off)", loc="left")
    fig.suptitle(
        f"History-informed priors on the DeepScaleR replay (epochs {EPOCHS.start}-"
        f"{EPOCHS.stop - 1}, k = {K}, {GROUPS} groups per step, figure seed {seed})"
    )
    fig.tight_layout()
    at = s.set_index("label")
    hist, nog = at.loc["sara-history"], at.loc["sara-history, no guards"]
    rates = "; ".join(
        f"{lab} {at.loc[lab, 'committed_rate_mean']:.3f} "
        f"({at.loc[lab, 'committed_rate_q25']:.3g}-{at.loc[lab, 'committed_rate_q75']:.3g})"
        for lab in RATE_STRATEGIES
    )
    r = r.assign(c=np.rint(r["success_rate"] * K).astype(int)).set_index(["label", "c"])["share"]
    ends = "; ".join(
        f"{lab} {100 * r.get((lab, 1), 0):.0f} % / {100 * r.get((lab, K - 1), 0):.0f} %"
        for lab in RATE_STRATEGIES
    )
    caption = (
        "sara_sim.sim.replay replays the recorded outcomes of 605 DeepScaleR prompts "
        f"(Qwen2.5-Math-1.5B GRPO run) over epochs {EPOCHS.start}-{EPOCHS.stop - 1}: every prompt "
        f"is offered once per epoch in a seeded order and a visit draws its k = {K} rollouts "
        "without replacement from that epoch's 8 recorded outcomes; all strategies share the "
        "prompt order and the urns. sara-history gives each prompt a Beta prior from the outcomes "
        "the run itself drew at its earlier visits in the window (forgetting rho, shrinkage kappa "
        "toward the population) and may skip it without rollouts; sara-mopps / sara-dps let a "
        "predictive selector order the prompts first. Hyperparameters are the cross-validated "
        "defaults of benchmarks/fit_informed.py, tuned on epochs 0-25 only (half the prompts), so "
        "this window is outside the tuning data. (A) rollouts per effective group, ratio of sums "
        "with a 95 % delta-method interval over epochs; sara-history "
        f"{hist['cost_per_effective_group']:.2f} vs ds {ds['cost_per_effective_group']:.2f} "
        f"({hist['savings_vs_ds_pct']:.0f} % fewer). The saving is per effective group: "
        f"sara-history commits {int(hist['effective_groups'])} groups from these epochs, ds "
        f"{int(ds['effective_groups'])}, and {100 * hist['false_abandon_rate']:.0f} % of its "
        "abandoned or skipped visits would have been mixed (expected, from the records). (B) "
        "success rate (record c/8) of the prompts whose groups entered the batch, mean "
        f"(interquartile range): {rates}; share at 1/{K} / {K - 1}/{K} (the hardest / easiest "
        f"mixed records): {ends}. (C) a prompt is learnable at an epoch when its record is "
        "mixed; left: share of learnable visits that drew no rollout; right: the longest run of "
        f"such epochs for any prompt (dotted: {STARVE}). sara-history with its guards (explore = "
        f"{INFORMED_DEFAULTS['explore']}, a probe after max_skip = {INFORMED_DEFAULTS['max_skip']} "
        f"skips in a row): {100 * hist['starved_learnable_visit_share']:.0f} % of learnable "
        f"visits unsampled, longest run {int(hist['longest_starvation_epochs'])} epochs; without "
        f"them (hatched): {100 * nog['starved_learnable_visit_share']:.0f} %, "
        f"{int(nog['longest_starvation_epochs'])} epochs, and "
        f"{100 * nog['starving_prompt_share']:.0f} % of prompts starve for {STARVE}+ epochs in a "
        "row."
    )
    return Figure(fig, df, caption)
