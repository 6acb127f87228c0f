"""sara-history: informed priors use only drawn outcomes, reduce to sara without history, save."""

import pytest

from sara_sim import ParameterError
from sara_sim.collect.collectors import make_collector
from sara_sim.core.difficulty import load_history
from sara_sim.core.informed import PromptHistory
from sara_sim.sim.replay import replay


def run_replay(frame, name, epochs, seed, replay_log=None, **kw):
    out = replay(frame, name, epochs, seed, serve=replay_log, **kw)
    hist = out["collector"].informed
    return out["steps"], out["drawn"], hist


@pytest.fixture(scope="module")
def frame(history_path):
    return load_history(history_path)


@pytest.mark.parametrize("name", ["sara-history", "sara-mopps", "sara-dps"])
def test_informed_strategy_cannot_peek_at_undrawn_outcomes(frame, name):
    """Run once; then rerun serving exactly the drawn outcomes but with every record's undrawn
    outcomes changed.  A strategy that peeked at a record would decide differently."""
    epochs = range(0, 6)
    steps, drawn, hist = run_replay(frame, name, epochs, 3)
    flipped = frame.copy()
    flipped["correct"] = flipped["samples"] - flipped["correct"]  # every record changes
    steps2, drawn2, hist2 = run_replay(flipped, name, epochs, 3, replay_log=drawn)
    assert drawn2 == drawn
    assert [s.groups for s in steps2] == [s.groups for s in steps]
    assert [s.abandoned for s in steps2] == [s.abandoned for s in steps]
    assert hist2.evidence == hist.evidence
    # and the evidence is exactly the discounted drawn outcomes: a prompt abandoned after 2
    # rollouts contributes 2 observations, never its record of 8
    short = [(key, seq) for key, seq in drawn.items() if 0 < len(seq) < 8]
    assert short, "some visits should have been abandoned early"


def test_reduces_to_plain_sara_without_history(frame):
    """No evidence, uniform population prior, kappa = 1, tau rule: the first step is sara's."""
    epochs = range(3, 4)
    a, _, _ = run_replay(frame, "sara", epochs, 5, tau_low=0.5)
    b, _, _ = run_replay(
        frame, "sara-history", epochs, 5, tau_low=0.5, rule="tau", kappa=1.0, explore=0.0
    )
    assert a[0].groups == b[0].groups and a[0].abandoned == b[0].abandoned
    assert a[0].rollouts == b[0].rollouts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_history_savings_vs_ds_on_shipped_histories(frame, seed):
    """The goal of the informed strategies: >= 40 % fewer rollouts per effective group than ds,
    on held-out epochs, for several seeds (defaults chosen by benchmarks/fit_informed.py)."""
    epochs = range(30, 45)
    cost = {}
    for name in ("ds", "sara-history", "sara-dps"):
        cost[name] = replay(frame, name, epochs, seed)["cost_per_effective_group"]
    assert cost["sara-history"] <= 0.6 * cost["ds"], cost
    assert cost["sara-dps"] < 0.8 * cost["ds"], cost  # the composition saves too, less


def test_bad_history_parameters():
    with pytest.raises(ParameterError, match="rho"):
        PromptHistory(rho=0.0)
    with pytest.raises(ParameterError, match="kappa"):
        PromptHistory(kappa=-1)
    with pytest.raises(ParameterError, match="explore"):
        PromptHistory(explore=2)
    with pytest.raises(ParameterError, match="history"):
        make_collector("sara-history", groups=4)  # neither a history nor an epoch size
    with pytest.raises(ParameterError, match="epoch_size"):
        make_collector("sara-history", groups=4, history=PromptHistory())
    with pytest.raises(ParameterError, match="rule"):
        make_collector("sara", groups=4, rule="magic")


def test_starvation_guards_bound_skips(frame):
    """With max_skip = 1 no prompt is skipped twice in a row; without guards (max_skip huge,
    explore 0) prompts starve for many epochs — the report must show the difference."""
    from sara_sim.sim.replay import signal_report

    epochs = range(0, 12)
    guarded = replay(frame, "sara-history", epochs, 0, max_skip=1)
    assert max(v[3] for v in guarded["collector"].informed.evidence.values()) <= 1
    loose = replay(frame, "sara-history", epochs, 0, max_skip=10_000, explore=0.0)
    rg, rl = signal_report(guarded, frame), signal_report(loose, frame)
    assert rl["longest_starvation_epochs"] > rg["longest_starvation_epochs"]
    assert rl["starved_learnable_visit_share"] > rg["starved_learnable_visit_share"]


@pytest.mark.parametrize("name", ["sara", "sara-history", "sara-dps"])
def test_replay_matches_exact_theory_given_each_visits_plan(frame, name):
    """Exact theory as referee: every visit's expected rollouts and P(effective) follow from its
    record and the plan it received; the realized totals must agree within 4 standard errors
    (per-visit variances bounded by (k/2)^2 and 1/4), and no visit may be lost."""
    import math

    from sara_sim.sim.replay import exact_expectation

    epochs = range(12, 18)
    out = replay(frame, name, epochs, 4)
    rollouts, effective, visits = exact_expectation(out, frame)
    assert visits == int(frame["epoch"].between(12, 17).sum())  # every record visited once
    assert abs(out["rollouts"] - rollouts) <= 4 * 4 * math.sqrt(visits)
    assert abs(out["effective_groups"] - effective) <= 4 * 0.5 * math.sqrt(visits)
