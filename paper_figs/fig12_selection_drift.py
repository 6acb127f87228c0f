"""Figure 12 — predict-then-select under a drifting policy: the effective fraction of each step
(mixed groups / groups in the batch) over training for uniform, the peers' selectors (mopps, dps),
sara and sara-dps, on the simulator's drifting law at its own pace and at a faster one.

All five run as the collectors the real loop uses (``make_collector``), so the selectors here are
exactly ``--strategy mopps / dps``.  Outcomes follow ``drift:A,B,RATE,BOOST,POOL``
(``sim/laws.py``): prompt q's logit success rate is logit g_q(0) + RATE * t + BOOST * (times q
entered a batch as an effective group), t = step; ids are epoch * POOL + index over a reshuffled
pool, so every prompt comes round again and the selectors' posteriors go stale as rates move."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sara_sim.collect.collectors import make_collector
from sara_sim.sim.laws import parse_sim_law

from ._common import Figure
from ._sim import cell_seed

STRATEGIES = ("uniform", "mopps", "dps", "sara", "sara-dps")
# twice the drift law's default pace (RATE 0.01, BOOST 0.25: laws.py), and 5x / 4x the default;
# Beta(1, 3): a hard start
LAWS = ("drift:1,3,0.02,0.5,128", "drift:1,3,0.05,1,128")
K, GROUPS, STEPS, SEEDS = 8, 8, 40, 3
WINDOW = 10  # "early" = the first WINDOW steps, "late" = the last WINDOW
COLORS = {"uniform": "#949494", "mopps": "#029e73", "dps": "#de8f05", "sara": "#0173b2"}
COLORS["sara-dps"] = "#cc78bc"


class DriftWorld:
    """The drifting law as a collector's prompt source and sampler; `trained` counts effective
    groups."""

    def __init__(self, law, seed):
        self.law, self.step = law, 0
        p0 = law.base.sample(np.random.default_rng([seed, 0]), law.pool)
        self.logit0 = np.log(p0) - np.log1p(-p0)
        self.trained = np.zeros(law.pool)
        self.order_rng = np.random.default_rng([seed, 1])  # the prompt order never depends on draws
        self.draw_rng = np.random.default_rng([seed, 2])

    def prompts(self):
        e, pool = 0, self.law.pool
        while True:
            for i in self.order_rng.permutation(pool):
                yield e * pool + int(i)
            e += 1

    def __call__(self, requests):
        out = []
        for r in requests:
            q = r.prompt_id % self.law.pool
            x = self.logit0[q] + self.law.rate * self.step + self.law.boost * self.trained[q]
            out.append([int(u) for u in self.draw_rng.random(r.n) < 1.0 / (1.0 + math.exp(-x))])
        return out

    def book(self, res):
        for pid, r in res.groups:
            self.trained[pid % self.law.pool] += 0 < sum(r) < K


def run(name, spec, seed):
    """Per-step rows of one run: effective fraction, groups, rollouts."""
    law = parse_sim_law(spec)
    world = DriftWorld(law, seed)
    col = make_collector(name, k=K, groups=GROUPS, seed=seed, epoch_size=law.pool)
    prompts, rows = world.prompts(), []
    for step in range(STEPS):
        world.step = step
        res = col.collect_step(prompts, world)
        world.book(res)
        n = len(res.groups)
        rows.append(
            {
                "law": spec,
                "strategy": name,
                "seed": seed,
                "step": step,
                "groups": n,
                "effective_groups": res.n_effective,
                "effective_fraction": res.n_effective / n if n else math.nan,
                "rollouts": res.rollouts,
            }
        )
    return rows


def data(seed):
    rows = []
    for i, spec in enumerate(LAWS):
        for j, name in enumerate(STRATEGIES):
            for s in range(SEEDS):
                rows += run(name, spec, cell_seed(seed, 12, i, j, s))
    return pd.DataFrame(rows)


def early_late(df):
    """Mean effective fraction over the first and the last WINDOW steps, per law and strategy."""
    early = df[df["step"] < WINDOW].groupby(["law", "strategy"])["effective_fraction"].mean()
    late = df[df["step"] >= STEPS - WINDOW].groupby(["law", "strategy"])["effective_fraction"]
    out = pd.DataFrame({"early": early, "late": late.mean()}).reset_index()
    out["change"] = out["late"] - out["early"]
    return out


def build(seed=0):
    df = data(seed)
    fig, axes = plt.subplots(1, len(LAWS), figsize=(13, 4.4), sharey=True)
    for ax, spec in zip(axes, LAWS):
        part = df[df["law"] == spec]
        for name in STRATEGIES:
            g = part[part["strategy"] == name].groupby("step")["effective_fraction"]
            mean, lo, hi = g.mean(), g.min(), g.max()
            style = "--" if name == "sara-dps" else "-"  # on top of sara's line at 1
            ax.plot(mean.index, mean, style, label=name, color=COLORS[name])
            ax.fill_between(mean.index, lo, hi, color=COLORS[name], alpha=0.15)
        ax.set_title(spec)
        ax.set_xlabel("training step")
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("effective fraction (mixed groups / batch)")
    axes[0].legend(loc="lower left")
    summary = early_late(df)
    caption = (
        f"Effective fraction of each step over training, on the simulator's drifting law: a pool "
        f"of 128 prompts with Beta(1, 3) start rates whose logits rise by RATE per step and BOOST "
        f"per effective group trained on (left: RATE 0.02, BOOST 0.5; right: 0.05, 1). k = {K}, "
        f"{GROUPS} groups per step, {STEPS} steps; line: mean over {SEEDS} seeds, band: min-max. "
        "All five run as the real loop's collectors; mopps / dps give whole groups to the "
        "prompts their own (stale) posterior ranks best, 4 candidates per slot; sara and "
        "sara-dps commit only mixed groups, so every group they train on is effective."
    )
    return Figure(fig, df, caption, tables={"early_late": summary})
