"""`python -m paper_figs --out DIR [--only NAME] [--seed S] [--overwrite]`: regenerate the
figures."""

import sys

from sara_sim.cli.common import _int, _Parser
from sara_sim.core.files import run_cli

from . import FIGURES, run


def build_parser(parser=None):
    # sara-sim's parser: a bad value is one line naming the flag (exit 2), as everywhere
    parser = parser or _Parser(prog="python -m paper_figs", description=__doc__)
    parser.add_argument("--out", required=True, help="folder for NAME.png / .csv / .txt")
    parser.add_argument(
        "--only",
        default=None,
        help=f"comma-separated subset (names, figN or N): {', '.join(FIGURES)}",
    )
    parser.add_argument("--seed", type=_int("--seed"), default=0, help="simulations' seed")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the figures' files already in --out (without it: refused, naming them)",
    )
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
    parser.add_argument(
        "--claims",
        default=None,
        help="folder of the claim files for fig13 (default benchmarks/results/claims)",
    )
    return parser


def main(argv=None):
    def call():  # bad input: exit 2; a full disk or a read-only folder: exit 1, one line each
        a = build_parser().parse_args(argv)
        run(
            a.out,
            only=a.only,
            seed=a.seed,
            history=a.history,
            learning=a.learning,
            claims=a.claims,
            overwrite=a.overwrite,
        )

    return run_cli("paper_figs", call)


if __name__ == "__main__":
    sys.exit(main())
