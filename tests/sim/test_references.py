"""Savings told against DS streamed beside DS by rounds, and split by source (``baselines``):
the JSON of `sara-sim wallclock` and `sara-sim compare`, and DS streamed's cost from a DS run."""

import json

import pytest

from sara_sim.cli.app import main
from sara_sim.core.difficulty import BetaLaw
from sara_sim.core.theory import plan_law
from sara_sim.sim.baselines import decomposition

CHAIN = "ds,ds-verl3n,sara,sara-auto,sara-history"
WALLCLOCK = "wallclock --difficulty beta:0.4,0.4 --k 8 --groups 8".split()


def _json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_wallclock_tells_each_saving_against_ds_streamed_and_by_rounds(capsys):
    d = _json(
        capsys,
        *WALLCLOCK,
        *"--steps 6 --max-num-seqs 64 --schedule stream --strategies".split(),
        CHAIN,
        "--json",
    )
    refs = d["references"]
    assert set(refs) == {"ds stream", "ds rounds", "ds-verl3n rounds"}
    assert refs["ds stream"]["schedule"] == "stream" and refs["ds rounds"]["schedule"] == "rounds"
    rows = {r["strategy"]: r for r in d["rows"]}
    assert rows["ds"]["wall_ratio_vs_ds_stream"] == pytest.approx(1.0)
    wall = {n: r["wall_per_effective_group_s"] for n, r in refs.items()}
    for r in rows.values():
        for tag, name in (
            ("ds_stream", "ds stream"),
            ("ds_rounds", "ds rounds"),
            ("ds_verl3n_rounds", "ds-verl3n rounds"),
        ):
            assert r[f"wall_ratio_vs_{tag}"] == pytest.approx(
                r["wall_per_effective_group_s"] / wall[name]
            )
    parts = d["decomposition"]["wall"]
    assert [p["source"] for p in parts] == [
        "streaming",
        "the stopping rule",
        "priors and plans",
        "per-prompt history",
    ]
    total = 1 - rows["sara-history"]["wall_ratio_vs_ds_rounds"]
    assert sum(p["share"] for p in parts) == pytest.approx(total)


def test_wallclock_by_rounds_has_no_decomposition(capsys):
    """By rounds a SARA row's wall has its barriers in it: no link is its rule's alone."""
    d = _json(capsys, *WALLCLOCK, *"--steps 3 --strategies ds,sara --json".split())
    assert d["decomposition"] == {} and "ds stream" in d["references"]


def test_compare_tells_each_saving_against_ds_streamed(capsys):
    d = _json(
        capsys,
        *"compare --difficulty beta:0.4,0.4 --k 8 --steps 150 --replicates 2 --strategies".split(),
        CHAIN,
        "--json",
    )
    ref = d["references"]["ds stream"]["rollouts_per_effective_group"]
    exact = plan_law(BetaLaw(0.4, 0.4), 8, [0, 1, 8, 1, 8])["cost_per_effective_group"]
    assert ref == pytest.approx(exact, rel=0.02)  # k / P(mixed): DS without its surplus
    rows = {r["strategy"]: r for r in d["rows"]}
    assert rows["ds"]["ratio_vs_ds_stream"] > 1.0  # by rounds DS throws its surplus away
    assert rows["ds-verl3n"]["ratio_vs_ds_rounds"] > 1.0  # a 3N batch throws away more
    for unit in ("rollouts", "tokens"):
        parts = d["decomposition"][unit]
        key = "ratio_vs_ds_rounds" if unit == "rollouts" else "token_ratio_vs_ds_rounds"
        assert sum(p["share"] for p in parts) == pytest.approx(1 - rows["sara-history"][key])


def test_a_missing_strategy_merges_its_links():
    parts = decomposition({"ds rounds": 10.0, "ds stream": 8.0, "sara-auto": 7.0})
    assert [(p["source"], p["share"]) for p in parts] == [
        ("streaming", pytest.approx(0.2)),
        ("the stopping rule + priors and plans", pytest.approx(0.1)),
    ]
    assert decomposition({"ds stream": 8.0, "sara": 7.0}) == []  # no DS by rounds: no reference


@pytest.mark.parametrize("ds", ["ds", "ds-verl3n"])
def test_ds_by_rounds_exact_cost_referees_the_simulator(ds):
    """``theory.ds_rounds_law``: DS by rounds' rollouts per effective group from P(mixed)
    alone (generation batches of N, verl's 3N, capped at 10), what the simulator's DS pays."""
    from sara_sim.core.theory import ds_rounds_law
    from sara_sim.sim.simulate import simulate, summarize

    law, k, groups = BetaLaw(0.3, 0.6), 8, 6
    p = plan_law(law, k, [0, 1, k, 1, k])["p_mixed"]
    exact = ds_rounds_law(p, k, groups, groups * (3 if ds == "ds-verl3n" else 1))
    s = summarize(simulate(ds, law, k=k, groups=groups, steps=400, replicates=4, seed=1))
    se = s["cost_per_effective_group_se"]
    assert abs(s["cost_per_effective_group"] - exact["rollouts_per_effective_group"]) < 4 * se
    assert exact["rollouts_per_effective_group"] > k / p  # the surplus thrown away
