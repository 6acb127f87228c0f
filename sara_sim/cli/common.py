"""What the `sara-sim` subcommands share (``cli.py``, ``cli_sim.py``, ``cli_replay.py`` import it;
it imports none of them): the parser that turns argparse errors into one-line ParameterErrors,
argument types, the law flags, strict JSON and the text output."""

import argparse
import json
import math

from ..core.difficulty import BUILTIN_HISTORIES, check_k_for_law, parse_law
from ..core.errors import ParameterError, ascii_float, ascii_int, check_k, finite_or_none

HISTORY_NAMES = ", ".join(BUILTIN_HISTORIES)  # the built-in histories, for --help texts

JSON_HELP = "print strict JSON (the machine contract; null = undefined or infinite)"
FORCE_HELP = "run even when the estimated work / memory exceeds a few minutes on this machine"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line naming the parameter, no usage dump
        if message.startswith("argument ") and ": " in message:
            name, _, rest = message[len("argument ") :].partition(": ")
            raise ParameterError(name.split("/")[-1], rest)
        raise ParameterError("arguments", message)


def _prior(text):
    try:
        a, b = (ascii_float(x) for x in str(text).split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'A0,B0' with finite A0, B0 > 0, got {text!r}"
        ) from None
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise argparse.ArgumentTypeError(f"must be 'A0,B0' with finite A0, B0 > 0, got {text!r}")
    return a, b


def _typed(conv, what):
    def parse(text):
        try:
            return conv(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None

    return parse


def _int(name):  # name kept for call-site readability
    return _typed(ascii_int, "an integer (ASCII digits)")


def _float(name):  # name kept for call-site readability
    return _typed(ascii_float, "a number (ASCII)")


def add_law_args(p):
    p.add_argument(
        "--difficulty",
        required=True,
        help=f"beta:A,B | mix:W*beta:A,B+... | point:G | history:PATH | history:NAME, a "
        f"built-in history ({HISTORY_NAMES}; a file of that name: history:./NAME)",
    )
    p.add_argument("--epoch", default=None, help="history epoch E or range A-B (default: all)")
    p.add_argument("--k", type=_int("--k"), required=True, help="group size (>= 2)")
    p.add_argument("--prior", type=_prior, default=None, help="Beta prior A0,B0 (default 1,1)")
    add_output_args(p)


def add_output_args(p):
    """--json and --force, which every `sara-sim` command takes."""
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--force", action="store_true", help=FORCE_HELP)


def _law(args):
    check_k(args.k, "--k")
    law = parse_law(args.difficulty, epochs=args.epoch)
    check_k_for_law(args.k, law)
    return law


def dumps(obj) -> str:
    """Strict JSON of a result: nan / inf become null (see the module docstring)."""
    return json.dumps(finite_or_none(obj), indent=2, allow_nan=False, default=str)


def _emit(args, out, title):
    if args.json:
        print(dumps(out))
        return
    print(title)
    width = max(len(key) for key in out)
    for key, val in out.items():
        if val is None or (isinstance(val, float) and not math.isfinite(val)):
            val = "-"  # undefined (e.g. a cost when no group can be effective) or not given
        elif isinstance(val, float):
            val = f"{val:.6g}"
        print(f"  {key:<{width}}  {val}")


__all__ = ["JSON_HELP", "FORCE_HELP", "_Parser", "_prior", "_int", "_float", "add_law_args"]
__all__ += ["_law", "dumps", "_emit", "add_output_args"]
