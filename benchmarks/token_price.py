"""Plans priced in tokens, and the saving that survives DS streamed, measured in one run.

    .venv/bin/python benchmarks/token_price.py [--seeds 3] [--steps 40]

1. Exact theory on DeepScaleR (epochs 0-52, k 8, failing traces 1.75x passing): DS's cost per
   effective group, the rollout-priced Bayes-optimal plan's and the token-priced one's, in
   rollouts and tokens (``sara-sim optimal --len-pass 2000 --len-fail 3500``).
2. The simulator against that bound: the Numba kernel's sara-auto priced in tokens (its prior
   fitted and its lengths learned from its own rollouts, step by step) — tokens per effective
   group over exact theory's token-priced bound for the law (goal: within 0.02), on laws with
   no drift (the bound is exact for them): DeepScaleR's beta-binomial fit and Beta(0.3, 0.3);
   and on the recorded law over one pass of its 53 epochs, whose drift the fitted prior follows
   (the bound there is the pooled law's, so the run may beat it).
3. The paper-like setting streamed (``sara-sim wallclock --difficulty history:deepscaler
   --epoch 0-52 --k 8 --groups 64 --steps 40 --schedule stream``, 256 slots: the engine model
   of ``benchmarks/wallclock.py``), every strategy's wall time and tokens per effective group
   over DS streamed's, the mean of `--seeds` seeds, and the goal: the best <= 0.60x DS streamed
   in wall and in tokens; the decomposition of the saving over DS by rounds (``baselines``).
4. What limits the best: where its rollouts per effective group go (8 in every effective group;
   the rest on prompts that end unmixed), epoch by epoch.
The output is committed as benchmarks/token_price.out.txt.
"""

import argparse
import collections
import statistics

from sara_sim.collect import collectors
from sara_sim.core.difficulty import BetaLaw, fit_beta_binomial, load_history, parse_law
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.policy import ABANDON, COMMIT
from sara_sim.core.theory import plan_tokens
from sara_sim.sim import wallclock_run
from sara_sim.sim.baselines import DS_ROUNDS, DS_STREAM, decomposition
from sara_sim.sim.laws import TokenModel, parse_sim_law
from sara_sim.sim.simulate import simulate, summarize
from sara_sim.sim.wallclock import PRESETS, lognormal_lengths
from sara_sim.sim.wallclock_run import Setup, run_strategy

K, LENGTHS, SLOTS = 8, (2000.0, 3500.0), 256
LAW, EPOCHS = "history:deepscaler", "0-52"
STREAMED = (  # (label, strategy, collector knobs)
    ("sara", "sara", {}),
    ("sara-auto", "sara-auto", {}),
    ("sara-auto tok", "sara-auto", {"priced_in": "tokens"}),
    ("sara-history", "sara-history", {}),
    ("sara-history tok", "sara-history", {"priced_in": "tokens"}),
)
GOAL = 0.60


def exact():
    law = parse_law(LAW, epochs=EPOCHS)
    rolls, toks = bayes_optimal(law, K), bayes_optimal(law, K, lengths=LENGTHS)
    ds_r, ds_t = toks["ds_cost_per_effective_group"], toks["ds_tokens_per_effective_group"]
    print(
        f"1. exact theory — {LAW} epochs {EPOCHS}, k {K}, lengths pass {LENGTHS[0]:g} / fail "
        f"{LENGTHS[1]:g} tokens"
    )
    print(f"{'plan':<24}{'':<18}{'roll/eff':>9}{'tok/eff':>9}{'roll/DS':>9}{'tok/DS':>8}")
    print(f"{'DS':<24}{'[0, 1, 8, 1, 8]':<18}{ds_r:>9.2f}{ds_t:>9.0f}{1:>9.3f}{1:>8.3f}")
    for name, res in (("priced in rollouts", rolls), ("priced in tokens", toks)):
        tok = plan_tokens(law, K, res, LENGTHS)[1]
        r = res["cost_per_effective_group"]
        print(
            f"{name:<24}{str(res['plan']):<18}{r:>9.2f}{tok:>9.0f}{r / ds_r:>9.3f}"
            f"{tok / ds_t:>8.3f}"
        )


def kernel_vs_bound(steps, replicates):
    print(
        "\n2. the simulator (kernel, by rounds, 64 groups a step) against exact theory's "
        "token-priced bound"
    )
    print(
        f"{'law':<40}{'steps':>6}{'priced in':>10}{'tok/eff':>9}{'±se':>6}{'bound':>8}"
        f"{'sim/bound':>10}  goal |diff| <= 0.02"
    )
    frame = load_history("deepscaler")
    fit = BetaLaw(*fit_beta_binomial(frame["correct"], frame["samples"]))
    cases = [
        (f"DeepScaleR fit {fit}", fit, fit, steps),
        ("U-shaped beta:0.3,0.3", BetaLaw(0.3, 0.3), BetaLaw(0.3, 0.3), steps),
    ]
    recorded = parse_sim_law(LAW, epochs=EPOCHS)
    cases.append(
        (f"{LAW} {EPOCHS} (drifts; pooled bound)", recorded, parse_law(LAW, epochs=EPOCHS), 190)
    )  # one pass over the 53 epochs
    for name, sim_law, law, n in cases:
        bound = bayes_optimal(law, K, lengths=LENGTHS)["tokens_per_effective_group"]
        for priced in ("rollouts", "tokens"):
            res = simulate(
                "sara-auto",
                sim_law,
                k=K,
                groups=64,
                steps=n,
                replicates=replicates,
                seed=0,
                priced_in=priced,
                tokens=TokenModel(*LENGTHS),
            )
            s = summarize(res)
            t, se = s["tokens_per_effective_group"], s["tokens_per_effective_group_se"]
            verdict = ""
            if priced == "tokens":
                verdict = "met" if abs(t / bound - 1) <= 0.02 else "MISSED"
            print(
                f"{name:<40}{n:>6}{priced:>10}{t:>9.0f}{se:>6.0f}{bound:>8.0f}"
                f"{t / bound:>10.3f}  {verdict}"
            )


def paper_like(seeds, steps):
    law = parse_law(LAW, epochs=EPOCHS)
    setup = Setup(PRESETS["gpu"].engine._replace(max_num_seqs=SLOTS), lognormal_lengths(*LENGTHS))
    per = collections.defaultdict(list)  # label -> [(wall, tokens, rollouts) per eff, per seed]
    for seed in range(seeds):
        kw = {"k": K, "groups": 64, "steps": steps, "seed": seed}
        runs = [(DS_ROUNDS, "ds", {"schedule": "rounds"}), (DS_STREAM, "ds", {})]
        runs += [(label, name, knobs) for label, name, knobs in STREAMED]
        for label, name, knobs in runs:
            r = run_strategy(law, name, setup, **{"schedule": "stream", **kw, **knobs})
            per[label].append(
                tuple(
                    r[c]
                    for c in (
                        "wall_per_effective_group_s",
                        "tokens_per_effective_group",
                        "rollouts_per_effective_group",
                    )
                )
            )
    print(
        f"\n3. paper-like, streamed — {LAW} epochs {EPOCHS}, k {K}, 64 groups a step, {steps} "
        f"steps, gpu preset with {SLOTS} slots; mean of {seeds} seeds (0..{seeds - 1})"
    )
    print(
        f"{'strategy':<18}{'wall/DSs':>9}{'±sd':>6}{'tok/DSs':>9}{'±sd':>6}{'roll/eff':>9}"
        f"{'wall/DSr':>9}{'tok/DSr':>8}"
    )
    ratio = {}
    for label, xs in per.items():
        w = [x[0] / d[0] for x, d in zip(xs, per[DS_STREAM])]
        t = [x[1] / d[1] for x, d in zip(xs, per[DS_STREAM])]
        wr = statistics.fmean(x[0] / d[0] for x, d in zip(xs, per[DS_ROUNDS]))
        tr = statistics.fmean(x[1] / d[1] for x, d in zip(xs, per[DS_ROUNDS]))
        ratio[label] = (statistics.fmean(w), statistics.fmean(t))
        sd = (statistics.stdev(w), statistics.stdev(t)) if seeds > 1 else (0.0, 0.0)
        roll = statistics.fmean(x[2] for x in xs)
        print(
            f"{label:<18}{ratio[label][0]:>9.3f}{sd[0]:>6.3f}{ratio[label][1]:>9.3f}"
            f"{sd[1]:>6.3f}{roll:>9.2f}{wr:>9.3f}{tr:>8.3f}"
        )
    best = min((x for x in ratio if x not in (DS_ROUNDS, DS_STREAM)), key=lambda x: ratio[x][0])
    w, t = ratio[best]
    ok = "met" if w <= GOAL and t <= GOAL else "MISSED"
    floor = K / statistics.fmean(x[2] for x in per[DS_STREAM])
    print(
        f"best: {best} {w:.3f}x DS streamed in wall, {t:.3f}x in tokens ({ok} <= {GOAL}); "
        f"the floor, k rollouts an effective group: {floor:.3f}x DS streamed's rollouts"
    )
    for chain in (("sara-auto", "sara-history"), ("sara-auto tok", "sara-history tok")):
        print(
            f"where the saving over DS by rounds comes from ({' -> '.join(chain)}): wall | tokens"
        )
        rows = {}
        for i in range(2):  # wall, tokens
            costs = {
                DS_ROUNDS: 1.0,
                DS_STREAM: _rel(per, DS_STREAM, i),
                "sara": _rel(per, "sara", i),
            }
            costs |= {
                name: _rel(per, label, i)
                for name, label in zip(("sara-auto", "sara-history"), chain)
            }
            for part in decomposition(costs):
                rows.setdefault(part["source"], []).append(part["share"])
        for source, (a, b) in rows.items():
            print(f"  {source:<28}{a:>7.1%} |{b:>7.1%}")
        print(
            f"  {'total':<28}{sum(x[0] for x in rows.values()):>7.1%} |"
            f"{sum(x[1] for x in rows.values()):>7.1%}"
        )
    return best


def _rel(per, label, i):
    """The mean over seeds of a cost over DS by rounds' (so DS by rounds is 1)."""
    return statistics.fmean(x[i] / d[i] for x, d in zip(per[label], per[DS_ROUNDS]))


def anatomy(best, steps):
    """Section 4: the best strategy's rollouts per effective group, by fate, seed 0."""
    label, name, knobs = next(s for s in STREAMED if s[0] == best)
    law = parse_law(LAW, epochs=EPOCHS)
    setup = Setup(PRESETS["gpu"].engine._replace(max_num_seqs=SLOTS), lognormal_lengths(*LENGTHS))
    events, make = [], collectors.make_collector

    def observed(*a, **kw):
        col = make(*a, **kw)
        col.observer = events.append
        return col

    wallclock_run.make_collector = observed
    try:
        r = run_strategy(
            law, name, setup, k=K, groups=64, steps=steps, seed=0, schedule="stream", **knobs
        )
    finally:
        wallclock_run.make_collector = make
    eff, pool = r["effective_groups"], wallclock_run.OutcomeSource(law, 0).pool
    fate = collections.Counter()
    rolls = collections.Counter()
    by_epoch = collections.defaultdict(lambda: [0, 0])
    for d in events:
        mixed = d.decision == COMMIT and 0 < d.s < d.n
        kind = (
            "effective"
            if mixed
            else "saturated"
            if d.decision != ABANDON
            else "abandoned after fails"
            if d.s == 0
            else "abandoned after passes"
        )
        fate[kind] += 1
        rolls[kind] += d.n
        e = by_epoch[d.prompt_id // pool]
        e[0], e[1] = e[0] + d.n, e[1] + mixed
    print(
        f"\n4. where {best}'s rollouts go (seed 0, {r['rollouts_per_effective_group']:.2f} per "
        f"effective group, {eff} effective groups; what was in flight at the run's end aside)"
    )
    for kind in ("effective", "saturated", "abandoned after fails", "abandoned after passes"):
        print(
            f"  {kind:<24}{fate[kind]:>6} prompts {rolls[kind] / eff:>6.2f} rollouts per "
            f"effective group ({rolls[kind] / max(fate[kind], 1):.2f} each)"
        )
    cells = " ".join(f"{e}:{v[0] / max(v[1], 1):.1f}" for e, v in sorted(by_epoch.items()))
    print(f"  rollouts per effective group by the epoch a prompt was drawn from: {cells}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--kernel-steps", type=int, default=200)
    args = ap.parse_args()
    exact()
    kernel_vs_bound(args.kernel_steps, 4)
    best = paper_like(args.seeds, args.steps)
    anatomy(best, args.steps)


if __name__ == "__main__":
    main()
