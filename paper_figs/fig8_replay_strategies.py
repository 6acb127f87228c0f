"""Figure 8 — every strategy of the harness on the replay of the recorded DeepScaleR histories."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sara_sim.core.difficulty import parse_law
from sara_sim.sim.laws import TokenModel
from sara_sim.sim.strategies import STRATEGIES, info

from ._common import Figure, history_spec
from ._sim import Z95, Cells

K, GROUPS, STEPS, REPS = 8, 64, 120, 4
SIM = Cells(figure=8, k=K, groups=GROUPS, steps=STEPS, replicates=REPS)
EXTRA = (("sara", "sara (τ_low = 0.5)", {"tau_low": 0.5}),)  # besides every strategy's defaults


def variants():
    out = [(name, name, {}) for name in STRATEGIES]
    return out + [v for v in EXTRA if v[0] in STRATEGIES]


def data(seed, history=None):
    law = parse_law(history_spec(history))
    rows = []
    for i, (name, label, kw) in enumerate(variants()):
        _, s = SIM.run(name, law, seed, (i,), **kw)
        row = {
            "strategy": name,
            "label": label,
            "family": info(name).family,
            "params": ", ".join(f"{a}={b}" for a, b in kw.items()) or "defaults",
        }
        for key in (
            "cost_per_effective_group",
            "tokens_per_effective_group",
            "rounds_per_step",
            "effective_fraction",
            "fresh_prompts_per_step",
            "waste_per_step",
        ):
            row[key], row[key + "_ci95"] = s[key], Z95 * s[key + "_se"]
        rows.append(row)
    df = pd.DataFrame(rows)
    ds = df.set_index("label").loc["ds", "cost_per_effective_group"]
    df["savings_vs_ds_pct"] = 100 * (1 - df["cost_per_effective_group"] / ds)
    df["k"], df["groups_per_step"], df["steps"], df["replicates"] = K, GROUPS, STEPS, REPS
    return df


def build(seed=0, history=None):
    df = data(seed, history)
    tok = TokenModel()
    fig, axes = plt.subplots(1, 4, figsize=(18, 0.42 * len(df) + 2.2), sharey=True)
    y = np.arange(len(df))[::-1]
    colors = ["#0173b2" if f == "sara" else "#949494" for f in df["family"]]
    panels = (
        ("cost_per_effective_group", "rollouts per effective group [rollouts]", 1.0),
        ("tokens_per_effective_group", "tokens per effective group [thousand tokens]", 1e-3),
        ("rounds_per_step", "synchronisation rounds per step [rounds]", 1.0),
        ("effective_fraction", "effective fraction of the batch [fraction]", 1.0),
    )
    ds = df.set_index("label").loc["ds"]
    for ax, (col, label, scale) in zip(axes, panels):
        vals, err = df[col] * scale, df[col + "_ci95"].fillna(0) * scale
        ax.barh(y, vals, xerr=err, color=colors, alpha=0.85, capsize=3)
        for yi, v in zip(y, vals):
            ax.text(v, yi + 0.3, f" {v:.3g}", va="center", fontsize=7.5)
        ax.set_xlabel(label)
        if col in ("cost_per_effective_group", "tokens_per_effective_group"):
            ax.axvline(ds[col] * scale, color="black", ls="--", lw=1, label="DS")
    axes[0].set_yticks(y, df["label"])
    axes[0].legend(loc="lower right", fontsize=8)
    axes[0].set_title("rollout cost (blue: SARA family)")
    axes[1].set_title(f"token cost (pass {tok.len_pass:g} / fail {tok.len_fail:g})")
    axes[2].set_title("rounds per step")
    axes[3].set_title("batch quality")
    fig.suptitle(
        f"All strategies on the DeepScaleR replay (k = {K}, {GROUPS} groups per step, "
        f"{REPS} replicates x {STEPS} steps; 95 % CI)"
    )
    fig.tight_layout()
    caption = (
        "Every strategy of the simulator's harness (sara_sim.sim.strategies, each with its "
        "documented defaults; sara also at tau_low = 0.5) replays the recorded outcomes of 605 "
        "DeepScaleR prompts from a Qwen2.5-Math-1.5B GRPO run: the prompts come in a "
        "fresh random order per pass, pass j uses epoch j of the records (real drift), and a "
        f"visit draws its k = {K} rollouts without replacement from that epoch's 8 recorded "
        f"outcomes. Fixed-yield steps of {GROUPS} groups, {REPS} replicates x {STEPS} steps; "
        "bars are ratios of sums with 95 % CIs (delta method over replicate x block-of-steps "
        "units). Tokens from the length model (failing traces run longer), so abandoning failures "
        "saves more tokens than rollouts. Uniform and the predictive selectors fill batches that "
        "may hold saturated groups (right panel); their cost counts only the mixed ones."
    )
    if "sara-history" not in STRATEGIES:
        caption += (
            " sara-history (per-prompt informed priors) runs in the Python replay harness "
            "(sara_sim.sim.replay) and is compared in notebooks/real_history_replay.ipynb."
        )
    return Figure(fig, df, caption)
