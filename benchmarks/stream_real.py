"""Benchmark: round-free collection on the real in-process vLLM engine (issue 20) — DS and SARA
in rounds, SARA with over-provisioned rounds, SARA and DS streamed, on one engine, the same task,
the same number of effective groups per step.

    .venv/bin/python benchmarks/stream_real.py --model DIR --task arithmetic --steps 4

Collection only: the engine's weights stay fixed (no training between steps), so every strategy
samples the same policy and the numbers compare schedules and rules, not learning. Each strategy
first runs --warmup steps that are not counted (Numba compiles the state machine's functions
once per process). Printed per strategy: wall seconds of collection per effective group,
rollouts and tokens per effective group, the effective fraction of the groups returned,
median rounds per step (streamed: engine waits), rollouts cancelled in flight; then each one's
ratio to DS in rounds, measured in this run. Wall times are as measured on this machine, with
whatever else it runs.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import real.base.env  # noqa: E402,F401  (before torch / vllm)

STRATEGIES = [  # (label, allocator, schedule, overprovision)
    ("ds rounds", "ds", "rounds", 1.0),
    ("sara rounds", "sara", "rounds", 1.0),
    ("sara rounds x1.5", "sara", "rounds", 1.5),
    ("sara rounds x2", "sara", "rounds", 2.0),
    ("sara stream", "sara", "stream", 1.0),
    ("ds stream", "ds", "stream", 1.0),
]


def run_one(engine, task, args, name, schedule, over):
    from real.rollout.collect import RolloutCollector
    from real.tasks import PromptStream
    from sara_sim.collect.allocator import make_collector

    knobs = {"overprovision": over} if name != "ds" else {}
    col = make_collector(name, k=args.k, groups=args.groups, seed=args.seed, schedule=schedule,
                         **knobs)  # fmt: skip
    rc = RolloutCollector(engine, task, col, args.k, seed=args.seed, max_tokens=args.max_tokens,
                          schedule=schedule)  # fmt: skip
    stream = PromptStream(task, seed=args.seed)
    tot = dict.fromkeys(("wall", "rollouts", "tokens", "eff", "groups", "cancelled"), 0)
    rounds = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        b = rc.collect(stream)
        if step < args.warmup:
            continue
        res = b.result
        tot["wall"] += time.perf_counter() - t0
        tot["rollouts"] += res.rollouts
        tot["tokens"] += b.tokens
        tot["eff"] += res.n_effective
        tot["groups"] += len(b.groups)
        tot["cancelled"] += b.cancelled
        rounds.append(res.rounds)
    tot["median_rounds"] = statistics.median(rounds)
    return tot


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="HF-format model directory")
    p.add_argument("--task", default="arithmetic")
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=None)
    args = p.parse_args(argv)
    from real.sampling.engine import Engine
    from real.tasks import make_task

    task = make_task(args.task, seed=0)
    args.max_tokens = args.max_tokens or task.max_tokens
    engine = Engine(args.model, seed=0)
    rows = {}
    for label, name, schedule, over in STRATEGIES:
        rows[label] = run_one(engine, task, args, name, schedule, over)
    print(f"task {args.task}, k {args.k}, {args.groups} effective groups per step, "
          f"{args.steps} steps (+{args.warmup} warm-up), max_tokens {args.max_tokens}")  # fmt: skip
    print(f"{'strategy':<18}{'wall/eff s':>11}{'roll/eff':>9}{'tok/eff':>9}{'eff frac':>9}"
          f"{'rounds med':>11}{'cancelled':>10}{'wall/DS':>8}{'roll/DS':>8}")  # fmt: skip
    ds = rows["ds rounds"]
    for label, t in rows.items():
        eff = max(t["eff"], 1)
        wall, roll = t["wall"] / eff, t["rollouts"] / eff
        print(f"{label:<18}{wall:>11.3f}{roll:>9.2f}{t['tokens'] / eff:>9.1f}"
              f"{t['eff'] / max(t['groups'], 1):>9.2f}{t['median_rounds']:>11.1f}"
              f"{t['cancelled']:>10}{wall / (ds['wall'] / max(ds['eff'], 1)):>8.2f}"
              f"{roll / (ds['rollouts'] / max(ds['eff'], 1)):>8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
