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
# # Real-run analysis: what did each strategy buy on a real model?
#
# **Answers:** for one or more `sara-real` run folders, how many rollouts and tokens each strategy
# spent per effective group, how full its batches were, how many synchronisation rounds a step took,
# where the wall-clock time went (generation / training / weight sync), and how eval accuracy moved
# against the rollouts spent.
#
# A run folder holds `metrics.jsonl` (one JSON line per step: `step, strategy, rollouts, tokens,
# effective_groups, rounds, abandoned, reward_mean, gen_s, train_s, sync_s, wall_s`, plus
# `eval_accuracy` on eval steps) and `summary.json`; `sara-real compare --out DIR` writes one such
# folder per strategy under DIR. The default reads `example_run/` beside this notebook: a tiny real
# `sara-real compare` run (the offline tiny model on the arithmetic task; see its README for the
# command). Point `RUN_DIRS` at your own runs.

# %% tags=["parameters"]
RUN_DIRS = ["example_run"]  # run folders or sara-real compare folders (relative or absolute)
GROUP_SIZE = None  # k, for the titles; None = read it from summary.json

# %%
import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from real.io.runlog import READER_KEYS, scan_metrics

sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
pd.set_option("display.width", 140)
pd.set_option("display.max_columns", 30)
T0 = time.perf_counter()

# %%
REQUIRED = list(READER_KEYS)  # the columns every metrics line has (real.io.runlog)


def run_folders(path):  # a run folder, or a sara-real compare folder of run folders
    path = Path(path)
    if (path / "metrics.jsonl").is_file():
        return [path]
    found = sorted(p.parent for p in path.glob("*/metrics.jsonl"))
    assert found, f"{path}: no metrics.jsonl here or one level below"
    return found


def read_lines(path):  # the project's reader: a damaged line is an error, a torn one is said
    rows, torn = scan_metrics(path)
    if torn is not None:
        print(f"note: {path} line {torn} is torn (the run was killed mid-write): left out")
    return rows


frames, summaries = [], {}
for run in [r for d in RUN_DIRS for r in run_folders(d)]:
    df = pd.DataFrame(read_lines(run / "metrics.jsonl"))
    missing = [c for c in REQUIRED if c not in df.columns]
    assert not missing, f"{run}/metrics.jsonl lacks {missing}"
    df["run"] = run.name
    frames.append(df)
    summary = run / "summary.json"
    summaries[run.name] = json.loads(summary.read_text()) if summary.is_file() else {}
metrics = pd.concat(frames, ignore_index=True)
if "eval_accuracy" not in metrics:
    metrics["eval_accuracy"] = np.nan
same = metrics["run"] == metrics["strategy"]
metrics["series"] = metrics["run"].where(same, metrics["run"] + " / " + metrics["strategy"])
metrics = metrics.sort_values(["series", "step"]).reset_index(drop=True)
metrics["cum_rollouts"] = metrics.groupby("series")["rollouts"].cumsum()
metrics["cum_tokens"] = metrics.groupby("series")["tokens"].cumsum()
print(len(metrics), "steps from", len(summaries), "run folder(s)")
scalars = {
    name: {key: v for key, v in summ.items() if not isinstance(v, dict | list)}
    for name, summ in summaries.items()
}
pd.DataFrame(scalars).T

# %% [markdown]
# ## Per-strategy totals

# %%
tot = metrics.groupby("series")[
    [
        "rollouts",
        "tokens",
        "effective_groups",
        "rounds",
        "abandoned",
        "gen_s",
        "train_s",
        "sync_s",
        "wall_s",
    ]
].sum()
steps = metrics.groupby("series")["step"].count()
table = pd.DataFrame(
    {
        "steps": steps,
        "rollouts_per_effective_group": tot["rollouts"] / tot["effective_groups"],
        "tokens_per_effective_group": tot["tokens"] / tot["effective_groups"],
        "rounds_per_step": tot["rounds"] / steps,
        "abandoned_per_step": tot["abandoned"] / steps,
        "gen_share_of_wall": tot["gen_s"] / tot["wall_s"],
        "wall_s_per_step": tot["wall_s"] / steps,
        "final_eval_accuracy": metrics.dropna(subset=["eval_accuracy"])
        .groupby("series")["eval_accuracy"]
        .last(),
    }
)
table.round(3)

# %% [markdown]
# ## Step by step

# %%
k = GROUP_SIZE or next(
    (
        s.get("k") or s.get("group_size")
        for s in summaries.values()
        if s.get("k") or s.get("group_size")
    ),
    None,
)
fig, axes = plt.subplots(2, 2, figsize=(13, 8))


def by_series(data, x, y, ax, **kw):
    """One line per series (a run, or run / strategy), a marker per point."""
    sns.lineplot(data=data, x=x, y=y, hue="series", marker="o", ax=ax, **kw)


metrics["rollouts_per_effective_group"] = metrics["rollouts"] / metrics["effective_groups"]
by_series(metrics, "step", "rollouts_per_effective_group", axes[0, 0])
axes[0, 0].set_ylabel("rollouts per effective group [rollouts]")
by_series(metrics, "step", "rounds", axes[0, 1], legend=False)
axes[0, 1].set_ylabel("synchronisation rounds per step [rounds]")
ev = metrics.dropna(subset=["eval_accuracy"])[["series", "cum_rollouts", "eval_accuracy"]]
pairs = metrics[["series", "run"]].drop_duplicates().itertuples(index=False)
start = [  # the held-out accuracy before training, when the run recorded it
    {"series": ser, "cum_rollouts": 0, "eval_accuracy": summaries[run]["eval_initial"]}
    for ser, run in pairs
    if summaries[run].get("eval_initial") is not None
]
ev = pd.concat([pd.DataFrame(start), ev], ignore_index=True).sort_values(["series", "cum_rollouts"])
by_series(ev, "cum_rollouts", "eval_accuracy", axes[1, 0], legend=False)
axes[1, 0].set_xlabel("cumulative rollouts [rollouts]")
axes[1, 0].set_ylabel("eval accuracy [fraction correct]")
time_cols = ["gen_s", "train_s", "sync_s"]
share = metrics.groupby("series")[time_cols].sum()
share.div(share.sum(axis=1), axis=0).plot.barh(stacked=True, ax=axes[1, 1])
axes[1, 1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
axes[1, 1].set_xlabel("share of generation + training + sync time [fraction]")
axes[1, 1].set_ylabel("")
for ax in axes[0]:
    ax.set_xlabel("training step [steps]")
fig.suptitle(f"sara-real runs: {', '.join(map(str, RUN_DIRS))}" + (f" (k = {k})" if k else ""))
fig.tight_layout()

# %%
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
