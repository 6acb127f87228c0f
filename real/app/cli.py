"""`sara-real`: make the tiny model, validate or compare strategies in GRPO runs, serve, audit.

    sara-real make-tiny
    sara-real validate --strategy sara --k 8 --groups 16 --steps 20 --out runs/sara
    sara-real compare --strategies uniform,ds,sara --steps 20 --out runs/cmp

Every flag is a field of a configuration dataclass (below: `add_flags`): one flag per leaf field,
named by `real.base.config.flag_of` (dashes for underscores), its help the field's docstring (read
by the `docstring_parser` library), its default the field's, shown in --help — one place for every
default. `validate` / `compare` take the fields of `real.base.config.Config` and of its GRPO,
strategy and engine sections, and `--help` shows them in four groups: run, GRPO, strategy, engine
(a nested dataclass field is a help group titled by its docstring); `audit`, `serve` and
`make-tiny` take theirs from `AuditConfig`, `ServeConfig` and `TinyConfig`. Every argument is
checked before torch or vLLM starts: a bad one exits with status 2 and one line naming the
parameter, its value and the allowed range. Errors are argparse's, kept to one line (`PROG: error:
MESSAGE`, exit 2, no usage dump); a value that does not parse says what the field takes. A renamed
flag keeps its old spelling as a deprecated alias (`deprecated_flag`), left out of --help."""

import argparse
import json
import sys
import textwrap
import types
import typing
from dataclasses import MISSING, dataclass, fields, is_dataclass
from functools import partial

from real.app.audit import AuditConfig, cmd_audit
from real.app.compare import format_table, plot_compare, run_compare
from real.app.run import train
from real.base import env as _env  # noqa: F401  (env vars before any torch / vllm import)
from real.base.config import DTYPES, STRATEGIES, Config, check_seed, deprecated, flag_of
from real.io.enginelog import quiet_exit
from real.io.runfolder import check_writable
from real.io.runlog import SUMMARY_KEYS
from real.models.tiny import TimeCapReached, TinySettings, build_tiny, read_spread, with_overrides
from real.sampling.client import ServerError
from real.sampling.serve import ServeConfig, cmd_serve
from real.tasks import TASKS
from sara_sim.core.errors import ParameterError, ascii_float, ascii_int, check_choice, check_float
from sara_sim.core.files import one_line, run_cli
from sara_sim.core.informed import RULES
from sara_sim.core.registry import PRICED_IN

# ---------------------------------------------------------------- flags from dataclasses


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):  # every flag shows its default
    def _split_lines(self, text, width):  # never break "sara-history" at its hyphen
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _get_help_string(self, action):  # a --no-NAME switch says itself what it turns off
        if isinstance(action, argparse._StoreFalseAction):
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, and a value that starts with '-' kept with its flag."""

    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kw)

    def error(self, message):  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")

    def add_argument(self, *names, **kw):
        if kw.get("action") in ("store_true", "store_false"):
            _SWITCHES.update(names)  # flags that take no value: never joined to the next word
        return super().add_argument(*names, **kw)

    def parse_args(self, args=None, namespace=None):
        return super().parse_args(_join_negative(sys.argv[1:] if args is None else args), namespace)


_SWITCHES: set[str] = {"--help", "-h"}  # every parser's switches (subcommands share argv)


def _join_negative(argv: list[str]) -> list[str]:
    """`--prior -1,-1` or `--lr -1e3`: argparse takes a value that starts with '-' (and is not a
    plain negative number) for a flag and fails with "expected one argument"; join it to its flag
    so the value reaches its range check and gets the real message."""
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if tok.startswith("--") and "=" not in tok and nxt and nxt[:1] == "-" and nxt[1:2] != "-":
            if tok not in _SWITCHES:
                out.append(f"{tok}={nxt}")
                i += 2
                continue
        out.append(tok)
        i += 1
    return out


class _Deprecated(argparse.Action):
    """A renamed flag's old spelling: stores into the new flag's value, one line on stderr."""

    def __init__(self, option_strings, dest, new: str, **kw):
        super().__init__(option_strings, dest, **kw)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        deprecated(option_string, self.new)
        setattr(namespace, self.dest, values)


def deprecated_flag(p, old: str, new: str) -> None:
    """`old` still works as `new` (and is left out of --help); using it prints one line."""
    dest = new.removeprefix("--").replace("-", "_")
    p.add_argument(old, dest=dest, action=_Deprecated, new=new, help=argparse.SUPPRESS)


def field_docs(cls) -> dict[str, str]:
    """{field name: its docstring, on one line} (the string literal under each field)."""
    import docstring_parser

    parsed = docstring_parser.parse_from_object(cls)
    return {p.arg_name: " ".join((p.description or "").split()) for p in parsed.params}


def _value_parser(tp, name: str):
    """str -> value for a field of type tp; 'none' gives None where the field allows it."""
    args = typing.get_args(tp)
    optional = typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args
    base = next(a for a in args if a is not type(None)) if optional else tp

    def parse(text: str):
        if optional and text.lower() == "none":
            return None
        if typing.get_origin(base) is tuple:
            try:
                return tuple(ascii_float(x) for x in text.split(","))
            except ValueError:
                raise argparse.ArgumentTypeError(f"must be numbers A,B; got {text!r}") from None
        try:  # ASCII only, as sara-sim's flags: int() would read '٨', '８' and '1_0'
            return {int: ascii_int, float: ascii_float}.get(base, base)(text)
        except ValueError:
            kind = {int: "an integer (ASCII digits)", float: "a number"}.get(base, base.__name__)
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None

    parse.__name__ = name
    return parse


def add_flag(p, f, doc: str, choices=None) -> None:
    """The flag of dataclass field `f` (a switch for a bool: --NAME, or --no-NAME if True)."""
    default = f.default
    flag = flag_of(f.name, default)
    if f.type is bool:
        _SWITCHES.add(flag)  # a group's add_argument is not Parser's: register the switch here
        if default:  # --no-NAME switches the field off: say so, not "(default: True)"
            help_text = f"switch off: {doc} (on without this flag)"
            p.add_argument(flag, dest=f.name, action="store_false", default=True, help=help_text)
        else:
            p.add_argument(flag, dest=f.name, action="store_true", default=False, help=doc)
        return
    extra = f"; one of {', '.join(choices)}" if choices else ""
    p.add_argument(
        flag,
        dest=f.name,
        type=_value_parser(f.type, f.name),
        default=default,
        metavar=f.name.upper(),
        help=f"{doc}{extra}",
    )


def add_flags(p, cls, skip=(), choices=None, title=None, lead=None) -> None:
    """One flag per leaf field of dataclass `cls` but `skip`, in a help group titled `title` when
    given; a dataclass field is a help group of its own, titled by its docstring, its fields flags
    of their own. `lead`: {section field name, or "" for `cls`'s own group: fn(group)} adds a
    subcommand's own flags at the top of that group (validate's --strategy, compare's list).
    `choices`: {field: allowed names}, listed in the help (checked by the config's own checks,
    with their one-line errors)."""
    choices, lead = choices or {}, lead or {}
    docs = field_docs(cls)
    here = p.add_argument_group(title) if title else p
    if "" in lead:
        lead[""](here)
    for f in fields(cls):
        if is_dataclass(f.type):
            group = p.add_argument_group(docs.get(f.name) or f.name)
            if f.name in lead:
                lead[f.name](group)
            add_flags(group, f.type, skip, choices)
        elif f.name not in skip:
            if f.default is MISSING:
                raise TypeError(f"{cls.__name__}.{f.name}: a flag needs a default")
            add_flag(here, f, docs.get(f.name, ""), choices.get(f.name))


def config_of(cls, args, **extra):
    """The `cls` instance that parsed `args` (an argparse namespace) describe."""
    return cls(
        **{f.name: getattr(args, f.name) for f in fields(cls) if f.name not in extra}, **extra
    )


# ---------------------------------------------------------------- the parser

NOT_FLAGS = ("strategy", "out")  # set per subcommand (validate: --strategy; compare: a list)


RUN_GROUP = "run (the task, the model, the steps, evaluation and the run folder)"


def _config_flags(p, strategy, out) -> None:
    """One flag per leaf field of Config, in four help groups: the run (Config's own fields), and
    one per section (GRPO, strategy, engine), titled by its docstring. `strategy` adds the
    subcommand's own strategy flag at the top of the strategy group, `out` its --out."""
    choices = {"task": TASKS, "dtype": DTYPES, "old_logprobs": ("engine", "recompute")}
    choices |= {"trainer": ("native", "trl"), "rule": RULES, "priced_in": PRICED_IN}
    add_flags(p, Config, NOT_FLAGS, choices, RUN_GROUP, {"": out, "knobs": strategy})


def build_parser():
    ap = Parser(prog="sara-real", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    tiny = sub.add_parser("make-tiny", help="train a tiny model (cached)")
    add_flags(tiny, TinyConfig, choices={"preset": TINY_PRESETS})
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
    return Config.from_flat(
        {**{n: v for n, v in vars(a).items() if n in names}, "strategy": strategy or a.strategy}
    )


TINY_PRESETS = ("default", "graded", "reasoning", "reasoning-long", "test")


@dataclass
class TinyConfig:
    """`sara-real make-tiny`: train a tiny model (cached by its settings)."""

    out: str | None = None
    """model dir (default: the project cache)"""
    preset: str = "default"
    """which tiny model: default (the toy task's) | graded (the learning benchmark's) | reasoning
    | reasoning-long (their tasks' models: failures run long) | test (the tests' quick one)"""
    test_size: bool = False
    """the quick settings used by tests (the same as --preset test)"""
    time_cap: float | None = None
    """safety cap on training seconds (none: the settings' cap, 1800 s; 900 s with --test-size);
    if hit, nothing is saved and the exit status is 1"""
    seed: int | None = None
    """none = 0"""
    overwrite: bool = False
    """rebuild over a tiny model of other settings already in --out"""


# ---------------------------------------------------------------- commands


def cmd_make_tiny(a) -> int:
    if a.time_cap is not None:
        check_float(a.time_cap, "--time-cap", 0.0, lo_open=True)
    if a.seed is not None:
        check_seed(a.seed, "--seed")
    if a.out is not None:
        check_writable(a.out, "--out")
    check_choice(a.preset, "--preset", TINY_PRESETS)
    if a.test_size and a.preset not in ("default", "test"):
        raise ParameterError(
            "--test-size", f"is --preset test; it cannot go with --preset {a.preset}"
        )
    s = TinySettings.named("test" if a.test_size else a.preset)
    s = with_overrides(s, time_cap_s=a.time_cap, seed=a.seed)
    try:
        out = build_tiny(a.out, s, progress=True, overwrite=a.overwrite)
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


class EngineFailure(RuntimeError):
    """An unexpected error after the engine started: one line naming the log that holds its
    traceback (real.io.enginelog), exit 1, like an OS error."""


def _after_start(call):
    """`call()`; an exception that left an engine phase with its traceback logged (and is not
    one run_cli already turns into its line) becomes an EngineFailure naming the log."""
    try:
        return call()
    except (ParameterError, OSError, MemoryError, ServerError, FileExistsError):
        raise
    except Exception as e:
        log = getattr(e, "engine_log", None)
        if log is None:  # not after an engine started: a bug keeps its traceback
            raise
        what = one_line(e)[:300] or "(no message)"
        raise EngineFailure(f"{type(e).__name__}: {what} (traceback in {log})") from e


def main(argv=None) -> int:
    """The CLI; called as the program (argv None), what the engine prints while the process ends
    goes to the run's engine.log, after the command's last line."""
    args = build_parser().parse_args(argv)
    cmds = {"validate": partial(cmd_validate, args), "compare": partial(cmd_compare, args)}
    cmds["make-tiny"] = lambda: cmd_make_tiny(config_of(TinyConfig, args))
    cmds["serve"] = lambda: cmd_serve(config_of(ServeConfig, args))
    cmds["audit"] = lambda: cmd_audit(config_of(AuditConfig, args))
    # a server down, a full disk: what was written stays, and a run resumes from it
    hint = " (resume with --resume)" if args.cmd in ("validate", "compare") else ""
    failures = (ServerError, EngineFailure)
    try:
        call = partial(_after_start, cmds[args.cmd])
        return run_cli("sara-real", call, (FileExistsError,), failures, hint)
    except KeyboardInterrupt:
        print("sara-real: interrupted (resume with --resume)", file=sys.stderr)
        return 130
    finally:
        if argv is None:
            quiet_exit()


if __name__ == "__main__":
    sys.exit(main())
