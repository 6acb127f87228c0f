"""`sara-real audit`'s numbers where a tau_low abandons every prompt at its first rollout: no
group can be effective, so its costs, savings and bootstrap intervals are null (`-` in the table),
never the 9e15 rollouts per effective group a floating-point residue gave.  No model
is needed: the statistics are computed from a history.csv frame."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from real.app.audit_theory import analyze, format_report, percentile_interval
from sara_sim.core.errors import finite_or_none

BOOT = 30
UNDEFINED = (
    "rollouts_per_effective_group",
    "tokens_per_effective_group",
    "savings_vs_ds",
    "token_savings_vs_ds",
)


@pytest.fixture(scope="module")
def audit():
    """48 prompts x 2 passes x 8 samples of a polarised model; tau_low >= 0.8 abandons at n = 1."""
    rng = np.random.default_rng(3)
    rate = rng.beta(0.3, 0.3, 48)
    rows = []
    for epoch in range(2):
        for i, g in enumerate(rate):
            c = int(rng.binomial(8, g))
            rows.append(
                {
                    "prompt_id": i,
                    "epoch": epoch,
                    "correct": c,
                    "samples": 8,
                    "pass_tokens": 20 * c,
                    "fail_tokens": 30 * (8 - c),
                }
            )
    frame = pd.DataFrame(rows)
    return finite_or_none(analyze(frame, 8, taus=(0.3, 0.8, 0.95), bootstrap=BOOT, replay_groups=6))


def test_impossible_rows_are_null_and_the_others_finite(audit):
    text = json.dumps(audit, allow_nan=False)  # strict JSON: no NaN / Infinity
    by_tau = {r["tau_low"]: r for r in audit["sara"]}
    for tau in (0.8, 0.95):
        row = by_tau[tau]
        assert row["p_effective"] == 0.0 and row["plan"] == [0, 1, 1, 1, 1]
        assert all(row[key] is None for key in UNDEFINED), row
        boot = audit["bootstrap"][f"sara@{tau:g}"]
        assert boot == {
            "rollouts_per_effective_group": None,
            "savings_vs_ds": None,
            "token_savings_vs_ds": None,
            "undefined_resamples": BOOT,
        }
    defined = [audit["ds"], by_tau[0.3], audit["best_tau"], audit["bayes_optimal"]]
    for row in defined:
        assert all(math.isfinite(row[key]) for key in UNDEFINED), row
        assert 1.0 < row["rollouts_per_effective_group"] < 100.0
    for key in ("ds", "sara@0.3", "best_tau", "bayes-optimal"):
        lo, hi = audit["bootstrap"][key]["savings_vs_ds"]
        assert -1.0 < lo <= hi < 1.0 and audit["bootstrap"][key]["undefined_resamples"] == 0
    assert "e+1" not in text  # no huge stand-in anywhere (9.0e15, 2.2e17, -1.1e15 before)


def test_the_table_prints_dashes(audit):
    lines = format_report(audit).splitlines()
    row = next(line for line in lines if line.startswith("sara tau=0.95"))
    assert row.split()[2:] == ["-", "-", "-", "-", "-"]
    best = next(line for line in lines if line.startswith("best tau="))
    assert "-" not in best.split()[2:]


def test_an_interval_with_an_undefined_resample_is_null():
    assert percentile_interval([2.0, 4.0]) == [2.05, 3.95]
    assert percentile_interval([2.0, None, 4.0]) is None
    assert percentile_interval([]) is None


def test_savings_are_told_against_ds_streamed_beside_ds_by_rounds(audit):
    """The references are exact (DS by rounds from P(mixed): ``theory.ds_rounds_law``); each
    variant's ratios are its cost over theirs; the decomposition adds up to the chain's end."""
    from sara_sim.core.theory import ds_rounds_law

    refs = audit["references"]
    k, n, p = audit["k"], audit["groups"], audit["p_mixed"]
    stream = refs["ds stream"]["rollouts_per_effective_group"]
    assert stream == pytest.approx(k / p) == audit["ds"]["rollouts_per_effective_group"]
    for name, batch in (("ds rounds", n), ("ds-verl3n rounds", 3 * n)):
        exact = ds_rounds_law(p, k, n, batch)["rollouts_per_effective_group"]
        assert refs[name]["rollouts_per_effective_group"] == pytest.approx(exact)
        assert exact > stream  # DS by rounds throws its surplus away
    by_label = {v["label"]: v for v in audit["variants"]}
    assert {"ds stream", "sara", "sara-auto", "sara-auto tokens", "sara-history"} <= set(by_label)
    for v in audit["variants"]:
        for unit in ("rollouts", "tokens"):
            cost = v[f"{unit}_per_effective_group"]
            ref = refs["ds stream"][f"{unit}_per_effective_group"]
            assert v[f"{unit}_vs_ds_stream"] == pytest.approx(cost / ref)
    # the plan priced in tokens takes no more tokens than the one priced in rollouts
    tok, roll = by_label["sara-auto tokens"], by_label["sara-auto"]
    assert tok["tokens_per_effective_group"] <= roll["tokens_per_effective_group"] + 1e-9
    lo, hi = tok["interval"]["tokens_vs_ds_stream"]
    assert lo <= tok["tokens_vs_ds_stream"] <= hi
    for unit in ("rollouts", "tokens"):
        parts = audit["decomposition"][unit]
        assert parts[0]["source"] == "streaming" and parts[-1]["to"] == "sara-history"
        end = by_label["sara-history"][f"{unit}_vs_ds_rounds"]
        assert sum(x["share"] for x in parts) == pytest.approx(1 - end)


def test_the_recommendation_answers_stream_ds_or_which_sara(audit):
    """The cheapest variant in tokens whose whole interval is below DS streamed's, streamed;
    streaming DS alone told beside it; the flags are what sara-real takes."""
    rec = audit["recommended"]
    assert rec["schedule"] == "stream" and "--schedule stream" in rec["flags"]
    assert rec["unit"] == "tokens"
    sure = [
        v
        for v in audit["variants"]
        if v["source"] == "exact"
        and v.get("interval")
        and v["interval"]["tokens_vs_ds_stream"][1] < 1
    ]
    if sure:
        top = min(sure, key=lambda v: v["tokens_vs_ds_stream"])
        assert rec["label"] == top["label"] and rec["interval"][1] < 1
    else:
        assert rec["strategy"] == "ds"
    lo, hi = rec["streaming"]["interval"]
    assert lo <= rec["streaming"]["ratio"] <= hi < 1  # streaming DS alone saves
    line = next(x for x in format_report(audit).splitlines() if x.startswith("recommended:"))
    assert rec["flags"] in line and "DS by rounds" in line


def test_the_recommendation_streams_ds_when_no_variant_surely_saves():
    """A law where every prompt mixes or never does, nearly: no SARA plan beats DS streamed."""
    rows = [
        {
            "prompt_id": i,
            "epoch": 0,
            "correct": 4,
            "samples": 8,
            "pass_tokens": 80,
            "fail_tokens": 80,
        }
        for i in range(40)
    ]
    out = finite_or_none(analyze(pd.DataFrame(rows), 8, taus=(0.2,), bootstrap=20))
    assert out["recommended"]["strategy"] == "ds"
    assert out["recommended"]["flags"] == "--strategy ds --k 8 --schedule stream"
