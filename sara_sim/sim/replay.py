"""Epoch-by-epoch replay of recorded outcome histories through the Python collectors.

The prompt source offers every prompt that has a record at epoch e once, in a seeded random order,
epoch after epoch (the recorded run's schedule); prompt ids are (prompt, epoch).  A visit draws its
rollouts without replacement from that record (so k <= samples).  Strategies see only what they
draw.  This is the referee harness for the history-informed strategies (``informed.py``) and the
place where their hyperparameters are cross-validated (``benchmarks/fit_informed.py``).

>>> frame = load_history("deepscaler")  # the DeepScaleR histories shipped in sara_sim/data
>>> out = replay(frame, "sara", range(0, 2), seed=0, tau_low=0.5)
>>> out["epochs"], out["rollouts"] > 0, out["effective_groups"] > 0
(2, True, True)
"""

import numpy as np

from ..collect.collectors import make_collector
from ..core.difficulty import load_history
from ..core.errors import ParameterError, check_k
from ..core.informed import INFORMED_DEFAULTS, SELECTOR_RATIO, PromptHistory  # re-exported
from ..core.registry import row

# The README's replay (epochs 26-52: 16k records x 5 strategies x 2 seeds = 163k visits) takes
# ~50 s of CPU here; 6e5 visits is about three minutes (sara-sim replay, sara-real audit).
REPLAY_VISIT_LIMIT = 6e5


class ReplaySource:
    """The prompt source and the sampler of one replay; `drawn` logs every visit's outcomes."""

    def __init__(self, frame, epochs, seed, serve=None):
        self.rec = {(r.prompt_id, r.epoch): (r.correct, r.samples) for r in frame.itertuples()}
        self.pids = np.array(sorted(frame.prompt_id.unique()))
        # only epochs with records: an epoch without one visits nothing, and a span such as
        # range(0, 10**9) must cost what its records cost, not a list of a billion epochs
        present = sorted(int(e) for e in frame.epoch.unique())
        if isinstance(epochs, range):
            self.epochs = [e for e in present if e in epochs]
        else:
            have = set(present)
            self.epochs = [int(e) for e in epochs if int(e) in have]
        # separate generators: the order of the prompts never depends on what was drawn
        self.order_rng = np.random.default_rng([seed, 0])
        self.urn_rng = np.random.default_rng([seed, 1])
        self.urns, self.drawn, self.serve = {}, {}, serve

    def prompts(self):
        for e in self.epochs:
            for pid in self.order_rng.permutation(self.pids):
                if (pid, e) in self.rec:
                    yield (int(pid), int(e))

    def __call__(self, requests):
        out = []
        for r in requests:
            key = (r.prompt_id, r.visit)
            if self.serve is not None:  # serve exactly a logged run's outcomes
                got = self.serve[key][len(self.drawn.get(key, [])) :][: r.n]
            else:
                if key not in self.urns:
                    c, s = self.rec[r.prompt_id]
                    urn = np.r_[np.ones(c, int), np.zeros(s - c, int)]
                    self.urns[key] = [int(x) for x in self.urn_rng.permutation(urn)]
                got = [self.urns[key].pop() for _ in range(r.n)]
            self.drawn.setdefault(key, []).extend(got)
            out.append(got)
        return out


def replay(frame, strategy, epochs, seed=0, k=8, groups=32, serve=None, **kw):
    """Replay `strategy` over `epochs`; returns totals, per-visit outcomes and the collector."""
    k = check_k(k, "k")
    if len(frame) and k > int(frame["samples"].min()):
        raise ParameterError(
            "k", f"k={k} exceeds the {int(frame['samples'].min())} recorded samples per record"
        )
    if kw.get("priced_in", "rollouts") == "tokens":  # never priced in rollouts in silence
        raise ParameterError(
            "priced_in", "a replay draws recorded outcomes without lengths: price in rollouts"
        )
    src = ReplaySource(frame, epochs, seed, serve)
    hist = selector = None
    meta = row(strategy, "replay")
    if meta.needs_history:
        opts = {**INFORMED_DEFAULTS, **kw}
        kw = {
            "rule": opts.pop("rule"),
            **{x: v for x, v in opts.items() if x not in INFORMED_DEFAULTS},
        }
        hist = PromptHistory(
            rho=opts["rho"],
            kappa=opts["kappa"],
            explore=opts["explore"],
            max_skip=opts["max_skip"],
            seed=seed,
            key=lambda v: v[0],
            epoch_of=lambda v: v[1],
        )
        if meta.selector is not None:
            from ..collect.selectors import Selector

            selector = Selector(meta.selector, ratio=kw.pop("ratio", SELECTOR_RATIO), seed=seed)
    collector = make_collector(
        strategy,
        k=k,
        groups=groups,
        history=hist,
        epoch_size=len(src.pids) if hist else None,
        selector=selector,
        **kw,
    )
    if hasattr(collector, "plan_log"):
        collector.plan_log = []
    prompts, steps = src.prompts(), []
    while True:
        res = collector.collect_step(prompts, src)
        steps.append(res)
        pending = getattr(collector, "open", None) or getattr(collector, "queue", None)
        if res.prompts_exhausted and not pending:
            break  # every visit finished: nothing left in progress
    rollouts = sum(s.rollouts for s in steps)
    effective = sum(s.n_effective for s in steps)
    return {
        "strategy": strategy,
        "epochs": len(src.epochs),
        "epoch_list": list(src.epochs),
        "rollouts": rollouts,
        "effective_groups": effective,
        "cost_per_effective_group": rollouts / effective if effective else float("inf"),
        "steps": steps,
        "drawn": src.drawn,
        "collector": collector,
    }


__all__ = ["ReplaySource", "replay", "signal_report", "load_history", "INFORMED_DEFAULTS"]


def signal_report(out, frame, starve_epochs=5):
    """What skipping and early abandonment do to the training signal, from a replay's output.

    * the success rates (record c/samples) of the prompts whose groups entered the batch — to set
      beside ds's: a strategy that only keeps easy-to-mix prompts narrows this distribution;
    * false abandons: visits abandoned (or skipped) whose full group would have been mixed —
      judged on the record (P(mixed) of k drawn without replacement), so it is exact in expectation;
    * starvation: a prompt is *learnable* at epoch e when its record is mixed; it starves while it
      is learnable and gets no rollout.  Reported: the share of prompts that starve for
      >= `starve_epochs` epochs in a row, the longest such run, and the share of learnable visits
      that drew nothing.
    """
    from scipy.special import comb

    k = out["collector"].k
    rec = {(r.prompt_id, r.epoch): (r.correct, r.samples) for r in frame.itertuples()}
    committed = [sid for step in out["steps"] for sid, _ in step.groups]
    rates = np.array([rec[sid][0] / rec[sid][1] for sid in committed])
    sampled = {key[0] for key, seq in out["drawn"].items() if seq}
    abandoned = [sid for step in out["steps"] for sid in step.abandoned]

    def p_mixed(c, s):  # k drawn without replacement from a record of c successes in s
        return 1.0 - (comb(s - c, k) + comb(c, k)) / comb(s, k)

    false_abandons = float(sum(p_mixed(*rec[sid]) for sid in abandoned))
    epochs = sorted(set(out["epoch_list"]))  # only the replayed epochs
    longest, learnable_visits, starved_visits = {}, 0, 0
    for pid in sorted({p for p, _ in rec}):
        run = best = 0
        for e in epochs:
            if (pid, e) not in rec:
                continue
            c, s = rec[(pid, e)]
            if 0 < c < s:
                learnable_visits += 1
                if (pid, e) not in sampled:
                    starved_visits += 1
                    run += 1
                    best = max(best, run)
                    continue
            run = 0
        longest[pid] = best
    streaks = np.array(list(longest.values()))
    q = np.quantile(rates, [0.1, 0.25, 0.5, 0.75, 0.9]) if len(rates) else [np.nan] * 5
    return {
        "strategy": out["strategy"],
        "committed_groups": len(committed),
        "committed_rate_mean": float(rates.mean()) if len(rates) else float("nan"),
        "committed_rate_quantiles": [float(x) for x in q],
        "abandoned_visits": len(abandoned),
        "expected_false_abandons": false_abandons,
        "false_abandon_rate": false_abandons / max(len(abandoned), 1),
        "starving_prompt_share": float(np.mean(streaks >= starve_epochs)),
        "longest_starvation_epochs": int(streaks.max()) if len(streaks) else 0,
        "starved_learnable_visit_share": starved_visits / max(learnable_visits, 1),
    }


def exact_expectation(out, frame):
    """Exact theory as referee of a replay: given the plan each visit received (a prompt's
    informed prior only changes *which* plan it gets), its expected rollouts and P(effective)
    follow exactly from its record (``theory.plan_law``).  Returns (expected rollouts, expected
    effective groups, visits) summed over every probed or skipped visit of the replay."""
    from ..core.difficulty import HistoryLaw
    from ..core.theory import plan_law

    k = out["collector"].k
    rec = frame.set_index(["prompt_id", "epoch"])
    cache, rollouts, effective = {}, 0.0, 0.0
    for sid, plan in out["collector"].plan_log:
        if plan is None:
            continue  # skipped: 0 rollouts, 0 groups
        c, n = rec.loc[sid, ["correct", "samples"]]
        key = (int(c), int(n), tuple(int(x) for x in plan))
        if key not in cache:
            law = HistoryLaw(_one_record(*key[:2]))
            r = plan_law(law, k, plan)
            cache[key] = (r["rollouts_per_prompt"], r["p_effective"])
        rollouts += cache[key][0]
        effective += cache[key][1]
    return rollouts, effective, len(out["collector"].plan_log)


def _one_record(correct, samples):
    import pandas as pd

    return pd.DataFrame(
        {"prompt_id": [0], "epoch": [0], "correct": [correct], "samples": [samples]}
    )
