"""`sara-sim simulate | compare | verify | bench` — the simulator's subcommands (``cli.py`` adds
them to its parser; same one-line ParameterError messages, exit 2 on bad input).

    sara-sim simulate --strategy sara --difficulty beta:0.3,0.3 --k 8 --tau-low 0.3 --groups 64 \\
        --steps 200 --seed 0 [--prior 1,1] [--json]
    sara-sim simulate --strategy sara-auto --difficulty history:deepscaler --epochs 0-9 --k 8 --json
    sara-sim compare  --difficulty history:deepscaler --epochs 0-9 --k 8 [--strategies a,b] [--json]
    sara-sim verify   [--quick] [--json]        # exit 1 if a claim fails where it must hold
    sara-sim bench    [--k 128] [--json]
"""

import math
import sys

from ..core.errors import ParameterError, ascii_float, ascii_int, check_budget
from ..core.registry import SARA
from ..sim.baselines import (
    DS_3N,
    DS_ROUNDS,
    DS_STREAM,
    decomposition,
    decomposition_text,
    ratio,
)
from .common import _emit, _float, _int, _law, add_law_args, add_output_args, dumps

SIM_KEYS = (  # the JSON contract of `simulate` (more keys follow them)
    "strategy",
    "steps",
    "rollouts_per_step",
    "tokens_per_step",
    "effective_groups_per_step",
    "cost_per_effective_group",
    "cost_per_effective_group_se",
    "effective_fraction",
    "false_abandon_rate",
    "rounds_per_step",
    "waste_per_step",
)


def _value(text):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for conv in (ascii_int, ascii_float):
        try:
            return conv(text)
        except ValueError:
            pass
    if "," in text:
        return tuple(_value(x) for x in text.split(","))
    return text


# simulate()'s own keywords have their own flags; --param is for strategy parameters only
_OWN = {"k", "groups", "budget", "steps", "replicates", "seed", "tau_low", "tau_high", "prior"}
_OWN |= {"capacity", "probe", "increment", "pool", "tokens", "progress", "log_events", "force"}


def _params(items):
    out = {}
    for item in items or []:
        key, eq, val = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key:
            raise ParameterError("--param", f"must be KEY=VALUE, got {item!r}")
        if key in _OWN:
            flag = "--" + key.replace("_", "-")
            raise ParameterError("--param", f"{key} has its own flag: use {flag}, not --param")
        out[key] = _value(val.strip())
    return out


def _sim_law(args):
    from ..core.difficulty import check_k_for_law
    from ..core.errors import check_k
    from ..sim.laws import parse_sim_law

    if args.epochs is not None and args.epoch is not None:
        raise ParameterError("--epochs", "give either --epoch E or --epochs A-B, not both")
    epoch = args.epochs if args.epochs is not None else args.epoch
    flag = "--epochs" if args.epochs is not None else "--epoch"  # the one the user typed
    check_k(args.k, "--k")
    law = parse_sim_law(args.difficulty, epochs=epoch, epoch_flag=flag)
    check_k_for_law(args.k, law)
    return law


def _sim_kwargs(args):
    from ..sim.laws import TokenModel

    same = ("k", "groups", "steps", "replicates", "seed", "tau_low", "tau_high", "pool", "force")
    return {
        **{name: getattr(args, name) for name in same},  # flags simulate() takes as they are
        "prior": args.prior or (1.0, 1.0),
        "tokens": TokenModel(args.len_pass, args.len_fail),
        "carry": args.carry,
    }


def _add_sim_args(p, strategy=True):
    add_law_args(p)
    p.add_argument("--epochs", default=None, help="history epochs A-B (same as --epoch A-B)")
    if strategy:
        p.add_argument("--strategy", required=True, help="see `sara_sim.sim.strategies`")
    tau = SARA.tau_low  # the one default (registry.SaraParams)
    p.add_argument("--tau-low", type=_float("--tau-low"), default=tau, help=f"in [0, 1] ({tau:g})")
    p.add_argument("--tau-high", type=_float("--tau-high"), default=None, help="commit side; off")
    p.add_argument("--groups", type=_int("--groups"), default=64, help="N effective groups/step")
    p.add_argument("--steps", type=_int("--steps"), default=100, help="training steps (100)")
    p.add_argument("--replicates", type=_int("--replicates"), default=4, help="seeds (4)")
    p.add_argument("--seed", type=_int("--seed"), default=0, help="base seed (0)")
    p.add_argument("--pool", type=_int("--pool"), default=0, help="static laws: pool (0 fresh)")
    p.add_argument("--len-pass", type=_float("--len-pass"), default=2000.0, help="tokens")
    p.add_argument("--len-fail", type=_float("--len-fail"), default=3500.0, help="tokens")
    p.add_argument(
        "--no-carry",
        dest="carry",
        action="store_false",
        help="SARA family: drop surplus and open groups at a step's end, as DS does",
    )


def cmd_simulate(args):
    from ..sim.simulate import simulate, summarize

    law = _sim_law(args)
    kw = _sim_kwargs(args)
    extra = _params(args.param)
    for name in ("budget", "capacity", "probe", "increment"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    res = simulate(args.strategy, law, progress=not args.json, **kw, **extra)
    summ = summarize(res)
    out = {key: summ[key] for key in SIM_KEYS}
    out.update({key: v for key, v in summ.items() if key not in out})
    out["config"] = res.config
    _emit(args, out, f"{args.strategy} on {law}, k={args.k}")


def compare_table(law, kw, strategies, progress=False, priced_in="rollouts"):
    """Every strategy on the same law and seed, sorted by rollouts per effective group; with
    its ratios to DS streamed (``ds_stream_reference``) and to DS by rounds (N; verl's 3N where
    ds-verl3n runs).  The table's attrs hold the references and the decomposition of the
    savings (``baselines``); `priced_in`: sara-auto's plan and sara-history's price rule
    priced in rollouts or tokens."""
    import pandas as pd

    from ..sim.simulate import simulate, summarize
    from ..sim.strategies import STRATEGIES, info

    rows, refs = [], {}
    for name in strategies or STRATEGIES:
        own = kw if info(name).family == "sara" else {x: v for x, v in kw.items() if x != "carry"}
        if name in ("sara-auto", "sara-history"):  # the plans with a price
            own = {**own, "priced_in": priced_in}
        res = simulate(name, law, progress=progress, **own)  # only SARA's kernel carries
        s = summarize(res)
        rows.append(s)
        if name == "ds":
            refs[DS_STREAM] = ds_stream_reference(res)
        if name in ("ds", "ds-verl3n"):
            cost = (s["cost_per_effective_group"], s["tokens_per_effective_group"])
            refs[f"{name} rounds"] = cost
    df = pd.DataFrame(rows).sort_values("cost_per_effective_group", kind="mergesort")
    ds = df.loc[df["strategy"] == "ds", "cost_per_effective_group"]
    if len(ds):
        df["savings_vs_ds"] = 1.0 - df["cost_per_effective_group"] / float(ds.iloc[0])
        tds = float(df.loc[df["strategy"] == "ds", "tokens_per_effective_group"].iloc[0])
        df["token_savings_vs_ds"] = 1.0 - df["tokens_per_effective_group"] / tds
    for ref, tag in ((DS_STREAM, "ds_stream"), (DS_ROUNDS, "ds_rounds"), (DS_3N, "ds_verl3n")):
        if ref in refs:
            df[f"ratio_vs_{tag}"] = [ratio(x, refs[ref][0]) for x in df["cost_per_effective_group"]]
            df[f"token_ratio_vs_{tag}"] = [
                ratio(x, refs[ref][1]) for x in df["tokens_per_effective_group"]
            ]
    df = df.reset_index(drop=True)
    costs = dict(
        zip(df["strategy"], zip(df["cost_per_effective_group"], df["tokens_per_effective_group"]))
    )
    costs = {**{n: c for n, c in costs.items() if n not in ("ds", "ds-verl3n")}, **refs}
    df.attrs["references"] = {
        name: {"rollouts_per_effective_group": r, "tokens_per_effective_group": t}
        for name, (r, t) in refs.items()
    }
    df.attrs["decomposition"] = {
        unit: decomposition({n: c[i] for n, c in costs.items()})
        for i, unit in enumerate(("rollouts", "tokens"))
    }
    return df


def ds_stream_reference(res):
    """(rollouts, tokens) per effective group of DS streamed, from a DS run by rounds: the same
    prompts and draws with every group sampled used — a stream keeps sampling until N groups are
    mixed and what is in flight at a step's end runs on into the next (docs/design.md §2), so no
    generation-batch surplus is thrown away: k / P(mixed) rollouts per effective group."""
    f = res.frame
    mixed = float(f["decided"].sum() - f["saturated"].sum())
    if mixed <= 0:
        return None, None
    return float(f["decided_rollouts"].sum()) / mixed, float(f["tokens"].sum()) / mixed


def _check_sim_size(names, law, kw, force):
    """compare runs every strategy in turn: the whole request must fit (see simulate.estimate)."""
    from ..sim.budget import ROLLOUT_LIMIT, check_memory, estimate, largest_factor
    from ..sim.strategies import default_params

    k, groups, steps, reps = kw["k"], kw["groups"], kw["steps"], kw["replicates"]
    size = {"k": k, "groups": groups, "budget": None, "steps": steps, "replicates": reps}
    rollouts = 0.0
    for name in names:
        prm = default_params(name, k, groups)
        rollouts += estimate(name, law, **size, params=prm, pool=kw["pool"])[0]
    check_memory(law, **size, pool=kw["pool"], force=force)  # one strategy at a time
    worst = largest_factor(k, groups, None, steps, reps)
    check_budget(rollouts, ROLLOUT_LIMIT, worst, "simulated rollouts (all strategies)", force)


def cmd_compare(args):
    from ..core.optimal import check_priced_in
    from ..sim.strategies import STRATEGIES

    law = _sim_law(args)
    names = None
    if args.strategies:
        names = [x.strip() for x in args.strategies.split(",") if x.strip()]
        bad = [x for x in names if x not in STRATEGIES]
        if bad:
            raise ParameterError(
                "--strategies", f"unknown {bad}; choose from {', '.join(STRATEGIES)}"
            )
    check_priced_in("sara-auto", args.priced_in, flag="--priced-in")
    kw = _sim_kwargs(args)
    _check_sim_size(names or STRATEGIES, law, kw, args.force)  # before the first strategy runs
    df = compare_table(law, kw, names, progress=not args.json, priced_in=args.priced_in)
    if args.json:
        print(
            dumps(
                {
                    "law": str(law),
                    "k": args.k,
                    "priced_in": args.priced_in,
                    "rows": df.to_dict("records"),
                    "references": df.attrs["references"],
                    "decomposition": df.attrs["decomposition"],
                }
            )
        )
        return
    print(f"all strategies on {law}")  # a history path can be long: the law has its own line
    print(
        f"k={args.k}, N={args.groups}, {args.steps} steps x {args.replicates} seeds "
        "(sorted by rollouts per effective group)"
    )
    print(compare_text(df))
    print(reference_text(df, priced_in=args.priced_in))


def reference_text(df, priced_in="rollouts"):
    """Each strategy against DS streamed and DS by rounds (N, and 3N with ds-verl3n), and where
    the saving over DS by rounds comes from (``baselines``)."""
    refs = df.attrs.get("references", {})
    if DS_STREAM not in refs:
        return "(no ds in the run: no reference for the savings)"
    r, t = (
        refs[DS_STREAM][x] for x in ("rollouts_per_effective_group", "tokens_per_effective_group")
    )
    cols = [("ds_stream", "DS str."), ("ds_rounds", "DS N"), ("ds_verl3n", "DS 3N")]
    cols = [c for c in cols if f"ratio_vs_{c[0]}" in df.columns]
    lines = [
        f"\nagainst DS streamed ({r:.2f} rollouts, {t:.0f} tokens per effective group: every",
        "group DS samples used, k / P(mixed)) and DS by rounds; ratios of rollouts | tokens per",
        f"effective group (plans priced in {priced_in}):",
        f"{'strategy':<14}" + "".join(f"{'roll/' + h:>13}{'tok/' + h:>12}" for _, h in cols),
    ]
    for row in df.to_dict("records"):
        cells = [(row[f"ratio_vs_{c}"], row[f"token_ratio_vs_{c}"]) for c, _ in cols]
        lines.append(
            f"{row['strategy']:<14}"
            + "".join(f"{_fmt(a, '.3f'):>13}{_fmt(b, '.3f'):>12}" for a, b in cells)
        )
    lines.append("SARA's rollouts and tokens are its schedule's own whether streamed or by rounds")
    lines.append("(the same decisions; the surplus carried): the kernel runs it by rounds.")
    for unit in ("rollouts", "tokens"):
        parts = df.attrs["decomposition"][unit]
        if parts:
            lines.append(f"where the saving over DS by rounds comes from (share of its {unit}):")
            lines += decomposition_text(parts)
    return "\n".join(lines)


def _fmt(v, f):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, f)


COMPARE_COLUMNS = (  # key, width, format, header — 11 columns, 95 characters with separators
    ("strategy", 13, "{}", "strategy"),
    ("cost_per_effective_group", 8, "{:.2f}", "roll/eff"),
    ("cost_per_effective_group_se", 6, "{:.2f}", "±se"),
    ("savings_vs_ds", 7, "{:.1%}", "vs ds"),
    ("token_savings_vs_ds", 7, "{:.1%}", "tok.ds"),
    ("effective_groups_per_step", 8, "{:.1f}", "eff/step"),
    ("effective_fraction", 6, "{:.3f}", "eff.fr"),
    ("rollouts_per_step", 9, "{:.1f}", "roll/step"),
    ("rounds_per_step", 6, "{:.2f}", "rounds"),
    ("waste_per_step", 8, "{:.1f}", "waste"),
    ("false_abandon_rate", 7, "{:.3f}", "f.aband"),
)


def compare_text(df):
    """The compare table: fixed-point numbers, at most 100 characters wide ('-': undefined)."""
    cols = [c for c in COMPARE_COLUMNS if c[0] in df.columns]
    lines = [
        " ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (_, w, _, h) in enumerate(cols))
    ]
    for row in df.to_dict("records"):
        cells = []
        for i, (key, w, f, _) in enumerate(cols):
            v = row[key]
            text = "-" if isinstance(v, float) and not math.isfinite(v) else f.format(v)
            cells.append(f"{text:<{w}}" if i == 0 else f"{text:>{w}}")
        lines.append(" ".join(cells))
    lines.append(
        "roll/eff: rollouts per effective (mixed) group; vs ds / tok.ds: rollout / token savings"
    )
    lines.append("against ds; eff.fr: effective share of the batch; f.aband: false-abandon rate;")
    lines.append("-: undefined (no effective group, or no ds reference).")
    return "\n".join(lines)


def cmd_verify(args):
    from ..sim.verify import check_verify_size, format_tables, report, run_claims

    check_verify_size(args.quick, args.steps, args.replicates, args.force)
    rows = run_claims(
        quick=args.quick,
        steps=args.steps,
        replicates=args.replicates,
        seed=args.seed,
        progress=not args.json,
    )
    rep = report(rows)
    if args.json:
        rep["cells"] = rows.to_dict("records")
        print(dumps(rep))
    else:
        print(format_tables(rows))
        print("\nclaims (cells where the assumption holds: passed / failed):")
        for claim, c in rep["claims"].items():
            print(
                f"  {claim:<36} {c['passed']:>4} / {c['failed']:<3}  shown: {c['shown_holds']} "
                f"hold, {c['shown_breaks']} break"
            )
        print("OK" if rep["ok"] else "FAILED: a claim fails where its assumption holds")
    return 0 if rep["ok"] else 1


def cmd_bench(args):
    from ..core.errors import check_k
    from ..sim.bench import bench_report, run_bench
    from ..sim.budget import ROLLOUT_LIMIT

    k = check_k(args.k, "--k")
    # the timed simulator runs: ~6 runs of 64 groups x 200 steps at each k of the sweep and at k
    check_budget(6 * 64 * 200 * 2.0 * k, ROLLOUT_LIMIT, "--k", "benchmark rollouts", args.force)
    out = run_bench(k=k, spec=args.difficulty, quick=args.quick)
    if args.json:
        print(dumps(out))
        return
    print(bench_report(out))


def add_sim_commands(sub):
    """Register the simulator's subcommands on `cli.build_parser`'s subparsers."""
    p = sub.add_parser("simulate", help="Monte Carlo of one strategy (per-step metrics)")
    _add_sim_args(p)
    p.add_argument("--budget", type=_int("--budget"), default=None, help="fixed-budget rollouts")
    p.add_argument("--capacity", type=_int("--capacity"), default=None, help="rollouts/round")
    p.add_argument("--probe", type=_int("--probe"), default=None, help="first round (0 auto)")
    p.add_argument("--increment", type=_int("--increment"), default=None, help="later (0 auto)")
    p.add_argument("--param", action="append", help="strategy parameter KEY=VALUE (repeat)")
    p.set_defaults(func=cmd_simulate)
    p = sub.add_parser("compare", help="all strategies side by side on one law and seed")
    _add_sim_args(p, strategy=False)
    p.add_argument("--strategies", default=None, help="comma-separated subset (default: all)")
    p.add_argument(
        "--priced-in",
        default="rollouts",
        help="sara-auto's plan and sara-history's price rule minimise rollouts | "
        "tokens per effective group, the lengths learned from the run's own "
        "rollouts (rollouts)",
    )
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("verify", help="the four claims across k and tau_low, sim vs exact")
    p.add_argument("--quick", action="store_true", help="small grid (k <= 16), fewer steps")
    p.add_argument("--steps", type=_int("--steps"), default=None, help="steps per cell (>= 1)")
    p.add_argument("--replicates", type=_int("--replicates"), default=None, help="seeds (>= 1)")
    p.add_argument("--seed", type=_int("--seed"), default=0, help="base seed (0)")
    add_output_args(p)
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("bench", help="simulated rollouts per second vs plain Bernoulli draws")
    p.add_argument("--k", type=_int("--k"), default=128, help="group size of the headline (128)")
    p.add_argument("--difficulty", default="beta:0.5,0.5", help="law (beta:0.5,0.5)")
    p.add_argument("--quick", action="store_true", help="short timings (for tests)")
    add_output_args(p)
    p.set_defaults(func=cmd_bench)


__all__ = ["add_sim_commands", "compare_table", "SIM_KEYS", "sys", "_law"]
