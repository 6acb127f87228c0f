# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Threshold sweep: where does SARA's τ_low pay, for which group size?
#
# **Answers:** for one difficulty law, over a grid of group sizes k × thresholds τ_low, what are the
# exact savings in rollouts per effective group against dynamic sampling (DS), the false-abandonment
# probability, and the cost per effective group — and which τ_low is best for each k (with the
# Bayes-optimal stopping policy as the floor)?
#
# Everything here is exact theory (`sara_sim.core.theory`), no simulation. Change the law, prior and
# grids in the parameter cell; a history law needs k ≤ 8 (8 recorded samples per prompt and
# epoch).

# %% tags=["parameters"]
LAW = "beta:0.3,0.3"  # beta:A,B | mix:W*beta:A,B+... | history:PATH (see EPOCH)
EPOCH = None  # history laws only: epoch E or range "A-B"; None = all
PRIOR = (1.0, 1.0)  # the τ rule's Beta prior; (1, 1) is the paper's uniform prior
KS = [4, 8, 16, 32, 64]
TAUS = [round(0.05 * i, 2) for i in range(1, 20)]  # 0.05 ... 0.95

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.patches import Patch, Rectangle

from sara_sim.core.difficulty import parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.theory import best_tau, sequential_law

sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
pd.set_option("display.width", 140)
pd.set_option("display.max_columns", 30)
T0 = time.perf_counter()


# %%
def nan_if_undefined(x):
    """The theory's None (a ratio to an impossible event) as NaN: the frame stays numeric."""
    return np.nan if x is None else x


law = parse_law(LAW, epochs=EPOCH)
ks = [k for k in KS if law.max_k is None or k <= law.max_k]
rows = []
for k in ks:
    for tau in TAUS:
        r = sequential_law(law, k, tau, prior=PRIOR)
        cost = nan_if_undefined(r["cost_per_effective_group"])
        rows.append(
            {
                "k": k,
                "tau_low": tau,
                "savings_vs_ds_pct": 100 * nan_if_undefined(r["savings_vs_ds"]),
                "p_false_abandon": r["p_false_abandon"],
                "cost_per_effective_group": cost,
                "cost_vs_ds": cost / nan_if_undefined(r["ds_cost_per_effective_group"]),
                "rollouts_per_prompt": r["rollouts_per_prompt"],
            }
        )
grid = pd.DataFrame(rows)
best_on_grid = grid.loc[grid.groupby("k")["cost_per_effective_group"].idxmin()]
print(law, "| prior", PRIOR, "|", len(grid), "grid points")
best_on_grid

# %% [markdown]
# ## Heatmaps over k × τ_low
#
# Stars mark the grid optimum per k (lowest cost per effective group). Costs are shown relative to
# DS (1 = DS, < 1 cheaper). Where τ_low abandons every prompt at its first rollout, no group can be
# effective: its cost and savings are undefined, drawn hatched grey, and each colour scale spans
# the defined cells only.

# %%
UNDEFINED = dict(facecolor="lightgrey", edgecolor="grey", hatch="//", lw=0)
panels = [
    ("savings_vs_ds_pct", "savings vs DS [%]", "RdBu", 0.0),
    ("p_false_abandon", "P(false abandon) [probability]", "viridis", None),
    ("cost_vs_ds", "cost per effective group ÷ DS cost [ratio]", "RdBu_r", 1.0),
]
fig, axes = plt.subplots(1, 3, figsize=(18, 0.5 * len(ks) + 3.5))
for ax, (col, title, cmap, center) in zip(axes, panels):
    table = grid.pivot(index="k", columns="tau_low", values=col)
    undefined = table.isna()  # NaN only where the theory says None: no group can be effective
    defined = table.to_numpy()[~undefined.to_numpy()]
    sns.heatmap(
        table,
        mask=undefined,
        vmin=defined.min(),
        vmax=defined.max(),
        ax=ax,
        cmap=cmap,
        center=center,
        annot=len(TAUS) <= 10,
        fmt=".2g",
        cbar_kws={"label": title},
    )
    ax.add_patch(Rectangle((0, 0), *table.shape[::-1], zorder=-1, **UNDEFINED))  # under the mask
    ax.grid(False)
    for i, k in enumerate(table.index):
        j = list(table.columns).index(best_on_grid.set_index("k").loc[k, "tau_low"])
        ax.plot(j + 0.5, i + 0.5, marker="*", ms=14, color="gold", mec="black")
    ax.set_title(title)
    ax.set_xlabel("τ_low [probability]")
    ax.set_ylabel("group size k [rollouts]")
fig.suptitle(f"{law}, τ-rule prior Beta{PRIOR}: ★ = best τ_low per k on the grid")
fig.tight_layout()
if grid[[col for col, *_ in panels]].isna().any(axis=None):
    label = "undefined: no group can be effective"
    fig.legend(handles=[Patch(label=label, **UNDEFINED)], loc="upper right", frameon=False)

# %% [markdown]
# ## The exact optimum per k, and the Bayes-optimal floor
#
# The cost is piecewise constant in τ_low (it only changes at p_eff values), so `best_tau` finds the
# exact best τ_low interval, not just the best grid point. `bayes_optimal` is the best of *all*
# stopping policies for the law (side-specific abandonment points).

# %%
rows = []
for k in ks:
    tau, cost, (lo, hi) = best_tau(law, k, PRIOR)
    bo = bayes_optimal(law, k)
    rows.append(
        {
            "k": k,
            "best_tau_low": f"({lo:.4f}, {hi:.4f}]",
            "tau_rule_cost": cost,
            "grid_best_cost": best_on_grid.set_index("k").loc[k, "cost_per_effective_group"],
            "bayes_optimal_cost": bo["cost_per_effective_group"],
            "ds_cost": bo["ds_cost_per_effective_group"],
            "bayes_abandon_after_fail": bo["abandon_after_fail"],
            "bayes_abandon_after_pass": bo["abandon_after_pass"],
        }
    )
optimum = pd.DataFrame(rows)
# the exact optimum is at least as good as any grid point; no policy beats Bayes-optimal
assert (optimum["tau_rule_cost"] <= optimum["grid_best_cost"] + 1e-9).all()
assert (optimum["bayes_optimal_cost"] <= optimum["tau_rule_cost"] + 1e-9).all()
optimum.round(4)

# %%
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
