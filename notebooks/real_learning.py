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
# # Learning per rollout: does SARA reach DS's accuracy with fewer rollouts and tokens?
#
# **Answers:** from the committed real-loop learning benchmarks — the native GRPO loop
# (`benchmarks/real_learning.py` -> `benchmarks/results/real_learning.csv`) and the same comparison
# through TRL's GRPOTrainer (`benchmarks/investigations/trl_learning/trl_learning.py` ->
# `benchmarks/investigations/trl_learning/trl_learning.csv`)
# — how held-out accuracy rises against cumulative rollouts and tokens per strategy (mean over
# seeds, 95 % band), how many rollouts and tokens each strategy needs to reach 90 % of DS's gain
# as a ratio to DS (95 % CI over seeds), its accuracy at an equal rollout budget, and every seed's
# own cost to target (so no seed is hidden behind a mean). Last section: the training claims of
# the paper from the claim run's files (`benchmarks/results/claims/`): one line per
# claim with its verdict, the rollouts to target and equal-budget accuracy vs DS, and figure 13 —
# whichever of those files exist.
#
# Nothing is trained here: the cells read the CSVs (one row per strategy, k, seed and step). The
# figure and tables are `paper_figs` figure 10 (`python -m paper_figs --only 10`); the statistics
# are in `paper_figs/learning_stats.py`.

# %% tags=["parameters"]
RESULTS = {  # label: learning CSV (relative to this folder); a missing file is reported
    "native GRPO loop": "../benchmarks/results/real_learning.csv",
    "TRL GRPOTrainer": "../benchmarks/investigations/trl_learning/trl_learning.csv",
}
CLAIMS = "../benchmarks/results/claims"  # the claim run's NAME.csv + NAME.meta.json files

# %%
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from paper_figs import learning_stats as ls
from paper_figs.fig10_real_learning import FRAC, REF
from paper_figs.fig10_real_learning import build as learning_figure

sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
pd.set_option("display.width", 140)
pd.set_option("display.max_columns", 30)
T0 = time.perf_counter()

# %%
data = {}
for label, path in RESULTS.items():
    if Path(path).is_file():
        data[label] = ls.check(pd.read_csv(path), path)
        runs = ls.runs(data[label])
        print(f"{label}: {path}, {len(runs)} runs, k in {sorted(data[label]['k'].unique())}")
    else:
        print(f"{label}: {path} not found (run its benchmark to write it)")
assert data, "none of the learning CSVs is here"
figures = {label: learning_figure(learning=RESULTS[label]) for label in data}

# %% [markdown]
# ## Accuracy against rollouts and tokens (mean over seeds, 95 % t-band)

# %%
for label, result in figures.items():
    result.fig.suptitle(f"{label}: " + result.fig.get_suptitle())
    display(result.fig)
    plt.close(result.fig)
    print(" ".join(result.caption.split()))

# %% [markdown]
# ## Rollouts and tokens to 90 % of DS's gain, as a ratio to DS; equal budgets

# %%
for label, result in figures.items():
    print(label)
    display(result.tables["target"].round(3))
    display(result.tables["budget"].round(3))

# %% [markdown]
# ## Every seed's cost to the target (nan: never reached within the run)

# %%
per_seed = []
for label, df in data.items():
    for a, k, s in ls.runs(df):
        goal = ls.target_accuracy(df, k, FRAC, REF)
        row = {"source": label, "strategy": a, "k": k, "seed": s, "target": goal}
        for m in ls.MEASURES:
            row[m.removeprefix("cum_") + "_to_target"] = ls.reach(*ls.curve(df, a, k, s, m), goal)
        x, y = ls.curve(df, a, k, s)
        row["start_accuracy"], row["final_accuracy"] = y[0], y[-1]
        run = df[(df["strategy"] == a) & (df["k"] == k) & (df["seed"] == s) & (df["step"] > 0)]
        for col in ("effective_fraction", "rounds"):
            row[col] = run[col].mean() if col in run else np.nan
        per_seed.append(row)
per_seed = pd.DataFrame(per_seed)
per_seed.round(3)

# %% [markdown]
# ## The training claims: one line per claim, and figure 13
#
# From the claim run's files (`paper_figs.claims_data.load_claims`: files of one setting, k8 and
# k8_more, are pooled; an absent file is named, not guessed). The verdicts are
# `paper_figs/claims_stats.py`'s: paired 90 % t-intervals over the seeds, TOST at +-0.02 on the
# late accuracy; the same table is printed by `python benchmarks/claims.py`.

# %%
from paper_figs._common import NoData
from paper_figs.claims_data import load_claims
from paper_figs.claims_table import claim_table
from paper_figs.fig13_claims import build as claims_figure

claims = load_claims(CLAIMS)
for name, why in claims.missing.items():
    print(f"{name}: {why}")
for setting, files in claims.sources.items():
    print(f"{setting}: {', '.join(files)}")
with pd.option_context("display.max_colwidth", None):
    display(claim_table(claims))

# %% [markdown]
# Rollouts to target and equal-budget accuracy vs DS (`benchmarks/claims.py --budget`): the
# target is DS's start + 90 % of its mean gain at that setting and k; `-` means no paired seed
# reached it.

# %%
from paper_figs.claims_budget import budget_table

with pd.option_context("display.max_colwidth", None):
    display(budget_table(claims))

# %%
try:
    result = claims_figure(claims=CLAIMS)
except NoData as exc:
    print(f"figure 13 not drawn: {exc}")
else:
    display(result.fig)
    plt.close(result.fig)
    print(" ".join(result.caption.split()))
    display(result.tables["ratios"].round(3))

# %%
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
