"""Write the notebooks of this folder from the cell sources below (outputs stripped).

    python notebooks/build_notebooks.py            # (re)write every notebook
    python notebooks/build_notebooks.py --check    # exit 1 if a committed notebook differs

The cell sources here are the source of truth: edit them, rerun, commit the .ipynb files.  Each
notebook opens with what it answers and a cell tagged "parameters" (papermill-style); the test suite
(tests/figs/test_notebooks.py) executes every notebook top to bottom.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def setup(imports):
    """The imports cell: `imports` (an isort-ordered block) plus the common plot settings."""
    tail = [
        "",
        'sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")',
        'pd.set_option("display.width", 140)',
        'pd.set_option("display.max_columns", 30)',
        "T0 = time.perf_counter()",
    ]
    return imports.strip("\n") + "\n" + "\n".join(tail)


FOOTER = 'print(f"notebook ran in {time.perf_counter() - T0:.1f} s")'


# --------------------------------------------------------------------------------------------
THRESHOLD_SWEEP = [
    (
        "md",
        """\
# Threshold sweep: where does SARA's τ_low pay, for which group size?

**Answers:** for one difficulty law, over a grid of group sizes k × thresholds τ_low, what are the
exact savings in rollouts per effective group against dynamic sampling (DS), the false-abandonment
probability, and the cost per effective group — and which τ_low is best for each k (with the
Bayes-optimal stopping policy as the floor)?

Everything here is exact theory (`sara_sim.core.theory`), no simulation. Change the law, prior and
grids in the parameter cell; a history law needs k ≤ 8 (8 recorded samples per prompt and
epoch).""",
    ),
    (
        "params",
        """\
LAW = "beta:0.3,0.3"          # beta:A,B | mix:W*beta:A,B+... | history:PATH (see EPOCH)
EPOCH = None                  # history laws only: epoch E or range "A-B"; None = all
PRIOR = (1.0, 1.0)            # the τ rule's Beta prior; (1, 1) is the paper's uniform prior
KS = [4, 8, 16, 32, 64]
TAUS = [round(0.05 * i, 2) for i in range(1, 20)]  # 0.05 ... 0.95""",
    ),
    (
        "code",
        setup("""
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from sara_sim.core.difficulty import parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.theory import best_tau, sequential_law
"""),
    ),
    (
        "code",
        """\
law = parse_law(LAW, epochs=EPOCH)
ks = [k for k in KS if law.max_k is None or k <= law.max_k]
rows = []
for k in ks:
    for tau in TAUS:
        r = sequential_law(law, k, tau, prior=PRIOR)
        rows.append({"k": k, "tau_low": tau, "savings_vs_ds_pct": 100 * r["savings_vs_ds"],
                     "p_false_abandon": r["p_false_abandon"],
                     "cost_per_effective_group": r["cost_per_effective_group"],
                     "cost_vs_ds": r["cost_per_effective_group"] / r["ds_cost_per_effective_group"],
                     "rollouts_per_prompt": r["rollouts_per_prompt"]})
grid = pd.DataFrame(rows)
best_on_grid = grid.loc[grid.groupby("k")["cost_per_effective_group"].idxmin()]
print(law, "| prior", PRIOR, "|", len(grid), "grid points")
best_on_grid""",
    ),
    (
        "md",
        """\
## Heatmaps over k × τ_low

Stars mark the grid optimum per k (lowest cost per effective group). Costs are shown relative to
DS (1 = DS, < 1 cheaper); a plan that skips every prompt has infinite cost (blank).""",
    ),
    (
        "code",
        """\
panels = [("savings_vs_ds_pct", "savings vs DS [%]", "RdBu", 0.0),
          ("p_false_abandon", "P(false abandon) [probability]", "viridis", None),
          ("cost_vs_ds", "cost per effective group ÷ DS cost [ratio]", "RdBu_r", 1.0)]
fig, axes = plt.subplots(1, 3, figsize=(18, 0.5 * len(ks) + 3.5))
for ax, (col, title, cmap, center) in zip(axes, panels):
    table = grid.pivot(index="k", columns="tau_low", values=col).replace([np.inf, -np.inf], np.nan)
    sns.heatmap(table, ax=ax, cmap=cmap, center=center, annot=len(TAUS) <= 10, fmt=".2g",
                cbar_kws={"label": title})
    ax.grid(False)
    for i, k in enumerate(table.index):
        j = list(table.columns).index(best_on_grid.set_index("k").loc[k, "tau_low"])
        ax.plot(j + 0.5, i + 0.5, marker="*", ms=14, color="gold", mec="black")
    ax.set_title(title)
    ax.set_xlabel("τ_low [probability]")
    ax.set_ylabel("group size k [rollouts]")
fig.suptitle(f"{law}, τ-rule prior Beta{PRIOR}: ★ = best τ_low per k on the grid")
fig.tight_layout()""",
    ),
    (
        "md",
        """\
## The exact optimum per k, and the Bayes-optimal floor

The cost is piecewise constant in τ_low (it only changes at p_eff values), so `best_tau` finds the
exact best τ_low interval, not just the best grid point. `bayes_optimal` is the best of *all*
stopping policies for the law (side-specific abandonment points).""",
    ),
    (
        "code",
        """\
rows = []
for k in ks:
    tau, cost, (lo, hi) = best_tau(law, k, PRIOR)
    bo = bayes_optimal(law, k)
    rows.append({"k": k, "best_tau_low": f"({lo:.4f}, {hi:.4f}]", "tau_rule_cost": cost,
                 "grid_best_cost": best_on_grid.set_index("k").loc[k, "cost_per_effective_group"],
                 "bayes_optimal_cost": bo["cost_per_effective_group"],
                 "ds_cost": bo["ds_cost_per_effective_group"],
                 "bayes_abandon_after_fail": bo["abandon_after_fail"],
                 "bayes_abandon_after_pass": bo["abandon_after_pass"]})
optimum = pd.DataFrame(rows)
# the exact optimum is at least as good as any grid point; no policy beats Bayes-optimal
assert (optimum["tau_rule_cost"] <= optimum["grid_best_cost"] + 1e-9).all()
assert (optimum["bayes_optimal_cost"] <= optimum["tau_rule_cost"] + 1e-9).all()
optimum.round(4)""",
    ),
    ("code", FOOTER),
]


# --------------------------------------------------------------------------------------------
REAL_RUN = [
    (
        "md",
        """\
# Real-run analysis: what did each allocator buy on a real model?

**Answers:** for one or more `sara-real` run folders, how many rollouts and tokens each allocator
spent per effective group, how full its batches were, how many synchronisation rounds a step took,
where the wall-clock time went (generation / training / weight sync), and how eval accuracy moved
against the rollouts spent.

A run folder holds `metrics.jsonl` (one JSON line per step: `step, allocator, rollouts, tokens,
effective_groups, rounds, abandoned, reward_mean, gen_s, train_s, sync_s, wall_s`, plus
`eval_accuracy` on eval steps) and `summary.json`; `sara-real compare --out DIR` writes one such
folder per allocator under DIR. The default reads `example_run/` beside this notebook: a tiny real
`sara-real compare` run (the offline tiny model on the arithmetic task; see its README for the
command). Point `RUN_DIRS` at your own runs.""",
    ),
    (
        "params",
        """\
RUN_DIRS = ["example_run"]  # run folders or sara-real compare folders (relative or absolute)
GROUP_SIZE = None  # k, for the titles; None = read it from summary.json""",
    ),
    (
        "code",
        setup("""
import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
"""),
    ),
    (
        "code",
        """\
REQUIRED = ["step", "allocator", "rollouts", "tokens", "effective_groups", "rounds", "abandoned",
            "reward_mean", "gen_s", "train_s", "sync_s", "wall_s"]


def run_folders(path):  # a run folder, or a sara-real compare folder of run folders
    path = Path(path)
    if (path / "metrics.jsonl").is_file():
        return [path]
    found = sorted(p.parent for p in path.glob("*/metrics.jsonl"))
    assert found, f"{path}: no metrics.jsonl here or one level below"
    return found


def read_lines(path):
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line: the run was killed mid-write
            continue
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
same = metrics["run"] == metrics["allocator"]
metrics["series"] = metrics["run"].where(same, metrics["run"] + " / " + metrics["allocator"])
metrics = metrics.sort_values(["series", "step"]).reset_index(drop=True)
metrics["cum_rollouts"] = metrics.groupby("series")["rollouts"].cumsum()
metrics["cum_tokens"] = metrics.groupby("series")["tokens"].cumsum()
print(len(metrics), "steps from", len(summaries), "run folder(s)")
scalars = {
    name: {key: v for key, v in summ.items() if not isinstance(v, dict | list)}
    for name, summ in summaries.items()
}
pd.DataFrame(scalars).T""",
    ),
    ("md", "## Per-allocator totals"),
    (
        "code",
        """\
tot = metrics.groupby("series")[["rollouts", "tokens", "effective_groups", "rounds",
                                  "abandoned", "gen_s", "train_s", "sync_s", "wall_s"]].sum()
steps = metrics.groupby("series")["step"].count()
table = pd.DataFrame({
    "steps": steps,
    "rollouts_per_effective_group": tot["rollouts"] / tot["effective_groups"],
    "tokens_per_effective_group": tot["tokens"] / tot["effective_groups"],
    "rounds_per_step": tot["rounds"] / steps,
    "abandoned_per_step": tot["abandoned"] / steps,
    "gen_share_of_wall": tot["gen_s"] / tot["wall_s"],
    "wall_s_per_step": tot["wall_s"] / steps,
    "final_eval_accuracy": metrics.dropna(subset=["eval_accuracy"]).groupby("series")[
        "eval_accuracy"].last(),
})
table.round(3)""",
    ),
    ("md", "## Step by step"),
    (
        "code",
        """\
k = GROUP_SIZE or next((s.get("k") or s.get("group_size") for s in summaries.values()
                        if s.get("k") or s.get("group_size")), None)
fig, axes = plt.subplots(2, 2, figsize=(13, 8))
metrics["rollouts_per_effective_group"] = metrics["rollouts"] / metrics["effective_groups"]
sns.lineplot(data=metrics, x="step", y="rollouts_per_effective_group", hue="series", marker="o",
             ax=axes[0, 0])
axes[0, 0].set_ylabel("rollouts per effective group [rollouts]")
sns.lineplot(data=metrics, x="step", y="rounds", hue="series", marker="o", ax=axes[0, 1],
             legend=False)
axes[0, 1].set_ylabel("synchronisation rounds per step [rounds]")
ev = metrics.dropna(subset=["eval_accuracy"])[["series", "cum_rollouts", "eval_accuracy"]]
pairs = metrics[["series", "run"]].drop_duplicates().itertuples(index=False)
start = [  # the held-out accuracy before training, when the run recorded it
    {"series": ser, "cum_rollouts": 0, "eval_accuracy": summaries[run]["eval_initial"]}
    for ser, run in pairs
    if summaries[run].get("eval_initial") is not None
]
ev = pd.concat([pd.DataFrame(start), ev], ignore_index=True).sort_values(["series", "cum_rollouts"])
sns.lineplot(data=ev, x="cum_rollouts", y="eval_accuracy", hue="series", marker="o",
             ax=axes[1, 0], legend=False)
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
fig.tight_layout()""",
    ),
    ("code", FOOTER),
]


# --------------------------------------------------------------------------------------------
THEORY_VS_SIM = [
    (
        "md",
        """\
# Theory vs simulation: does the simulator reproduce the exact per-prompt law?

**Answers:** for a handful of (difficulty law, k, τ_low, prior) cases, do the Numba simulator's
per-prompt estimates — rollouts per prompt, P(abandon), P(false abandon), P(effective),
abandonment reliability, signal proxy, cost per effective group — agree with the exact theory
(`sara_sim.core.theory.sequential_law`) within their confidence intervals? And does the claim
"P(effective | abandoned) < τ_low" hold in each case?

The simulator books every fresh prompt once, when its fate is sealed (`decided_*` metrics), so its
ratios estimate the exact per-prompt quantities. Add cases or raise the sizes in the parameter
cell; `history` stands for the shipped DeepScaleR histories (k ≤ 8).""",
    ),
    (
        "params",
        """\
CASES = [  # (law, epoch for history laws, k, tau_low, prior of the tau rule)
    ("beta:1,1", None, 8, 0.3, (1.0, 1.0)),
    ("beta:0.3,0.3", None, 16, 0.3, (0.3, 0.3)),
    ("beta:0.2,0.8", None, 32, 0.2, (1.0, 1.0)),
    ("mix:0.5*beta:1,6+0.5*beta:6,1", None, 16, 0.4, (1.0, 1.0)),
    ("beta:5,5", None, 16, 0.1, (0.1, 0.1)),  # misspecified prior: the bound breaks
    ("history", "0", 8, 0.5, (1.0, 1.0)),
]
GROUPS, STEPS, REPLICATES, SEED = 64, 60, 4, 0
Z_LIMIT = 5.0  # |exact - simulated| / SE above this fails the notebook""",
    ),
    (
        "code",
        setup("""
import time

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

import paper_figs
from sara_sim.core.difficulty import parse_law
from sara_sim.core.theory import sequential_law
from sara_sim.sim.simulate import simulate, summarize
"""),
    ),
    (
        "code",
        """\
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
    res = simulate("sara", law, k=k, groups=GROUPS, steps=STEPS, replicates=REPLICATES,
                   seed=SEED + i, tau_low=tau, prior=prior)
    sim = summarize(res)
    name = f"{str(law)[:40]} k={k} τ={tau} prior={prior}"
    for key, skey in METRICS.items():
        se = sim[skey + "_se"]
        rows.append({"case": name, "metric": key, "exact": exact[key], "simulated": sim[skey],
                     "se": se, "z": (sim[skey] - exact[key]) / se if se > 0 else 0.0,
                     "tau_low": tau, "decided_prompts": int(res.frame["decided"].sum())})
table = pd.DataFrame(rows)
table.pivot(index="case", columns="metric", values="z").round(2)""",
    ),
    (
        "md",
        """\
## Exact vs simulated, metric by metric

Each point is one case; bars are 95 % intervals of the simulated estimate. On the diagonal means
agreement. The table above holds the z-scores.""",
    ),
    (
        "code",
        """\
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
fig.tight_layout()""",
    ),
    (
        "md",
        """\
## Claim 1: abandonment reliability below τ_low

`holds` is the exact verdict; with a misspecified prior it fails, and the simulator sees the
same.""",
    ),
    (
        "code",
        """\
rel = table[table["metric"] == "abandon_reliability"][
    ["case", "tau_low", "exact", "simulated", "se"]
].copy()
rel["holds"] = rel["exact"] < rel["tau_low"]
worst = table["z"].abs().max()
print(f"largest |z| over {len(table)} comparisons: {worst:.2f} (limit {Z_LIMIT})")
assert worst < Z_LIMIT, table.loc[table["z"].abs().idxmax()]
rel""",
    ),
    ("code", FOOTER),
]


# --------------------------------------------------------------------------------------------
REPLAY = [
    (
        "md",
        """\
# Real history replay: SARA on recorded DeepScaleR outcomes

**Answers:** on real per-prompt outcome histories (605 DeepScaleR prompts × ~53 epochs × 8
samples, from a Qwen2.5-Math-1.5B GRPO run), how does the difficulty law drift over training, what
does the exact theory promise epoch by epoch (DS cost, the paper's rule at its best τ_low, the
Bayes-optimal policy), and what do the strategies actually achieve when they replay the records —
including `sara-history` / `sara-mopps` / `sara-dps`, which give each prompt a prior from its own
earlier visits, and what their skipping does to the training signal (committed success rates, false
abandons, starvation)?

No model is needed: a visit draws its rollouts without replacement from that epoch's recorded
outcomes, so k ≤ 8.""",
    ),
    (
        "params",
        """\
HISTORY = None  # None: the shipped ../shared/data/deepscaler_pass_history.csv
K = 8
THEORY_EVERY = 4  # exact theory on every 4th epoch
SIM_STRATEGIES = ["uniform", "ds", "sara", "sara-eb", "sara-auto", "speed", "greso", "mopps", "dps"]
SARA_TAU_LOW = 0.5  # the paper rule (strategy "sara"); the others keep their defaults
GROUPS, STEPS, REPLICATES, SEED = 64, 120, 4, 0
PY_STRATEGIES = ["ds", "sara", "sara-history"]  # the Python replay harness
PY_EPOCHS = range(0, 4)
INFORMED_EPOCHS = range(30, 38)  # after the epochs the informed defaults were tuned on (0-25)
INFORMED_SEEDS = [0, 1]
STARVE_EPOCHS = 4  # a prompt starves when learnable and unsampled this many epochs in a row""",
    ),
    (
        "code",
        setup("""
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

import paper_figs
from sara_sim.core.difficulty import BetaLaw, fit_beta_binomial, load_history, parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.theory import best_tau
from sara_sim.sim.replay import INFORMED_DEFAULTS, replay, signal_report
from sara_sim.sim.simulate import simulate, summarize
"""),
    ),
    (
        "code",
        """\
path = HISTORY or paper_figs.HISTORY
frame = load_history(path)
wrong, right = frame["correct"] == 0, frame["correct"] == frame["samples"]
frame["kind"] = np.select([wrong, right], ["all wrong", "all right"], "mixed")
full = frame.groupby("epoch")["prompt_id"].count()
epochs = full[full == full.max()].index  # epochs with every prompt recorded
share = frame[frame["epoch"].isin(epochs)].groupby(["epoch", "kind"]).size().unstack(fill_value=0)
share = share.div(share.sum(axis=1), axis=0)
print(f"{frame['prompt_id'].nunique()} prompts, epochs {epochs.min()}-{epochs.max()} complete")
share.iloc[:: THEORY_EVERY].round(3)""",
    ),
    ("md", "## Drift: the share of saturated groups over training"),
    (
        "code",
        """\
fig, ax = plt.subplots(figsize=(10, 4))
share[["all wrong", "mixed", "all right"]].plot.area(ax=ax, alpha=0.8,
                                                    color=["#d55e00", "#029e73", "#0173b2"])
ax.set_xlabel("epoch of the recorded run [epochs]")
ax.set_ylabel("share of prompts [fraction]")
ax.set_title(f"Recorded groups of 8 per epoch ({path.name})")
ax.legend(loc="upper right")
fig.tight_layout()
# persistence: a saturated group is saturated again at the next visit most of the time
nxt = frame.sort_values(["prompt_id", "epoch"]).groupby("prompt_id")["kind"].shift(-1)
sat = frame["kind"] != "mixed"
again = nxt.notna()
for now, sel in (("saturated", sat & again), ("mixed", ~sat & again)):
    p = float((nxt[sel] != "mixed").mean())
    print(f"P(saturated at the next visit | {now} now) = {p:.3f}")""",
    ),
    (
        "md",
        """\
## What the exact theory promises, epoch by epoch

The law of an epoch is its recorded records (draws without replacement); `best τ_low` is exact
(the cost is piecewise constant in τ_low); Bayes-optimal is the best stopping policy for the
epoch's law (side-specific abandonment points); `EB Beta` is the beta-binomial fit.""",
    ),
    (
        "code",
        """\
rows = []
for e in epochs[::THEORY_EVERY]:
    law = parse_law(f"history:{path}", epochs=str(e))
    tau, cost, _ = best_tau(law, K)
    bo = bayes_optimal(law, K)
    sub = frame[frame["epoch"] == e]
    a, b = fit_beta_binomial(sub["correct"], sub["samples"])
    eb = bayes_optimal(law, K, belief=BetaLaw(a, b))
    rows.append({"epoch": e, "ds_cost": bo["ds_cost_per_effective_group"],
                 "paper_rule_best_tau": tau, "paper_rule_cost": cost,
                 "bayes_optimal_cost": bo["cost_per_effective_group"],
                 "eb_beta": f"{a:.2f},{b:.2f}", "eb_plan_cost": eb["cost_per_effective_group"],
                 "bayes_abandon_after_fail": bo["abandon_after_fail"],
                 "bayes_abandon_after_pass": bo["abandon_after_pass"]})
theory = pd.DataFrame(rows)
fig, ax = plt.subplots(figsize=(10, 4))
for col, label in [("ds_cost", "DS"), ("paper_rule_cost", "paper rule, best τ_low"),
                   ("eb_plan_cost", "Bayes-optimal for the EB Beta fit"),
                   ("bayes_optimal_cost", "Bayes-optimal for the epoch's records")]:
    ax.plot(theory["epoch"], theory[col], marker="o", label=label)
ax.set_xlabel("epoch [epochs]")
ax.set_ylabel("rollouts per effective group [rollouts]")
ax.set_title(f"Exact cost per effective group by epoch, k = {K}")
ax.legend()
fig.tight_layout()
theory.round(3)""",
    ),
    (
        "md",
        """\
## Replay with the Numba simulator: every strategy, real drift

The stream walks the prompts in a fresh random order per pass; pass j uses epoch j of the records.
Costs are ratios of sums with 95 % intervals (delta method over replicate × block units).""",
    ),
    (
        "code",
        """\
law = parse_law(f"history:{path}")
out = []
for i, name in enumerate(SIM_STRATEGIES):
    res = simulate(name, law, k=K, groups=GROUPS, steps=STEPS, replicates=REPLICATES,
                   seed=SEED + i, **({"tau_low": SARA_TAU_LOW} if name == "sara" else {}))
    s = summarize(res)
    out.append({"strategy": name,
                "cost_per_effective_group": s["cost_per_effective_group"],
                "ci95": 1.96 * s["cost_per_effective_group_se"],
                "tokens_per_effective_group": s["tokens_per_effective_group"],
                "rounds_per_step": s["rounds_per_step"],
                "effective_fraction": s["effective_fraction"],
                "fresh_prompts_per_step": s["fresh_prompts_per_step"]})
sim = pd.DataFrame(out)
ds = sim.set_index("strategy").loc["ds", "cost_per_effective_group"]
sim["savings_vs_ds_pct"] = 100 * (1 - sim["cost_per_effective_group"] / ds)
fig, ax = plt.subplots(figsize=(9, 0.4 * len(sim) + 1.5))
ax.barh(sim["strategy"], sim["cost_per_effective_group"], xerr=sim["ci95"], capsize=3)
ax.axvline(ds, color="black", ls="--", lw=1, label="DS")
ax.invert_yaxis()
ax.set_xlabel("rollouts per effective group [rollouts]")
ax.legend()
fig.tight_layout()
sim.round(3)""",
    ),
    (
        "md",
        """\
## sara-history on the Python replay harness

`sara_sim.sim.replay` offers every prompt once per epoch (the recorded run's schedule), so a
prompt's earlier visits can inform its prior. Same harness for every strategy listed, so the
numbers compare with each other (not with the simulator's table above).""",
    ),
    (
        "code",
        """\
rows = []
for name in PY_STRATEGIES:
    kw = {"tau_low": SARA_TAU_LOW} if name == "sara" else {}
    r = replay(frame[["prompt_id", "epoch", "correct", "samples"]], name, PY_EPOCHS, seed=SEED,
               k=K, groups=32, **kw)
    rows.append({"strategy": name, "epochs": len(PY_EPOCHS), "rollouts": r["rollouts"],
                 "effective_groups": r["effective_groups"],
                 "cost_per_effective_group": r["cost_per_effective_group"]})
py = pd.DataFrame(rows)
assert (py["effective_groups"] > 0).all()
py.round(3)""",
    ),
    (
        "md",
        """\
## History-informed priors

`sara-history` gives each prompt a Beta prior from the outcomes the run itself drew at its earlier
visits — discounted by age (forgetting `rho`), shrunk toward the population's empirical-Bayes prior
(`kappa`) — and may skip a prompt at n = 0, without rollouts, when even the best way of probing it
costs more per effective group than the stream pays on average. `sara-mopps` / `sara-dps` let a
predictive selector (MoPPS: Thompson sample near 0.5; DPS: Markov forecast of P(mixed)) order the
stream first, with the same per-prompt SARA prior. Starvation guards: a prompt without evidence of
its own is never skipped, one skipped `max_skip` times in a row is probed at its next visit, and a
skip is overridden with probability `explore`. The defaults were cross-validated by
`benchmarks/fit_informed.py` on half the prompts over epochs 0-25, so the window below is outside
the tuning data; `sara-history, no guards` sets `max_skip` = 10000 and `explore` = 0.

Skipping and early abandonment change the training signal, not only the bill, so beside the cost
the second table reports `signal_report`: the success rates (record c/8) of the committed prompts,
the expected false abandons (abandoned or skipped visits whose full group would have been mixed),
and starvation: a prompt is *learnable* at an epoch when its record is mixed, and it starves while
learnable and unsampled.""",
    ),
    (
        "code",
        """\
variants = [("ds", "ds", {}), ("sara", f"sara (τ_low = {SARA_TAU_LOW})", {"tau_low": SARA_TAU_LOW}),
            ("sara-history", "sara-history", {}), ("sara-mopps", "sara-mopps", {}),
            ("sara-dps", "sara-dps", {}),
            ("sara-history", "sara-history, no guards", {"max_skip": 10_000, "explore": 0.0})]
records = frame[["prompt_id", "epoch", "correct", "samples"]]
window = records[records["epoch"].isin(INFORMED_EPOCHS)]  # starvation: the replayed epochs only
rows, reports = [], []
for name, label, kw in variants:
    for seed in INFORMED_SEEDS:
        r = replay(records, name, INFORMED_EPOCHS, seed=seed, k=K, groups=32, **kw)
        rep = signal_report(r, window, starve_epochs=STARVE_EPOCHS)
        rows.append({"strategy": label, "seed": seed, "rollouts": r["rollouts"],
                     "effective_groups": r["effective_groups"],
                     "cost_per_effective_group": r["cost_per_effective_group"]})
        q = dict(zip(["q10", "q25", "median", "q75", "q90"], rep.pop("committed_rate_quantiles")))
        reports.append({**rep, "strategy": label, "seed": seed, **q})
runs = pd.DataFrame(rows)
informed = runs.groupby("strategy", sort=False).agg(
    rollouts=("rollouts", "sum"), effective_groups=("effective_groups", "sum"),
    cost_sd_over_seeds=("cost_per_effective_group", "std"))
informed.insert(2, "cost_per_effective_group", informed["rollouts"] / informed["effective_groups"])
ds_cost = informed.loc["ds", "cost_per_effective_group"]
informed["savings_vs_ds_pct"] = 100 * (1 - informed["cost_per_effective_group"] / ds_cost)
print(f"epochs {INFORMED_EPOCHS.start}-{INFORMED_EPOCHS.stop - 1}, seeds {INFORMED_SEEDS}, k = {K};"
      f" informed defaults {INFORMED_DEFAULTS}")
assert informed.loc["sara-history", "savings_vs_ds_pct"] > 30
informed.round(3)""",
    ),
    (
        "code",
        """\
signal = pd.DataFrame(reports).drop(columns="seed").groupby("strategy", sort=False).mean()
signal["longest_starvation_epochs"] = pd.DataFrame(reports).groupby(
    "strategy", sort=False)["longest_starvation_epochs"].max()  # the worst over the seeds
cols = ["committed_groups", "committed_rate_mean", "q10", "q25", "median", "q75", "q90",
        "abandoned_visits", "expected_false_abandons", "false_abandon_rate",
        "starved_learnable_visit_share", "starving_prompt_share", "longest_starvation_epochs"]
signal = signal[cols]
on, off = signal.loc["sara-history"], signal.loc["sara-history, no guards"]
assert on["longest_starvation_epochs"] < off["longest_starvation_epochs"], "guards cut starvation"
assert on["starved_learnable_visit_share"] < off["starved_learnable_visit_share"]
print(f"mean over seeds; starving_prompt_share: learnable and unsampled {STARVE_EPOCHS}+ epochs in "
      "a row; longest_starvation_epochs: the worst over seeds")
signal.round(3)""",
    ),
    (
        "code",
        """\
fig, axes = plt.subplots(1, 2, figsize=(13, 3.8))
ax = axes[0]
ax.barh(informed.index, informed["cost_per_effective_group"],
        xerr=informed["cost_sd_over_seeds"].fillna(0), capsize=3)
ax.axvline(ds_cost, color="black", ls="--", lw=1, label="DS")
for i, (c, sav) in enumerate(zip(informed["cost_per_effective_group"],
                                 informed["savings_vs_ds_pct"])):
    ax.text(c, i, f" {c:.2f} ({sav:.0f} % saved)", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_xlim(0, 1.35 * informed["cost_per_effective_group"].max())
ax.set_xlabel("rollouts per effective group [rollouts]")
ax.set_title("cost (bars: SD over seeds)")
ax.legend(loc="lower right")
ax = axes[1]
ax.barh(signal.index, 100 * signal["starved_learnable_visit_share"])
for i, (v, n) in enumerate(zip(100 * signal["starved_learnable_visit_share"],
                               signal["longest_starvation_epochs"])):
    ax.text(v, i, f" {v:.0f} %, longest {int(n)} epochs", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_yticks(range(len(signal)), [])
ax.set_xlim(0, 105)
ax.set_xlabel("learnable visits that drew no rollout [%]")
ax.set_title("starvation")
fig.suptitle(f"Informed priors on the replay, epochs {INFORMED_EPOCHS.start}-"
             f"{INFORMED_EPOCHS.stop - 1}")
fig.tight_layout()""",
    ),
    ("code", FOOTER),
]


# --------------------------------------------------------------------------------------------
REAL_LEARNING = [
    (
        "md",
        """\
# Learning per rollout: does SARA reach DS's accuracy with fewer rollouts and tokens?

**Answers:** from the committed real-loop learning benchmarks — the native GRPO loop
(`benchmarks/real_learning.py` -> `benchmarks/results/real_learning.csv`) and the same comparison
through TRL's GRPOTrainer (`benchmarks/trl_learning.py` -> `benchmarks/results/trl_learning.csv`)
— how held-out accuracy rises against cumulative rollouts and tokens per allocator (mean over
seeds, 95 % band), how many rollouts and tokens each allocator needs to reach 90 % of DS's gain
as a ratio to DS (95 % CI over seeds), its accuracy at an equal rollout budget, and every seed's
own cost to target (so no seed is hidden behind a mean).

Nothing is trained here: the cells read the CSVs (one row per allocator, k, seed and step). The
figure and tables are `paper_figs` figure 10 (`python -m paper_figs --only 10`); the statistics
are in `paper_figs/learning_stats.py`.""",
    ),
    (
        "params",
        """\
RESULTS = {  # label: learning CSV (relative to this folder); a missing file is reported
    "native GRPO loop": "../benchmarks/results/real_learning.csv",
    "TRL GRPOTrainer": "../benchmarks/results/trl_learning.csv",
}""",
    ),
    (
        "code",
        setup("""
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from paper_figs import learning_stats as ls
from paper_figs.fig10_real_learning import FRAC, REF
from paper_figs.fig10_real_learning import build as learning_figure
"""),
    ),
    (
        "code",
        """\
data = {}
for label, path in RESULTS.items():
    if Path(path).is_file():
        data[label] = ls.check(pd.read_csv(path), path)
        runs = ls.runs(data[label])
        print(f"{label}: {path}, {len(runs)} runs, k in {sorted(data[label]['k'].unique())}")
    else:
        print(f"{label}: {path} not found (run its benchmark to write it)")
assert data, "none of the learning CSVs is here"
figures = {label: learning_figure(learning=RESULTS[label]) for label in data}""",
    ),
    ("md", "## Accuracy against rollouts and tokens (mean over seeds, 95 % t-band)"),
    (
        "code",
        """\
for label, result in figures.items():
    result.fig.suptitle(f"{label}: " + result.fig.get_suptitle())
    display(result.fig)
    plt.close(result.fig)
    print(" ".join(result.caption.split()))""",
    ),
    ("md", "## Rollouts and tokens to 90 % of DS's gain, as a ratio to DS; equal budgets"),
    (
        "code",
        """\
for label, result in figures.items():
    print(label)
    display(result.tables["target"].round(3))
    display(result.tables["budget"].round(3))""",
    ),
    ("md", "## Every seed's cost to the target (nan: never reached within the run)"),
    (
        "code",
        """\
per_seed = []
for label, df in data.items():
    for a, k, s in ls.runs(df):
        goal = ls.target_accuracy(df, k, FRAC, REF)
        row = {"source": label, "allocator": a, "k": k, "seed": s, "target": goal}
        for m in ls.MEASURES:
            row[m.removeprefix("cum_") + "_to_target"] = ls.reach(*ls.curve(df, a, k, s, m), goal)
        x, y = ls.curve(df, a, k, s)
        row["start_accuracy"], row["final_accuracy"] = y[0], y[-1]
        run = df[(df["allocator"] == a) & (df["k"] == k) & (df["seed"] == s) & (df["step"] > 0)]
        for col in ("effective_fraction", "rounds"):
            row[col] = run[col].mean() if col in run else np.nan
        per_seed.append(row)
per_seed = pd.DataFrame(per_seed)
per_seed.round(3)""",
    ),
    ("code", FOOTER),
]


NOTEBOOKS = {
    "threshold_sweep.ipynb": THRESHOLD_SWEEP,
    "theory_vs_simulation.ipynb": THEORY_VS_SIM,
    "real_history_replay.ipynb": REPLAY,
    "real_run_analysis.ipynb": REAL_RUN,
    "real_learning.ipynb": REAL_LEARNING,
}


def make_notebook(cells):
    nb = new_notebook()
    for i, (kind, src) in enumerate(cells):
        cell = new_markdown_cell(src) if kind == "md" else new_code_cell(src)
        if kind == "params":
            cell.metadata["tags"] = ["parameters"]
        cell["id"] = f"cell-{i:02d}"  # deterministic ids: rebuilding changes nothing
        nb.cells.append(cell)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def ruff_format(paths):
    """Format the notebooks' code cells with the project's ruff settings (what CI checks)."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        print("warning: ruff not found; notebooks left unformatted", file=sys.stderr)
        return
    cfg = ["--config", str(REPO / "pyproject.toml")]
    subprocess.run([ruff, "format", "--quiet", "--no-cache", *cfg, *map(str, paths)], check=True)


def write_all(out: Path):
    paths = []
    for name, cells in NOTEBOOKS.items():
        paths.append(out / name)
        nbformat.write(make_notebook(cells), paths[-1])
    ruff_format(paths)
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a notebook is out of date")
    parser.add_argument("--out", default=str(HERE), help="folder to write into")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if not args.check:
        for path in write_all(out):
            print("wrote", path)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write_all(Path(tmp))
        stale = [
            p.name
            for p in fresh
            if not (out / p.name).is_file() or (out / p.name).read_text() != p.read_text()
        ]
    if stale:
        print("out of date (run python notebooks/build_notebooks.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
