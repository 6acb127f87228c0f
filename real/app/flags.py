"""Command-line flags from configuration dataclasses: one flag per leaf field, named by
`real.base.config.flag_of`, with the field's docstring (read by the `docstring_parser` library) as
its help, the field's default as the flag's default (shown in --help), and a nested dataclass field
as a help group titled by its docstring (`sara-real validate --help`: run, GRPO, strategy, engine).
Every `sara-real` subcommand is declared so — `Config` for validate / compare, `AuditConfig`,
`ServeConfig`, `TinyConfig` — so a flag, its help and its default are written once, on the field.

Errors are argparse's, kept to one line (`PROG: error: MESSAGE`, exit 2, no usage dump); a value
that does not parse says what the field takes."""

import argparse
import sys
import textwrap
import types
import typing
from dataclasses import MISSING, fields, is_dataclass

from real.base.config import deprecated, flag_of


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):  # every flag shows its default
    def _split_lines(self, text, width):  # never break "sara-history" at its hyphen
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


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


def add_flag(p, f, doc: str, choices=None) -> None:
    """The flag of dataclass field `f` (a switch for a bool: --NAME, or --no-NAME if True)."""
    default = f.default
    flag = flag_of(f.name, default)
    if f.type is bool:
        _SWITCHES.add(flag)  # a group's add_argument is not Parser's: register the switch here
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
