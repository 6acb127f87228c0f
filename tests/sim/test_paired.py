"""sara_sim/sim/paired.py: a real run's wall ratios paired by step, with bootstrap intervals — the
ratio is the run's own, the interval covers a known ratio, pairing removes a load drift that falls
on both halves of a pair, and undefined stays undefined; the counts (rollouts, tokens) against DS
streamed paired the same way."""

import numpy as np
import pytest

from sara_sim.sim.paired import against_streamed, fmt, paired_ratio, print_paired, verdict


def _row(wall, eff=32):
    return {
        "step_wall": list(wall),
        "step_eff": [eff] * len(wall),
        "wall": float(np.sum(wall)),
        "eff": eff * len(wall),
    }


def _drifting(n, true, noise, seed):
    """DS's steps under a load that doubles over the run; the strategy's step beside each one
    takes `true` x its time (x a per-step noise)."""
    rng = np.random.default_rng(seed)
    load = np.linspace(1.0, 2.0, n) * rng.uniform(0.8, 1.25, n)
    return _row(true * load * rng.normal(1.0, noise, n)), _row(load)


def test_the_ratio_is_the_run_s_total_over_ds_s_and_the_interval_brackets_it():
    x, ds = _drifting(32, 0.8, 0.05, seed=1)
    r, lo, hi = paired_ratio(x, ds)
    assert r == (x["wall"] / x["eff"]) / (ds["wall"] / ds["eff"])
    assert lo < r < hi


def test_the_interval_covers_the_true_ratio_at_about_its_level():
    hits = 0
    for seed in range(60):
        _, lo, hi = paired_ratio(*_drifting(32, 0.85, 0.10, seed))
        hits += lo <= 0.85 <= hi
    assert 48 <= hits <= 60  # 90 % of 60 is 54; binomial 3 sd below is ~47


def test_pairing_cancels_a_load_drift_that_an_unpaired_spread_would_keep():
    x, ds = _drifting(32, 0.8, 0.03, seed=2)
    _, lo, hi = paired_ratio(x, ds)
    assert hi - lo < 0.05  # the pairs' own spread
    per = np.asarray(x["step_wall"]) / np.mean(ds["step_wall"])
    assert np.std(per) > 0.15  # each step against DS's mean: the drift dominates


def test_verdict_is_met_or_missed_only_when_the_whole_interval_says_so():
    assert verdict((0.80, 0.78, 0.84), 0.85) == "met"
    assert verdict((0.90, 0.86, 0.95), 0.85) == "MISSED"
    assert verdict((0.84, 0.80, 0.88), 0.85) == "undecided"
    assert verdict(None, 0.85) == "-" and fmt(None) == "-"
    assert fmt((0.8, 0.75, 0.851)) == "0.80 [0.75, 0.85]"


def test_undefined_without_two_paired_steps_or_with_a_step_that_made_no_group():
    ds = _row([1.0, 1.1, 0.9])
    assert paired_ratio(_row([0.8]), ds) is None  # one pair: no spread to speak of
    assert paired_ratio({"step_wall": [1.0, 1.0], "step_eff": [4, 0]}, ds) is None
    assert paired_ratio({}, ds) is None  # a run from before per-step books
    x = _row([0.8, 0.9, 0.7, 0.8, 0.9])  # a longer run is paired over the steps both ran
    assert paired_ratio(x, ds)[0] == pytest.approx(2.4 / 3.0, rel=1e-12)


def test_the_table_has_a_row_per_strategy_and_dash_where_undefined(capsys):
    x, ds = _drifting(8, 0.8, 0.05, seed=3)
    rows = {
        "ds rounds": ds,
        "sara stream": x,
        "ds stream": _row(ds["step_wall"]),
        "sara rounds": {"step_wall": [1.0] * 8, "step_eff": [0] * 8},
    }
    print_paired(rows)
    out = capsys.readouterr().out.strip().splitlines()
    assert "8 steps" in out[0] and len(out) == 2 + 3
    lines = {line[:24].strip(): line[24:].split() for line in out[2:]}
    assert lines["ds stream"] == ["1.00", "[1.00,", "1.00]", "-"]
    assert lines["sara rounds"] == ["-", "-"]
    assert lines["sara stream"][0] == "0.80" or lines["sara stream"][0] == "0.79"


def _counts(rollouts, tokens, eff=4, groups=None):
    n = len(rollouts)
    return {
        "step_rollouts": list(rollouts),
        "step_tokens": list(tokens),
        "step_eff": [eff] * n,
        "rollouts": sum(rollouts),
        "tokens": sum(tokens),
        "eff": eff * n,
        "groups": eff * n if groups is None else groups,
    }


def test_counts_against_ds_streamed_are_the_totals_ratio_paired_by_step():
    rng = np.random.default_rng(4)
    roll = rng.integers(40, 60, 16)  # DS streamed's rollouts per step (4 effective groups)
    tok = roll * rng.uniform(25, 35, 16)
    rows = {
        "ds stream": _counts(roll, tok),
        "x": _counts(roll * 0.8 + rng.normal(0, 2, 16), tok * 0.6 + rng.normal(0, 40, 16)),
        "none": _counts([0, 0], [0, 0], eff=0, groups=0),
    }
    got = against_streamed(rows)
    assert got["ds stream"]["rollouts"] == (1.0, 1.0, 1.0) and got["ds stream"]["eff_frac"] == 1.0
    x = rows["x"]
    for name in ("rollouts", "tokens"):
        r, lo, hi = got["x"][name]
        want = (x[name] / x["eff"]) / (rows["ds stream"][name] / rows["ds stream"]["eff"])
        assert r == pytest.approx(want, rel=1e-12) and lo < r < hi
        assert (r, lo, hi) == paired_ratio(x, rows["ds stream"], key=f"step_{name}")
    assert 0.75 < got["x"]["rollouts"][0] < 0.85 and 0.55 < got["x"]["tokens"][0] < 0.65
    assert got["none"] == {"rollouts": None, "tokens": None, "eff_frac": None}  # undefined
    rows["half"] = _counts(roll, tok, groups=128)  # 64 effective of 128 groups returned
    assert against_streamed(rows)["half"]["eff_frac"] == 0.5
    assert against_streamed({"ds rounds": rows["x"]}) == {}  # no DS streamed row: no reference
