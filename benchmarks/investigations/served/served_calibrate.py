"""Calibrate the wall-clock model's ``cpu-tiny-served`` preset on the committed served runs.

    .venv/bin/python benchmarks/investigations/served/served_calibrate.py [--seeds 8] \\
        [--out benchmarks/results/served_calibration.json] [--overwrite]

The ``cpu-tiny`` preset is the in-process engine's iteration cost. A served run
(``stream_real.py --serve``: client, API server and engine core on the same 2 cores) pays two
more costs, both of which the model's engine has a term for (``sara_sim/sim/wallclock.py``):

* ``d``, seconds per client request (one HTTP request of a prompt's n rollouts): the client's,
  the API server's and the scheduler's Python per request, run on the engine's cores;
* ``decision_s``, seconds the engine idles at each round barrier: the client's work between
  rounds (every rollout's reward, the collector's decisions, the next round's requests built and
  sent) — a stream does it while the engine runs.

Which sequences run in which engine iteration does not depend on the costs, so a strategy's
predicted wall per effective group is linear in them: W + d * R + decision_s * N, with W the
``cpu-tiny`` preset's (d = decision_s = 0; mean of `--seeds` simulated runs on the run's own
laws, ``stream_predict.py``), R the client requests the run sent per effective group (its
books) and N its round barriers per effective group (0 streamed). (d, decision_s) >= 0 are fitted
by least squares on every strategy's wall ratio to DS by rounds (``scipy.optimize.least_squares``)
over the committed served runs; the preset is that fit. A held-out check fits on the runs made
before the priced plans and reports the error on the two priced runs, which it did not see.
A request's price in rollouts (``--request-cost``) follows: d over DS by rounds' predicted wall
per rollout.

Last, the preset's pick: on the laws of the latest served run, streamed plans (sara-auto at
over-provisioning x1.5, x2, x3 and request_cost 0, 0.5, 1; sara at x1.5, x2, x3; ds stream)
predicted over DS by rounds — wall and rollouts — and the one of least wall among those with
rollouts <= 0.80x DS's (the served goal), the plan a decision run then measures.  A served
client does not know the server's slots, so its stream keeps its collector's x N k in flight
and the model does too (``Setup.knows_slots``): beyond x1.5 that queues rollouts behind the
slots that each step's end throws away (the real served x2 runs: 0.87-0.94x DS's rollouts;
``stream_model_check.py`` shows the same on the in-process engine before its cap).
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from sara_sim.sim.stream_predict import errors, model_of, predict, simulate

RESULTS = Path(__file__).resolve().parents[2] / "results"
RUNS = RESULTS / "stream_real"
SERVED = (  # committed stream_real --serve runs with the engine's books, oldest first
    "served_split_requests.json",
    "served_split_requests_decision.json",
    "served_whole_requests.json",
    "served_whole_requests_decision.json",
    "served_priced_plans.json",
    "served_priced_plans_decision.json",
)
HELD_OUT = SERVED[4:]  # the priced plans: C 2 was the model's largest error (0.15)
PLANS = [("ds", 1.0, 0.0)]  # (strategy, overprovision, request_cost), streamed
PLANS += [("sara-auto", x, c) for x in (1.5, 2.0, 3.0) for c in (0.0, 0.5, 1.0)]
PLANS += [("sara", x, 0.0) for x in (1.5, 2.0, 3.0)]


def components(path: Path, seeds: int) -> dict:
    """{label: W, R, N and the measured wall ratio} of one run (cpu-tiny: d = decision_s = 0)."""
    d = json.loads(path.read_text())
    rows = d["rows"]
    pred = predict(d["meta"], d, seeds, "cpu-tiny")
    measured = errors(rows, pred)  # label: (measured ratio, ...)
    return {
        label: {
            "W": pred[label]["wall"],
            "R": row["requests"] / row["eff"] if row["eff"] else math.nan,
            "N": pred[label]["rounds"],
            "rollouts": pred[label]["rollouts"],
            "measured": measured[label][0],
        }
        for label, row in rows.items()
    }


def predicted(comp: dict, d: float, s: float) -> dict:
    """{label: predicted wall ratio to DS by rounds} at per-request d and per-barrier s."""
    wall = {label: c["W"] + d * c["R"] + s * c["N"] for label, c in comp.items()}
    return {label: w / wall["ds rounds"] for label, w in wall.items()}


def residuals(comps: dict, names, d: float, s: float) -> np.ndarray:
    return np.array(
        [
            predicted(comps[n], d, s)[label] - c["measured"]
            for n in names
            for label, c in comps[n].items()
            if label != "ds rounds" and c["measured"] is not None
        ]
    )


def fit(comps: dict, names) -> tuple[float, float]:
    """(d, decision_s) >= 0 of least squares over the runs `names`."""
    got = least_squares(lambda x: residuals(comps, names, *x), [1e-3, 1e-2], bounds=(0, np.inf))
    return float(got.x[0]), float(got.x[1])


def error(comps: dict, names, d: float, s: float) -> dict:
    e = np.abs(residuals(comps, names, d, s))
    return {"mean": float(e.mean()), "max": float(e.max()), "n": int(len(e))}


def pick(path: Path, seeds: int) -> list[dict]:
    """Every plan of PLANS streamed on the run's laws with the served preset, over DS by rounds."""
    d = json.loads(path.read_text())
    meta = d["meta"]
    law, setup = model_of(meta, d, "cpu-tiny-served")
    ds = simulate(law, setup, meta, "ds", "rounds", 1.0, seeds)
    out = []
    for name, over, cost in PLANS:
        p = simulate(law, setup, meta, name, "stream", over, seeds, 0, cost)
        out.append(
            {
                "strategy": name,
                "overprovision": over,
                "request_cost": cost,
                "wall_ratio": p["wall"] / ds["wall"],
                "rollout_ratio": p["rollouts"] / ds["rollouts"],
                "requests": p["requests"],
            }
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8, help="simulated runs per strategy (8)")
    ap.add_argument("--out", default=str(RESULTS / "served_calibration.json"))
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        raise SystemExit(f"--seeds: must be >= 1, got {args.seeds}")
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise SystemExit(f"--out: {out} exists (pass --overwrite to replace it)")
    comps = {}
    for i, name in enumerate(SERVED, 1):
        print(f"[{i}/{len(SERVED)}] simulating {name} ({args.seeds} seeds)", file=sys.stderr)
        comps[name] = components(RUNS / name, args.seeds)
    seen = [n for n in SERVED if n not in HELD_OUT]
    d, s = fit(comps, SERVED)
    hd, hs = fit(comps, seen)
    ds = comps[SERVED[-1]]["ds rounds"]
    price = d / (ds["W"] / ds["rollouts"])  # rollouts of DS by rounds' engine time a request buys
    print(
        f"cpu-tiny-served: d = {d:.5f} s per client request, decision_s = {s:.4f} s per round "
        f"barrier (least squares over {len(SERVED)} served runs, {args.seeds} simulated runs "
        f"per strategy); a request = {price:.2f} rollouts of DS by rounds' predicted wall"
    )
    print(f"{'run':<37}{'strategy':<28}{'measured':>9}{'cpu-tiny':>9}{'served':>8}{'held-out':>9}")
    for name in SERVED:
        base, after, held = (predicted(comps[name], *x) for x in ((0, 0), (d, s), (hd, hs)))
        for label, c in comps[name].items():
            if label == "ds rounds" or c["measured"] is None:
                continue
            print(
                f"{name:<37}{label:<28}{c['measured']:>9.3f}{base[label]:>9.3f}"
                f"{after[label]:>8.3f}{held[label]:>9.3f}"
            )
        errs = [error(comps, [name], *x)["mean"] for x in ((0, 0), (d, s), (hd, hs))]
        print(
            f"{name:<37}{'mean |predicted - measured|':<37}{errs[0]:>9.3f}{errs[1]:>8.3f}"
            f"{errs[2]:>9.3f}"
        )
    report = {
        "d_s_per_request": d,
        "decision_s_per_round": s,
        "request_price_rollouts": price,
        "seeds": args.seeds,
        "runs": list(SERVED),
        "error_cpu_tiny": error(comps, SERVED, 0.0, 0.0),
        "error_fitted": error(comps, SERVED, d, s),
        "held_out": {
            "fit_on": seen,
            "d_s_per_request": hd,
            "decision_s_per_round": hs,
            "runs": list(HELD_OUT),
            "error_cpu_tiny": error(comps, HELD_OUT, 0.0, 0.0),
            "error_fitted": error(comps, HELD_OUT, hd, hs),
        },
        "components": comps,
    }
    h = report["held_out"]
    for what, e in (
        ("all runs, cpu-tiny", report["error_cpu_tiny"]),
        ("all runs, fitted (in-sample)", report["error_fitted"]),
        ("priced runs, cpu-tiny", h["error_cpu_tiny"]),
        (
            f"priced runs, fitted on the other {len(seen)} (d {hd:.5f}, decision_s "
            f"{hs:.4f}; held out)",
            h["error_fitted"],
        ),
    ):
        print(
            f"|predicted - measured| wall ratio, {what}: mean {e['mean']:.3f}, max "
            f"{e['max']:.3f} over {e['n']} strategies"
        )
    print(f"[pick] simulating {len(PLANS)} streamed plans on {SERVED[-1]}", file=sys.stderr)
    plans = pick(RUNS / SERVED[-1], args.seeds)
    print(f"\nthe preset's streamed plans on the laws of {SERVED[-1]}, over DS by rounds:")
    print(f"{'plan':<28}{'wall':>7}{'rollouts':>9}{'req/eff':>8}")
    for p in plans:
        name = f"{p['strategy']} x{p['overprovision']:g} c{p['request_cost']:g}"
        print(f"{name:<28}{p['wall_ratio']:>7.3f}{p['rollout_ratio']:>9.3f}{p['requests']:>8.2f}")
    ok = [p for p in plans if p["strategy"] != "ds" and p["rollout_ratio"] <= 0.80]
    best = min(ok, key=lambda p: p["wall_ratio"]) if ok else None
    print(
        "pick (least wall with rollouts <= 0.80x): "
        + (
            "none"
            if best is None
            else f"{best['strategy']} x{best['overprovision']:g} c{best['request_cost']:g}"
        )
    )
    report["plans"], report["pick"] = plans, best
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
