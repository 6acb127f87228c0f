"""The wall-clock engine model (sara_sim/sim/wallclock.py) against hand-computed cases and a
per-iteration reference; the round barrier of the driver; `sara-sim wallclock`'s bad inputs and
its documented command."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sara_sim.cli.app import main
from sara_sim.collect.collectors import Request
from sara_sim.core.difficulty import parse_law
from sara_sim.sim.wallclock import (
    PRESETS,
    EngineConfig,
    history_lengths,
    lognormal_lengths,
    run_engine,
)
from sara_sim.sim.wallclock_run import OutcomeSource, RoundTimer, Setup, run_strategy

REPO = Path(__file__).resolve().parents[2]
CFG = EngineConfig(a=1.0, b=0.5, c=2.0, max_num_seqs=2)


def test_one_request():
    run = run_engine(CFG, [0.0], [3])
    # 3 iterations with 1 running (1 + 0.5 each) and one prefill (2)
    assert run.end == 3 * 1.5 + 2 and run.start[0] == 0.0
    assert (run.iterations, run.busy) == (3, 3) and run.utilisation == 3 / (2 * 3)


def test_max_num_seqs_requests_of_equal_length():
    cfg = EngineConfig(a=0.25, b=0.125, c=0.5, max_num_seqs=4)
    run = run_engine(cfg, [0.0] * 4, [5] * 4)
    end = 5 * (0.25 + 4 * 0.125) + 4 * 0.5
    assert list(run.finish) == [end] * 4 and run.iterations == 5 and run.utilisation == 1.0


def test_more_requests_than_slots_fifo():
    # slots 2; lengths 3, 1, 2: request 1 ends after one iteration (2 running: 1 + 1, plus two
    # prefills: 4) at 6; request 2 enters the next iteration (prefill 2) and ends with request 0
    # after two more iterations of 2 running (2 x 2): 6 + 4 + 2 = 12.
    run = run_engine(CFG, [0.0, 0.0, 0.0], [3, 1, 2])
    assert list(run.start) == [0.0, 0.0, 6.0] and list(run.finish) == [12.0, 6.0, 12.0]
    assert (run.iterations, run.busy, run.utilisation) == (3, 6, 1.0)


def test_a_later_arrival_enters_at_the_next_iteration_and_idle_gaps_are_skipped():
    cfg = EngineConfig(a=1.0, b=0.0, c=0.0, max_num_seqs=2)
    run = run_engine(cfg, [0.0, 1.5, 10.0], [4, 1, 2])
    # iterations [0,1) [1,2) run request 0 alone; request 1 (submitted at 1.5) enters [2,3)
    assert list(run.start) == [0.0, 2.0, 10.0] and list(run.finish) == [4.0, 3.0, 12.0]
    assert run.iterations == 6 and run.busy_slot_seconds == 7.0


def test_the_engine_refuses_what_it_cannot_time():
    from sara_sim.core.errors import ParameterError

    with pytest.raises(ParameterError, match="a \\+ b must be > 0"):
        run_engine(EngineConfig(0.0, 0.0, 1.0, 4), [0.0], [1])  # iterations would take no time
    with pytest.raises(ParameterError, match="max-num-seqs"):
        run_engine(EngineConfig(1.0, 0.0, 0.0, 0), [0.0], [1])
    with pytest.raises(ParameterError, match="length"):
        run_engine(CFG, [0.0, 1.0], [1])
    with pytest.raises(ParameterError, match="length"):
        run_engine(CFG, [0.0], [0])
    empty = run_engine(CFG, [], [])
    assert (empty.end, empty.iterations, empty.busy) == (0.0, 0, 0)
    assert math.isnan(empty.utilisation)


def reference(cfg, submit, length, opens):
    """Token by token, iteration by iteration: the slow definition run_engine must equal."""
    a, b, c, cap, d = cfg
    order = sorted(range(len(submit)), key=lambda i: (submit[i], i))
    left, finish, t, running = dict(), [None] * len(submit), 0.0, []
    while order or running:
        if not running and submit[order[0]] > t:
            t = submit[order[0]]
        adm = [i for i in order if submit[i] <= t][: cap - len(running)]
        for i in adm:
            order.remove(i)
            left[i] = length[i]
        running += adm
        t += a + b * len(running) + c * len(adm) + d * sum(opens[i] for i in adm)
        for i in running:
            left[i] -= 1
        for i in [i for i in running if left[i] == 0]:
            finish[i] = t
            running.remove(i)
    return finish


@pytest.mark.parametrize("seed", range(30))
def test_event_loop_equals_the_per_iteration_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    # dyadic costs and integer submit times: every sum is exact in floating point
    cfg = EngineConfig(
        *(rng.integers(0, 5, 3) / 8 + [0.25, 0, 0]),
        int(rng.integers(1, 7)),
        float(rng.integers(0, 5)) / 8,
    )
    submit = [float(x) for x in rng.integers(0, 12, n)]
    length = [int(x) for x in rng.integers(1, 9, n)]
    opens = [bool(x) for x in rng.integers(0, 2, n)]
    got = run_engine(cfg, submit, length, opens).finish
    assert list(got) == reference(cfg, submit, length, opens)


def test_the_round_barrier():
    """Round 2 is submitted when round 1's last rollout has ended plus the decision time, even
    though a slot was free long before: a long rollout holds the whole next round back."""
    law = parse_law("point:1")
    setup = Setup(CFG, lognormal_lengths(3, 3, 0.0), decision_s=0.75)
    timer = RoundTimer(OutcomeSource(law, 0, pool=4), setup, 0)
    timer([Request(0, 2)])
    timer([Request(1, 1)])
    end1 = 3 * (1 + 2 * 0.5) + 2 * 2  # 2 rollouts of 3 tokens, together
    assert [t for t, _ in timer.runs] == [0.0, end1 + 0.75]
    assert timer.runs[1][1].end == end1 + 0.75 + 3 * 1.5 + 2
    # the same three requests without a barrier: request 2 waits only for a free slot
    free = run_engine(CFG, [0.0, 0.0, 0.0], [3, 3, 3])
    assert free.end == end1 + 3 * 1.5 + 2 < timer.runs[1][1].end


def test_lengths():
    rng = np.random.default_rng(0)
    exact = lognormal_lengths(100, 175, 0.0).draw(rng, [1, 0, 1])
    assert list(exact) == [100, 175, 100]
    x = lognormal_lengths(2000, 3500, 0.5).draw(rng, np.zeros(200_000, int))
    assert abs(x.mean() / 3500 - 1) < 0.01 and abs(x.std() / x.mean() - 0.5) < 0.01
    frame = pd.DataFrame(
        {
            "correct": [1, 0, 2],
            "samples": [2, 2, 2],
            "pass_tokens": [10, 0, 40],
            "fail_tokens": [30, 8, 0],
        }
    )
    law = history_lengths(frame)
    assert sorted(law.pass_values) == [10, 20, 20] and sorted(law.fail_values) == [4, 4, 30]


def test_tokens_and_rounds_add_up_and_undefined_is_nan():
    setup = Setup(EngineConfig(0.01, 0.001, 0.0, 16), lognormal_lengths(7, 11, 0.0))
    out = run_strategy(parse_law("beta:0.5,0.5"), "uniform", setup, k=4, groups=8, steps=3)
    steps = out["per_step"]
    assert all(s["rounds"] == 1 and s["rollouts"] == 32 for s in steps)
    assert all(s["tokens"] in range(7 * 32, 11 * 32 + 1) for s in steps)
    never = run_strategy(parse_law("point:1"), "uniform", setup, k=4, groups=8, steps=2)
    assert never["effective_groups"] == 0 and math.isnan(never["wall_per_effective_group_s"])


@pytest.mark.parametrize("schedule", ["rounds", "stream"])
@pytest.mark.parametrize("name", ["ds", "sara", "sara-auto"])
def test_wall_time_is_linear_in_the_request_and_barrier_costs(schedule, name):
    """Which sequences run in which iteration does not depend on the costs, so a run with a
    per-request cost d and a barrier time s takes exactly d x requests + s x rounds longer:
    the identity served_calibrate.py fits the served preset by."""
    law = parse_law("beta:0.4,0.6")
    base = Setup(EngineConfig(0.01, 0.001, 0.02, 24), lognormal_lengths(9, 15, 0.5))
    priced = base._replace(engine=base.engine._replace(d=0.125), decision_s=0.375)
    kw = {"schedule": schedule, "k": 8, "groups": 6, "steps": 5, "seed": 3}
    if schedule == "stream":
        kw["boundary"] = "fresh"
    r0, r1 = (run_strategy(law, name, s, **kw) for s in (base, priced))
    for key in ("tokens", "rollouts", "requests", "effective", "iterations"):
        assert [x[key] for x in r0["per_step"]] == [x[key] for x in r1["per_step"]], key
    for x0, x1 in zip(r0["per_step"], r1["per_step"]):
        barriers = 0 if schedule == "stream" else x0["rounds"]
        extra = 0.125 * x0["requests"] + 0.375 * barriers
        assert x0["requests"] > 0 and x1["wall_s"] == pytest.approx(x0["wall_s"] + extra, 1e-12)


def test_cpu_tiny_preset_is_the_committed_calibration():
    got = json.loads((REPO / "benchmarks/results/wallclock_calibration.json").read_text())
    eng = PRESETS["cpu-tiny"].engine
    for key, val in (("a_s", eng.a), ("b_s_per_seq", eng.b), ("c_s_per_admitted", eng.c)):
        assert val == pytest.approx(got[key], rel=0.01), key
    assert eng.d == 0.0 and PRESETS["cpu-tiny"].decision_s == 0.0  # in-process: measured apart


def test_cpu_tiny_served_preset_is_the_committed_served_fit():
    """The served preset is cpu-tiny's engine plus the fit of
    benchmarks/investigations/served/served_calibrate.py."""
    got = json.loads((REPO / "benchmarks/results/served_calibration.json").read_text())
    served, tiny = PRESETS["cpu-tiny-served"], PRESETS["cpu-tiny"]
    assert served.engine._replace(d=0.0) == tiny.engine
    assert served.engine.d == pytest.approx(got["d_s_per_request"], rel=0.01)
    assert served.decision_s == pytest.approx(got["decision_s_per_round"], rel=0.01)
    # the fit lowered the in-sample error (a fit that did not would be no calibration)
    assert got["error_fitted"]["mean"] < got["error_cpu_tiny"]["mean"]


WC = ["wallclock", "--difficulty", "beta:1,1", "--k", "4", "--groups", "4", "--steps", "2"]


def _with(flag, value):
    argv = list(WC)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        return argv
    return [*argv, flag, value]


@pytest.mark.parametrize(
    "argv, flag",
    [
        *[(_with("--a", v), "--a") for v in ("-1", "nan", "inf", "x")],
        (_with("--b", "-0.5"), "--b"),
        (_with("--c", "nan"), "--c"),
        *[(_with("--d", v), "--d") for v in ("-0.1", "nan")],
        ([*_with("--a", "0"), "--b", "0"], "--a"),
        *[(_with("--max-num-seqs", v), "--max-num-seqs") for v in ("0", "2.5", "-3")],
        (_with("--preset", "tpu"), "--preset"),
        *[(_with("--len-pass", v), "--len-pass") for v in ("0", "nan", "-5")],
        (_with("--len-fail", "inf"), "--len-fail"),
        (_with("--len-cv", "-0.1"), "--len-cv"),
        (_with("--decision-s", "-1"), "--decision-s"),
        (_with("--lengths", "/no/such.csv"), "--lengths"),
        (_with("--lengths", "deepscaler"), "--lengths"),  # no token columns
        (_with("--strategies", "ds,bogus"), "--strategies"),
        (_with("--strategies", ","), "--strategies"),
        (_with("--steps", "0"), "--steps"),
        (_with("--groups", "0"), "--groups"),
        (_with("--pool", "0"), "--pool"),
        (_with("--request-cost", "-1"), "--request-cost"),
        (_with("--request-cost", "nan"), "--request-cost"),
        (_with("--k", "1"), "--k"),
        (_with("--difficulty", "beta:-1,1"), "--difficulty"),
        ([*_with("--steps", "100000"), "--groups", "1000"], "--steps"),  # too big: refused
    ],
)
def test_bad_input_is_one_line_naming_the_flag(capsys, argv, flag):
    assert main(argv) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1 and flag in lines[0], lines


def test_undefined_numbers_are_null_in_json(capsys):
    """point:1 never mixes: no effective group, so every per-group cost and ratio is undefined."""
    assert main([*_with("--difficulty", "point:1"), "--strategies", "uniform", "--json"]) == 0
    got = json.loads(capsys.readouterr().out, parse_constant=lambda t: pytest.fail(t))
    for r in got["rows"]:
        assert r["effective_groups"] == 0 and r["wall_per_effective_group_s"] is None
        assert r["wall_ratio_vs_ds"] is None and r["token_ratio_vs_ds"] is None
    assert main(_with("--difficulty", "point:1")) == 0
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("uniform"))
    assert row.split()[1:6] == ["-"] * 5  # wall/eff, wall/ds, tok/eff, tok/ds, roll/eff


@pytest.mark.parametrize("schedule", ["rounds", "stream"])
def test_a_request_priced_high_sends_sara_autos_groups_whole(capsys, schedule):
    """--request-cost prices sara-auto's requests: priced far above a rollout, its plan is DS's
    (one request of k a prompt: rollouts per request = k), priced 0 it probes first (fewer)."""
    argv = ["wallclock", "--difficulty", "beta:0.3,0.3", "--k", "8", "--groups", "8", "--steps",
            "4", "--strategies", "sara-auto", "--schedule", schedule, "--json"]  # fmt: skip
    per = {}
    for cost in ("0", "1e6"):
        assert main([*argv, "--request-cost", cost]) == 0
        got = json.loads(capsys.readouterr().out)
        row = next(r for r in got["rows"] if r["strategy"] == "sara-auto")
        per[cost] = row["rollouts_per_effective_group"] / row["requests_per_effective_group"]
        assert got["request_cost"] == float(cost)
    assert per["1e6"] == pytest.approx(8.0) and per["0"] < 7.0, per


def test_recorded_lengths_through_the_cli(capsys, tmp_path):
    hist = tmp_path / "history.csv"
    hist.write_text("prompt_id,epoch,correct,samples,pass_tokens,fail_tokens\n0,0,1,2,7,30\n")
    assert main([*WC, "--lengths", str(hist), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["lengths"] == "recorded (mean pass 7, fail 30 tokens)"
    hist.write_text("prompt_id,epoch,correct,samples,pass_tokens,fail_tokens\n0,0,1,2,x,30\n")
    assert main([*WC, "--lengths", str(hist)]) == 2
    assert "--lengths" in capsys.readouterr().err


def test_documented_command(capsys):
    """The README's wallclock command (smaller), strict JSON with ratios to ds."""
    from doc_code import documented

    line = next(
        x for b, x in documented("sara-sim") if b.page == "README.md" and " wallclock " in x
    )
    argv = line.split()[1:]
    argv[argv.index("--steps") + 1] = "3"
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out, parse_constant=lambda t: pytest.fail(t))
    rows = {r["strategy"]: r for r in got["rows"]}
    assert rows["ds"]["wall_ratio_vs_ds"] == 1.0 and "sara" in rows
    assert all(0 < r["utilisation"] <= 1 for r in rows.values())
