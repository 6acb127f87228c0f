"""`sara-sim wallclock`: the strategies' wall time per effective group on the engine model.

    sara-sim wallclock --difficulty history:deepscaler --epoch 0-52 --k 8 \\
        [--strategies uniform,ds,sara,sara-auto,sara-history]
        [--preset gpu|cpu-tiny|cpu-tiny-served] [--a S --b S --c S --d S --max-num-seqs N]
        [--len-pass 2000 --len-fail 3500 --len-cv 0.5 | --lengths history.csv]
        [--decision-s S] [--groups 64] [--steps 20] [--seed 0] [--priced-in rollouts|tokens]
        [--json]

Round-synchronous or streamed collection (``sim/wallclock_run.py``) on a continuous-batching
engine model (``sim/wallclock.py``); ratios to ds run the same way, and to the references of
every saving (``sim/baselines.py``): DS streamed and DS by rounds (verl's 3N too where
ds-verl3n runs), with the decomposition of the savings when streamed.  Every input is checked
before anything runs.
"""

import math

from ..collect.stream import BOUNDARIES
from ..core.errors import (
    ParameterError,
    check_budget,
    check_choice,
    check_float,
    check_int,
    check_seed,
)
from ..core.optimal import check_priced_in
from ..core.registry import names, row
from ..sim.baselines import (
    DS_3N,
    DS_ROUNDS,
    DS_STREAM,
    decomposition,
    decomposition_text,
    ratio,
)
from .common import FORCE_HELP, HISTORY_NAMES, JSON_HELP, _float, _int, _law, dumps

DEFAULT_STRATEGIES = "uniform,ds,sara,sara-auto,sara-history"
# ~1e5 simulated rollouts a second through the Python collectors and the event loop here
ROLLOUT_LIMIT = 2e7
KEYS = (
    "strategy", "wall_per_effective_group_s", "wall_ratio_vs_ds", "tokens_per_effective_group",
    "token_ratio_vs_ds", "rollouts_per_effective_group", "requests_per_effective_group",
    "rounds_per_step", "utilisation", "time_utilisation", "median_rounds",
    "cancelled_per_effective_group", "cancelled_token_share", "steps", "effective_groups",
    "trace_step", "step_occupancy",
)  # fmt: skip
# what sim/stream.py drives: DS's family and SARA's collectors (a selector in front included)
STREAMED = tuple(
    n
    for n in names("collector")
    if row(n).family in ("dynamic-sampling", "sara", "sara-history", "sara-select")
)


def _setup(args):
    from ..sim.wallclock import (
        PRESETS,
        EngineConfig,
        check_config,
        lognormal_lengths,
        read_lengths,
    )
    from ..sim.wallclock_run import Setup

    preset = PRESETS[check_choice(args.preset, "--preset", tuple(PRESETS))]
    cfg = EngineConfig(
        *(
            preset.engine[i] if getattr(args, f) is None else getattr(args, f)
            for i, f in enumerate(("a", "b", "c", "max_num_seqs", "d"))
        )
    )
    cfg = check_config(cfg)
    if args.lengths is not None:
        lengths = read_lengths(args.lengths, "--lengths")
    else:
        lengths = lognormal_lengths(args.len_pass, args.len_fail, args.len_cv)
    decision = preset.decision_s if args.decision_s is None else args.decision_s
    return Setup(cfg, lengths, check_float(decision, "--decision-s", 0.0))


def check_args(args):
    """Every flag, before any run: returns (law, setup, strategies)."""
    from ..sim.budget import MEMORY_LIMIT
    from ..sim.laws import POOL_LIMIT

    law = _law(args)
    check_int(args.groups, "--groups", 1)
    check_int(args.steps, "--steps", 1)
    check_seed(args.seed, "--seed")
    check_int(args.pool, "--pool", 1, POOL_LIMIT)
    check_choice(args.schedule, "--schedule", ("rounds", "stream"))
    check_choice(args.boundary, "--boundary", BOUNDARIES)
    check_int(args.max_inflight, "--max-inflight", 0, args.k)
    check_float(args.overprovision, "--overprovision", 1.0, 100.0)
    check_float(args.request_cost, "--request-cost", 0.0)
    check_priced_in("sara-auto", args.priced_in, flag="--priced-in")
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not chosen:
        raise ParameterError(
            "--strategies", f"name at least one of {', '.join(names('collector'))}"
        )
    chosen = [row(s, "collector", "--strategies").name for s in chosen]
    if "ds" not in chosen:
        chosen = ["ds", *chosen]  # the reference of the ratios
    if args.schedule == "stream":
        off = [s for s in chosen if s not in STREAMED]
        if off:
            raise ParameterError(
                "--strategies",
                f"--schedule stream runs {', '.join(STREAMED)}, not {', '.join(off)}",
            )
    setup = _setup(args)
    # a rate law's pool: its rates and a fresh order each pass (2 x 8 B a prompt)
    check_budget(
        16.0 * args.pool / 2**30, MEMORY_LIMIT / 2**30, "--pool", "memory (GiB)", args.force
    )
    est = 2.0 * args.steps * args.groups * args.k * (len(chosen) + 2)  # + the references
    factors = {"--steps": args.steps / 20, "--groups": args.groups / 64, "--k": args.k / 8}
    factors["--strategies"] = len(chosen) / len(DEFAULT_STRATEGIES.split(","))
    worst = max(factors, key=factors.get)  # the flag furthest above its default
    check_budget(est, ROLLOUT_LIMIT, worst, "simulated rollouts", args.force)
    return law, setup, list(dict.fromkeys(chosen))


def cmd_wallclock(args):
    from ..sim.wallclock_run import ratios_to_ds, run_strategy

    law, setup, chosen = check_args(args)
    knobs = {"overprovision": args.overprovision, "max_inflight": args.max_inflight}
    priced = {
        "sara-auto": {"request_cost": args.request_cost, "priced_in": args.priced_in},
        "sara-history": {"priced_in": args.priced_in},
    }  # the plans with a price

    def run(s, schedule):
        return run_strategy(
            law,
            s,
            setup,
            k=args.k,
            groups=args.groups,
            steps=args.steps,
            seed=args.seed,
            pool=args.pool,
            schedule=schedule,
            boundary=args.boundary,
            **knobs,
            **priced.get(s, {}),
        )

    res = [run(s, args.schedule) for s in chosen]
    by_name = {r["strategy"]: r for r in res}
    refs = {}  # the references of every saving: DS streamed, DS by rounds (N; 3N if listed)
    for name, schedule, ref in (
        ("ds", "stream", DS_STREAM),
        ("ds", "rounds", DS_ROUNDS),
        ("ds-verl3n", "rounds", DS_3N),
    ):
        if name in by_name:
            refs[ref] = by_name[name] if args.schedule == schedule else run(name, schedule)
    rows = [{key: r[key] for key in KEYS} for r in ratios_to_ds(res)]
    for out, r in zip(rows, res):
        out.update(reference_ratios(r, refs))
    inputs = {
        "difficulty": args.difficulty, "epoch": args.epoch, "k": args.k, "groups": args.groups,
        "steps": args.steps, "seed": args.seed, "engine": setup.engine._asdict(),
        "lengths": _lengths_text(setup.lengths), "decision_s": setup.decision_s,
        "schedule": args.schedule, "boundary": args.boundary, **knobs,
        "request_cost": args.request_cost, "priced_in": args.priced_in,
    }  # fmt: skip
    references = {name: {key: r[key] for key in REF_KEYS} for name, r in refs.items()}
    parts = _decomposition(res, refs, args.schedule)
    if args.json:
        print(dumps({**inputs, "rows": rows, "references": references, "decomposition": parts}))
        return 0
    e = setup.engine
    how = "round-synchronous" if args.schedule == "rounds" else f"streamed ({args.boundary})"
    print(f"wall clock, {how} — {law}, k={args.k}, {args.groups} groups/step")
    print(
        f"engine: a={e.a:.4g} s, b={e.b:.4g} s/seq, c={e.c:.4g} s/admitted, "
        f"d={e.d:.4g} s/request, max_num_seqs={e.max_num_seqs}, decision "
        f"{setup.decision_s:.4g} s/round; lengths {inputs['lengths']}"
    )
    print(table(rows))
    print("engine occupancy over one step (running / max_num_seqs, 10 equal time slices):")
    for r in rows:
        cells = " ".join(f"{x:.2f}" for x in r["step_occupancy"])
        print(f"  {r['strategy']:<14}step {r['trace_step']:<4} {cells}")
    print(reference_table(rows, refs, args.priced_in))
    for unit, text in (("wall", "wall time"), ("tokens", "tokens"), ("rollouts", "rollouts")):
        if parts.get(unit):
            print(f"where the saving over DS by rounds comes from (share of its {text}):")
            print("\n".join(decomposition_text(parts[unit])))
    return 0


REF_KEYS = ("wall_per_effective_group_s", "tokens_per_effective_group",
            "rollouts_per_effective_group", "schedule")  # fmt: skip
# the ratio kinds (JSON key stem, the result's column)
RATIO_KINDS = (("wall_ratio", "wall_per_effective_group_s"),
               ("token_ratio", "tokens_per_effective_group"),
               ("rollout_ratio", "rollouts_per_effective_group"))  # fmt: skip
REF_TAGS = {DS_STREAM: "ds_stream", DS_ROUNDS: "ds_rounds", DS_3N: "ds_verl3n_rounds"}


def reference_ratios(r, refs):
    """A result's wall, tokens and rollouts per effective group over each reference's:
    {"wall_ratio_vs_ds_stream": ..., "token_ratio_vs_ds_rounds": ..., ...}."""
    return {
        f"{stem}_vs_{REF_TAGS[name]}": ratio(r[col], ref[col])
        for name, ref in refs.items()
        for stem, col in RATIO_KINDS
    }


def _decomposition(res, refs, schedule):
    """The chain of ``baselines.decomposition`` in wall time, tokens and rollouts — for a
    streamed run only (by rounds a SARA row's cost has its barriers in it, not its rule's)."""
    if schedule != "stream" or DS_ROUNDS not in refs:
        return {}
    out = {}
    for unit, col in (
        ("wall", "wall_per_effective_group_s"),
        ("tokens", "tokens_per_effective_group"),
        ("rollouts", "rollouts_per_effective_group"),
    ):
        costs = {name: r[col] for name, r in refs.items()}
        costs |= {r["strategy"]: r[col] for r in res if r["strategy"] not in ("ds", "ds-verl3n")}
        out[unit] = decomposition(costs)
    return out


def reference_table(rows, refs, priced_in):
    """Each strategy over DS streamed and DS by rounds (N; 3N with ds-verl3n)."""
    names = [n for n in (DS_STREAM, DS_ROUNDS, DS_3N) if n in refs]
    heads = {DS_STREAM: "DSstr", DS_ROUNDS: "DS N", DS_3N: "DS 3N"}
    lines = [
        "against DS streamed and DS by rounds: wall | tokens per effective group over "
        f"theirs (plans priced in {priced_in})",
        f"{'strategy':<14}"
        + "".join(f"{'wall/' + heads[n]:>12}{'tok/' + heads[n]:>11}" for n in names),
    ]
    for r in rows:
        cells = "".join(
            f"{_num(r[f'wall_ratio_vs_{REF_TAGS[n]}']):>12}"
            f"{_num(r[f'token_ratio_vs_{REF_TAGS[n]}']):>11}"
            for n in names
        )
        lines.append(f"{r['strategy']:<14}{cells}")
    return "\n".join(lines)


def _num(v):
    return "-" if v is None or not math.isfinite(v) else f"{v:.3f}"


def _lengths_text(law):
    if law.kind in ("empirical", "record"):
        return f"recorded (mean pass {law.mean(1):.0f}, fail {law.mean(0):.0f} tokens)"
    return f"lognormal (pass {law.pass_mean:g}, fail {law.fail_mean:g} tokens, cv {law.pass_cv:g})"


def table(rows):
    """Fixed-point columns; '-' for an undefined number."""
    cols = (
        ("strategy", "strategy", "<14", "s"),
        ("wall/eff [s]", "wall_per_effective_group_s", ">13", ".4g"),
        ("wall/ds", "wall_ratio_vs_ds", ">8", ".3f"),
        ("tok/eff", "tokens_per_effective_group", ">10", ".0f"),
        ("tok/ds", "token_ratio_vs_ds", ">7", ".3f"),
        ("roll/eff", "rollouts_per_effective_group", ">9", ".2f"),
        ("req/eff", "requests_per_effective_group", ">8", ".2f"),
        ("rounds", "rounds_per_step", ">7", ".2f"),
        ("canc", "cancelled_token_share", ">6", ".3f"),
        ("util", "utilisation", ">6", ".2f"),
        ("t.util", "time_utilisation", ">7", ".2f"),
    )
    lines = ["".join(f"{head:{fmt}}" for head, _, fmt, _ in cols)]
    for r in rows:
        cells = []
        for _, key, fmt, num in cols:
            v = r[key]
            ok = not isinstance(v, float) or math.isfinite(v)
            cells.append(f"{v:{fmt}{num}}" if ok else f"{'-':{fmt}}")
        lines.append("".join(cells))
    lines.append("util: busy slot-iterations / (max_num_seqs x iterations); t.util: busy")
    lines.append("slot-seconds / (max_num_seqs x wall time), barrier and decision idle included;")
    lines.append("canc: share of the tokens generated by rollouts aborted in flight.")
    return "\n".join(lines)


def add_wallclock_command(sub):
    p = sub.add_parser("wallclock", help="wall time per effective group on an engine model")
    p.add_argument("--difficulty", required=True, help=f"as theory's; e.g. history:{HISTORY_NAMES}")
    p.add_argument("--epoch", default=None, help="history epoch E or range A-B (default: all)")
    p.add_argument("--k", type=_int("--k"), default=8, help="group size (8)")
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES, help=DEFAULT_STRATEGIES)
    p.add_argument(
        "--preset", default="gpu", help="engine preset: gpu | cpu-tiny | cpu-tiny-served (gpu)"
    )
    for flag, what in (
        ("a", "s per iteration"),
        ("b", "s per running sequence per iteration"),
        ("c", "s per admitted sequence (prefill)"),
        ("d", "s per client request (a prompt's n rollouts sent at once)"),
    ):
        p.add_argument(f"--{flag}", type=_float(f"--{flag}"), default=None, help=f"{what} >= 0")
    p.add_argument("--max-num-seqs", type=_int("--max-num-seqs"), default=None, help=">= 1")
    p.add_argument("--len-pass", type=_float("--len-pass"), default=2000.0, help="mean tokens")
    p.add_argument("--len-fail", type=_float("--len-fail"), default=3500.0, help="mean tokens")
    p.add_argument("--len-cv", type=_float("--len-cv"), default=0.5, help="lognormal cv >= 0")
    p.add_argument("--lengths", default=None, help="sara-real audit history.csv: recorded lengths")
    p.add_argument(
        "--decision-s",
        type=_float("--decision-s"),
        default=None,
        help="s the engine idles at each round barrier >= 0 (default: the preset's)",
    )
    p.add_argument("--groups", type=_int("--groups"), default=64, help="effective groups/step")
    p.add_argument("--steps", type=_int("--steps"), default=20, help="steps per strategy (20)")
    p.add_argument("--pool", type=_int("--pool"), default=1024, help="rate laws: prompts (1024)")
    p.add_argument("--seed", type=_int("--seed"), default=0, help="seed (0)")
    p.add_argument("--schedule", default="rounds", help="rounds | stream (rounds)")
    p.add_argument(
        "--boundary",
        default="carry",
        help="stream: a step's end carries | aborts "
        "what is in flight | also drops open prompts (fresh) (carry)",
    )
    p.add_argument(
        "--max-inflight",
        type=_int("--max-inflight"),
        default=0,
        help="stream: rollouts in flight per prompt, 0..k (0: the plan's requests)",
    )
    p.add_argument(
        "--overprovision",
        type=_float("--overprovision"),
        default=1.0,
        help="probe quota x this, 1..100 (1: off): rounds probe over x the fresh prompts "
        "(fewer rounds); a stream probes for up to over x the missing groups, tapering as the "
        "step fills (a fuller engine)",
    )
    p.add_argument(
        "--request-cost",
        type=_float("--request-cost"),
        default=0.0,
        help="sara-auto: a request's price in rollouts, >= 0 (0: rollouts only): its plan "
        "minimises rollouts + this x requests per effective group",
    )
    p.add_argument(
        "--priced-in",
        default="rollouts",
        help="sara-auto's plan and sara-history's price rule minimise rollouts | tokens per "
        "effective group (tokens: a rollout priced by its outcome's mean length, learned from "
        "the run's own rollouts; rollouts)",
    )
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(func=cmd_wallclock)
    return p


__all__ = ["add_wallclock_command", "cmd_wallclock", "check_args", "table"]
