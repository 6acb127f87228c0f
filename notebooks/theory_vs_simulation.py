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
# # Theory vs simulation: does the simulator reproduce the exact per-prompt law?
#
# **Answers:** for a handful of (difficulty law, k, τ_low, prior) cases, do the Numba simulator's
# per-prompt estimates — rollouts per prompt, P(abandon), P(false abandon), P(effective),
# abandonment reliability, signal proxy, cost per effective group — agree with the exact theory
# (`sara_sim.core.theory.sequential_law`) within their confidence intervals? And does the claim
# "P(effective | abandoned) < τ_low" hold in each case?
#
# The simulator books every fresh prompt once, when its fate is sealed (`decided_*` metrics), so its
# ratios estimate the exact per-prompt quantities. Add cases or raise the sizes in the parameter
# cell; `history` stands for the shipped DeepScaleR histories (k ≤ 8).

# %% tags=["parameters"]
CASES = [  # (law, epoch for history laws, k, tau_low, prior of the tau rule)
    ("beta:1,1", None, 8, 0.3, (1.0, 1.0)),
    ("beta:0.3,0.3", None, 16, 0.3, (0.3, 0.3)),
    ("beta:0.2,0.8", None, 32, 0.2, (1.0, 1.0)),
    ("mix:0.5*beta:1,6+0.5*beta:6,1", None, 16, 0.4, (1.0, 1.0)),
    ("beta:5,5", None, 16, 0.1, (0.1, 0.1)),  # misspecified prior: the bound breaks
    ("history", "0", 8, 0.5, (1.0, 1.0)),
]
GROUPS, STEPS, REPLICATES, SEED = 64, 60, 4, 0
RUN = dict(groups=GROUPS, steps=STEPS, replicates=REPLICATES)  # every simulated case's size
Z_LIMIT = 5.0  # |exact - simulated| / SE above this fails the notebook

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

import paper_figs
from sara_sim.core.difficulty import parse_law
from sara_sim.core.theory import sequential_law
from sara_sim.sim.simulate import simulate, summarize

sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
pd.set_option("display.width", 140)
pd.set_option("display.max_columns", 30)
T0 = time.perf_counter()

# %%
METRICS = {  # exact key -> simulator summary key
    "rollouts_per_prompt": "per_prompt_rollouts_per_prompt",
    "p_abandon": "per_prompt_p_abandon",
    "p_false_abandon": "per_prompt_p_false_abandon",
    "p_effective": "per_prompt_p_effective",
    "abandon_reliability": "per_prompt_abandon_reliability",
    "signal_proxy_per_prompt": "per_prompt_signal_proxy_per_prompt",
    "cost_per_effective_group": "per_prompt_cost",
}
rows = []
for i, (spec, epoch, k, tau, prior) in enumerate(CASES):
    if spec == "history":
        spec = f"history:{paper_figs.HISTORY}"
    law = parse_law(spec, epochs=epoch)
    exact = sequential_law(law, k, tau, prior=prior)
    res = simulate("sara", law, k=k, seed=SEED + i, tau_low=tau, prior=prior, **RUN)
    sim = summarize(res)
    name = f"{str(law)[:40]} k={k} τ={tau} prior={prior}"
    for key, skey in METRICS.items():
        se = sim[skey + "_se"]
        rows.append(
            {
                "case": name,
                "metric": key,
                "exact": exact[key],
                "simulated": sim[skey],
                "se": se,
                "z": (sim[skey] - exact[key]) / se if se > 0 else 0.0,
                "tau_low": tau,
                "decided_prompts": int(res.frame["decided"].sum()),
            }
        )
table = pd.DataFrame(rows)
table.pivot(index="case", columns="metric", values="z").round(2)

# %% [markdown]
# ## Exact vs simulated, metric by metric
#
# Each point is one case; bars are 95 % intervals of the simulated estimate. On the diagonal means
# agreement. The table above holds the z-scores.

# %%
metrics = list(METRICS)
fig, axes = plt.subplots(2, 4, figsize=(17, 8))
for ax, key in zip(axes.ravel(), metrics):
    sub = table[table["metric"] == key]
    ax.errorbar(sub["exact"], sub["simulated"], yerr=1.96 * sub["se"], fmt="o", capsize=3)
    lo = min(sub["exact"].min(), sub["simulated"].min())
    hi = max(sub["exact"].max(), sub["simulated"].max())
    ax.plot([lo, hi], [lo, hi], color="black", ls="--", lw=1)
    ax.set_title(key)
    ax.set_xlabel("exact theory")
    ax.set_ylabel("Numba simulator")
axes.ravel()[-1].axis("off")
fig.suptitle("Per-prompt quantities: exact theory vs simulation (95 % CI)")
fig.tight_layout()

# %% [markdown]
# ## Claim 1: abandonment reliability below τ_low
#
# `holds` is the exact verdict; with a misspecified prior it fails, and the simulator sees the
# same.

# %%
rel = table[table["metric"] == "abandon_reliability"][
    ["case", "tau_low", "exact", "simulated", "se"]
].copy()
rel["holds"] = rel["exact"] < rel["tau_low"]
worst = table["z"].abs().max()
print(f"largest |z| over {len(table)} comparisons: {worst:.2f} (limit {Z_LIMIT})")
assert worst < Z_LIMIT, table.loc[table["z"].abs().idxmax()]
rel

# %%
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
