"""Figure 10 — learning per rollout in the real loop: held-out accuracy vs rollouts and tokens.

Drawn from the committed learning CSV (benchmarks/results/real_learning.csv, written by
benchmarks/real_learning.py; or --learning PATH, e.g.
benchmarks/investigations/trl_learning/trl_learning.csv): no training here. Mean over seeds with a
95 % t-band, one column per k; the tables (rollouts and tokens to the target accuracy as a ratio to
DS, accuracy at equal rollouts) come from `paper_figs.learning_stats`, which says how the intervals
are computed."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import learning_stats as ls
from ._common import Figure, NoData, learning_path

FRAC = 0.9  # target: 90 % of DS's mean gain over the start model
MEASURES = (
    ("rollouts", "cumulative rollouts [rollouts]"),
    ("tokens", "cumulative tokens [tokens]"),
)
REF = "ds"
PAPER_ROLLOUT_RATIO = 0.78  # the paper: SARA matches DS's accuracy with 22 % fewer rollouts


def load(path):
    if not path.is_file():
        raise NoData(
            f"{path} not found (written by benchmarks/real_learning.py; nothing is drawn "
            "without measured runs)"
        )
    return ls.check(pd.read_csv(path), str(path))


def verdict(row) -> str:
    """How a ratio's interval reads against 1 (DS)."""
    if np.isnan(row.ratio):
        return "no ratio (target not reached on any paired seed)"
    if np.isnan(row.ci_high):
        return (
            f"x{row.ratio:.2f} DS's {row.measure} (one paired seed, no interval; reached "
            f"{row.reached})"
        )
    span = (
        f"x{row.ratio:.2f} DS's {row.measure} (95 % CI {row.ci_low:.2f}-{row.ci_high:.2f}, "
        f"paired seeds {row.paired_seeds}, reached {row.reached})"
    )
    if row.ci_high < 1:
        return span + ": fewer than DS"
    if row.ci_low > 1:
        return span + ": more than DS"
    return span + ": not distinguishable from DS at this number of seeds"


def summary_text(target: pd.DataFrame, budget: pd.DataFrame) -> str:
    parts = []
    for k in sorted(target["k"].unique()):
        t = target[(target["k"] == k) & (target["strategy"] != REF)]
        b = budget[budget["k"] == k].set_index("strategy")
        goal = target[target["k"] == k]["target_accuracy"].iloc[0]
        for a in dict.fromkeys(t["strategy"]):
            ro, to = (t[(t["strategy"] == a) & (t["measure"] == m)].iloc[0] for m, _ in MEASURES)
            acc = b.loc[a]
            parts.append(
                f"k={k}, {a}: to reach {goal:.3f} it needs {verdict(ro)}; tokens {verdict(to)}. "
                f"At {acc.budget:.0f} rollouts its accuracy is {acc.accuracy:.3f} vs DS "
                f"{b.loc[REF].accuracy:.3f} (difference {acc.diff_vs_ref:+.3f}, 95 % CI "
                f"{acc.diff_ci_low:+.3f} to {acc.diff_ci_high:+.3f})."
            )
    return " ".join(parts)


def build(seed=0, history=None, learning=None):
    path = learning_path(learning)
    df = load(path)
    target, budget = ls.target_table(df, FRAC, REF), ls.budget_table(df, REF)
    bands = pd.concat([ls.band(df, "cum_" + m) for m, _ in MEASURES], ignore_index=True)
    ks, strategies = sorted(df["k"].unique()), list(target["strategy"].drop_duplicates())
    fig, axes = plt.subplots(2, len(ks), figsize=(5.5 * len(ks), 7.6), squeeze=False)
    colors = dict(zip(strategies, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for c, k in enumerate(ks):
        goal = target[target["k"] == k]["target_accuracy"].iloc[0]
        for r, (m, xlabel) in enumerate(MEASURES):
            ax = axes[r, c]
            for a in strategies:
                b = bands[(bands["k"] == k) & (bands["strategy"] == a) & (bands["measure"] == m)]
                if b.empty:
                    continue
                ax.plot(
                    b["x"], b["mean"], color=colors[a], lw=1.8, label=f"{a} ({b.seeds.iloc[0]})"
                )
                ax.fill_between(
                    b["x"], b["ci_low"], b["ci_high"], color=colors[a], alpha=0.18, lw=0
                )
            ax.axhline(goal, color="black", ls=":", lw=1, label=f"target {goal:.3f}")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("held-out pass@1 [fraction]")
            ax.set_title(f"k = {k}: accuracy vs {m}")
    axes[0, 0].legend(title="strategy (seeds)", loc="lower right", fontsize=8)
    fig.suptitle("Real GRPO loop: held-out accuracy per rollout and per token (mean, 95 % band)")
    fig.tight_layout()
    runs = ls.runs(df)
    caption = (
        f"Held-out pass@1 of the real GRPO loop against cumulative rollouts (top) and tokens "
        f"(bottom), k in {[int(k) for k in ks]}, from {path.name} ({len(runs)} runs). Lines: mean "
        "over seeds of each run's eval curve, linearly interpolated onto a common grid up to the "
        "smallest final budget; bands: 95 % Student-t intervals over seeds. Dotted: the target, "
        f"{FRAC:.0%} of DS's mean gain over the start model. Per-seed cost to target by linear "
        "interpolation at the first crossing; ratio to DS = geometric mean of the per-seed "
        "(paired) ratios, t-interval on their logs. " + summary_text(target, budget) + " The "
        f"paper reports x{PAPER_ROLLOUT_RATIO} rollouts for SARA vs DS. DS here runs by rounds "
        "(the real loop's schedule: a generation batch of N prompts); each source of the saving "
        "against DS streamed: docs/results.md."
    )
    notes = {
        "source": str(path),
        "runs": ", ".join(f"{a}/k{k}/seed{s}" for a, k, s in runs),
        "target": f"start + {FRAC} x (DS final - start), DS means over seeds, one per k",
        "interval": "Student t over independent seeds; ratios paired by seed, on log scale",
    }
    tables = {"target": target, "budget": budget}
    return Figure(fig, bands, caption, notes=notes, tables=tables)
