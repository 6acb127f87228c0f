"""`sara-real`: make the tiny model, validate or compare allocators in GRPO runs, serve, audit.

    sara-real make-tiny
    sara-real validate --allocator sara --k 8 --groups 16 --steps 20 --out runs/sara
    sara-real compare --allocators uniform,ds,sara --steps 20 --out runs/cmp

The flags of `validate` / `compare` are the leaf fields of `real.train.Config` and of its GRPO and
allocator sections (`real/config.py`; dashes for underscores), with the field's docstring as help
and its default shown — one place for every default. Every
argument is checked before torch or vLLM starts: a bad one exits with status 2 and one line naming
the parameter, its value and the allowed range."""

import argparse
import sys
import types
import typing
from functools import partial

from real import _env  # noqa: F401  (first: env vars before any torch/vllm import)
from real.config import FLAG_NAMES, flag_of  # noqa: F401  (one rule for flag names)

NOT_FLAGS = ("allocator", "out")  # set per subcommand (validate: --allocator; compare: a list)


class _Help(argparse.ArgumentDefaultsHelpFormatter):  # every flag shows its default
    def _split_lines(self, text, width):  # never break "sara-history" at its hyphen
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", _Help)
        super().__init__(*args, **kw)

    def error(self, message):  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")

    def add_argument(self, *names, **kw):
        if kw.get("action") in ("store_true", "store_false"):
            _SWITCHES.update(names)  # flags without a value: never joined to the next word
        return super().add_argument(*names, **kw)

    def parse_args(self, args=None, namespace=None):
        return super().parse_args(_join_negative(sys.argv[1:] if args is None else args), namespace)


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


_SWITCHES: set[str] = {"--help", "-h"}  # flags that take no value (filled by add_argument)


# ---------------------------------------------------------------- flags from the dataclass


def field_docs(cls) -> dict[str, str]:
    """The docstring under each dataclass field (cleanrl style), read from the source."""
    import ast
    import inspect
    import textwrap

    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for a, b in zip(body, body[1:], strict=False):
        if (
            isinstance(a, ast.AnnAssign)
            and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant)
            and isinstance(b.value.value, str)
        ):
            docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def _value_parser(tp, name: str):
    """str -> value for a field of type tp; 'none' gives None where the field allows it."""
    args = typing.get_args(tp)
    optional = isinstance(tp, types.UnionType | typing._UnionGenericAlias) and type(None) in args
    base = next((a for a in args if a is not type(None)), tp) if optional else tp

    def parse(text: str):
        if optional and text.lower() == "none":
            return None
        if typing.get_origin(base) is tuple:
            try:
                return tuple(float(x) for x in text.split(","))
            except ValueError:
                raise argparse.ArgumentTypeError(f"must be numbers A,B; got {text!r}") from None
        try:
            return base(text)
        except ValueError:
            kind = {int: "an integer", float: "a number"}.get(base, base.__name__)
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None

    parse.__name__ = name
    return parse


def _add_flag(p, f, doc: str, choices=None) -> None:
    default = f.default
    flag = flag_of(f.name, default)
    if f.type is bool:
        action = "store_false" if default else "store_true"
        p.add_argument(flag, dest=f.name, action=action, default=default, help=doc)
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


def _config_flags(p) -> None:
    """One flag per leaf field of Config; each section (a dataclass field) is its own help group,
    titled by its docstring."""
    from dataclasses import fields, is_dataclass

    from real.checks import DTYPES
    from real.tasks import TASKS
    from real.train import Config
    from sara_sim.core.informed import RULES

    choices = {"task": TASKS, "dtype": DTYPES, "old_logprobs": ("engine", "recompute")}
    choices |= {"trainer": ("native", "trl"), "rule": RULES}

    def add(group, cls):
        docs = field_docs(cls)
        for f in fields(cls):
            if is_dataclass(f.type):
                add(p.add_argument_group(docs.get(f.name, f.name)), f.type)
            elif f.name not in NOT_FLAGS:
                _add_flag(group, f, docs.get(f.name, ""), choices.get(f.name))

    add(p, Config)


def build_parser():
    from real.checks import ALLOCATORS

    ap = _Parser(prog="sara-real", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    p = sub.add_parser("make-tiny", help="train the tiny default model (cached)")
    p.add_argument("--out", default=None, help="model dir (default: the project cache)")
    p.add_argument("--test-size", action="store_true", help="the quick settings used by tests")
    p.add_argument(
        "--time-cap",
        type=_value_parser(float, "time_cap"),
        default=None,
        help="safety cap on training seconds (none: the settings' cap, 1800 s; 900 s with "
        "--test-size); if hit, nothing is saved and the exit status is 1",
    )
    p.add_argument("--seed", type=_value_parser(int, "seed"), default=None, help="none = 0")
    names = ", ".join(ALLOCATORS)
    p = sub.add_parser("validate", help="one GRPO run with one allocator")
    p.add_argument("--allocator", default="sara", help=f"one of {names}")
    p.add_argument("--out", default="runs/validate", help="run directory")
    _config_flags(p)
    p = sub.add_parser("compare", help="several allocators from the same start")
    p.add_argument(
        "--allocators",
        default="uniform,ds,sara,sara-eb,sara-auto",
        help=f"comma-separated, from {names}",
    )
    p.add_argument("--out", default="runs/compare", help="folder for the runs, table and plots")
    _config_flags(p)
    from real.audit import add_audit_args
    from real.serve import add_serve_args

    add_serve_args(sub.add_parser("serve", help="start a vLLM server for a model (CPU settings)"))
    add_audit_args(sub.add_parser("audit", help="what each allocator would cost on a model"))
    return ap


def _config(a, allocator):
    from real.train import Config

    names = set(Config().flat())
    return Config.from_dict(
        {**{n: v for n, v in vars(a).items() if n in names}, "allocator": allocator}
    )


# ---------------------------------------------------------------- commands


def cmd_make_tiny(a) -> int:
    import json

    from real.checks import check_writable
    from real.tiny import TimeCapReached, TinySettings, build_tiny, read_spread, with_overrides
    from sara_sim.core.errors import check_float, check_int

    if a.time_cap is not None:
        check_float(a.time_cap, "--time-cap", 0.0, lo_open=True)
    if a.seed is not None:
        check_int(a.seed, "--seed", 0, 2**32 - 1)
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
    import json

    from real.runlog import SUMMARY_KEYS
    from real.train import train

    s = train(_config(a, a.allocator))  # checks every argument before anything heavy starts
    print(json.dumps({k: s[k] for k in SUMMARY_KEYS}))
    return 0


def cmd_compare(a) -> int:
    from real.compare import format_table, plot_compare, run_compare

    allocators = [x.strip() for x in a.allocators.split(",") if x.strip()]
    cfg = _config(a, allocators[0] if allocators else "sara")
    table, curves = run_compare(cfg, allocators)  # check_compare first, before any run
    print(format_table(table, curves))
    for p in plot_compare(a.out, table, curves, allocators):
        print(f"saved {p}")
    return 0


def main(argv=None) -> int:
    from real.audit import cmd_audit
    from real.client import ServerError
    from real.serve import cmd_serve
    from sara_sim.core.files import run_cli

    args = build_parser().parse_args(argv)
    cmds = {"make-tiny": cmd_make_tiny, "validate": cmd_validate, "compare": cmd_compare}
    cmds.update(serve=cmd_serve, audit=cmd_audit)
    # a server down, a full disk: what was written stays, and a run resumes from it
    hint = " (resume with --resume)" if args.cmd in ("validate", "compare") else ""
    try:
        call = partial(cmds[args.cmd], args)
        return run_cli("sara-real", call, (FileExistsError,), (ServerError,), hint)
    except KeyboardInterrupt:
        print("sara-real: interrupted (resume with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
