"""The paired statistics that decide the paper's training claims, from the learning CSV
of `benchmarks/real_learning.py` (one row per strategy, k, seed, step).

Design: every strategy runs on the same seeds, each seed fixing the start model, the prompt
order and the evaluation sampling, so strategy a and the reference (DS) are compared seed by
seed. One rule for every interval: Student's t over the paired per-seed values (n - 1 degrees of
freedom), two-sided 90 % by default — the interval that, lying inside a margin, is a TOST
equivalence test at alpha 0.05 (Schuirmann's two one-sided tests).

- `step_diff`: per evaluated step, accuracy of a minus the reference's, mean and interval.
- `late_diff` + `tost`: the mean held-out accuracy over the last third of training (the steps
  after 2/3 of them), paired difference to the reference, tested for equivalence within a margin.
- `cost_ratio`: rollouts, tokens or wall seconds per step as a ratio to the reference, geometric
  mean of the per-seed ratios with the t-interval on their logs (ratios are multiplicative).
- `verdict_*`: one line per claim, "confirmed", "refuted", "no effect larger than X" (the
  interval holds 0 and is bounded by X) or "undecided", with the numbers it rests on.

Pure functions of a DataFrame; nothing is read or written here."""

import math

import numpy as np
import pandas as pd
from scipy import stats

from paper_figs.learning_stats import mean_ci

LEVEL = 0.90
MARGIN = 0.02  # equivalence margin on the late mean accuracy: +-2 points
COST = {"rollouts": "cum_rollouts", "tokens": "cum_tokens", "wall": "wall_s"}


def paired_ci(values, level: float = LEVEL) -> tuple[float, float, float, int]:
    """Mean of paired differences, its two-sided t-interval, and the number of pairs; nan bounds
    with fewer than 2 pairs (no spread to estimate).

    >>> m, lo, hi, n = paired_ci([0.01, 0.03, 0.02])  # sd 0.01, t(0.95, 2) = 2.92
    >>> round(m, 4), round(lo, 4), round(hi, 4), n
    (0.02, 0.0031, 0.0369, 3)
    >>> paired_ci([0.5])
    (0.5, nan, nan, 1)
    """
    v = [x for x in values if x is not None and not math.isnan(x)]
    m, lo, hi = mean_ci(v, level)  # the one t-interval of the learning statistics
    return m, lo, hi, len(v)


def tost(diffs, margin: float = MARGIN) -> dict:
    """Two one-sided t-tests of |mean difference| < margin; p is the larger one-sided p.

    Equivalent at level alpha iff the (1 - 2 alpha) interval lies inside (-margin, margin).

    >>> r = tost([0.01, -0.01, 0.0, 0.005, -0.005], margin=0.02)
    >>> r["equivalent"], round(r["p"], 4)
    (True, 0.0024)
    >>> tost([0.05, 0.06, 0.04], margin=0.02)["equivalent"]
    False
    """
    v = np.asarray(diffs, float)
    n = len(v)
    if n < 2 or v.std(ddof=1) == 0:
        m = float(v.mean()) if n else math.nan
        inside = n >= 2 and abs(m) < margin  # no spread: exactly known
        return {"mean": m, "p": 0.0 if inside else math.nan, "equivalent": inside, "n": n}
    se = v.std(ddof=1) / math.sqrt(n)
    m = float(v.mean())
    p_low = float(stats.t.sf((m + margin) / se, n - 1))  # H0: mean <= -margin
    p_high = float(stats.t.cdf((m - margin) / se, n - 1))  # H0: mean >= +margin
    p = max(p_low, p_high)
    return {"mean": m, "p": p, "equivalent": p < (1 - LEVEL) / 2, "n": n}


def _runs(df, strategy, k):
    return df[(df["strategy"] == strategy) & (df["k"] == k)]


def _evaluated(df, strategy, k) -> pd.DataFrame:
    """seed x step table of held-out accuracy (evaluated steps only)."""
    r = _runs(df, strategy, k).dropna(subset=["eval_accuracy"])
    return r.pivot(index="seed", columns="step", values="eval_accuracy")


def step_diff(df, strategy, k, ref: str = "ds", level: float = LEVEL) -> pd.DataFrame:
    """Per evaluated step: mean accuracy of `strategy` and of `ref`, their paired difference and
    its t-interval over the seeds both ran (a seed one of them lacks is not paired)."""
    a, b = _evaluated(df, strategy, k), _evaluated(df, ref, k)
    seeds = sorted(set(a.index) & set(b.index))
    out = []
    for step in sorted(set(a.columns) & set(b.columns)):
        d = a.loc[seeds, step] - b.loc[seeds, step]
        m, lo, hi, n = paired_ci(d.tolist(), level)
        out.append(
            {
                "k": int(k),
                "strategy": strategy,
                "step": int(step),
                "accuracy": float(a.loc[seeds, step].mean()),
                "ref_accuracy": float(b.loc[seeds, step].mean()),
                "diff": m,
                "ci_low": lo,
                "ci_high": hi,
                "seeds": n,
            }
        )
    return pd.DataFrame(out)


def late_mean(df, strategy, k) -> pd.Series:
    """Per seed: mean held-out accuracy over the evaluated steps after 2/3 of training.

    >>> rows = [("ds", 8, 0, s, 0.1 * s) for s in (0, 3, 6, 9)]
    >>> df = pd.DataFrame(rows, columns=["strategy", "k", "seed", "step", "eval_accuracy"])
    >>> round(float(late_mean(df, "ds", 8)[0]), 6)  # steps 6 and 9 (> 2/3 x 9 = 6 counts)
    0.75
    """
    acc = _evaluated(df, strategy, k)
    last = max(acc.columns)
    keep = [s for s in acc.columns if s >= 2 * last / 3 and s > 0]
    return acc[keep].mean(axis=1)


def late_diff(df, strategy, k, ref: str = "ds") -> pd.Series:
    """Per paired seed: late_mean(strategy) - late_mean(ref)."""
    a, b = late_mean(df, strategy, k), late_mean(df, ref, k)
    seeds = sorted(set(a.index) & set(b.index))
    return a.loc[seeds] - b.loc[seeds]


def cost_ratio(df, strategy, k, what: str = "rollouts", ref: str = "ds", level: float = LEVEL):
    """Geometric-mean ratio of `what` per step (its cumulative total at the last step) to `ref`,
    paired by seed, with the t-interval on the logs: (ratio, low, high, seeds)."""
    col = COST[what]
    end = {
        al: _runs(df, al, k).sort_values("step").groupby("seed")[col].last()
        for al in (strategy, ref)
    }
    seeds = sorted(set(end[strategy].index) & set(end[ref].index))
    logs = [math.log(end[strategy][s] / end[ref][s]) for s in seeds if end[ref][s] > 0]
    m, lo, hi, n = paired_ci(logs, level)
    return math.exp(m), math.exp(lo), math.exp(hi), n


def log_ratio_gap(df, strategy, k, ref: str = "ds", level: float = LEVEL):
    """Per seed log(token ratio) - log(rollout ratio) to `ref`: negative when tokens are saved
    more than rollouts. Returned as the factor exp(.) with its interval: (factor, low, high, n)."""
    logs = []
    for s in sorted(set(_runs(df, strategy, k)["seed"]) & set(_runs(df, ref, k)["seed"])):
        one = df[df["seed"] == s]
        tok = cost_ratio(one, strategy, k, "tokens", ref)[0]
        rol = cost_ratio(one, strategy, k, "rollouts", ref)[0]
        logs.append(math.log(tok / rol))
    m, lo, hi, n = paired_ci(logs, level)
    return math.exp(m), math.exp(lo), math.exp(hi), n


def fmt(x, digits: int = 3) -> str:
    """A number for a verdict line; '-' for an undefined one (never a stand-in value)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def verdict_equal(mean, lo, hi, margin: float = MARGIN) -> str:
    """Verdict on "no difference" from a paired interval and an equivalence margin.

    >>> verdict_equal(0.001, -0.01, 0.012)
    'confirmed'
    >>> verdict_equal(0.05, 0.03, 0.07)
    'refuted'
    >>> verdict_equal(0.0, -0.04, 0.05)
    'no effect larger than 0.050'
    >>> verdict_equal(0.02, 0.005, 0.035)
    'undecided'
    """
    if math.isnan(lo):
        return "undecided"
    if -margin < lo and hi < margin:
        return "confirmed"
    if lo >= margin or hi <= -margin:
        return "refuted"
    if lo <= 0 <= hi:
        return f"no effect larger than {max(-lo, hi):.3f}"
    return "undecided"


def verdict_less(ratio, lo, hi) -> str:
    """Verdict on "ratio < 1" from its interval: confirmed if the whole interval is below 1,
    refuted if it is at or above 1, else no effect larger than the interval's reach below 1.

    >>> verdict_less(0.8, 0.7, 0.9), verdict_less(1.1, 1.0, 1.2), verdict_less(0.95, 0.8, 1.1)
    ('confirmed', 'refuted', 'no effect larger than 0.800x')
    """
    return _below(lo, hi, 1.0, f"{lo:.3f}x")


def _below(lo, hi, bound: float, reach: str) -> str:
    """The one rule of "it lies below `bound`": the interval below, at or above it, or across."""
    if math.isnan(lo):
        return "undecided"
    if hi < bound:
        return "confirmed"
    if lo >= bound:
        return "refuted"
    return f"no effect larger than {reach}"


def verdict_size(ratio, lo, hi, paper: float, tol: float = 0.05) -> str:
    """Verdict on "the ratio is the paper's number" (e.g. 0.78x: 22 % fewer): confirmed if the
    interval lies within +-tol of it (an equivalence test, as TOST on the accuracy), refuted if
    it excludes the number, else undecided.

    >>> verdict_size(0.77, 0.75, 0.80, 0.78), verdict_size(0.66, 0.62, 0.72, 0.33)
    ('confirmed', 'refuted')
    >>> verdict_size(0.8, 0.6, 1.0, 0.78)
    'undecided'
    """
    if math.isnan(lo):
        return "undecided"
    if paper - tol < lo and hi < paper + tol:
        return "confirmed"
    if not lo <= paper <= hi:
        return "refuted"
    return "undecided"


def verdict_drop(mean, lo, hi) -> str:
    """Verdict on "it falls" from a paired change (late minus early): confirmed if the interval
    lies below 0, refuted if it does not reach below 0, else no fall larger than its reach.

    >>> verdict_drop(-0.2, -0.3, -0.1), verdict_drop(0.01, 0.0, 0.02), verdict_drop(0, -0.05, 0.04)
    ('confirmed', 'refuted', 'no effect larger than 0.050')
    """
    return _below(lo, hi, 0.0, f"{-lo:.3f}")


def fraction_change(df, strategy, k) -> pd.Series:
    """Per seed: mean effective fraction over the last third of the steps minus the first third
    (steps >= 1; a step with no group has no fraction and is left out)."""
    r = _runs(df, strategy, k)
    r = r[r["step"] > 0].dropna(subset=["effective_fraction"])
    if r.empty:
        return pd.Series(dtype=float)
    last = r["step"].max()
    early = r[r["step"] <= last / 3].groupby("seed")["effective_fraction"].mean()
    late = r[r["step"] >= 2 * last / 3].groupby("seed")["effective_fraction"].mean()
    seeds = sorted(set(early.index) & set(late.index))
    return late.loc[seeds] - early.loc[seeds]


def gain(df, strategy, k) -> pd.Series:
    """Per seed: held-out accuracy at the last evaluated step minus the start's (step 0)."""
    acc = _evaluated(df, strategy, k)
    if acc.empty or 0 not in acc.columns:
        return pd.Series(dtype=float)
    return acc[max(acc.columns)] - acc[0]


def verdicts(df, ks=None, ref: str = "ds", margin: float = MARGIN) -> list[str]:
    """One line per (claim, k, strategy) the CSV can speak to: accuracy equivalence to `ref`
    (claims 1, 3, 5), rollouts fewer than `ref` (claims 1, 3), tokens saved beyond rollouts
    (claim 2). Strategies absent from the CSV are skipped; every line names its seeds."""
    lines = []
    for k in sorted(ks or df["k"].unique()):
        names = [a for a in dict.fromkeys(df[df["k"] == k]["strategy"]) if a != ref]
        if ref not in set(df[df["k"] == k]["strategy"]):
            continue
        for a in names:
            m, lo, hi, n = paired_ci(late_diff(df, a, k, ref).tolist())
            t = tost(late_diff(df, a, k, ref).tolist(), margin)
            lines.append(
                f"k={k} {a} vs {ref}: late accuracy diff {fmt(m)} [{fmt(lo)}, {fmt(hi)}] "
                f"(90 %, {n} seeds; TOST +-{margin:g}: p {fmt(t['p'])}) -> "
                f"same accuracy: {verdict_equal(m, lo, hi, margin)}"
            )
            r, rlo, rhi, n = cost_ratio(df, a, k, "rollouts", ref)
            lines.append(
                f"k={k} {a} vs {ref}: rollouts {fmt(r)}x [{fmt(rlo)}, {fmt(rhi)}] ({n} seeds) "
                f"-> fewer rollouts: {verdict_less(r, rlo, rhi)}"
            )
            g, glo, ghi, n = log_ratio_gap(df, a, k, ref)
            tr = cost_ratio(df, a, k, "tokens", ref)
            lines.append(
                f"k={k} {a} vs {ref}: tokens {fmt(tr[0])}x / rollouts {fmt(r)}x = {fmt(g)} "
                f"[{fmt(glo)}, {fmt(ghi)}] ({n} seeds) -> tokens saved beyond rollouts: "
                f"{verdict_less(g, glo, ghi)}"
            )
    return lines
