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
# # Real history replay: SARA on recorded DeepScaleR outcomes
#
# **Answers:** on real per-prompt outcome histories (605 DeepScaleR prompts × ~53 epochs × 8
# samples, from a Qwen2.5-Math-1.5B GRPO run), how does the difficulty law drift over training, what
# does the exact theory promise epoch by epoch (DS cost, the paper's rule at its best τ_low, the
# Bayes-optimal policy), and what do the strategies actually achieve when they replay the records —
# including `sara-history` / `sara-mopps` / `sara-dps`, which give each prompt a prior from its own
# earlier visits, and what their skipping does to the training signal (committed success rates,
# false abandons, starvation)?
#
# No model is needed: a visit draws its rollouts without replacement from that epoch's recorded
# outcomes, so k ≤ 8.

# %% tags=["parameters"]
HISTORY = None  # None: the DeepScaleR histories shipped in the package (`history:deepscaler`)
K = 8
THEORY_EVERY = 4  # exact theory on every 4th epoch
SIM_STRATEGIES = ["uniform", "ds", "sara", "sara-eb", "sara-auto", "speed", "greso", "mopps", "dps"]
SARA_TAU_LOW = 0.5  # the paper rule (strategy "sara"); the others keep their defaults
GROUPS, STEPS, REPLICATES, SEED = 64, 120, 4, 0
PY_STRATEGIES = ["ds", "sara", "sara-history"]  # the Python replay harness
PY_EPOCHS = range(0, 4)
INFORMED_EPOCHS = range(30, 38)  # after the epochs the informed defaults were tuned on (0-25)
INFORMED_SEEDS = [0, 1]
STARVE_EPOCHS = 4  # a prompt starves when learnable and unsampled this many epochs in a row

# %%
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

sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
pd.set_option("display.width", 140)
pd.set_option("display.max_columns", 30)
T0 = time.perf_counter()

# %%
path = HISTORY or paper_figs.HISTORY
frame = load_history(path)
wrong, right = frame["correct"] == 0, frame["correct"] == frame["samples"]
frame["kind"] = np.select([wrong, right], ["all wrong", "all right"], "mixed")
full = frame.groupby("epoch")["prompt_id"].count()
epochs = full[full == full.max()].index  # epochs with every prompt recorded
share = frame[frame["epoch"].isin(epochs)].groupby(["epoch", "kind"]).size().unstack(fill_value=0)
share = share.div(share.sum(axis=1), axis=0)
print(f"{frame['prompt_id'].nunique()} prompts, epochs {epochs.min()}-{epochs.max()} complete")
share.iloc[::THEORY_EVERY].round(3)

# %% [markdown]
# ## Drift: the share of saturated groups over training

# %%
fig, ax = plt.subplots(figsize=(10, 4))
share[["all wrong", "mixed", "all right"]].plot.area(
    ax=ax, alpha=0.8, color=["#d55e00", "#029e73", "#0173b2"]
)
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
    print(f"P(saturated at the next visit | {now} now) = {p:.3f}")

# %% [markdown]
# ## What the exact theory promises, epoch by epoch
#
# The law of an epoch is its recorded records (draws without replacement); `best τ_low` is exact
# (the cost is piecewise constant in τ_low); Bayes-optimal is the best stopping policy for the
# epoch's law (side-specific abandonment points); `EB Beta` is the beta-binomial fit.

# %%
rows = []
for e in epochs[::THEORY_EVERY]:
    law = parse_law(f"history:{path}", epochs=str(e))
    tau, cost, _ = best_tau(law, K)
    bo = bayes_optimal(law, K)
    sub = frame[frame["epoch"] == e]
    a, b = fit_beta_binomial(sub["correct"], sub["samples"])
    eb = bayes_optimal(law, K, belief=BetaLaw(a, b))
    rows.append(
        {
            "epoch": e,
            "ds_cost": bo["ds_cost_per_effective_group"],
            "paper_rule_best_tau": tau,
            "paper_rule_cost": cost,
            "bayes_optimal_cost": bo["cost_per_effective_group"],
            "eb_beta": f"{a:.2f},{b:.2f}",
            "eb_plan_cost": eb["cost_per_effective_group"],
            "bayes_abandon_after_fail": bo["abandon_after_fail"],
            "bayes_abandon_after_pass": bo["abandon_after_pass"],
        }
    )
theory = pd.DataFrame(rows)
fig, ax = plt.subplots(figsize=(10, 4))
for col, label in [
    ("ds_cost", "DS"),
    ("paper_rule_cost", "paper rule, best τ_low"),
    ("eb_plan_cost", "Bayes-optimal for the EB Beta fit"),
    ("bayes_optimal_cost", "Bayes-optimal for the epoch's records"),
]:
    ax.plot(theory["epoch"], theory[col], marker="o", label=label)
ax.set_xlabel("epoch [epochs]")
ax.set_ylabel("rollouts per effective group [rollouts]")
ax.set_title(f"Exact cost per effective group by epoch, k = {K}")
ax.legend()
fig.tight_layout()
theory.round(3)

# %% [markdown]
# ## Replay with the Numba simulator: every strategy, real drift
#
# Prompts come in a fresh random order per pass; pass j uses epoch j of the records.
# Costs are ratios of sums with 95 % intervals (delta method over replicate × block units).

# %%
law = parse_law(f"history:{path}")
out = []
for i, name in enumerate(SIM_STRATEGIES):
    res = simulate(
        name,
        law,
        k=K,
        groups=GROUPS,
        steps=STEPS,
        replicates=REPLICATES,
        seed=SEED + i,
        **({"tau_low": SARA_TAU_LOW} if name == "sara" else {}),
    )
    s = summarize(res)
    out.append(
        {
            "strategy": name,
            "cost_per_effective_group": s["cost_per_effective_group"],
            "ci95": 1.96 * s["cost_per_effective_group_se"],
            "tokens_per_effective_group": s["tokens_per_effective_group"],
            "rounds_per_step": s["rounds_per_step"],
            "effective_fraction": s["effective_fraction"],
            "fresh_prompts_per_step": s["fresh_prompts_per_step"],
        }
    )
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
sim.round(3)

# %% [markdown]
# ## sara-history on the Python replay harness
#
# `sara_sim.sim.replay` offers every prompt once per epoch (the recorded run's schedule), so a
# prompt's earlier visits can inform its prior. Same harness for every strategy listed, so the
# numbers compare with each other (not with the simulator's table above).

# %%
rows = []
for name in PY_STRATEGIES:
    kw = {"tau_low": SARA_TAU_LOW} if name == "sara" else {}
    r = replay(
        frame[["prompt_id", "epoch", "correct", "samples"]],
        name,
        PY_EPOCHS,
        seed=SEED,
        k=K,
        groups=32,
        **kw,
    )
    rows.append(
        {
            "strategy": name,
            "epochs": len(PY_EPOCHS),
            "rollouts": r["rollouts"],
            "effective_groups": r["effective_groups"],
            "cost_per_effective_group": r["cost_per_effective_group"],
        }
    )
py = pd.DataFrame(rows)
assert (py["effective_groups"] > 0).all()
py.round(3)

# %% [markdown]
# ## History-informed priors
#
# `sara-history` gives each prompt a Beta prior from the outcomes the run itself drew at its earlier
# visits — discounted by age (forgetting `rho`), shrunk toward the population's empirical-Bayes
# prior (`kappa`) — and may skip a prompt at n = 0, without rollouts, when even the best way of
# probing it costs more per effective group than the run pays on average. `sara-mopps` /
# `sara-dps` let a predictive selector (MoPPS: Thompson sample near 0.5; DPS: Markov forecast of
# P(mixed)) rank the prompts first, with the same per-prompt SARA prior. Starvation guards: a prompt
# without evidence of its own is never skipped, one skipped `max_skip` times in a row is probed at
# its next visit, and a skip is overridden with probability `explore`. The defaults were
# cross-validated by `benchmarks/fit_informed.py` on half the prompts over epochs 0-25, so the
# window below is outside the tuning data; `sara-history, no guards` sets `max_skip` = 10000 and
# `explore` = 0.
#
# Skipping and early abandonment change the training signal, not only the bill, so beside the cost
# the second table reports `signal_report`: the success rates (record c/8) of the committed prompts,
# the expected false abandons (abandoned or skipped visits whose full group would have been mixed),
# and starvation: a prompt is *learnable* at an epoch when its record is mixed, and it starves while
# learnable and unsampled.

# %%
variants = [
    ("ds", "ds", {}),
    ("sara", f"sara (τ_low = {SARA_TAU_LOW})", {"tau_low": SARA_TAU_LOW}),
    ("sara-history", "sara-history", {}),
    ("sara-mopps", "sara-mopps", {}),
    ("sara-dps", "sara-dps", {}),
    ("sara-history", "sara-history, no guards", {"max_skip": 10_000, "explore": 0.0}),
]
records = frame[["prompt_id", "epoch", "correct", "samples"]]
window = records[records["epoch"].isin(INFORMED_EPOCHS)]  # starvation: the replayed epochs only
rows, reports = [], []
for name, label, kw in variants:
    for seed in INFORMED_SEEDS:
        r = replay(records, name, INFORMED_EPOCHS, seed=seed, k=K, groups=32, **kw)
        rep = signal_report(r, window, starve_epochs=STARVE_EPOCHS)
        rows.append(
            {
                "strategy": label,
                "seed": seed,
                "rollouts": r["rollouts"],
                "effective_groups": r["effective_groups"],
                "cost_per_effective_group": r["cost_per_effective_group"],
            }
        )
        q = dict(zip(["q10", "q25", "median", "q75", "q90"], rep.pop("committed_rate_quantiles")))
        reports.append({**rep, "strategy": label, "seed": seed, **q})
runs = pd.DataFrame(rows)
informed = runs.groupby("strategy", sort=False).agg(
    rollouts=("rollouts", "sum"),
    effective_groups=("effective_groups", "sum"),
    cost_sd_over_seeds=("cost_per_effective_group", "std"),
)
informed.insert(2, "cost_per_effective_group", informed["rollouts"] / informed["effective_groups"])
ds_cost = informed.loc["ds", "cost_per_effective_group"]
informed["savings_vs_ds_pct"] = 100 * (1 - informed["cost_per_effective_group"] / ds_cost)
print(
    f"epochs {INFORMED_EPOCHS.start}-{INFORMED_EPOCHS.stop - 1}, seeds {INFORMED_SEEDS}, k = {K};"
    f" informed defaults {INFORMED_DEFAULTS}"
)
assert informed.loc["sara-history", "savings_vs_ds_pct"] > 30
informed.round(3)

# %%
signal = pd.DataFrame(reports).drop(columns="seed").groupby("strategy", sort=False).mean()
signal["longest_starvation_epochs"] = (
    pd.DataFrame(reports).groupby("strategy", sort=False)["longest_starvation_epochs"].max()
)  # the worst over the seeds
cols = [
    "committed_groups",
    "committed_rate_mean",
    "q10",
    "q25",
    "median",
    "q75",
    "q90",
    "abandoned_visits",
    "expected_false_abandons",
    "false_abandon_rate",
    "starved_learnable_visit_share",
    "starving_prompt_share",
    "longest_starvation_epochs",
]
signal = signal[cols]
on, off = signal.loc["sara-history"], signal.loc["sara-history, no guards"]
assert on["longest_starvation_epochs"] < off["longest_starvation_epochs"], "guards cut starvation"
assert on["starved_learnable_visit_share"] < off["starved_learnable_visit_share"]
print(
    f"mean over seeds; starving_prompt_share: learnable and unsampled {STARVE_EPOCHS}+ epochs in "
    "a row; longest_starvation_epochs: the worst over seeds"
)
signal.round(3)

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 3.8))
ax = axes[0]
ax.barh(
    informed.index,
    informed["cost_per_effective_group"],
    xerr=informed["cost_sd_over_seeds"].fillna(0),
    capsize=3,
)
ax.axvline(ds_cost, color="black", ls="--", lw=1, label="DS")
for i, (c, sav) in enumerate(
    zip(informed["cost_per_effective_group"], informed["savings_vs_ds_pct"])
):
    ax.text(c, i, f" {c:.2f} ({sav:.0f} % saved)", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_xlim(0, 1.35 * informed["cost_per_effective_group"].max())
ax.set_xlabel("rollouts per effective group [rollouts]")
ax.set_title("cost (bars: SD over seeds)")
ax.legend(loc="lower right")
ax = axes[1]
ax.barh(signal.index, 100 * signal["starved_learnable_visit_share"])
for i, (v, n) in enumerate(
    zip(100 * signal["starved_learnable_visit_share"], signal["longest_starvation_epochs"])
):
    ax.text(v, i, f" {v:.0f} %, longest {int(n)} epochs", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_yticks(range(len(signal)), [])
ax.set_xlim(0, 105)
ax.set_xlabel("learnable visits that drew no rollout [%]")
ax.set_title("starvation")
fig.suptitle(
    f"Informed priors on the replay, epochs {INFORMED_EPOCHS.start}-{INFORMED_EPOCHS.stop - 1}"
)
fig.tight_layout()

# %%
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
