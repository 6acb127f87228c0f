"""`python -m paper_figs --out DIR [--only NAME] [--seed S]`: regenerate the figures."""

import argparse
import sys

from sara_sim.core.errors import ParameterError
from sara_sim.core.files import os_error_line

from . import FIGURES, run


def build_parser(parser=None):
    parser = parser or argparse.ArgumentParser(prog="python -m paper_figs", description=__doc__)
    parser.add_argument("--out", required=True, help="folder for NAME.png / .csv / .txt")
    parser.add_argument(
        "--only",
        default=None,
        help=f"comma-separated subset (names, figN or N): {', '.join(FIGURES)}",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated parts")
    parser.add_argument(
        "--history",
        default=None,
        help="outcome histories: a CSV path or a built-in name (default: deepscaler, the "
        "DeepScaleR histories shipped in the package)",
    )
    parser.add_argument(
        "--learning",
        default=None,
        help="learning-curve CSV for fig10 (default benchmarks/results/real_learning.csv)",
    )
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        run(args.out, only=args.only, seed=args.seed, history=args.history, learning=args.learning)
    except ParameterError as exc:
        print(f"paper_figs: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a read-only folder: one line naming the file
        print(f"paper_figs: error: {os_error_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
