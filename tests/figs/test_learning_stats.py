"""paper_figs.learning_stats on hand-computable curves: crossing by interpolation, t-intervals
over seeds, paired log-ratios to DS, runs that never reach the target, equal-budget accuracy."""

import doctest
import math

import numpy as np
import pandas as pd
import pytest

from paper_figs import learning_stats as ls

T975 = {1: 12.706204736174707, 2: 4.302652729749464}  # Student t quantiles (tables)


def frame(runs):
    """{(strategy, seed): [(cum_rollouts, accuracy or None), ...]} -> learning CSV rows (k 8);
    tokens = 10 x rollouts."""
    rows = [
        (a, 8, s, i, x, 10 * x, float(i), acc)
        for (a, s), pts in runs.items()
        for i, (x, acc) in enumerate(pts)
    ]
    return pd.DataFrame(rows, columns=ls.COLUMNS)


def test_doctests():
    assert doctest.testmod(ls, optionflags=doctest.ELLIPSIS).failed == 0


def test_reach_interpolates_the_first_crossing():
    assert ls.reach([0, 10, 20], [0.2, 0.4, 0.8], 0.6) == pytest.approx(15.0)
    assert ls.reach([0, 10, 20], [0.2, 0.6, 0.8], 0.6) == 10.0  # exactly on a point
    assert ls.reach([0, 10], [0.7, 0.9], 0.6) == 0.0  # the start is already there
    assert ls.reach([0, 10, 20, 30], [0.2, 0.7, 0.3, 0.9], 0.6) == pytest.approx(8.0)
    assert math.isnan(ls.reach([0, 10], [0.2, 0.59], 0.6))


def test_mean_ci_is_the_student_t_interval():
    m, lo, hi = ls.mean_ci([1.0, 2.0, 3.0])  # sd 1
    assert m == 2.0 and hi - m == pytest.approx(T975[2] / math.sqrt(3)) and m - lo == hi - m
    assert ls.mean_ci([4.0, np.nan, 6.0])[0] == 5.0  # nan = no value, not a zero
    assert all(math.isnan(v) for v in ls.mean_ci([]))


def test_ratio_ci_is_a_t_interval_on_logs():
    g, lo, hi = ls.ratio_ci([1.0, 4.0])  # logs 0 and 2 ln2: mean ln2, sd sqrt(2) ln2, se ln2
    assert g == pytest.approx(2.0)
    assert lo == pytest.approx(2.0 ** (1 - T975[1])) and hi == pytest.approx(2.0 ** (1 + T975[1]))
    assert ls.ratio_ci([0.5, 0.5, 0.5]) == pytest.approx((0.5, 0.5, 0.5))


def test_target_table_pairs_seeds_and_reports_runs_that_never_reach():
    # DS: start 0.4 on both seeds, final 0.6 and 0.8 -> mean gain 0.3, target 0.4 + 0.27 = 0.67
    df = frame(
        {
            ("ds", 0): [(0, 0.4), (100, 0.5), (200, 0.6)],
            ("ds", 1): [(0, 0.4), (100, 0.6), (200, 0.8)],
            ("sara", 0): [(0, 0.4), (50, 0.5), (100, 0.7)],  # 0.67 at 92.5
            ("sara", 1): [(0, 0.4), (100, None), (200, 0.6)],  # never (the None is not evaluated)
        }
    )
    t = ls.target_table(df).set_index(["strategy", "measure"])
    assert t["target_accuracy"].unique() == pytest.approx([0.67])
    ds, sara = t.loc["ds", "rollouts"], t.loc["sara", "rollouts"]
    assert ds["reached"] == "1/2" and ds["not_reached"] == "0"  # DS seed 0 stops at 0.6
    assert ds["mean_to_target"] == pytest.approx(135.0)  # seed 1: 100 + 100 * 0.07 / 0.2
    assert sara["reached"] == "1/2" and sara["not_reached"] == "1"
    assert sara["mean_to_target"] == pytest.approx(92.5)  # over the seeds that got there
    # no seed where both got there: no ratio rather than a ratio from one side
    assert sara["paired_seeds"] == 0 and math.isnan(sara["ratio"])
    assert t.loc["sara", "tokens"]["reached"] == "1/2"


def test_target_ratio_on_paired_seeds():
    # DS reaches 0.58 (target of gain 0.2) at 180 on both seeds; sara at 90 and at 45
    df = frame(
        {
            ("ds", 0): [(0, 0.4), (200, 0.6)],
            ("ds", 1): [(0, 0.4), (200, 0.6)],
            ("sara", 0): [(0, 0.4), (100, 0.6)],
            ("sara", 1): [(0, 0.4), (50, 0.6)],
        }
    )
    t = ls.target_table(df).set_index(["strategy", "measure"])
    row = t.loc["sara", "rollouts"]
    assert row["paired_seeds"] == 2 and row["reached"] == "2/2"
    # per-seed ratios 0.5 and 0.25: geometric mean sqrt(1/8), t-interval on the logs
    assert row["ratio"] == pytest.approx(math.sqrt(0.125))
    half = T975[1] * math.log(2) / 2  # sd of the two logs ln2 / sqrt(2), se = that / sqrt(2)
    assert row["ci_high"] == pytest.approx(math.sqrt(0.125) * math.exp(half))
    assert row["ci_low"] == pytest.approx(math.sqrt(0.125) * math.exp(-half))
    assert t.loc["sara", "tokens"]["ratio"] == pytest.approx(row["ratio"])  # tokens = 10 x
    assert t.loc["ds", "rollouts"]["ratio"] == pytest.approx(1.0)


def test_budget_table_reads_every_run_at_the_common_budget():
    df = frame(
        {
            ("ds", 0): [(0, 0.4), (200, 0.6)],
            ("ds", 1): [(0, 0.4), (300, 0.7)],
            ("sara", 0): [(0, 0.4), (100, 0.6)],
            ("sara", 1): [(0, 0.4), (150, 0.55)],
        }
    )
    b = ls.budget_table(df).set_index("strategy")
    assert (b["budget"] == 100.0).all()  # the smallest final budget of all four runs
    assert b.loc["ds", "accuracy"] == pytest.approx((0.5 + 0.5) / 2)
    assert b.loc["sara", "accuracy"] == pytest.approx((0.6 + 0.5) / 2)
    assert b.loc["sara", "diff_vs_ref"] == pytest.approx(0.05)  # paired: +0.1 and 0.0
    assert b.loc["sara", "diff_ci_high"] - 0.05 == pytest.approx(T975[1] * 0.05)


def test_band_is_mean_and_t_band_on_a_common_grid():
    df = frame({("ds", 0): [(0, 0.4), (100, 0.6)], ("ds", 1): [(0, 0.4), (80, 0.8)]})
    b = ls.band(df, points=5)
    assert b["x"].tolist() == [0, 20, 40, 60, 80]  # up to the smaller final budget
    assert b["mean"].iloc[-1] == pytest.approx((0.56 + 0.8) / 2)
    assert b["ci_low"].iloc[0] == b["ci_high"].iloc[0] == pytest.approx(0.4)


def test_check_names_what_is_wrong():
    df = frame({("ds", 0): [(0, 0.4), (100, 0.6)]})
    assert ls.check(df) is df
    with pytest.raises(ValueError, match="missing columns .*cum_tokens"):
        ls.check(df.drop(columns="cum_tokens"), "x.csv")
    with pytest.raises(ValueError, match="step-0 row"):
        ls.check(df[df["step"] > 0])
    with pytest.raises(ValueError, match="more than one row"):
        ls.check(pd.concat([df, df]))
    with pytest.raises(ValueError, match="no ds runs at k=8"):
        ls.target_table(df.assign(strategy="sara"))


def test_a_start_at_the_target_or_no_ds_gain_gives_no_ratio():
    # target 0.4 + 0.9 x 0.2 = 0.58; sara seed 1 starts at 0.6 (its eval seeds differ)
    df = frame(
        {
            ("ds", 0): [(0, 0.4), (200, 0.6)],
            ("ds", 1): [(0, 0.4), (200, 0.6)],
            ("sara", 0): [(0, 0.4), (100, 0.6)],
            ("sara", 1): [(0, 0.6), (100, 0.7)],
        }
    )
    row = ls.target_table(df).set_index(["strategy", "measure"]).loc["sara", "rollouts"]
    assert row["paired_seeds"] == 1 and row["ratio"] == pytest.approx(0.5)
    assert row["note"] == "paired seeds exclude [1]: start at target"
    flat = frame({("ds", 0): [(0, 0.5), (100, 0.45)], ("sara", 0): [(0, 0.5), (100, 0.6)]})
    t = ls.target_table(flat)
    assert t["ratio"].isna().all() and t["note"].str.startswith("ds did not gain (-0.050)").all()
