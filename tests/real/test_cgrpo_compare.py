"""benchmarks/cgrpo_compare.py's table and checks, and cgrpo_side.py's counting, on toy inputs:
the numbers are the runs' own sums (the peer's calibration rollouts counted, or not, as labelled),
ratios to ds are per-seed and paired, undefined stays undefined, and a missing peer environment
is one line naming the setup step. The benchmark itself (two environments, minutes of training)
is run by hand: docs/peers.md."""

import math
from pathlib import Path

import pytest
from scipy import stats

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def cc(script):
    return script("benchmarks/cgrpo_compare.py")


def _run(strategy, seed, rollouts, tokens, groups, effective, accuracy, cal=(0, 0)):
    return {
        "strategy": strategy,
        "seed": seed,
        "steps": 2,
        "rollouts": rollouts,
        "tokens": tokens,
        "calibration_rollouts": cal[0],
        "calibration_tokens": cal[1],
        "calibrations": int(cal[0] > 0),
        "groups": groups,
        "effective": effective,
        "accuracy": accuracy,
        "start_accuracy": 0.3,
        "wall_s": 1.0,
    }


RUNS = [
    _run("ds", 0, 400, 1600, 8, 8, 0.50),
    _run("ds", 1, 480, 2000, 8, 8, 0.40),
    _run("cgrpo", 0, 100, 300, 8, 4, 0.45, cal=(60, 200)),
    _run("cgrpo", 1, 120, 360, 8, 2, 0.40, cal=(60, 200)),
    _run("grpo", 0, 128, 500, 8, 0, 0.30),
]


def _lines(cc):
    return {line.split(" | ")[0].strip("| "): line for line in cc.table(RUNS).splitlines()[2:]}


def test_cgrpo_counts_its_calibration_and_a_second_row_leaves_it_out(cc):
    with_cal = cc.measures(RUNS[2])
    assert with_cal["rollouts_per_eff"] == (100 + 60) / 4
    assert with_cal["tokens_per_eff"] == (300 + 200) / 4
    assert with_cal["effective_fraction"] == 4 / 8
    assert cc.measures(RUNS[2], calibration=False)["rollouts_per_eff"] == 100 / 4
    rows = cc.rows(RUNS)
    assert list(rows) == ["ds", "cgrpo", cc.NO_CAL, "grpo"]  # in run order, beside cgrpo
    assert rows[cc.NO_CAL][1]["tokens_per_eff"] == 360 / 2


def test_ratios_are_paired_by_seed_geometric_means_with_t_intervals(cc):
    rows = cc.rows(RUNS)
    g, lo, hi, n = cc.ratio_to(rows["cgrpo"], rows["ds"], "rollouts_per_eff")
    per_seed = [(160 / 4) / (400 / 8), (180 / 2) / (480 / 8)]  # 0.8, 1.5
    logs = [math.log(r) for r in per_seed]
    half = stats.t.ppf(0.95, 1) * stats.tstd(logs) / math.sqrt(2)  # 90 %, two-sided
    assert n == 2 and g == pytest.approx(math.sqrt(0.8 * 1.5))
    assert (lo, hi) == pytest.approx((g * math.exp(-half), g * math.exp(half)))
    line = _lines(cc)["cgrpo"]
    assert f"| 65 ({g:.2f} [{lo:.2f}, {hi:.2f}]) |" in line  # mean of 40 and 90 rollouts / eff
    assert "| 0.450 (1.00 [1.00, 1.00]) |" in _lines(cc)["ds"]  # ds to itself, every seed 1


def test_undefined_is_a_dash_and_one_seed_has_no_interval(cc):
    grpo = _lines(cc)["grpo"]
    cells = [c.strip() for c in grpo.strip("|").split("|")]
    assert cells[:4] == ["grpo", "0", "-", "-"]  # no effective group: no rollouts / eff
    assert cells[4] == "0.000 (0.00)"  # the fraction is defined (0); one seed: no interval
    assert cells[5] == f"0.300 ({0.30 / 0.50:.2f})"
    assert cc.measures(RUNS[4])["rollouts_per_eff"] is None
    with pytest.raises(ValueError, match="no ds runs"):
        cc.table([r for r in RUNS if r["strategy"] != "ds"])


def test_bad_arguments_are_one_line_naming_the_flag(cc, tmp_path):
    from sara_sim.core.errors import ParameterError

    def check(*argv):
        with pytest.raises(ParameterError) as e:
            cc.check(cc.parse([*argv, "--out", str(tmp_path / "o")]))
        return str(e.value)

    assert check("--budgets", "2,4").startswith("--budgets: must ascend from >= 1 to --k=8")
    assert check("--strategies", "sara,cgrpo").startswith("--strategies: must include ds")
    missing = check("--cgrpo-python", str(tmp_path / "none/bin/python"))
    assert missing.startswith("--cgrpo-python:") and "bash scripts/setup.sh --cgrpo" in missing


def test_the_peer_side_books_padded_rows_out_and_spread_groups_in(script):
    import torch

    cgrpo_side = script("benchmarks/cgrpo_side.py")

    books = cgrpo_side.Books(k=4)
    books.generated([[1, 2], [3], [4, 5, 6]])  # 3 rollouts, 6 tokens in one generate call
    nan = math.nan
    rewards = torch.tensor(
        [
            [1.0],
            [0.0],
            [nan],
            [nan],  # 2 real rows, mixed: effective
            [1.0],
            [1.0],
            [1.0],
            [1.0],  # 4 real rows, all pass
            [0.0],
            [0.0],
            [nan],
            [nan],
        ]
    )
    books.batch(rewards)
    (step,) = books.steps
    assert step == {
        "rollouts": 3,
        "tokens": 6,
        "calls": 1,
        "groups": 3,
        "effective": 1,
        "real_rows": 8,
        "budgets": {"2": 2, "4": 1},
        "reward_mean": 5 / 8,
    }  # over the real rows
    assert books.open == {"rollouts": 0, "tokens": 0, "calls": 0}


def test_the_committed_tables_are_printed_from_the_committed_results(cc, tmp_path, capsys):
    committed = (BENCH / "cgrpo_compare.out.txt").read_text()
    for name in ("arithmetic", "arithmetic_lr3e-4", "reasoning"):
        source = BENCH / f"results/cgrpo_compare_{name}.json"
        assert cc.main(["--table", "--out", str(source)]) == 0
        printed = capsys.readouterr().out.strip()
        assert "| cgrpo, calibration not counted |" in printed and printed in committed
    assert cc.main(["--table", "--out", str(tmp_path / "none.json")]) == 2
    assert "none.json does not exist" in capsys.readouterr().err
