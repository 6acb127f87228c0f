"""Figure 2 — abandonment reliability: P(group would have been effective | abandoned) vs tau_low."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sara_sim.core.difficulty import parse_law
from sara_sim.core.policy import ABANDON, threshold_plan
from sara_sim.core.theory import sequential_law

from ._common import Figure, wilson
from ._sim import Cells

K = 16
SCENARIOS = (  # (title, law, prior)
    ("matched: law Beta(1,1), prior Beta(1,1)", "beta:1,1", (1.0, 1.0)),
    ("matched: law Beta(0.3,0.3), prior Beta(0.3,0.3)", "beta:0.3,0.3", (0.3, 0.3)),
    ("misspecified: law Beta(5,5), prior Beta(0.1,0.1)", "beta:5,5", (0.1, 0.1)),
)
TAU_EXACT = np.round(np.linspace(0.005, 0.995, 199), 4)
TAU_SIM = (0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SIM_STEPS, SIM_GROUPS, SIM_REPS = 12, 128, 2
SIM = Cells(figure=2, k=K, groups=SIM_GROUPS, steps=SIM_STEPS, replicates=SIM_REPS)


def data(seed):
    rows = []
    for i, (title, spec, prior) in enumerate(SCENARIOS):
        law = parse_law(spec)
        for tau in TAU_EXACT:
            r = sequential_law(law, K, tau, prior=prior)
            rows.append(
                {
                    "scenario": title,
                    "law": spec,
                    "prior": f"{prior[0]:g},{prior[1]:g}",
                    "source": "exact",
                    "tau_low": tau,
                    "p_abandon": r["p_abandon"],
                    "reliability": r["abandon_reliability"] if r["p_abandon"] > 0 else np.nan,
                    "abandoned": np.nan,
                    "false_abandons": np.nan,
                    "ci_low": np.nan,
                    "ci_high": np.nan,
                }
            )
        for j, tau in enumerate(TAU_SIM):
            if threshold_plan(K, tau, np.inf, *prior)[0] == ABANDON:
                continue  # every prompt is skipped unseen: nothing to simulate
            df, _ = SIM.run("sara", law, seed, (i, j), tau_low=tau, prior=prior)
            ab, fa = int(df["decided_abandoned"].sum()), int(df["decided_false_abandons"].sum())
            lo, hi = wilson(fa, ab) if ab else (np.nan, np.nan)
            rows.append(
                {
                    "scenario": title,
                    "law": spec,
                    "prior": f"{prior[0]:g},{prior[1]:g}",
                    "source": "simulated",
                    "tau_low": tau,
                    "p_abandon": ab / max(int(df["decided"].sum()), 1),
                    "reliability": fa / ab if ab else np.nan,
                    "abandoned": ab,
                    "false_abandons": fa,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
    return pd.DataFrame(rows)


def build(seed=0, history=None):
    df = data(seed)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.3), sharey=True)
    for ax, (title, _, _) in zip(axes, SCENARIOS):
        ex = df[(df["scenario"] == title) & (df["source"] == "exact")]
        sim = df[(df["scenario"] == title) & (df["source"] == "simulated")]
        ax.plot([0, 1], [0, 1], color="black", ls="--", lw=1.2, label="bound: τ_low")
        ax.step(ex["tau_low"], ex["reliability"], where="post", color="C0", lw=2, label="exact")
        ax.errorbar(
            sim["tau_low"],
            sim["reliability"],
            yerr=[sim["reliability"] - sim["ci_low"], sim["ci_high"] - sim["reliability"]],
            fmt="o",
            color="C3",
            capsize=3,
            ms=5,
            label="simulated (Numba simulator), 95 % CI",
        )
        ax.fill_between(
            [0, 1], [0, 1], [1, 1], color="C3", alpha=0.06, lw=0, label="bound violated"
        )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("abandonment threshold τ_low [probability]")
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("P(full group effective | abandoned) [probability]")
    axes[0].legend(loc="upper left")
    fig.suptitle(f"Abandonment reliability, k = {K}: below the diagonal the bound holds")
    fig.tight_layout()
    caption = (
        f"Probability that an abandoned prompt's full group of k={K} would have been mixed, as a "
        "function of tau_low: exact (line) and simulated by the round-synchronous Numba simulator "
        f"({SIM_REPS} replicates x {SIM_STEPS} steps x {SIM_GROUPS} groups per point; Wilson 95 % "
        "intervals). When the "
        "prior is the true difficulty law (left, middle) the rate stays below the bound tau_low "
        "(dashed); with law Beta(5,5) and a misspecified prior Beta(0.1,0.1) (right) the rule "
        "abandons nearly always-mixed prompts after one unmixed rollout and the bound fails. "
        "Gaps in the exact line: no abandonment at that tau_low; no simulated point where the rule "
        "skips every prompt before any rollout (there the rate is simply P(mixed))."
    )
    return Figure(fig, df, caption)
