"""Figure 13 — the training claims from the committed claim files: (a) held-out
accuracy per step of ds, sara and sara-dps, and (a') their paired difference to DS with its 90 %
band; (b) the effective fraction of each step for uniform, mopps, dps, sara and sara-dps; (c)
tokens vs rollouts as ratios to DS (90 % intervals) per strategy and setting.

Drawn from benchmarks/results/claims/ (or --claims DIR) only, through `claims_data.load_claims`:
no training here. A missing claim file is named in the caption and in the panel it would fill;
with none of them the figure is skipped with the reason. Intervals: `claims_stats` (Student t
over the seeds, 90 %; ratios paired by seed on the log scale); an undefined value (one seed, no
DS rollouts) is left out of the plot and empty in the CSV, never a stand-in."""

import matplotlib.pyplot as plt
import pandas as pd

from . import claims_stats as cs
from ._common import Figure, NoData
from .claims_data import load_claims
from .claims_table import GRPO, REF, K
from .learning_stats import mean_ci

ACCURACY = ("ds", "sara", "sara-dps")
FRACTION = ("uniform", "mopps", "dps", "sara", "sara-dps")
RATIOS = ("sara", "sara-auto", "sara-dps", "sara-mopps", "mopps", "dps", "uniform")
COLORS = {"ds": "#000000", "sara": "#0173b2", "sara-dps": "#cc78bc", "sara-auto": "#56b4e9"}
COLORS |= {"sara-mopps": "#ca9161", "mopps": "#029e73", "dps": "#de8f05", "uniform": "#949494"}
MARKERS = ("o", "s", "^", "D", "v", "P")
CURVE_COLUMNS = ("step", "value", "ci_low", "ci_high", "seeds", "panel", "strategy")
PAPER = {"sara": 0.78, "sara-dps": 0.33}  # the paper's rollout ratios to DS


def per_step(df, strategy, column) -> pd.DataFrame:
    """Mean of `column` per step over the seeds of `strategy` at k, with its 90 % t-interval."""
    r = df[(df["strategy"] == strategy) & (df["k"] == K)].dropna(subset=[column])
    out = []
    for step, g in r.groupby("step"):
        m, lo, hi = mean_ci(g[column].to_numpy(), cs.LEVEL)
        out.append({"step": int(step), "value": m, "ci_low": lo, "ci_high": hi, "seeds": len(g)})
    return pd.DataFrame(out, columns=list(CURVE_COLUMNS[:5]))


def curves(df) -> pd.DataFrame:
    """Panels a, a' and b: accuracy, difference to DS and effective fraction per step."""
    parts = []
    for a in ACCURACY:
        parts.append(per_step(df, a, "eval_accuracy").assign(panel="accuracy", strategy=a))
    for a in ACCURACY[1:]:
        if (df["strategy"] == a).any() and (df["strategy"] == REF).any():
            d = cs.step_diff(df, a, K, REF).rename(columns={"diff": "value"})
            parts.append(
                d[["step", "value", "ci_low", "ci_high", "seeds"]].assign(
                    panel="diff_vs_ds", strategy=a
                )
            )
    for a in FRACTION:
        parts.append(
            per_step(df[df["step"] > 0], a, "effective_fraction").assign(
                panel="effective_fraction", strategy=a
            )
        )
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=CURVE_COLUMNS)


def ratios(data) -> pd.DataFrame:
    """Panel c: rollouts and tokens per strategy and setting as ratios to DS, with intervals."""
    out = []
    for setting in data.sources:
        df = data.setting(setting)
        for k in sorted(df["k"].unique()):
            if not ((df["strategy"] == REF) & (df["k"] == k)).any():
                continue
            for a in [x for x in RATIOS if ((df["strategy"] == x) & (df["k"] == k)).any()]:
                row = {"setting": setting, "k": int(k), "strategy": a}
                for what in ("rollouts", "tokens"):
                    r, lo, hi, n = cs.cost_ratio(df, a, k, what, REF)
                    row |= {what: r, f"{what}_low": lo, f"{what}_high": hi, "seeds": n}
                row["files"] = data.files(setting)
                out.append(row)
    return pd.DataFrame(out)


def _band(ax, c, a, label):
    style = "--o" if a == "sara-dps" else "-o"  # drawn over sara's line at 1 in panel b
    ax.plot(c["step"], c["value"], style, ms=3, color=COLORS[a], label=label)
    ax.fill_between(c["step"], c["ci_low"], c["ci_high"], color=COLORS[a], alpha=0.18, lw=0)


def _curve_panel(ax, frame, panel, names, title, ylabel, empty):
    part = frame[frame["panel"] == panel] if len(frame) else frame
    drawn = False
    for a in names:
        c = part[part["strategy"] == a] if len(part) else part
        if len(c):
            _band(ax, c, a, f"{a} ({int(c['seeds'].max())})")
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes, wrap=True)
    ax.set(title=title, xlabel="training step", ylabel=ylabel)
    if drawn:
        ax.legend(title="strategy (seeds)", fontsize=8)


def _ratio_panel(ax, table, empty):
    if table.empty:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes, wrap=True)
    marks = dict(zip(dict.fromkeys(table.get("setting", [])), MARKERS))
    for r in table.itertuples():
        xerr = [[r.rollouts - r.rollouts_low], [r.rollouts_high - r.rollouts]]
        yerr = [[r.tokens - r.tokens_low], [r.tokens_high - r.tokens]]
        label = f"{r.strategy}, {r.setting}"
        ax.errorbar(
            r.rollouts,
            r.tokens,
            xerr=xerr,
            yerr=yerr,
            fmt=marks[r.setting],
            color=COLORS[r.strategy],
            ms=6,
            capsize=2,
            label=label,
        )
    ends = table.filter(regex="_(low|high)$").to_numpy(float) if len(table) else []
    ends = [x for x in (ends.ravel() if len(ends) else []) if x == x]  # nan: not drawn
    lim = [min([0.2, *ends]) * 0.95, max([1.1, *ends]) * 1.05]  # every interval in view
    ax.plot(lim, lim, ":", color="black", lw=1, label="tokens = rollouts")
    for a, x in PAPER.items():
        ax.axvline(x, color=COLORS[a], ls="--", lw=0.8, alpha=0.6)
    ax.set(
        xlim=lim,
        ylim=lim,
        xlabel="rollouts / DS's",
        ylabel="tokens / DS's",
        title="(c) cost vs DS: below the diagonal = tokens saved beyond rollouts",
    )
    ax.legend(fontsize=7, loc="upper left")


def build(seed=0, claims=None):
    data = load_claims(claims)
    if data.frame.empty:
        raise NoData(f"no claim file found ({data.missing_text()}; written by the claim run)")
    grpo = data.setting(GRPO)
    frame, table = curves(grpo), ratios(data)
    nothing = f"no {GRPO} claim file: " + "; ".join(
        data.missing[n] for n in ("k8", "k8_more") if n in data.missing
    )
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.6))
    _curve_panel(
        axes[0, 0],
        frame,
        "accuracy",
        ACCURACY,
        f"(a) held-out accuracy, {GRPO}, k {K}",
        "held-out pass@1 [fraction]",
        nothing,
    )
    _curve_panel(
        axes[0, 1],
        frame,
        "diff_vs_ds",
        ACCURACY[1:],
        "(a') paired difference to DS",
        "accuracy - DS's [fraction]",
        nothing,
    )
    for y in (-cs.MARGIN, 0.0, cs.MARGIN):
        axes[0, 1].axhline(y, color="black", lw=0.8, ls="-" if y == 0 else ":")
    _curve_panel(
        axes[1, 0],
        frame,
        "effective_fraction",
        FRACTION,
        "(b) effective fraction of each step",
        "mixed groups / groups trained on",
        nothing,
    )
    axes[1, 0].set_ylim(0, 1.05)
    _ratio_panel(axes[1, 1], table, "no claim file with DS")
    fig.suptitle("Training claims in the real loop (means, 90 % t-bands over paired seeds)")
    fig.tight_layout()
    return Figure(fig, frame, caption(data, table), notes=notes(data), tables={"ratios": table})


def caption(data, table) -> str:
    parts = [
        f"The training claims from the committed claim files ({', '.join(data.sources)}; "
        f"missing: {data.missing_text()}). (a) Held-out pass@1 per step of ds, sara and "
        f"sara-dps ({GRPO}, k {K}; mean over seeds, 90 % t-band); (a') the paired difference to "
        f"DS per step with its 90 % t-interval over the seeds both ran, dotted: the +-"
        f"{cs.MARGIN:g} equivalence margin; (b) effective fraction (mixed groups / groups "
        "trained on) of each step, mean and 90 % band; (c) tokens vs rollouts spent as ratios "
        "to DS (geometric mean of per-seed ratios, 90 % intervals on the log scale) per "
        "strategy and setting; dashed: the paper's rollout ratios (sara 0.78x, sara-dps "
        "0.33x). uniform, mopps and dps spend groups x k rollouts a step whatever their "
        "effective fraction (b), so their ratio in (c) is a cost at a lower yield, not a saving. "
        "DS here runs by rounds (a generation batch of N prompts); against DS streamed, "
        "docs/results.md splits the saving by source."
    ]
    for r in table.itertuples():
        parts.append(
            f"{r.strategy} ({r.setting}, k {r.k}, {r.seeds} seeds): rollouts "
            f"{cs.fmt(r.rollouts)}x [{cs.fmt(r.rollouts_low)}, {cs.fmt(r.rollouts_high)}], "
            f"tokens {cs.fmt(r.tokens)}x [{cs.fmt(r.tokens_low)}, {cs.fmt(r.tokens_high)}]."
        )
    return " ".join(parts)


def notes(data) -> dict:
    out = {f"setting {s}": data.files(s) for s in data.sources}
    out["missing"] = data.missing_text()
    out["interval"] = "Student t over seeds, 90 %; differences and ratios paired by seed"
    return out
