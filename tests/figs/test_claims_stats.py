"""paper_figs.claims_stats on hand-computable paired data: t-intervals, TOST against scipy's
one-sided tests, per-step differences, late means, cost ratios and the verdict rules."""

import doctest
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from paper_figs import claims_stats as cs

COLS = ["strategy", "k", "seed", "step", "cum_rollouts", "cum_tokens", "wall_s", "eval_accuracy"]


def frame(spec, steps=(0, 3, 6, 9)):
    """{(strategy, seed): (accuracy offset, rollouts per step, tokens per rollout)} -> rows at
    k 8; accuracy rises 0.01 a step from 0.4 plus the offset (the start is shared: 0.4)."""
    rows = []
    for (a, s), (off, rps, tpr) in spec.items():
        for st in steps:
            acc = 0.4 + 0.01 * st + (off if st else 0.0)
            rows.append((a, 8, s, st, rps * st, rps * st * tpr, 0.5 * st, acc))
    return pd.DataFrame(rows, columns=COLS)


def test_doctests():
    assert doctest.testmod(cs).failed == 0


def test_paired_ci_is_the_t_interval():
    d = [0.01, 0.04, -0.02, 0.03]
    m, lo, hi, n = cs.paired_ci(d)
    half = stats.t.ppf(0.95, 3) * np.std(d, ddof=1) / 2
    assert (m, n) == (pytest.approx(0.015), 4)
    assert (lo, hi) == (pytest.approx(0.015 - half), pytest.approx(0.015 + half))
    assert math.isnan(cs.paired_ci([])[0]) and cs.paired_ci([float("nan"), 1.0])[3] == 1


def test_tost_matches_two_one_sided_t_tests():
    d = np.array([0.012, -0.004, 0.006, 0.001, -0.008, 0.01])
    r = cs.tost(d, margin=0.02)
    p1 = stats.ttest_1samp(d, -0.02, alternative="greater").pvalue
    p2 = stats.ttest_1samp(d, 0.02, alternative="less").pvalue
    assert r["p"] == pytest.approx(max(p1, p2))
    assert r["equivalent"] == (max(p1, p2) < 0.05)
    m, lo, hi, _ = cs.paired_ci(d)  # the same decision as the 90 % interval inside the margin
    assert r["equivalent"] == (-0.02 < lo and hi < 0.02)
    assert not cs.tost(d + 0.03, margin=0.02)["equivalent"]


def test_step_diff_and_late_diff_are_paired_by_seed():
    # seed 2 of sara has no DS twin: not paired
    df = frame(
        {
            ("ds", 0): (0.0, 10, 5),
            ("ds", 1): (0.02, 10, 5),
            ("sara", 0): (0.01, 8, 5),
            ("sara", 1): (0.03, 8, 5),
            ("sara", 2): (0.5, 8, 5),
        }
    )
    sd = cs.step_diff(df, "sara", 8)
    assert list(sd["step"]) == [0, 3, 6, 9]
    assert sd["seeds"].tolist() == [2, 2, 2, 2]
    assert sd["diff"].tolist() == pytest.approx([0, 0.01, 0.01, 0.01])
    assert sd["ci_low"].iloc[1] == pytest.approx(0.01)  # identical pairs: zero width
    late = cs.late_diff(df, "sara", 8)  # steps 6 and 9
    assert late.index.tolist() == [0, 1] and late.tolist() == pytest.approx([0.01, 0.01])


def test_cost_ratio_and_token_gap():
    df = frame(
        {
            ("ds", 0): (0, 10, 5),
            ("ds", 1): (0, 20, 5),
            ("sara", 0): (0, 8, 4),
            ("sara", 1): (0, 16, 4),
        }
    )
    r, lo, hi, n = cs.cost_ratio(df, "sara", 8, "rollouts")
    assert (r, lo, hi, n) == (pytest.approx(0.8), pytest.approx(0.8), pytest.approx(0.8), 2)
    assert cs.cost_ratio(df, "sara", 8, "tokens")[0] == pytest.approx(0.64)
    assert cs.log_ratio_gap(df, "sara", 8)[0] == pytest.approx(0.8)  # tokens saved beyond
    assert cs.cost_ratio(df, "sara", 8, "wall")[0] == pytest.approx(1.0)


def test_verdict_rules_at_the_edges():
    assert cs.verdict_equal(0.0, -0.019, 0.019) == "confirmed"
    assert cs.verdict_equal(0.0, -0.02, 0.019) == "no effect larger than 0.020"
    assert cs.verdict_equal(-0.05, -0.07, -0.02) == "refuted"
    assert cs.verdict_equal(0.0, float("nan"), float("nan")) == "undecided"
    assert cs.verdict_less(0.99, 0.98, 0.999) == "confirmed"
    assert cs.verdict_less(1.0, 1.0, 1.2) == "refuted"
    assert cs.fmt(float("nan")) == "-" and cs.fmt(None) == "-"


def test_verdicts_name_every_claim_line_and_its_seeds():
    df = frame(
        {("ds", s): (0.0, 10, 5) for s in range(3)}
        | {("sara", s): (0.001 * s, 8, 4) for s in range(3)}
    )
    lines = cs.verdicts(df)
    assert len(lines) == 3 and all("3 seeds" in x for x in lines)
    assert lines[0].endswith("same accuracy: confirmed")
    assert "rollouts 0.800x [0.800, 0.800]" in lines[1] and lines[1].endswith("confirmed")
    assert lines[2].endswith("tokens saved beyond rollouts: confirmed")
