"""Rollouts-to-target and equal-budget accuracy on pooled claim files
(paper_figs.claims_budget, benchmarks/claims.py --budget), on toy files whose answer is
known by construction: without a run's own noise, the strategies of a seed share one accuracy
curve per step and differ only in rollouts per step, so every cost ratio is the ratio of their
rollouts per step, and the equal-budget accuracy is read off known points."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from claim_toys import ARITH, toy_meta, toy_rows, write

from paper_figs import learning_stats as ls
from paper_figs.claims_budget import COLUMNS, budget_frame, budget_table
from paper_figs.claims_data import load_claims

ROOT = Path(__file__).resolve().parents[2]
DS, SARA = ARITH["ds"], ARITH["sara"]  # 400 and 312 rollouts per step: 0.78x
FAST = (0.0, 200, 5.0, 1.0, 1.0)  # 0.5x: its final budget is DS's at evaluated step 3
SLOW = (-0.2, 400, 5.0, 1.0, 1.0)  # 20 points below DS from step 1: never at the target


@pytest.fixture
def pooled(tmp_path):
    """GRPO in two files (ds, sara on seeds 0-5 with fast and slow; 6-11 in a second file),
    RLOO in a third: a toy of the claim run's pooling."""
    folder = tmp_path / "claims"
    four = {"ds": DS, "sara": SARA, "fast": FAST, "slow": SLOW}
    write(folder, "k8", toy_rows(four, range(6), noise=0.0), toy_meta())
    two = {"ds": DS, "sara": SARA}
    write(folder, "k8_more", toy_rows(two, range(6, 12), noise=0.0), toy_meta())
    write(folder, "rloo", toy_rows(two, range(4), noise=0.0), toy_meta("rloo"))
    return folder


def test_rollouts_to_target_on_known_curves(pooled):
    data = load_claims(pooled)
    f = budget_frame(data).set_index(["setting", "strategy"])
    grpo = data.setting("GRPO")
    ds = grpo[grpo.strategy == "ds"].dropna(subset=["eval_accuracy"]).sort_values("step")
    ends = ds.groupby("seed")["eval_accuracy"].agg(["first", "last"]).mean()
    target = ends["first"] + 0.9 * (ends["last"] - ends["first"])  # figure 10's target
    sara = f.loc["GRPO", "sara"]
    assert sara.target_accuracy == pytest.approx(target)
    assert sara.reached == sara.ref_reached  # one curve per seed: both reach it or neither
    paired = int(sara.reached.split("/")[0])
    assert paired >= 2 and sara.paired_seeds == paired and sara.reached.endswith("/12")
    assert (sara.ratio, sara.ci_low, sara.ci_high) == pytest.approx((0.78, 0.78, 0.78))
    assert f.loc["GRPO", "fast"].ratio == pytest.approx(0.5)
    assert f.loc["RLOO", "sara"].ratio == pytest.approx(0.78)
    slow = f.loc["GRPO", "slow"]  # never reached: undefined, not a stand-in, its seeds named
    assert slow.reached == "0/6" and slow.not_reached == "0 1 2 3 4 5"
    assert slow.paired_seeds == 0 and math.isnan(slow.ratio) and math.isnan(slow.ci_low)


def test_equal_budget_accuracy_on_known_points(pooled):
    data = load_claims(pooled)
    f = budget_frame(data).set_index(["setting", "strategy"])
    grpo = data.setting("GRPO")
    acc = grpo.pivot_table(index=["strategy", "seed"], columns="step", values="eval_accuracy")
    # fast ends at 200 x 6 = 1200 rollouts, DS's budget at step 3 (evaluated): fast's final
    # accuracy (step 6) minus DS's at step 3, on the same per-seed curve
    ds = acc.loc["ds"]  # seed x step
    diff = (ds[6] - ds[3]).loc[range(6)]
    fast = f.loc["GRPO", "fast"]
    assert fast.budget == 1200 and fast.seeds == 6
    assert fast.diff_vs_ref == pytest.approx(diff.mean())
    m, lo, hi = ls.mean_ci(diff.to_numpy(), 0.90)  # the claim table's 90 % interval
    assert (fast.diff_ci_low, fast.diff_ci_high) == pytest.approx((lo, hi))
    # sara ends at 312 x 6 = 1872: DS there is 0.56 of the way from step 3 (1200) to 6 (2400)
    sara = f.loc["GRPO", "sara"]
    expect = (1 - 0.56) * (ds[6] - ds[3])
    assert sara.budget == 1872 and sara.seeds == 12
    assert sara.diff_vs_ref == pytest.approx(expect.mean()) and sara.accuracy > sara.ref_accuracy
    assert f.loc["GRPO", "slow"].diff_vs_ref == pytest.approx(-0.2)  # at DS's final budget
    assert np.isclose(f.loc["GRPO", "slow"].budget, 2400)


def test_the_table_prints_an_undefined_ratio_as_a_dash(pooled):
    table = budget_table(load_claims(pooled))
    assert list(table.columns) == list(COLUMNS)
    assert list(table["setting, k"]) == ["GRPO, k 8"] * 3 + ["RLOO, k 8"]
    rows = table.set_index(["setting, k", "vs DS"])
    slow = rows.loc[("GRPO, k 8", "slow")]
    assert slow[COLUMNS[4]] == "- (no paired seed reached it)"
    assert slow["verdict"].startswith("fewer rollouts to target: -; ahead at equal budget: ")
    sara = rows.loc[("GRPO, k 8", "sara")]
    assert sara[COLUMNS[4]].startswith("0.780x [0.780, 0.780] (")
    assert sara["verdict"] == (
        "fewer rollouts to target: confirmed; ahead at equal budget: confirmed"
    )
    assert sara["files"] == "k8.csv, k8_more.csv"


def test_the_command_prints_the_budget_table(pooled):
    cmd = [sys.executable, str(ROOT / "benchmarks/claims.py"), "--claims", str(pooled)]
    proc = subprocess.run([*cmd, "--budget"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| setting, k | vs DS | target accuracy |") and len(lines) == 6
