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
from sara_sim.core.errors import ParameterError, check_choice, check_int  # noqa: E402

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


def _check(a) -> None:
    from real.tasks import TASKS

    if not Path(a.model).is_dir():
        raise ParameterError("--model", f"must be a model directory, got {a.model!r}")
    check_choice(a.task, "--task", tuple(TASKS))
    check_int(a.k, "--k", 2, 1024)
    check_int(a.groups, "--groups", 1, 4096)
    check_int(a.steps, "--steps", 1, 10_000)
    check_int(a.warmup, "--warmup", 0, 10_000)
    check_int(a.seed, "--seed", 0, 2**31 - 1)
    if a.max_tokens is not None:
        check_int(a.max_tokens, "--max-tokens", 1, 1 << 20)


def _per(x, n, fmt):
    """x / n formatted, or '-' where no effective group was made (undefined, not a stand-in)."""
    return format(x / n, fmt) if n else "-"


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
    try:  # one line naming the flag, before any engine starts
        _check(args)
    except ParameterError as e:
        print(f"stream_real: error: {e}", file=sys.stderr)
        return 2
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
        eff, ok = t["eff"], t["eff"] > 0 and ds["eff"] > 0
        wall_ratio = (t["wall"] / eff) / (ds["wall"] / ds["eff"]) if ok else None
        roll_ratio = (t["rollouts"] / eff) / (ds["rollouts"] / ds["eff"]) if ok else None
        print(f"{label:<18}{_per(t['wall'], eff, '.3f'):>11}{_per(t['rollouts'], eff, '.2f'):>9}"
              f"{_per(t['tokens'], eff, '.1f'):>9}{_per(eff, t['groups'], '.2f'):>9}"
              f"{t['median_rounds']:>11.1f}{t['cancelled']:>10}"
              f"{'-' if wall_ratio is None else format(wall_ratio, '.2f'):>8}"
              f"{'-' if roll_ratio is None else format(roll_ratio, '.2f'):>8}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
