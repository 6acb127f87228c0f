"""Paired per-step ratios of a ``stream_real.py`` run (wall, rollouts, tokens per effective group),
with bootstrap intervals.

A real run's wall ratio moves with the machine: two quiet 8-step runs of the same command read
DS by rounds at 0.076 and 0.105 s per group and moved strategies' ratios by up to 0.2.  But
``stream_real.py`` runs the strategies' steps in turn (step 1 of each, then step 2 of each, ...),
so step s of a strategy and step s of DS by rounds ran within seconds of each other, under the
same load: a pair.  The ratio reported is the run's (total wall per effective group over DS's);
its interval resamples the steps as pairs (``scipy.stats.bootstrap``, paired, BCa), so a load
change that falls on both halves of a pair cancels and what is left is the step-to-step spread.

The same pairing gives the counts' ratios (``key`` "step_rollouts" / "step_tokens"): a count does
not move with the machine, but it moves with the prompts a step drew, and step s of every strategy
drew from the same task with the same seed (``against_streamed``: each strategy against DS streamed,
the strongest baseline).

What the interval does not cover: steps are treated as independent, but a stream's carried
prompts and the machine's load link neighbouring steps; and it is one run on one machine.

>>> step_wall = [1.0, 1.2, 0.9, 1.1, 1.0, 1.3]
>>> x = {"step_wall": [0.8 * w for w in step_wall], "step_eff": [4] * 6}
>>> ds = {"step_wall": step_wall, "step_eff": [4] * 6}
>>> r, lo, hi = paired_ratio(x, ds)
>>> round(r, 3), round(lo, 3), round(hi, 3)  # the same 0.8 in every pair: no spread
(0.8, 0.8, 0.8)
>>> verdict((0.83, 0.80, 0.86), 0.85)
'undecided'
"""

import numpy as np
from scipy.stats import bootstrap

LEVEL = 0.90  # the interval's confidence level (the claims tables' too)
RESAMPLES = 9999


# the real loop's token goal (benchmarks/stream_real.py --strategies tokens): the best strategy's
# tokens per effective group at most this times DS streamed's, every group it returns effective
TOKEN_GOAL = 0.70
# the per-step counts a run keeps beside step_wall (stream_real.py), by the total's name
COUNTS = {"rollouts": "step_rollouts", "tokens": "step_tokens"}


def _ratio(wx, ex, wy, ey, axis=-1):
    return (np.sum(wx, axis) / np.sum(ex, axis)) / (np.sum(wy, axis) / np.sum(ey, axis))


def paired_ratio(t: dict, ds: dict, level: float = LEVEL, seed: int = 0, key: str = "step_wall"):
    """(ratio, lo, hi): t's wall (or the per-step count `key`: ``COUNTS``) per effective group over
    DS's, over the steps both ran, and its paired bootstrap interval; None where undefined (fewer
    than 2 paired steps, or a step without an effective group: its cost per group does not
    exist)."""
    wx, ex = t.get(key, []), t.get("step_eff", [])
    wy, ey = ds.get(key, []), ds.get("step_eff", [])
    n = min(len(wx), len(wy))
    if n < 2 or not all(ex[:n]) or not all(ey[:n]):
        return None
    data = tuple(np.asarray(a[:n], dtype=float) for a in (wx, ex, wy, ey))
    r = float(_ratio(*data))
    per_step = (data[0] / data[1]) / (data[2] / data[3])
    if np.ptp(per_step) == 0 and np.ptp(data[1] / data[3]) == 0:
        return r, r, r  # every pair the same ratio: no spread (and BCa is undefined)
    res = bootstrap(
        data,
        _ratio,
        paired=True,
        vectorized=True,
        confidence_level=level,
        n_resamples=RESAMPLES,
        rng=np.random.default_rng(seed),
    )
    return r, float(res.confidence_interval.low), float(res.confidence_interval.high)


def verdict(interval, goal: float) -> str:
    """'met' when the whole interval is at or below `goal`, 'MISSED' when it is above, else
    'undecided' (the run cannot tell); '-' when undefined."""
    if interval is None:
        return "-"
    _, lo, hi = interval
    if hi <= goal:
        return "met"
    return "MISSED" if lo > goal else "undecided"


def fmt(interval) -> str:
    """'0.83 [0.80, 0.86]', or '-' when undefined."""
    if interval is None:
        return "-"
    return "{:.2f} [{:.2f}, {:.2f}]".format(*interval)


def print_paired(rows: dict, level: float = LEVEL) -> None:
    """Each strategy's wall ratio to DS by rounds and to DS streamed, paired by step."""
    ds, dss = rows["ds rounds"], rows.get("ds stream")
    n = len(ds.get("step_wall", []))
    print(
        f"\npaired by step ({n} steps): wall per effective group over DS's, "
        f"{level:.0%} bootstrap interval"
    )
    w = max(24, 1 + max(map(len, rows)))  # the label column: the longest label and a space
    print(f"{'strategy':<{w}}{'/ DS by rounds':>22}{'/ DS streamed':>22}")
    for label, t in rows.items():
        if label == "ds rounds":
            continue
        vs = "-" if dss is None or label == "ds stream" else fmt(paired_ratio(t, dss, level))
        print(f"{label:<{w}}{fmt(paired_ratio(t, ds, level)):>22}{vs:>22}")


def goal_met(got: dict, goal: float = TOKEN_GOAL) -> str:
    """The token goal's verdict on one strategy's ``against_streamed`` entry: ``verdict`` of its
    tokens' interval against `goal`, and 'MISSED' unless every group it returned was effective.

    >>> goal_met({"tokens": (0.62, 0.58, 0.66), "eff_frac": 1.0})
    'met'
    >>> goal_met({"tokens": (0.62, 0.58, 0.66), "eff_frac": 0.9})
    'MISSED'
    """
    return verdict(got["tokens"], goal) if got["eff_frac"] == 1.0 else "MISSED"


def against_streamed(rows: dict, level: float = LEVEL) -> dict:
    """{label: {"rollouts": (ratio, lo, hi), "tokens": ..., "eff_frac": x}}: each strategy's
    rollouts and tokens per effective group over DS streamed's (``paired_ratio`` on the per-step
    counts; None where undefined) and the effective fraction of the groups it returned (None: it
    returned none). {} when the run has no DS streamed row.

    >>> ds = {"step_rollouts": [64, 80], "step_tokens": [900, 1100], "step_eff": [4, 4]}
    >>> x = {"step_rollouts": [48, 60], "step_tokens": [630, 770], "step_eff": [4, 4],
    ...      "eff": 8, "groups": 8}
    >>> got = against_streamed({"ds stream": {**ds, "eff": 8, "groups": 8}, "x": x})["x"]
    >>> got["rollouts"], got["tokens"], got["eff_frac"]
    ((0.75, 0.75, 0.75), (0.7, 0.7, 0.7), 1.0)
    """
    dss = rows.get("ds stream")
    if dss is None:
        return {}
    out = {}
    for label, t in rows.items():
        got = {name: paired_ratio(t, dss, level, key=key) for name, key in COUNTS.items()}
        got["eff_frac"] = t["eff"] / t["groups"] if t.get("groups") else None
        out[label] = got
    return out
