"""Impossible events have probability exactly 0 and their ratios are undefined (None / null / -).

A plan that abandons every prompt at its first rollout (both sides) or skips it, or a law under
which no group of k can mix, makes P(effective) (or P(mixed)) exactly 0; the theory used to return
the floating-point residue of 1 - P(abandon) (1.1e-16) and a cost of 9e15 rollouts per effective
group from it."""

import json
import math

import pandas as pd
import pytest

from sara_sim.cli.app import main
from sara_sim.core.difficulty import HistoryLaw, parse_law
from sara_sim.core.errors import ParameterError
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.policy import ABANDON, CONTINUE
from sara_sim.core.theory import best_tau, plan_law, sequential_law

LAWS = ("beta:1,1", "beta:0.3,0.3", "beta:0.2,0.8")
KS = (4, 8, 16, 32, 64)
TAUS = tuple(round(0.05 * i, 2) for i in range(1, 20))
RATIOS = ("cost_per_effective_group", "savings_vs_ds")


@pytest.fixture(scope="module")
def grid():
    return {
        (spec, k, tau): sequential_law(parse_law(spec), k, tau)
        for spec in LAWS
        for k in KS
        for tau in TAUS
    }


def test_no_residue_on_the_issue_grid(grid):
    impossible = []
    for cell, r in grid.items():
        assert not 0.0 < r["p_effective"] < 1e-12, (cell, r["p_effective"])
        assert not 0.0 < r["p_commit"] < 1e-12, (cell, r["p_commit"])
        if r["p_effective"] == 0.0:
            impossible.append(cell)
            assert all(r[key] is None for key in RATIOS), (cell, r)
            assert r["plan"][2] == r["plan"][4] == 1  # both sides abandon after one rollout
            assert (r["p_commit"], r["p_abandon"], r["rollouts_per_prompt"]) == (0.0, 1.0, 1.0)
            assert r["p_false_abandon"] == r["p_mixed"] and r["signal_proxy_per_prompt"] == 0.0
        else:
            assert 0.0 < r["cost_per_effective_group"] < 1e4, (cell, r)
            assert math.isfinite(r["savings_vs_ds"]) and abs(r["savings_vs_ds"]) < 1.0, cell
    # 19 of them gave a residue (e.g. the issue's beta:1,1 k=4 tau_low 0.7), 23 an exact 0 / inf
    assert ("beta:1,1", 4, 0.7) in impossible and len(impossible) == 42


def test_the_issue_command_reports_null_and_dash(capsys):
    argv = ["theory", "--difficulty", "beta:1,1", "--k", "4", "--tau-low", "0.7"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["p_effective"] == 0.0 and out["p_commit"] == 0.0
    assert out["cost_per_effective_group"] is None and out["savings_vs_ds"] is None
    assert main(argv) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines()[1:])
    assert rows["cost_per_effective_group"] == "-" and rows["savings_vs_ds"] == "-"
    assert rows["ds_cost_per_effective_group"] == "6.66667"


def test_a_skipping_plan_spends_nothing_and_yields_nothing():
    r = plan_law(parse_law("beta:1,1"), 8, [ABANDON, 1, 8, 1, 8])
    assert (r["rollouts_per_prompt"], r["p_effective"], r["p_abandon"]) == (0.0, 0.0, 1.0)
    assert r["cost_per_effective_group"] is None and r["yield_per_rollout"] is None
    assert r["yield_ratio_vs_uniform"] is None and r["rounds_per_prompt"] == 0.0


def test_an_explicit_probe_of_two_can_still_mix():
    """The same abandon-at-one plan with --probe 2: the first look is at n = 2, mixed groups
    commit, so P(effective) is the (positive) P(the first two differ)."""
    law = parse_law("beta:1,1")
    r = plan_law(law, 4, [CONTINUE, 1, 1, 1, 1], probe=2)
    assert r["p_effective"] == pytest.approx(1 / 3) and r["cost_per_effective_group"] > 0


@pytest.fixture
def unmixed_history():
    """Records all-pass or all-fail: no group can mix, and 1 - M(0, k) - M(k, 0) is not 0 in
    floating point (5.6e-17 at k = 8 with these records)."""
    frame = pd.DataFrame({"prompt_id": [0, 1, 2], "epoch": 0, "correct": [0, 8, 0], "samples": 8})
    return HistoryLaw(frame)


def test_a_law_that_cannot_mix(unmixed_history):
    for law in (unmixed_history, parse_law("point:0"), parse_law("mix:0.3*point:0+0.7*point:1")):
        for tau in (0.0, 0.3):
            r = sequential_law(law, 8, tau)
            assert (r["p_mixed"], r["p_effective"], r["p_false_abandon"]) == (0.0, 0.0, 0.0)
            assert r["ds_cost_per_effective_group"] is None
            assert all(r[key] is None for key in RATIOS)
        assert best_tau(law, 8) == (None, None, (None, None))
        with pytest.raises(ParameterError, match="--difficulty: the law gives no mixed groups"):
            bayes_optimal(law, 8)
