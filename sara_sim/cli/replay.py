"""`sara-sim replay`: the history-informed strategies on recorded histories, with what they do to
the training signal (committed success rates, false abandons, starvation) beside their cost.

    sara-sim replay --history deepscaler --epochs 26-52 \\
        --strategies ds,sara,sara-history,sara-mopps,sara-dps --seeds 2 [--json]

Python replay through the collectors (``replay.py``): every epoch once, in a seeded order.
"""

import math
import sys

import numpy as np

from ..core.difficulty import HistoryLaw, check_k_for_law
from ..core.errors import check_budget, check_int, check_k, check_unit
from ..core.registry import names, row
from .common import HISTORY_NAMES, add_output_args, dumps

REPLAY_STRATEGIES = names("replay")
# the default: the reference, paper-faithful SARA and every strategy that learns from revisits
DEFAULT_REPLAY = ",".join(("ds", "sara", *names("replay", needs_history=True)))


def cmd_replay(args):
    frame, lo, hi, chosen = _checked(args)
    rows = _replay_rows(args, frame, (lo, hi), chosen)
    if args.json:
        print(dumps({"epochs": [lo, hi], "k": args.k, "seeds": args.seeds, "rows": rows}))
        return 0
    print(f"replay of {args.history} epochs {lo}-{hi}, k={args.k}, {args.seeds} seed(s)")
    _print_table(rows)
    return 0


def _checked(args):
    """Every flag checked, and the replay's size against REPLAY_VISIT_LIMIT, before any replay:
    the history frame, its epoch range and the strategies (ds first if not asked for)."""
    from ..core.difficulty import load_history, parse_epochs
    from ..sim.replay import REPLAY_VISIT_LIMIT

    check_k(args.k, "--k")
    check_int(args.groups, "--groups", 1)
    check_int(args.seeds, "--seeds", 1)
    check_unit(args.tau_low, "--tau-low")
    frame = load_history(args.history, "--history")
    lo, hi = parse_epochs(args.epochs, frame, "--epochs") or (0, int(frame["epoch"].max()))
    check_k_for_law(args.k, HistoryLaw(frame), "--k")  # a visit draws k of a record's samples
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]
    chosen = [row(name, "replay", "--strategies").name for name in chosen]
    if "ds" not in chosen:
        chosen = ["ds", *chosen]  # the reference for savings
    # Python collectors: every record of the range is visited once per (strategy, seed)
    records = int(((frame["epoch"] >= lo) & (frame["epoch"] <= hi)).sum())
    visits = float(records) * args.seeds * len(chosen)
    name = "--seeds" if args.seeds > 2 else "--strategies"
    check_budget(visits, REPLAY_VISIT_LIMIT, name, "prompt visits to replay", args.force)
    return frame, lo, hi, chosen


def _replay_rows(args, frame, epochs, chosen):
    """One row per strategy (means over seeds), cheapest first; a bar over runs on a terminal."""
    from ..sim.replay import replay, signal_report

    lo, hi = epochs
    rows = []
    bar = None
    if not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(chosen) * args.seeds, desc="replay", unit="run", leave=False)
    for name in chosen:
        kw = {"tau_low": args.tau_low} if name in ("sara", "sara-eb") else {}
        costs, reports = [], []
        for seed in range(args.seeds):
            if bar is not None:
                bar.update(1)
            out = replay(frame, name, range(lo, hi + 1), seed, k=args.k, groups=args.groups, **kw)
            costs.append(out["cost_per_effective_group"])
            reports.append(signal_report(out, frame))
        rep = {key: val for key, val in reports[0].items() if not isinstance(val, list | str)}
        for key in rep:
            rep[key] = float(np.mean([r[key] for r in reports]))
        # one seed: no standard error (JSON null)
        se = float(np.std(costs, ddof=1) / math.sqrt(len(costs))) if len(costs) > 1 else math.nan
        rows.append(
            {
                "strategy": name,
                "cost_per_effective_group": float(np.mean(costs)),
                "cost_se": se,
                **rep,
            }
        )
    ds = next(r["cost_per_effective_group"] for r in rows if r["strategy"] == "ds")
    for r in rows:
        r["savings_vs_ds"] = 1.0 - r["cost_per_effective_group"] / ds
    if bar is not None:
        bar.close()
    rows.sort(key=lambda r: r["cost_per_effective_group"])
    return rows


def _print_table(rows):
    cols = [("strategy", "<14"), ("roll/eff", ">9"), ("±se", ">7"), ("vs ds", ">8")]
    cols += [("f.aband", ">9"), ("starve>=5", ">10"), ("longest", ">8"), ("starved", ">8")]
    print("".join(f"{name:{fmt}}" for name, fmt in cols))
    for r in rows:
        print(
            f"{r['strategy']:<14}{_cell(r['cost_per_effective_group'], '9.2f')}"
            f"{_cell(r['cost_se'], '7.2f')}{_cell(r['savings_vs_ds'], '8.1%')}"
            f"{r['false_abandon_rate']:9.3f}{r['starving_prompt_share']:10.3f}"
            f"{r['longest_starvation_epochs']:8.0f}{r['starved_learnable_visit_share']:8.3f}"
        )
    print(
        "f.aband: share of abandoned/skipped visits whose full group would have mixed; starve>=5:"
    )
    print(
        "share of prompts unsampled >= 5 epochs in a row while learnable; starved: learnable visits"
    )
    print("that drew nothing; ±se: standard error over seeds ('-' with one seed).")


def _cell(x, spec):
    """A table cell: `-` where the number is undefined (one seed's SE, a cost or saving when no
    group was effective), right-aligned to the width in `spec`."""
    if x is None or not math.isfinite(x):
        return f"{'-':>{spec.split('.')[0]}}"
    return format(x, spec)


def add_replay_command(sub, int_type, float_type):
    p = sub.add_parser("replay", help="informed strategies on recorded histories (+ starvation)")
    p.add_argument(
        "--history",
        required=True,
        help=f"a built-in name ({HISTORY_NAMES}) or a CSV prompt_id, epoch, correct, samples",
    )
    p.add_argument("--epochs", default=None, help="A-B (default: all)")
    p.add_argument("--strategies", default=DEFAULT_REPLAY)
    p.add_argument("--k", type=int_type("--k"), default=8)
    p.add_argument("--groups", type=int_type("--groups"), default=32)
    p.add_argument("--tau-low", type=float_type("--tau-low"), default=0.5, help="sara / sara-eb")
    p.add_argument("--seeds", type=int_type("--seeds"), default=2, help="seeds (>= 1)")
    add_output_args(p)
    p.set_defaults(func=cmd_replay)
    return p


__all__ = ["add_replay_command", "cmd_replay"]
