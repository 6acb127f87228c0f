"""`sara-real`: make the tiny model, validate or compare strategies in GRPO runs, serve, audit.

    sara-real make-tiny
    sara-real validate --strategy sara --k 8 --groups 16 --steps 20 --out runs/sara
    sara-real compare --strategies uniform,ds,sara --steps 20 --out runs/cmp

The flags of `validate` / `compare` are the leaf fields of `real.base.config.Config` and of its
GRPO, strategy and engine sections (`real/base/config.py`; dashes for underscores), with the
field's docstring as help and its default shown — one place for every default — and `--help`
shows them in four groups: run, GRPO, strategy, engine; `audit`, `serve` and
`make-tiny` take theirs from `AuditConfig`, `ServeConfig` and `TinyConfig` the same way
(`real/app/flags.py`). Every argument is checked before torch or vLLM starts: a bad one exits with
status 2 and one line naming the parameter, its value and the allowed range."""

import json
import sys
from dataclasses import dataclass
from functools import partial

from real.app.audit import AuditConfig, cmd_audit
from real.app.compare import format_table, plot_compare, run_compare
from real.app.flags import Parser, add_flags, config_of, deprecated_flag
from real.app.run import train
from real.base import env as _env  # noqa: F401  (env vars before any torch / vllm import)
from real.base.config import Config, check_seed
from real.base.validate import DTYPES, STRATEGIES
from real.io.runfolder import check_writable
from real.io.runlog import SUMMARY_KEYS
from real.models.tiny import TimeCapReached, TinySettings, build_tiny, read_spread, with_overrides
from real.sampling.client import ServerError
from real.sampling.serve import ServeConfig, cmd_serve
from real.tasks import TASKS
from sara_sim.core.errors import check_float
from sara_sim.core.files import run_cli
from sara_sim.core.informed import RULES

NOT_FLAGS = ("strategy", "out")  # set per subcommand (validate: --strategy; compare: a list)


RUN_GROUP = "run (the task, the model, the steps, evaluation and the run folder)"


def _config_flags(p, strategy, out) -> None:
    """One flag per leaf field of Config, in four help groups: the run (Config's own fields), and
    one per section (GRPO, strategy, engine), titled by its docstring. `strategy` adds the
    subcommand's own strategy flag at the top of the strategy group, `out` its --out."""
    choices = {"task": TASKS, "dtype": DTYPES, "old_logprobs": ("engine", "recompute")}
    choices |= {"trainer": ("native", "trl"), "rule": RULES}
    add_flags(p, Config, NOT_FLAGS, choices, RUN_GROUP, {"": out, "knobs": strategy})


def build_parser():
    ap = Parser(prog="sara-real", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    add_flags(sub.add_parser("make-tiny", help="train the tiny default model (cached)"), TinyConfig)
    names = ", ".join(STRATEGIES)
    usage = "%(prog)s [-h] [{}] [--out OUT] [FLAG VALUE ...] (flags by group below)"
    p = sub.add_parser(
        "validate", help="one GRPO run with one strategy", usage=usage.format("--strategy NAME")
    )
    _config_flags(
        p,
        lambda g: g.add_argument("--strategy", default="sara", help=f"one of {names}"),
        lambda g: g.add_argument("--out", default="runs/validate", help="run directory"),
    )
    deprecated_flag(p, "--allocator", "--strategy")
    p = sub.add_parser(
        "compare",
        help="several strategies from the same start",
        usage=usage.format("--strategies A,B"),
    )
    _config_flags(
        p,
        lambda g: g.add_argument(
            "--strategies",
            default="uniform,ds,sara,sara-eb,sara-auto",
            help=f"comma-separated, from {names}; NAME+no-carry: a SARA-family run with --no-carry",
        ),
        lambda g: g.add_argument(
            "--out", default="runs/compare", help="folder for the runs, table and plots"
        ),
    )
    deprecated_flag(p, "--allocators", "--strategies")
    add_flags(
        sub.add_parser("serve", help="start a vLLM server for a model (CPU settings)"), ServeConfig
    )
    add_flags(sub.add_parser("audit", help="what each strategy would cost on a model"), AuditConfig)
    return ap


def run_config(a, strategy=None):
    """The run `Config` that parsed `validate` / `compare` arguments `a` describe (`strategy`:
    compare's first; validate's own by default)."""
    names = set(Config().flat())
    return Config.from_dict(
        {**{n: v for n, v in vars(a).items() if n in names}, "strategy": strategy or a.strategy}
    )


@dataclass
class TinyConfig:
    """`sara-real make-tiny`: train the tiny default model."""

    out: str | None = None
    """model dir (default: the project cache)"""
    test_size: bool = False
    """the quick settings used by tests"""
    time_cap: float | None = None
    """safety cap on training seconds (none: the settings' cap, 1800 s; 900 s with --test-size);
    if hit, nothing is saved and the exit status is 1"""
    seed: int | None = None
    """none = 0"""


# ---------------------------------------------------------------- commands


def cmd_make_tiny(a) -> int:
    if a.time_cap is not None:
        check_float(a.time_cap, "--time-cap", 0.0, lo_open=True)
    if a.seed is not None:
        check_seed(a.seed, "--seed")
    if a.out is not None:
        check_writable(a.out, "--out")
    s = TinySettings.test() if a.test_size else TinySettings()
    s = with_overrides(s, time_cap_s=a.time_cap, seed=a.seed)
    try:
        out = build_tiny(a.out, s, progress=True)
    except TimeCapReached as e:
        print(f"sara-real: make-tiny: {e}", file=sys.stderr)
        return 1
    r = read_spread(out)
    keys = ("steps", "train_s", "criterion_met")
    print(json.dumps({"model": str(out), **{k: r[k] for k in keys}, **r["final"]}))
    return 0


def cmd_validate(a) -> int:
    s = train(run_config(a))  # checks every argument before anything heavy starts
    print(json.dumps({k: s[k] for k in SUMMARY_KEYS}))
    return 0


def cmd_compare(a) -> int:
    strategies = [x.strip() for x in a.strategies.split(",") if x.strip()]
    cfg = run_config(a, strategies[0] if strategies else "sara")
    table, curves = run_compare(cfg, strategies)  # check_compare first, before any run
    print(format_table(table, curves))
    for p in plot_compare(a.out, table, curves, strategies):
        print(f"saved {p}")
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    cmds = {"validate": partial(cmd_validate, args), "compare": partial(cmd_compare, args)}
    cmds["make-tiny"] = lambda: cmd_make_tiny(config_of(TinyConfig, args))
    cmds["serve"] = lambda: cmd_serve(config_of(ServeConfig, args))
    cmds["audit"] = lambda: cmd_audit(config_of(AuditConfig, args))
    # a server down, a full disk: what was written stays, and a run resumes from it
    hint = " (resume with --resume)" if args.cmd in ("validate", "compare") else ""
    try:
        call = cmds[args.cmd]
        return run_cli("sara-real", call, (FileExistsError,), (ServerError,), hint)
    except KeyboardInterrupt:
        print("sara-real: interrupted (resume with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
