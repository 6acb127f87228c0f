"""Why the wall-clock model under-predicted the real stream's rollouts, and the check after.

    .venv/bin/python benchmarks/stream_model_check.py [--seeds 8]

Rollouts per effective group over DS by rounds' are counts: seeded, the same on any machine.
For every streamed plan of a committed ``stream_real.py`` run the measured ratio is set beside
the model's (``stream_predict.py``: the run's own laws, mean of `--seeds` simulated runs):

A. the run made before the streams were capped at the engine's slots
   (``results/stream_real/inprocess.json``), against three models, each adding one difference
   between the model and the real stream to the one before:
   1. the model as it predicted then — lengths drawn by outcome from every prompt's rollouts,
      and at most the engine's slots in flight;
   2. + the real stream's capacity: it kept its collector's x N k rollouts in flight (x 2: twice
      the 256 slots, so 256 queued in the engine, lost at every step's "fresh" end with the
      prompts they were queued for), where the model kept the slots;
   3. + each prompt's own lengths (``LengthLaw`` kind "record"): on the reasoning task 83 % of a
      length's variance about its outcome's mean is between prompts, so a group's rollouts end
      together; drawn from all prompts' lengths, the model's groups ended spread out and its
      streams held more prompts open at a step's end.
   (All three with today's collector, whose prior's window also takes a "fresh" step's dropped
   prompts: without them sara-auto x 2's fit drifted to one side in some runs, 1.2x the rollouts
   of the others; ``SaraCollector.drop_open``.)
B. the runs made since, with at most the slots in flight, against today's model (3.), with the
   spread of single simulated runs (their standard deviation over seeds): one real run of 32
   steps is one such draw.
The output is committed as benchmarks/stream_model_check.out.txt.
"""

import argparse
import json
import statistics
from pathlib import Path

from sara_sim.sim.stream_predict import knobs, model_of
from sara_sim.sim.wallclock import LengthLaw
from sara_sim.sim.wallclock_run import run_strategy

RESULTS = Path(__file__).resolve().parent / "results" / "stream_real"
BEFORE = "inprocess.json"
AFTER = ("inprocess_capped.json", "inprocess_capped_seed1.json")


def rollouts(law, setup, meta, row, seed):
    """One simulated run's rollouts per effective group of a run's row (its knobs)."""
    kw = knobs(
        row["strategy"],
        row["overprovision"],
        row.get("max_inflight", 0),
        row.get("request_cost", 0.0),
    )
    if row["schedule"] == "stream":
        kw |= {"schedule": "stream", "boundary": "fresh"}
    res = run_strategy(
        law,
        row["strategy"],
        setup,
        k=meta["k"],
        groups=meta["groups"],
        steps=meta["steps"],
        seed=seed,
        **kw,
    )
    return res["rollouts_per_effective_group"]


def ratios(law, setup, meta, rows, seeds):
    """{label: [per seed: rollouts over DS by rounds' of the same seed]} for the streamed rows."""
    ds = [rollouts(law, setup, meta, rows["ds rounds"], s) for s in range(seeds)]
    return {
        label: [rollouts(law, setup, meta, row, s) / ds[s] for s in range(seeds)]
        for label, row in rows.items()
        if row["schedule"] == "stream"
    }


def measured(rows, label):
    t, ds = rows[label], rows["ds rounds"]
    return (t["rollouts"] / t["eff"]) / (ds["rollouts"] / ds["eff"])


def before(seeds):
    d = json.loads((RESULTS / BEFORE).read_text())
    meta, rows = d["meta"], d["rows"]
    law, setup = model_of(meta, d)
    lengths = setup.lengths
    pooled = LengthLaw(
        "empirical", pass_values=lengths.pass_values, fail_values=lengths.fail_values
    )
    models = (
        ("1. as then", setup._replace(lengths=pooled)),
        ("2. + x N k", setup._replace(lengths=pooled, knows_slots=False)),
        ("3. + own lengths", setup._replace(knows_slots=False)),
    )
    got = {name: ratios(law, s, meta, rows, seeds) for name, s in models}
    print(
        f"A. {BEFORE} (before the cap; x N k in flight): rollouts per effective group over DS "
        f"by rounds', measured and modelled (mean of {seeds} simulated runs)"
    )
    print(f"{'plan':<28}{'measured':>9}" + "".join(f"{name:>18}" for name, _ in models))
    for label in got[models[0][0]]:
        m = measured(rows, label)
        means = [statistics.fmean(got[n][label]) for n, _ in models]
        cells = "".join(f"{x:>10.3f} ({x - m:+.3f})" for x in means)
        print(f"{label:<28}{m:>9.3f}{cells}")


def after(seeds):
    for name in AFTER:
        path = RESULTS / name
        if not path.is_file():
            print(f"\nB. {name} not found (benchmarks/stream_real.py --out writes it)")
            continue
        d = json.loads(path.read_text())
        meta, rows = d["meta"], d["rows"]
        law, setup = model_of(meta, d)
        got = ratios(law, setup, meta, rows, seeds)
        print(
            f"\nB. {name} (seed {meta['seed']}, {meta['steps']} steps; at most the slots in "
            "flight): measured and today's model (3.)"
        )
        print(
            f"{'plan':<28}{'measured':>9}{'model':>8}{'error':>8}{'sd of one run':>15}"
            f"{'range':>15}{'|error| <= 0.03':>17}"
        )
        for label, x in got.items():
            m, p = measured(rows, label), statistics.fmean(x)
            ok = "met" if abs(p - m) <= 0.03 else "MISSED"
            print(
                f"{label:<28}{m:>9.3f}{p:>8.3f}{p - m:>+8.3f}{statistics.stdev(x):>15.3f}"
                f"{min(x):>8.3f}-{max(x):.3f}{ok:>12}"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    before(args.seeds)
    after(args.seeds)


if __name__ == "__main__":
    main()
