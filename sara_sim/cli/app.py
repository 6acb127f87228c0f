"""`sara-sim`: exact theory and the Bayes-optimal policy from the command line.

    sara-sim theory  --difficulty beta:1,1 --k 8 --tau-low 0.2 [--prior 1,1] [--json]
    sara-sim theory  --difficulty history:deepscaler --epoch 0 --k 8 --tau-low 0.3
    sara-sim optimal --difficulty beta:0.2,0.8 --k 32 [--prior A0,B0] [--request-cost 2]
        [--len-pass 2000 --len-fail 3500] [--json]
    (simulate, compare, verify, bench: the simulator, cli_sim.py; replay: cli_replay.py;
     wallclock: cli/wallclock.py)

JSON output is the contract other tools read; bad input exits 2 with one line naming the parameter.
JSON is strict (no NaN / Infinity): a number that is undefined or infinite is ``null`` — e.g. a
cost per effective group when no group can be effective, a ratio whose reference is 0, a standard
error from a single seed.  Requests too big for a few minutes on this machine are refused with one
line naming the parameter, unless ``--force`` is given.
"""

import re
import sys

from ..core.difficulty import BetaLaw
from ..core.errors import ParameterError, check_budget
from ..core.files import run_cli
from .common import (
    HISTORY_NAMES,
    _emit,
    _float,
    _int,
    _law,
    _Parser,
    add_law_args,
)
from .replay import add_replay_command
from .sim import add_sim_commands
from .wallclock import add_wallclock_command

OVERWRITE_HELP = "replace the figures' files already in --out (without it: refused, naming them)"
# Exact theory costs ~k units of ~1 us (k = 1e6: ~1 s), plus ~100 units per schedule round of its
# expected-rounds loop (--increment 1: ~2k rounds); below the limit it needs no progress bar.
# best_tau evaluates ~2k plans of O(k) each (k = 1000: ~0.6 s).
THEORY_WORK_LIMIT = 5e6
OPTIMAL_WORK_LIMIT = 2e8  # k^2: k ~ 14000, about two minutes
PRICED_PLANS_LIMIT = 2e7  # --request-cost: k^2 plans held at once, ~1.3 GiB at k ~ 4500


def cmd_theory(args):
    from ..core.theory import sequential_law

    law = _law(args)
    rounds = 2.0 * args.k / args.increment if args.increment > 0 else 4.0
    work = args.k + 100.0 * rounds
    name = "--increment" if 100.0 * rounds > args.k else "--k"
    check_budget(work, THEORY_WORK_LIMIT, name, "exact theory work (~us)", args.force)
    prior = args.prior or (1.0, 1.0)
    res = sequential_law(
        law, args.k, args.tau_low, args.tau_high, prior, args.probe, args.increment
    )
    inputs = {
        "difficulty": args.difficulty,
        "epoch": args.epoch,
        "k": args.k,
        "tau_low": args.tau_low,
        "tau_high": args.tau_high,
        "prior": list(prior),
        "probe": args.probe,
        "increment": args.increment,
    }
    _emit(args, {**inputs, **res}, f"SARA exact theory — {law}, k={args.k}, tau_low={args.tau_low}")


def cmd_optimal(args):
    from ..core.optimal import bayes_optimal
    from ..core.theory import best_tau

    law = _law(args)
    work = float(args.k) ** 2  # best_tau: ~2k tau pieces, each an O(k) exact evaluation
    check_budget(work, OPTIMAL_WORK_LIMIT, "--k", "best-tau search work (k^2)", args.force)
    if args.request_cost > 0:
        check_budget(work, PRICED_PLANS_LIMIT, "--k", "request-priced plans (k^2)", args.force)
    belief = BetaLaw(*args.prior) if args.prior else None
    lengths = _optimal_lengths(args)
    res = bayes_optimal(law, args.k, belief, request_cost=args.request_cost)
    tau_prior = args.prior or (1.0, 1.0)
    tau, tau_cost, (lo, hi) = best_tau(law, args.k, tau_prior, progress=not args.json)
    out = {
        "difficulty": args.difficulty,
        "epoch": args.epoch,
        "k": args.k,
        "prior": list(args.prior) if args.prior else None,
        "belief": "prior" if args.prior else "law",
        "bayes_optimal_cost_per_effective_group": res["cost_per_effective_group"],
        "abandon_after_fail": res["abandon_after_fail"],
        "abandon_after_pass": res["abandon_after_pass"],
        "best_tau_low": tau,
        "best_tau_interval": [lo, hi],
        "best_tau_prior": list(tau_prior),
        "best_tau_cost_per_effective_group": tau_cost,
        "ds_cost_per_effective_group": res["ds_cost_per_effective_group"],
        "savings_vs_ds": res["savings_vs_ds"],
        "rollouts_per_prompt": res["rollouts_per_prompt"],
        "p_false_abandon": res["p_false_abandon"],
        "plan": res["plan"],
        "request_cost": res["request_cost"],
        "requests_per_prompt": res["requests_per_prompt"],
        "priced_cost_per_effective_group": res["priced_cost_per_effective_group"],
        "ds_priced_cost_per_effective_group": res["ds_priced_cost_per_effective_group"],
    }
    if lengths is not None:  # the plan priced in tokens, beside DS's and the rollout-priced one
        tok = bayes_optimal(law, args.k, belief, request_cost=args.request_cost, lengths=lengths)
        from ..core.theory import plan_tokens

        out |= {
            "len_pass": lengths[0],
            "len_fail": lengths[1],
            "token_priced_plan": tok["plan"],
            "token_priced_tokens_per_effective_group": tok["tokens_per_effective_group"],
            "token_priced_rollouts_per_effective_group": tok["cost_per_effective_group"],
            "token_priced_abandon_after_fail": tok["abandon_after_fail"],
            "token_priced_abandon_after_pass": tok["abandon_after_pass"],
            "tokens_per_effective_group": plan_tokens(law, args.k, res, lengths)[1],
            "ds_tokens_per_effective_group": tok["ds_tokens_per_effective_group"],
            "token_priced_token_savings_vs_ds": _saving(
                tok["tokens_per_effective_group"], tok["ds_tokens_per_effective_group"]
            ),
        }
    _emit(args, out, f"Bayes-optimal stopping — {law}, k={args.k}")


def _optimal_lengths(args):
    """(pass, fail) mean lengths when both are given; one alone is a ParameterError."""
    from ..core.optimal import check_lengths

    given = (args.len_pass is not None, args.len_fail is not None)
    if given == (False, False):
        return None
    if not all(given):
        flag = "--len-fail" if given[0] else "--len-pass"
        raise ParameterError(flag, "give --len-pass and --len-fail together (mean tokens)")
    return check_lengths((args.len_pass, args.len_fail))


def _saving(cost, ref):
    return None if cost is None or not ref else 1.0 - cost / ref


def cmd_figures(args):
    from paper_figs import run

    run(args.out, only=args.only, seed=args.seed, history=args.history, overwrite=args.overwrite)
    return 0


def build_parser():
    parser = _Parser(prog="sara-sim", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("theory", help="exact per-prompt law of the tau rule")
    add_law_args(p)
    p.add_argument("--tau-low", type=_float("--tau-low"), required=True, help="in [0, 1]")
    p.add_argument("--tau-high", type=_float("--tau-high"), default=None, help="commit side; off")
    p.add_argument("--probe", type=_int("--probe"), default=0, help="first-round rollouts (0 auto)")
    p.add_argument("--increment", type=_int("--increment"), default=0, help="later (0 auto)")
    p.set_defaults(func=cmd_theory)
    p = sub.add_parser("optimal", help="Bayes-optimal stopping vs the best single tau_low")
    add_law_args(p)
    p.add_argument(
        "--request-cost",
        type=_float("--request-cost"),
        default=0.0,
        help="a request's price in rollouts, >= 0: the plan minimises rollouts + this x "
        "requests (its stages) per effective group (0: rollouts only)",
    )
    p.add_argument(
        "--len-pass",
        type=_float("--len-pass"),
        default=None,
        help="mean tokens of a passing rollout (with --len-fail: the plan of fewest "
        "tokens per effective group is reported too, beside DS's)",
    )
    p.add_argument(
        "--len-fail",
        type=_float("--len-fail"),
        default=None,
        help="mean tokens of a failing rollout",
    )
    p.set_defaults(func=cmd_optimal)
    p = sub.add_parser("figures", help="regenerate every theory / simulation figure (paper_figs)")
    p.add_argument("--out", required=True, help="folder for NAME.png / .csv / .txt")
    p.add_argument("--only", default=None, help="comma-separated figures: names, figN or N")
    p.add_argument("--seed", type=_int("--seed"), default=0, help="seed of the simulated parts")
    p.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    p.add_argument(
        "--history",
        default=None,
        help=f"outcome histories: a CSV path or a built-in name ({HISTORY_NAMES}; the default)",
    )
    p.set_defaults(func=cmd_figures)
    add_sim_commands(sub)  # simulate | compare | verify | bench
    add_replay_command(sub, _int, _float)  # informed strategies on recorded histories
    add_wallclock_command(sub)  # wall time per effective group on an engine model
    return parser


# a value that argparse would take for a flag: -1,-1 / -0.5 / -inf / -nan
_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def join_negative_values(argv):
    """['--prior', '-1,-1'] -> ['--prior=-1,-1'], so that argparse passes a negative-looking value
    to its option (and the option's own check says what is wrong with it) instead of failing
    with "expected one argument"."""
    out = []
    for tok in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE.match(tok):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def main(argv=None):
    argv = join_negative_values(sys.argv[1:] if argv is None else list(argv))

    def call():  # the flags' own checks raise ParameterError while parsing: inside run_cli
        args = build_parser().parse_args(argv)
        return args.func(args)  # verify returns 1 when a claim fails where it must hold

    return run_cli("sara-sim", call)


if __name__ == "__main__":
    sys.exit(main())
