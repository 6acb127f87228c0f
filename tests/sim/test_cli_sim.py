"""`sara-sim simulate | compare | verify | bench`: JSON contracts, exit codes, one-line errors."""

import json

import pytest

from sara_sim.cli.app import main
from sara_sim.cli.sim import SIM_KEYS
from sara_sim.sim.strategies import STRATEGIES

HISTORY = "deepscaler"  # the histories shipped in sara_sim/data, by their built-in name


def run(capsys, *args):
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_simulate_json_contract(capsys):
    rc, out, _ = run(
        capsys,
        "simulate",
        "--strategy",
        "sara",
        "--difficulty",
        "beta:0.3,0.3",
        "--k",
        "8",
        "--tau-low",
        "0.3",
        "--prior",
        "1,1",
        "--groups",
        "16",
        "--steps",
        "10",
        "--seed",
        "1",
        "--json",
    )
    assert rc == 0
    d = json.loads(out)
    assert list(d)[: len(SIM_KEYS)] == list(SIM_KEYS)
    assert d["strategy"] == "sara" and d["steps"] == 10 and d["effective_groups_per_step"] == 16
    assert d["cost_per_effective_group"] > 8 and d["cost_per_effective_group_se"] > 0
    assert 0 <= d["false_abandon_rate"] < 0.3 and d["rounds_per_step"] >= 1


def test_simulate_replay_epochs_and_strategy_params(capsys):
    rc, out, _ = run(
        capsys,
        "simulate",
        "--strategy",
        "ds",
        "--difficulty",
        f"history:{HISTORY}",
        "--epochs",
        "0-2",
        "--k",
        "8",
        "--groups",
        "16",
        "--steps",
        "5",
        "--param",
        "gen_batch_size=8",
        "--json",
    )
    assert rc == 0
    d = json.loads(out)
    assert d["config"]["gen_batch_size"] == 8 and d["waste_per_step"] > 0
    assert d["config"]["law"].endswith("[epochs 0-2]")


def test_compare_sorts_by_cost(capsys):
    rc, out, _ = run(
        capsys,
        "compare",
        "--difficulty",
        f"history:{HISTORY}",
        "--epoch",
        "0",
        "--k",
        "4",
        "--groups",
        "16",
        "--steps",
        "8",
        "--replicates",
        "2",
        "--tau-low",
        "0.3",
        "--json",
    )
    assert rc == 0
    rows = json.loads(out)["rows"]
    costs = [r["cost_per_effective_group"] for r in rows]
    assert costs == sorted(costs) and len(rows) == len(STRATEGIES)
    rc, out, _ = run(
        capsys,
        "compare",
        "--difficulty",
        "beta:0.5,0.5",
        "--k",
        "8",
        "--steps",
        "5",
        "--strategies",
        "uniform,ds,sara",
    )
    # law, sizes, header, 3 rows, 3 legend lines; plain fixed-point numbers within 100 columns;
    # then each against DS streamed and DS by rounds, and where the saving comes from
    head, _, refs = out.partition("\n\nagainst DS streamed")
    assert rc == 0 and head.count("\n") == 8 and "vs ds" in head
    assert max(len(line) for line in out.splitlines()[1:]) <= 100 and "e+" not in out
    assert "roll/DS str." in refs and "ds rounds -> ds stream" in refs


def test_verify_quick_passes_and_reports_every_claim(capsys):
    rc, out, _ = run(capsys, "verify", "--quick", "--steps", "10", "--replicates", "2", "--json")
    d = json.loads(out)
    assert rc == 0 and d["ok"]
    assert len(d["claims"]) == 4
    assert all(c["failed"] == 0 and c["passed"] > 0 for c in d["claims"].values())
    # the breaking scenarios are shown, not failed
    assert d["claims"]["1 abandonment reliability"]["shown_breaks"] > 0


def test_verify_fails_when_a_claim_fails(monkeypatch, capsys):
    import sara_sim.sim.verify as v

    real = v.run_claims

    def broken(**kw):
        rows = real(**kw)
        rows.loc[rows["status"] == "pass", "status"] = "FAIL"
        return rows

    monkeypatch.setattr(v, "run_claims", broken)
    rc, out, _ = run(capsys, "verify", "--quick", "--steps", "4", "--replicates", "2")
    assert rc == 1 and "FAILED" in out


def test_bench_quick_json(capsys):
    rc, out, _ = run(capsys, "bench", "--quick", "--k", "64", "--json")
    d = json.loads(out)
    assert rc == 0
    for key in (
        "sim_rollouts_per_second",
        "bernoulli_per_second",
        "speedup_vs_bernoulli",
        "speedup_vs_python",
        "by_k",
    ):
        assert key in d
    assert d["speedup_vs_python"] > 1


BAD = [  # argv (HIST: the shipped histories), the parameter the one-line error must name
    ("simulate --strategy nope --difficulty beta:1,1 --k 8", "--strategy"),
    ("simulate --strategy sara --difficulty beta:1,1 --k 1", "--k"),
    ("simulate --strategy sara --difficulty beta:0,1 --k 8", "--difficulty"),
    ("simulate --strategy sara --difficulty drift:1 --k 8", "--difficulty"),
    ("simulate --strategy sara --difficulty HIST --k 9", "--k"),
    ("simulate --strategy sara --difficulty beta:1,1 --epoch 3 --k 8", "--epoch"),
    ("simulate --strategy sara --difficulty HIST --epoch 1 --epochs 1-2 --k 8", "--epochs"),
    ("simulate --strategy sara --difficulty HIST --epochs 900 --k 8", "--epoch"),
    ("simulate --strategy sara --difficulty beta:1,1 --k 8 --tau-low 2", "--tau-low"),
    ("simulate --strategy sara --difficulty beta:1,1 --k 8 --steps 0", "--steps"),
    ("simulate --strategy sara --difficulty beta:1,1 --k 8 --groups x", "--groups"),
    ("simulate --strategy ds --difficulty beta:1,1 --k 8 --param zz=1", "--zz"),
    ("simulate --strategy ds --difficulty beta:1,1 --k 8 --param oops", "--param"),
    ("simulate --strategy ds --difficulty beta:1,1 --k 8 --budget 64", "--budget"),
    ("simulate --strategy knapsack --difficulty beta:1,1 --k 8 --param n_max=4", "--n-max"),
    ("simulate --strategy sara --difficulty beta:1,1 --k 8 --len-fail -1", "--len-fail"),
    ("compare --difficulty beta:1,1 --k 8 --strategies ds,bogus", "--strategies"),
    ("simulate --strategy sara --difficulty history:/no/such.csv --k 8", "--difficulty"),
]


@pytest.mark.parametrize("argv,param", BAD)
def test_bad_input_is_one_line_naming_the_parameter(capsys, argv, param):
    rc, out, err = run(capsys, *argv.replace("HIST", f"history:{HISTORY}").split())
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sara-sim: error: ") and param in lines[0]
