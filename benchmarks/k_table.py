"""Larger groups: what stopping inside a group saves at k 8, 16 and 32, against DS streamed.

    .venv/bin/python benchmarks/k_table.py [--steps 40] [--groups 64] [--seed 0]

Two laws, each at k in {8, 16, 32}:

* DeepScaleR — its records hold 8 outcomes a prompt, so beyond k 8 the law is the
  beta-binomial fit to every record of epochs 0-52 (``fit_beta_binomial``: the success rates'
  mean and spread).  A fit, not the parametric drift law: exact theory is exact for a Beta law
  at any k (drift's theory holds at its first step only) and the engine model draws from it
  directly; what the fit loses — the shape beyond two moments, and each prompt's drift between
  epochs — shows at k 8, where the recorded law itself runs beside it (its first line);
* U-shaped Beta(0.3, 0.3) — most prompts nearly always or nearly never solved.

Per law and k, exact theory (``optimal.bayes_optimal``; the law known): DS's cost per effective
group (k / P(mixed) rollouts, and tokens), the Bayes-optimal plan's rollouts and the
token-priced plan's tokens as ratios to DS's — the bound on what any plan that stops inside a
group can save; then the simulator, streamed (the engine model of ``benchmarks/wallclock.py``:
the gpu preset with 256 slots, lognormal lengths pass 2,000 / fail 3,500 tokens, cv 0.5, boundary
"carry"; a pool of 605 prompts, DeepScaleR's, revisited epoch after epoch so that sara-history
has histories — with fixed success rates: no drift, so history is at its best there), every
strategy's rollouts and tokens per effective group over DS streamed's.  sara-auto priced in
rollouts and in tokens (its lengths learned from its own rollouts), sara-history priced in
tokens.  The output is committed as benchmarks/k_table.out.txt.
"""

import argparse
import math

from sara_sim.core.difficulty import BetaLaw, fit_beta_binomial, load_history, parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.sim.wallclock import PRESETS, lognormal_lengths
from sara_sim.sim.wallclock_run import Setup, run_strategy

KS = (8, 16, 32)
LENGTHS = (2000.0, 3500.0)
SLOTS, POOL = 256, 605  # the paper-like engine; DeepScaleR's prompts
# (label, strategy, collector knobs)
STRATEGIES = (
    ("sara", "sara", {}),
    ("sara-auto", "sara-auto", {}),
    ("sara-auto tok", "sara-auto", {"priced_in": "tokens"}),
    ("sara-history", "sara-history", {}),
    ("sara-history tok", "sara-history", {"priced_in": "tokens"}),
)


def deepscaler_fit():
    frame = load_history("deepscaler")
    return BetaLaw(*fit_beta_binomial(frame["correct"], frame["samples"]))


def theory(law, k):
    """(DS rollouts, DS tokens, optimal rollout ratio, token-priced token ratio) per effective
    group; the ratios to DS's."""
    rolls = bayes_optimal(law, k, lengths=None)
    toks = bayes_optimal(law, k, lengths=LENGTHS)
    ds_r, ds_t = toks["ds_cost_per_effective_group"], toks["ds_tokens_per_effective_group"]
    return (
        ds_r,
        ds_t,
        rolls["cost_per_effective_group"] / ds_r,
        toks["tokens_per_effective_group"] / ds_t,
    )


def simulated(law, k, args):
    """{label: (rollout ratio, token ratio, wall ratio)} over DS streamed, and DS streamed's
    (rollouts, tokens) per effective group."""
    setup = Setup(PRESETS["gpu"].engine._replace(max_num_seqs=SLOTS), lognormal_lengths(*LENGTHS))
    kw = {"k": k, "groups": args.groups, "steps": args.steps, "seed": args.seed,
          "pool": POOL, "schedule": "stream"}  # fmt: skip
    ds = run_strategy(law, "ds", setup, **kw)
    out = {}
    for label, name, knobs in STRATEGIES:
        r = run_strategy(law, name, setup, **kw, **knobs)
        out[label] = tuple(
            r[col] / ds[col]
            for col in (
                "rollouts_per_effective_group",
                "tokens_per_effective_group",
                "wall_per_effective_group_s",
            )
        )
    return out, (ds["rollouts_per_effective_group"], ds["tokens_per_effective_group"])


def _f(x, fmt=".3f"):
    return "-" if x is None or not math.isfinite(x) else format(x, fmt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--groups", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    fit = deepscaler_fit()
    cases = [("DeepScaleR recorded", parse_law("history:deepscaler", epochs="0-52"), (8,))]
    cases += [(f"DeepScaleR fit {fit}", fit, KS), ("U-shaped beta:0.3,0.3", BetaLaw(0.3, 0.3), KS)]
    print(
        f"larger groups — {args.groups} effective groups a step, {args.steps} steps, seed "
        f"{args.seed}; lengths pass {LENGTHS[0]:g} / fail {LENGTHS[1]:g} tokens"
    )
    print(
        f"{'law':<34}{'k':>3}  {'':<28}{'roll/eff':>9}{'tok/eff':>9}{'roll/DS':>9}"
        f"{'tok/DS':>8}{'wall/DS':>8}{'tok/bound':>10}"
    )
    for name, law, ks in cases:
        for k in ks:
            ds_r, ds_t, opt_r, opt_t = theory(law, k)
            sim, (sds_r, sds_t) = simulated(law, k, args)
            head = f"{name:<34}{k:>3}  "
            print(f"{head}{'exact: DS (k / P(mixed))':<28}{ds_r:>9.2f}{ds_t:>9.0f}")
            print(f"{head}{'exact bound (opt | tok-priced)':<28}{'':>18}{opt_r:>9.3f}{opt_t:>8.3f}")
            print(
                f"{head}{'sim: DS streamed':<28}{sds_r:>9.2f}{sds_t:>9.0f}{1:>9.3f}{1:>8.3f}"
                f"{1:>8.3f}"
            )
            for label, (r, t, w) in sim.items():
                print(
                    f"{head}{'sim: ' + label:<28}{r * sds_r:>9.2f}{t * sds_t:>9.0f}"
                    f"{_f(r):>9}{_f(t):>8}{_f(w):>8}{_f(t * sds_t / (opt_t * ds_t)):>10}"
                )
    print(
        "\nexact: the law known. DS's cost per effective group, and the bound on stopping inside"
        "\na group: the Bayes-optimal plan's rollouts and the token-priced plan's tokens over DS's."
        "\nsim: the engine model streamed; each strategy over DS streamed (its priors fitted and"
        "\nits lengths learned from its own rollouts); tok/bound: its tokens per effective group"
        "\nover the exact token-priced bound's. sara-history can beat the bound: it skips prompts"
        "\non their own histories, which no plan for the law can do."
    )


if __name__ == "__main__":
    main()
