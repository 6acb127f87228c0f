"""Figure 5 — the gradient link: effective-group yield lower-bounds the GRPO signal proxy."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from sara_sim.core.difficulty import parse_law
from sara_sim.core.theory import sequential_law

from ._common import LAW_COLORS, LAW_LABELS, Figure, history_spec, lines
from ._sim import Cells, ratio_ci

LAWS = ("beta:1,1", "beta:0.3,0.3", "beta:0.2,0.8", "history")
KS = (4, 8, 16, 32)
TAUS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
SIM_K, SIM_TAUS, SIM_STEPS, SIM_GROUPS, SIM_REPS = 8, (0.2, 0.5), 40, 64, 4
SIM = Cells(figure=5, k=SIM_K, groups=SIM_GROUPS, steps=SIM_STEPS, replicates=SIM_REPS)


def data(seed, history=None):
    rows = []
    for i, spec in enumerate(LAWS):
        law = parse_law(history_spec(history) if spec == "history" else spec)
        for k in KS:
            if law.max_k is not None and k > law.max_k:
                continue
            for tau in TAUS:
                r = sequential_law(law, k, tau)
                if r["rollouts_per_prompt"] == 0:  # the plan skips every prompt
                    continue
                per = 1000.0 / r["rollouts_per_prompt"]
                rows.append(
                    {
                        "law": LAW_LABELS[spec],
                        "k": k,
                        "tau_low": tau,
                        "source": "exact",
                        "bound_per_1k_rollouts": r["gradient_bound_per_prompt"] * per,
                        "proxy_per_1k_rollouts": r["signal_proxy_per_prompt"] * per,
                        "proxy_ci95": np.nan,
                    }
                )
        for j, tau in enumerate(SIM_TAUS):
            df, _ = SIM.run("sara", law, seed, (i, j), tau_low=tau)
            k = SIM_K
            eff, _ = ratio_ci(df, "decided_effective", "decided_rollouts")
            proxy, half = ratio_ci(df, "decided_proxy", "decided_rollouts")
            rows.append(
                {
                    "law": LAW_LABELS[spec],
                    "k": k,
                    "tau_low": tau,
                    "source": "simulated",
                    "bound_per_1k_rollouts": 1000 * eff * (k - 1) / k**2,
                    "proxy_per_1k_rollouts": 1000 * proxy,
                    "proxy_ci95": 1000 * half,
                }
            )
    out = pd.DataFrame(rows)
    out["ratio_proxy_to_bound"] = out["proxy_per_1k_rollouts"] / out["bound_per_1k_rollouts"]
    return out


def build(seed=0, history=None):
    df = data(seed, history)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    ex, sim = df[df["source"] == "exact"], df[df["source"] == "simulated"]
    hue_order = [LAW_LABELS[s] for s in LAWS]
    sns.scatterplot(
        data=ex,
        x="bound_per_1k_rollouts",
        y="proxy_per_1k_rollouts",
        hue="law",
        size="k",
        sizes=(20, 120),
        hue_order=hue_order,
        palette=LAW_COLORS,
        alpha=0.75,
        ax=ax,
    )
    for law, sub in sim.groupby("law"):
        ax.errorbar(
            sub["bound_per_1k_rollouts"],
            sub["proxy_per_1k_rollouts"],
            yerr=sub["proxy_ci95"],
            fmt="D",
            mfc="white",
            mec=LAW_COLORS[law],
            ecolor=LAW_COLORS[law],
            ms=7,
            capsize=3,
            lw=0,
        )
    ax.errorbar(
        [], [], fmt="D", mfc="white", mec="black", ms=7, label=f"simulated (k={SIM_K}), 95 % CI"
    )
    vals = df[["proxy_per_1k_rollouts", "bound_per_1k_rollouts"]].to_numpy()
    lim = [0.7 * vals.min(), 1.4 * vals.max()]
    ax.plot(lim, lim, color="black", ls="--", lw=1.2, label="proxy = bound")
    ax.set_xlim(lim)
    ax.set_ylim(lim)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bound: effective groups × (k−1)/k² per 1000 rollouts [reward variance]")
    ax.set_ylabel("signal proxy Σ s(k−s)/k² per 1000 rollouts [reward variance]")
    ax.set_title("every policy lies above the diagonal")
    ax.legend(loc="lower right", fontsize=8, ncol=2)
    tight = ex[ex["tau_low"] == 0.3]
    lines(ax2, tight, "k", "ratio_proxy_to_bound", "law", hue_order=hue_order, palette=LAW_COLORS)
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(KS, [str(k) for k in KS])
    ax2.axhline(1, color="black", ls="--", lw=1)
    ax2.set_xlabel("group size k [rollouts]")
    ax2.set_ylabel("proxy ÷ bound [ratio]")
    ax2.set_title("slack of the bound (τ_low = 0.3)")
    fig.suptitle("Gradient link: the yield bound vs the measured GRPO signal proxy")
    fig.tight_layout()
    caption = (
        "A mixed group of k carries reward variance s(k-s)/k^2 >= (k-1)/k^2, so effective groups "
        "x (k-1)/k^2 lower-bounds the signal proxy (sum over committed groups of s(k-s)/k^2, the "
        "expected squared GRPO gradient norm up to constants). Left (log-log): per 1000 "
        f"rollouts, exact for laws x k in {list(KS)} x tau_low in {list(TAUS)} (paper rule, "
        f"uniform prior; dots) and measured by the Numba simulator (k={SIM_K}, "
        f"tau_low in {list(SIM_TAUS)}, "
        f"{SIM_REPS} replicates x {SIM_STEPS} steps x {SIM_GROUPS} groups, every decided prompt "
        "booked once; diamonds with 95 % CI over blocks of steps): all on or "
        "above the diagonal. Right: the ratio grows with k (about k/6 for uniform-like laws) - "
        "maximising yield maximises a valid but loose bound."
    )
    return Figure(fig, df, caption)
