"""The numbers the paper prints from the real-loop learning curves (benchmarks/real_learning.py).

Input: the learning CSV, one row per (strategy, k, seed, step) with cum_rollouts, cum_tokens and
eval_accuracy (empty where that step was not evaluated; step 0 = the start model).  Output:

- `target_table`: the rollouts (and tokens) each run needs to reach a fixed accuracy, as a ratio
  to DS.  The target is a fraction (0.9) of DS's mean gain over its start, one accuracy per k.  A
  run's cost to target is read off its eval curve by linear interpolation at the first crossing.
- `budget_table`: held-out accuracy at an equal rollout budget (the largest budget every run at
  that k reached), and its difference to DS.
- `band`: mean curve over seeds with a 95 % band, on a common grid (for the figure).

Statistics (one rule everywhere): seeds are independent replicates, the interval is Student's t
over seeds (n - 1 degrees of freedom).  Strategy a and DS share a seed's start model, prompt
order and evaluation seeds, so ratios and differences are paired by seed: the ratio is the
geometric mean of the per-seed ratios with the t-interval on their logs.  A run that never
reaches the target has no cost: its seed is listed in `not_reached` and left out of the ratio,
whose row says on how many seeds it rests (never silently dropped); so is a seed whose start
already meets the target (its cost is 0, no ratio), named in `note`.  If DS did not gain at all
there is no target and no ratio (`note` says so)."""

import math

import numpy as np
import pandas as pd
from scipy import stats

# The columns the figure and tables need (benchmarks/real_learning.py writes more).
COLUMNS = (
    "strategy",
    "k",
    "seed",
    "step",
    "cum_rollouts",
    "cum_tokens",
    "wall_s",
    "eval_accuracy",
)
MEASURES = ("cum_rollouts", "cum_tokens")
LEVEL = 0.95


def reach(x, y, target: float) -> float:
    """First x at which the piecewise-linear curve through (x, y) reaches `target`; nan if never.

    >>> reach([0, 100, 200], [0.40, 0.50, 0.70], 0.60)
    150.0
    >>> round(reach([0, 100, 200], [0.40, 0.65, 0.55], 0.60), 9)  # the first crossing counts
    80.0
    >>> reach([0, 100], [0.40, 0.50], 0.60)
    nan
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    hit = np.flatnonzero(y >= target)
    if len(hit) == 0:
        return math.nan
    i = int(hit[0])
    if i == 0:
        return float(x[0])
    frac = (target - y[i - 1]) / (y[i] - y[i - 1])
    return float(x[i - 1] + frac * (x[i] - x[i - 1]))


def mean_ci(values, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and Student-t interval over independent replicates; (mean, nan, nan) for one value.

    >>> mean_ci([1.0, 2.0, 3.0])  # sd 1, se 1/sqrt(3), t(0.975, 2) = 4.303
    (2.0, -0.4841..., 4.4841...)
    >>> mean_ci([5.0])
    (5.0, nan, nan)
    """
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if len(v) < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, m - half, m + half


def ratio_ci(ratios, level: float = LEVEL) -> tuple[float, float, float]:
    """Geometric mean of per-seed ratios and the t-interval on their logs, mapped back.

    >>> [round(v, 9) for v in ratio_ci([0.8, 0.8, 0.8])]
    [0.8, 0.8, 0.8]
    >>> g, lo, hi = ratio_ci([0.5, 2.0])  # logs -0.69, +0.69: mean 0, se 0.69, t(0.975, 1) 12.7
    >>> round(g, 6), round(lo, 6), round(1 / hi, 6)
    (1.0, 0.00015, 0.00015)
    """
    m, lo, hi = mean_ci(np.log(np.asarray(ratios, float)), level)
    return math.exp(m), math.exp(lo), math.exp(hi)


def check(df: pd.DataFrame, source: str = "learning CSV") -> pd.DataFrame:
    """The schema the figure and tables rely on; one clear error, naming the file, if not."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{source}: missing columns {missing} (need {list(COLUMNS)})")
    if df.duplicated(["strategy", "k", "seed", "step"]).any():
        raise ValueError(f"{source}: more than one row for an (strategy, k, seed, step)")
    start = df[df["step"] == 0]
    if start["eval_accuracy"].isna().any() or len(start) != len(runs(df)):
        raise ValueError(f"{source}: every run needs a step-0 row with its start accuracy")
    return df


def runs(df: pd.DataFrame) -> list[tuple]:
    return sorted(df.groupby(["strategy", "k", "seed"]).groups)


def curve(df: pd.DataFrame, strategy, k, seed, measure="cum_rollouts"):
    """(x, accuracy) of one run's evaluated steps, in step order."""
    r = df[(df["strategy"] == strategy) & (df["k"] == k) & (df["seed"] == seed)]
    r = r.dropna(subset=["eval_accuracy"]).sort_values("step")
    return r[measure].to_numpy(float), r["eval_accuracy"].to_numpy(float)


def target_accuracy(df: pd.DataFrame, k, frac: float = 0.9, ref: str = "ds") -> float:
    """start + frac x (final - start), both DS's means over seeds at this k."""
    d = df[(df["strategy"] == ref) & (df["k"] == k)].dropna(subset=["eval_accuracy"])
    if d.empty:
        raise ValueError(f"no {ref} runs at k={k}: the ratios need the reference strategy")
    ends = d.sort_values("step").groupby("seed")["eval_accuracy"].agg(["first", "last"]).mean()
    return float(ends["first"] + frac * (ends["last"] - ends["first"]))


def _order(df, ref):
    names = list(dict.fromkeys(df["strategy"]))
    return [ref] + [a for a in names if a != ref] if ref in names else names


def target_table(df: pd.DataFrame, frac: float = 0.9, ref: str = "ds", level: float = LEVEL):
    """Per (k, strategy, measure): cost to the target accuracy and its ratio to `ref` (`level`
    interval: 95 % by default, the claim table's 90 %).

    DS gains 0.2 in 200 rollouts on both seeds, so the target is 0.405 + 0.9 x 0.2 = 0.585;
    sara gets there in half the rollouts, "slow" never:

    >>> rows = []
    >>> for a, slope in (("ds", 1e-3), ("sara", 2e-3), ("slow", 5e-4)):
    ...     for s in (0, 1):
    ...         for step, x in enumerate((0, 100, 200)):
    ...             rows.append((a, 8, s, step, x, 10 * x, step, 0.4 + 0.01 * s + slope * x))
    >>> t = target_table(pd.DataFrame(rows, columns=COLUMNS))
    >>> t[t.measure == "rollouts"][["strategy", "reached", "not_reached", "mean_to_target",
    ...                             "ratio", "ci_low", "ci_high"]]
      strategy reached not_reached  mean_to_target  ratio  ci_low  ci_high
    0       ds     2/2                       180.0    1.0     1.0      1.0
    2     sara     2/2                        90.0    0.5     0.5      0.5
    4     slow     0/2         0 1             NaN    NaN     NaN      NaN
    """
    out = []
    for k in sorted(df["k"].unique()):
        target, gain = target_accuracy(df, k, frac, ref), target_accuracy(df, k, 1.0, ref)
        gain -= target_accuracy(df, k, 0.0, ref)
        done = set(runs(df))
        for a in _order(df[df["k"] == k], ref):
            have = sorted(s for b, kk, s in done if b == a and kk == k)
            for m in MEASURES:
                cost = {s: reach(*curve(df, a, k, s, m), target) for s in have}
                base = {s: reach(*curve(df, ref, k, s, m), target) for s in have}
                # a seed whose start already meets the target (either side) has no finite ratio
                ok = [s for s in have if cost[s] > 0 and base[s] > 0]  # nan > 0 is False
                at_start = [s for s in have if cost[s] == 0 or base[s] == 0]
                note = f"paired seeds exclude {at_start}: start at target" if at_start else ""
                if gain <= 0:
                    ok, note = [], f"{ref} did not gain ({gain:+.3f}): no target"
                ratio, lo, hi = ratio_ci([cost[s] / base[s] for s in ok], level)
                out.append(
                    {
                        "k": int(k),
                        "strategy": a,
                        "measure": m.removeprefix("cum_"),
                        "target_accuracy": target,
                        "reached": f"{sum(not math.isnan(cost[s]) for s in have)}/{len(have)}",
                        "not_reached": " ".join(str(s) for s in have if math.isnan(cost[s])),
                        "mean_to_target": mean_ci([cost[s] for s in have])[0],
                        "paired_seeds": len(ok),
                        "ratio": ratio,
                        "ci_low": lo,
                        "ci_high": hi,
                        "note": note,
                    }
                )
    return pd.DataFrame(out)


def budget_table(df: pd.DataFrame, ref: str = "ds", measure="cum_rollouts", level=LEVEL):
    """Per (k, strategy): accuracy at the largest budget every run at k reached, and - to `ref`
    (`level` intervals over seeds).

    >>> rows = [("ds", 8, s, i, x, x, i, 0.4 + 1e-3 * x) for s in (0, 1)
    ...         for i, x in enumerate((0, 100, 200))]
    >>> rows += [("sara", 8, s, i, x, x, i, 0.4 + 2e-3 * x) for s in (0, 1)
    ...          for i, x in enumerate((0, 50, 150))]
    >>> budget_table(pd.DataFrame(rows, columns=COLUMNS))[["strategy", "budget", "accuracy",
    ...                                                    "diff_vs_ref"]]
      strategy  budget  accuracy  diff_vs_ref
    0       ds   150.0      0.55         0.00
    1     sara   150.0      0.70         0.15
    """
    out = []
    for k in sorted(df["k"].unique()):
        at_k = df[df["k"] == k]
        ends = at_k.dropna(subset=["eval_accuracy"]).groupby(["strategy", "seed"])[measure].max()
        budget = float(ends.min())
        acc = {
            (a, s): float(np.interp(budget, *curve(df, a, k, s, measure))) for a, s in ends.index
        }
        for a in _order(at_k, ref):
            seeds = sorted(s for b, s in acc if b == a)
            paired = [acc[a, s] - acc[ref, s] for s in seeds if (ref, s) in acc]
            m, lo, hi = mean_ci([acc[a, s] for s in seeds], level)
            d, dlo, dhi = mean_ci(paired, level)
            out.append(
                {
                    "k": int(k),
                    "strategy": a,
                    "budget": budget,
                    "measure": measure.removeprefix("cum_"),
                    "seeds": len(seeds),
                    "accuracy": round(m, 12),
                    "ci_low": lo,
                    "ci_high": hi,
                    "diff_vs_ref": round(d, 12),
                    "diff_ci_low": dlo,
                    "diff_ci_high": dhi,
                }
            )
    return pd.DataFrame(out)


def band(df: pd.DataFrame, measure: str = "cum_rollouts", points: int = 41) -> pd.DataFrame:
    """Mean accuracy over seeds with its 95 % t-band, per (k, strategy), on a grid of `points`
    budgets from 0 to the smallest final budget among that strategy's seeds (no extrapolation).

    >>> rows = [("ds", 8, s, i, x, x, i, a) for s, ys in ((0, (0.4, 0.6)), (1, (0.4, 0.8)))
    ...         for i, (x, a) in enumerate(zip((0, 100), ys))]
    >>> band(pd.DataFrame(rows, columns=COLUMNS), points=3)[["x", "mean", "seeds"]]
           x  mean  seeds
    0    0.0  0.40      2
    1   50.0  0.55      2
    2  100.0  0.70      2
    """
    out = []
    for (k, a), sub in df.groupby(["k", "strategy"], sort=True):
        seeds = sorted(sub["seed"].unique())
        curves = [curve(df, a, k, s, measure) for s in seeds]
        grid = np.linspace(0.0, min(float(x[-1]) for x, _ in curves), points)
        ys = np.array([np.interp(grid, x, y) for x, y in curves])
        for j, x in enumerate(grid):
            m, lo, hi = mean_ci(ys[:, j])
            out.append(
                {
                    "k": int(k),
                    "strategy": a,
                    "measure": measure.removeprefix("cum_"),
                    "x": float(x),
                    "mean": round(m, 12),
                    "ci_low": lo,
                    "ci_high": hi,
                    "seeds": len(seeds),
                }
            )
    return pd.DataFrame(out)
