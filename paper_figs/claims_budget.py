"""Rollouts-to-target and equal-budget accuracy on the claim files (claim 1's
rollouts-to-target and equal-budget accuracy): one row per setting, k and strategy
against DS, printed by `python benchmarks/claims.py --budget`.

The statistics are figure 10's (`learning_stats.target_table` / `budget_table`), run on one
setting's pooled rows (`claims_data.load_claims`) at one k, with the claim table's 90 % paired
t-intervals over the seeds:

- target: figure 10's, DS's start + 0.9 x (final - start) held-out accuracy, both DS's means over
  the setting's seeds at that k. A run's rollouts to it are read off its eval curve (linear
  interpolation at the first crossing); the ratio to DS is the geometric mean of the per-seed
  ratios over the seeds where both reached it (t-interval on the logs). A run that never
  reaches it has no number: `reached` counts the seeds that did, the ratio rests on the paired
  ones, and with none it is undefined (NaN here, '-' in the table — never a stand-in).
- equal budget: the largest rollout budget every run of the strategy and of DS at that k
  reached (per pair: uniform's small budget does not cut the others'), each run's accuracy there
  (interpolated on its eval curve) and the paired difference to DS's.

Pure functions of a ClaimData; nothing is read or written here."""

import math

import pandas as pd

from . import claims_stats as cs
from . import learning_stats as ls
from .claims_data import ClaimData

REF = "ds"
FIELDS = (
    "setting", "k", "strategy", "target_accuracy", "reached", "ref_reached", "not_reached",
    "paired_seeds", "ratio", "ci_low", "ci_high", "note", "budget", "accuracy", "ref_accuracy",
    "diff_vs_ref", "diff_ci_low", "diff_ci_high", "seeds", "files",
)  # fmt: skip
COLUMNS = (
    "setting, k", "vs DS", "target accuracy", "seeds that reached it (DS's)",
    "rollouts to target, ratio to DS (90 % interval)", "equal budget [rollouts]",
    "accuracy there, minus DS's (90 % interval)", "verdict", "files",
)  # fmt: skip


def budget_frame(data: ClaimData, ref: str = REF, level: float = cs.LEVEL) -> pd.DataFrame:
    """One row (FIELDS) per (setting, k, strategy) of the claim files with `ref` at that k."""
    rows = []
    for setting in data.sources:
        df = data.setting(setting)
        for k in sorted(df["k"].unique()):
            at_k = df[df["k"] == k]
            if (at_k["strategy"] == ref).any():
                for row in _pairs(at_k, ref, level):
                    rows.append({"setting": setting, **row, "files": data.files(setting)})
    return pd.DataFrame(rows, columns=list(FIELDS))


def _pairs(at_k: pd.DataFrame, ref: str, level: float) -> list[dict]:
    """Each strategy of one setting and k against `ref`: rollouts to target, equal budget."""
    target = ls.target_table(at_k, ref=ref, level=level)
    target = target[target["measure"] == "rollouts"].set_index("strategy")
    out = []
    for a, t in target.drop(index=ref).iterrows():
        pair = at_k[at_k["strategy"].isin((a, ref))]
        b = ls.budget_table(pair, ref, level=level).set_index("strategy")
        out.append(
            {
                "k": int(t.k),
                "strategy": a,
                "target_accuracy": t.target_accuracy,
                "reached": t.reached,
                "ref_reached": target.loc[ref, "reached"],
                "not_reached": t.not_reached,
                "paired_seeds": int(t.paired_seeds),
                "ratio": t.ratio,
                "ci_low": t.ci_low,
                "ci_high": t.ci_high,
                "note": t.note,
                "budget": b.loc[a, "budget"],
                "accuracy": b.loc[a, "accuracy"],
                "ref_accuracy": b.loc[ref, "accuracy"],
                "diff_vs_ref": b.loc[a, "diff_vs_ref"],
                "diff_ci_low": b.loc[a, "diff_ci_low"],
                "diff_ci_high": b.loc[a, "diff_ci_high"],
                "seeds": int(b.loc[a, "seeds"]),
            }
        )
    return out


def _ratio_cell(r) -> str:
    if r.paired_seeds == 0:  # undefined: no stand-in number, the reason instead
        return f"- ({r.note or 'no paired seed reached it'})"
    text = f"{cs.fmt(r.ratio)}x [{cs.fmt(r.ci_low)}, {cs.fmt(r.ci_high)}] ({r.paired_seeds} paired)"
    return f"{text}; {r.note}" if r.note else text


def _verdict(r) -> str:
    """The claim table's words: fewer rollouts to the target (its interval below 1) and ahead of
    DS at an equal budget (the difference's interval above 0: a gain is a fall of -gain)."""
    fewer = cs.verdict_less(r.ratio, r.ci_low, r.ci_high) if r.paired_seeds else "-"
    ahead = cs.verdict_drop(-r.diff_vs_ref, -r.diff_ci_high, -r.diff_ci_low)
    return f"fewer rollouts to target: {fewer}; ahead at equal budget: {ahead}"


def _signed(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def budget_table(data: ClaimData, ref: str = REF, level: float = cs.LEVEL) -> pd.DataFrame:
    """`budget_frame` as the README's table (COLUMNS): one line per setting, k and strategy."""
    rows = []
    for r in budget_frame(data, ref, level).itertuples(index=False):
        rows.append(
            (
                f"{r.setting}, k {r.k}",
                r.strategy,
                cs.fmt(r.target_accuracy),
                f"{r.reached} ({r.ref_reached})",
                _ratio_cell(r),
                f"{r.budget:.0f}",
                f"{cs.fmt(r.accuracy)} vs {cs.fmt(r.ref_accuracy)}: {_signed(r.diff_vs_ref)} "
                f"[{_signed(r.diff_ci_low)}, {_signed(r.diff_ci_high)}] ({r.seeds} seeds)",
                _verdict(r),
                r.files,
            )
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))
