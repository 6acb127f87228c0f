"""Exact per-prompt law of a stopping plan under a difficulty law.

A prompt's rollouts stop on the fail side after e_f all-fail outcomes (decision d_f), on the pass
side after e_p all-pass outcomes (d_p), and otherwise become mixed and are committed to k.  So every
quantity is a short sum of ordered-sequence probabilities M(i, j) (see ``difficulty.py``):

* P(all-fail through e) = M(0, e),   P(full group has s successes) = C(k, s) M(s, k - s)
* P(false abandon on the fail side) = M(0, e_f) - M(0, k)   (abandoned, yet the k would have mixed)
* E[rollouts] = k - sum_abandoning sides P(side through e)(k - e)

The gradient link: with normalised advantages a group carries signal iff it is mixed, and its
reward variance s(k - s)/k^2 is at least (k - 1)/k^2 then; so yield x (k - 1)/k^2 lower-bounds the
expected signal proxy sum over committed groups of s(k - s)/k^2 (both reported per prompt).

>>> from sara_sim.core.difficulty import BetaLaw
>>> r = sequential_law(BetaLaw(1, 1), 8, 0.3)
>>> round(r["rollouts_per_prompt"], 6), round(r["p_mixed"], 6)   # abandon after 6 fails/passes
(7.428571, 0.777778)
"""

import math
import sys

import numpy as np
from scipy.special import gammaln

from .errors import (
    ParameterError,
    check_int,
    check_k,
    check_prior,
    check_schedule,
    check_unit,
)
from .policy import (
    ABANDON,
    COMMIT,
    CONTINUE,
    FAIL,
    NO_TAU_HIGH,
    PASS,
    SATURATED,
    decide_plan,
    next_request,
    side_terminal,
    threshold_plan,
)


def _log_binom(n, s):
    return gammaln(n + 1) - gammaln(s + 1) - gammaln(n - s + 1)


def _expected_rounds(law, k, plan, probe, increment):
    """E[number of rounds in which the prompt receives rollouts] (probe, continues, fill)."""
    if plan[0] == ABANDON:
        return 0.0
    if plan[0] == COMMIT:
        return 1.0
    rounds, first = 1.0, int(next_request(0, 0, k, plan, probe, increment))
    # mixed at the probe and not yet full: one fill round
    m_probe = 1.0 - math.exp(law.log_moment(0, first)) - math.exp(law.log_moment(first, 0))
    rounds += m_probe if first < k else 0.0
    for side in (FAIL, PASS):
        n = first
        while True:
            s = 0 if side == FAIL else n
            d = decide_plan(n, s, k, plan)
            p_here = math.exp(law.log_moment(0, n) if side == FAIL else law.log_moment(n, 0))
            if d == COMMIT and n < k:
                rounds += p_here  # committed before mixing: fill
            if d != CONTINUE:
                break
            step = int(next_request(n, s, k, plan, probe, increment))
            rounds += p_here  # one continue round
            nxt = n + step
            p_next = math.exp(law.log_moment(0, nxt) if side == FAIL else law.log_moment(nxt, 0))
            rounds += (p_here - p_next) if nxt < k else 0.0  # mixed on the way: fill round
            n = nxt
    return rounds


def check_law(law, name: str = "law"):
    """A difficulty law object (``difficulty.py`` / ``laws.py``): anything with log_moment."""
    if not callable(getattr(law, "log_moment", None)):
        raise ParameterError(
            name, f"must be a law object (e.g. difficulty.parse_law('beta:1,1')), got {law!r}"
        )
    return law


def check_plan(plan, k, name: str = "plan") -> np.ndarray:
    """A plan in ``policy.py``'s layout: 5 integers, d0 in {0, 1, 2}, thresholds in [0, k]."""
    try:
        vals = [check_int(x, name, 0, k) for x in plan]
    except (TypeError, ParameterError):
        vals = None
    if vals is None or len(vals) != 5 or vals[0] > 2:
        raise ParameterError(
            name, f"must be 5 integers [d0 in 0..2, then 4 thresholds in [0, k={k}]], got {plan!r}"
        )
    return np.asarray(vals, np.int64)


def _ratio(num, den):
    """num / den, or None where den is exactly 0: the ratio to an impossible event is undefined
    (``plan_law`` makes such probabilities exactly 0, never a rounding residue)."""
    return num / den if den > 0 else None


def full_group_law(law, k) -> np.ndarray:
    """P(a full group of k has s successes), s = 0..k: C(k, s) M(s, k - s)."""
    s = np.arange(k + 1)
    return np.exp(_log_binom(k, s) + law.log_moment(s, k - s))


def can_mix(p_full) -> bool:
    """Whether a full group can be mixed at all under the law (some 0 < s < k has mass): else
    P(mixed) is exactly 0, not the residue of 1 - P(all fail) - P(all pass) in floating point."""
    return bool(np.any(p_full[1:-1] > 0))


def never_commits(plan, ends) -> bool:
    """The plan abandons every prompt before it can hold two outcomes — skipped at n = 0, or both
    sides stop at their first rollout — so no group can be effective: P(effective) is exactly 0."""
    if plan[0] != CONTINUE:
        return plan[0] == ABANDON
    return all(e == 1 and d == ABANDON for e, d in ends.values())


def _sides(law, k, plan, probe, increment, p_full):
    """Per-side terms of ``plan_law``, summed over the fail and pass sides: E[rollouts],
    P(abandon), P(false abandon), P(saturated), the signal proxy lost; each side's end (e, d)."""
    lm = law.log_moment
    rollouts, p_abandon, p_false, p_sat, proxy_lost = float(k), 0.0, 0.0, 0.0, 0.0
    ends = {}
    for side in (FAIL, PASS):
        e, d = side_terminal(k, plan, side, probe, increment)
        e, d = int(e), int(d)
        ends[side] = (e, d)
        if e == 0:
            continue
        through = float(np.exp(lm(0, e) if side == FAIL else lm(e, 0)))
        full = float(p_full[0] if side == FAIL else p_full[k])
        if d == ABANDON:
            rollouts -= through * (k - e)
            p_abandon += through
            p_false += max(through - full, 0.0)
            m = k - e
            j = np.arange(1, m + 1)  # outcomes of the other side among the m never drawn
            i_succ, i_fail = (j, k - j) if side == FAIL else (k - j, j)
            p_j = np.exp(_log_binom(m, j) + lm(i_succ, i_fail))
            proxy_lost += float(np.sum(p_j * j * (k - j) / k**2))
        elif d == SATURATED:
            p_sat += through
    return rollouts, p_abandon, p_false, p_sat, proxy_lost, ends


def plan_law(law, k, plan, probe=0, increment=0):
    """Exact per-prompt quantities of a plan (see module docstring) under `law`.

    An event the plan or the law makes impossible has probability exactly 0.0 (``never_commits``,
    ``can_mix``), and every ratio to it is None (undefined; JSON null, `-` in tables): the cost
    per effective group when no group can be effective, DS's cost when no group can mix, the
    savings, the yields.  ``abandon_reliability`` (P(false | abandoned)) is 0.0 when nothing is
    abandoned (no abandonment, so none false)."""
    check_law(law)
    k = check_k(k)
    probe, increment = check_schedule(probe, increment, k)
    plan = check_plan(plan, k)
    s = np.arange(k + 1)
    p_full = full_group_law(law, k)
    p_mixed = float(max(1.0 - p_full[0] - p_full[k], 0.0)) if can_mix(p_full) else 0.0
    proxy_full = float(np.sum(p_full * (s * (k - s) / k**2)))  # E[s(k - s)/k^2], full groups
    rollouts, p_abandon, p_false, p_sat, proxy_lost, ends = _sides(
        law, k, plan, probe, increment, p_full
    )
    if p_mixed == 0.0:  # no group can mix: none is falsely abandoned (not a residue)
        p_false = 0.0
    if never_commits(plan, ends):  # every prompt abandoned: exact, not 1 - (sum of two sides)
        p_abandon, p_false, p_sat, proxy_lost = 1.0, p_mixed, 0.0, proxy_full
        rollouts = 0.0 if plan[0] == ABANDON else 1.0  # skipped, or one rollout each
    if plan[0] == COMMIT:
        p_sat = 0.0
    p_effective = max(p_mixed - p_false, 0.0)
    cost, ds_cost = _ratio(rollouts, p_effective), _ratio(k, p_mixed)
    yld, uniform = _ratio(p_effective, rollouts), p_mixed / k
    return {
        "rollouts_per_prompt": rollouts,
        "p_commit": max(1.0 - p_abandon - p_sat, 0.0),
        "p_abandon": p_abandon,
        "p_false_abandon": p_false,
        "p_saturated": p_sat,
        "p_mixed": p_mixed,
        "p_effective": p_effective,
        "abandon_reliability": (p_false / p_abandon) if p_abandon > 0 else 0.0,
        "cost_per_effective_group": cost,
        "ds_cost_per_effective_group": ds_cost,
        "savings_vs_ds": None if cost is None or ds_cost is None else 1.0 - cost / ds_cost,
        "yield_per_rollout": yld,
        "uniform_yield_per_rollout": uniform,
        "yield_ratio_vs_uniform": None if yld is None else _ratio(yld, uniform),
        "signal_proxy_per_prompt": proxy_full - proxy_lost,
        "gradient_bound_per_prompt": p_effective * (k - 1) / k**2,
        "rounds_per_prompt": _expected_rounds(law, k, plan, probe, increment),
        "abandon_after_fail": ends[FAIL][0] if ends[FAIL][1] == ABANDON else None,
        "abandon_after_pass": ends[PASS][0] if ends[PASS][1] == ABANDON else None,
    }


def drawn_passes(law, k, e_fail, e_pass):
    """E[passing rollouts drawn] per prompt by the plans that abandon after e_fail all-fail /
    e_pass all-pass outcomes (arrays broadcast; e = k: that side never abandons).  By
    exchangeability P(the t-th rollout is drawn and passes) = M(1, 0), less M(1, e) for t beyond
    the fail side's point e (all e fails, then never drawn) and M(e + 1, 0) beyond the pass
    side's: k M(1, 0) - (k - e_fail) M(1, e_fail) - (k - e_pass) M(e_pass + 1, 0).  The failing
    ones are the rest of E[rollouts] (``plan_law``).

    >>> from sara_sim.core.difficulty import BetaLaw
    >>> float(drawn_passes(BetaLaw(1, 1), 8, 8, 8))   # never abandoned: half of 8
    4.0
    """
    e_fail, e_pass = np.asarray(e_fail), np.asarray(e_pass)
    m = lambda i, j: np.exp(law.log_moment(i, j))  # noqa: E731
    passes = k * m(1, 0) - (k - e_fail) * m(1, e_fail) - (k - e_pass) * m(e_pass + 1, 0)
    return np.maximum(passes, 0.0)


def outcome_counts(law, k, res) -> tuple[float, float]:
    """(E[passing rollouts], E[failing rollouts]) drawn per prompt under a plan's exact law
    `res` (``plan_law``'s result: its abandonment points and rollouts per prompt).

    >>> from sara_sim.core.difficulty import BetaLaw
    >>> law = BetaLaw(1, 1); res = sequential_law(law, 8, 0.3)
    >>> p, f = outcome_counts(law, 8, res)
    >>> round(p + f, 6) == round(res["rollouts_per_prompt"], 6), round(p, 6) == round(f, 6)
    (True, True)
    """
    e_fail, e_pass = res["abandon_after_fail"], res["abandon_after_pass"]
    passes = float(
        drawn_passes(law, k, k if e_fail is None else e_fail, k if e_pass is None else e_pass)
    )
    return passes, max(res["rollouts_per_prompt"] - passes, 0.0)


def plan_tokens(law, k, res, lengths):
    """E[tokens] per prompt of a plan's exact law `res` with mean lengths (pass, fail), and per
    effective group (None where none can be effective)."""
    passes, fails = outcome_counts(law, k, res)
    tokens = passes * lengths[0] + fails * lengths[1]
    return tokens, _ratio(tokens, res["p_effective"])


def sequential_law(law, k, tau_low, tau_high=None, prior=(1.0, 1.0), probe=0, increment=0):
    """Exact law of the tau rule (prior Beta(A0, B0)) under a difficulty law.

    probe = increment = 1 is the strictly sequential rule; 0 (auto) reproduces its decisions and
    rollouts exactly in fewer rounds."""
    check_law(law, "--difficulty")
    k = check_k(k, "--k")
    tau_low = check_unit(tau_low, "--tau-low")
    th = NO_TAU_HIGH if tau_high is None else check_unit(tau_high, "--tau-high")
    if th <= tau_low:
        raise ParameterError("--tau-high", f"must exceed tau_low={tau_low}, got {tau_high}")
    a0, b0 = check_prior(prior, "--prior")
    if law.max_k is not None and k > law.max_k:
        raise ParameterError("--k", f"k={k} exceeds the {law.max_k} recorded samples per record")
    plan = threshold_plan(k, tau_low, th, a0, b0)
    out = plan_law(law, k, plan, probe, increment)
    out["plan"] = [int(x) for x in plan]
    return out


def tau_breakpoints(k, prior=(1.0, 1.0)):
    """Every tau_low at which the tau rule's plan changes (the p_eff values along both sides)."""
    from .beta import p_eff_ufunc

    k = check_k(k, "--k")
    a0, b0 = check_prior(prior, "--prior")
    n = np.arange(0, k + 1)
    vals = np.concatenate(
        [p_eff_ufunc(n, np.zeros_like(n), k, a0, b0), p_eff_ufunc(n, n, k, a0, b0)]
    )
    return np.unique(np.clip(vals, 0.0, 1.0))


def best_tau(law, k, prior=(1.0, 1.0), probe=0, increment=0, progress=False):
    """Exact best single tau_low: the cost is piecewise constant in tau_low with breaks at the
    p_eff values, so one tau per piece covers all of [0, 1].  Returns (tau, cost, (lo, hi)), or
    (None, None, (None, None)) when no tau_low gives an effective group (the law cannot mix).
    O(k^2) work (~2k pieces of O(k)); `progress` shows a bar on a terminal for large k."""
    check_law(law, "--difficulty")
    k = check_k(k, "--k")
    prior = check_prior(prior, "--prior")
    check_schedule(probe, increment, k)
    edges = np.concatenate([[0.0], tau_breakpoints(k, prior), [1.0]])
    edges = np.unique(edges)
    best = (None, None, (None, None))
    pieces = list(zip(edges[:-1], edges[1:]))
    if progress and len(pieces) > 2000 and sys.stderr.isatty():
        from tqdm import tqdm

        pieces = tqdm(pieces, desc="best tau_low", unit="piece", leave=False)
    for lo, hi in pieces:
        tau = 0.5 * (lo + hi)  # inside the piece (lo, hi]: the plan is constant there
        cost = sequential_law(law, k, tau, None, prior, probe, increment)[
            "cost_per_effective_group"
        ]
        if cost is not None and (best[1] is None or cost < best[1] - 1e-12):
            best = (float(tau), float(cost), (float(lo), float(hi)))
    return best


def ds_rounds_law(p_mixed, k, groups, gen_batch=None, max_batches=10, tol=1e-15):
    """Exact cost of DS by rounds (verl's dynamic sampling, docs/design.md §3) when each prompt's
    group mixes with probability `p_mixed`, independently: generation batches of `gen_batch`
    prompts x k rollouts (default: `groups`, N; verl's recipes 3N) until `groups` mixed groups
    are kept or `max_batches` batches are spent (0: no cap); the surplus is thrown away.  The
    kept count after t batches is a sum of binomials, so E[batches] = sum_t P(fewer than N kept
    after t - 1 batches) and E[effective] = E[min(kept, N)] are exact sums (a batch is drawn
    whatever its own outcomes, so its rollouts and tokens are k x gen_batch each).  Returns
    {rollouts_per_step, effective_per_step, batches_per_step, p_capped,
    rollouts_per_effective_group} (the last None when no group can mix).

    >>> r = ds_rounds_law(0.5, 8, 1)          # one group a step, one prompt a batch: geometric
    >>> round(r["batches_per_step"], 6), round(r["rollouts_per_effective_group"], 6)
    (1.998047, 16.0)
    >>> round(ds_rounds_law(0.5, 8, 4)["rollouts_per_effective_group"], 3)   # the surplus: > 16
    19.087
    """
    from scipy.stats import binom

    k = check_k(k, "k")
    groups = check_int(groups, "groups", 1)
    gen_batch = groups if gen_batch is None else check_int(gen_batch, "gen_batch", 1)
    max_batches = check_int(max_batches, "max_batches", 0)
    p = check_unit(p_mixed, "p_mixed")
    step = binom.pmf(np.arange(gen_batch + 1), gen_batch, p)  # mixed groups in one batch
    kept = np.zeros(groups + 1)  # P(kept = j) for j < N, and P(kept >= N) at N: before batch t
    kept[0] = 1.0
    batches, t = 0.0, 0
    while kept[:groups].sum() > tol and (max_batches == 0 or t < max_batches):
        open_ = kept[:groups].sum()
        batches += open_
        nxt = np.zeros(groups + 1)
        nxt[groups] = kept[groups]
        grown = np.convolve(kept[:groups], step)  # the open steps draw one more batch
        nxt[:groups] += grown[:groups]
        nxt[groups] += grown[groups:].sum()
        kept, t = nxt, t + 1
        if p == 0.0 and max_batches == 0:  # nothing ever mixes and nothing stops it
            break
    effective = float(kept @ np.minimum(np.arange(groups + 1), groups))
    rollouts = float(k * gen_batch * batches)
    return {
        "rollouts_per_step": rollouts,
        "effective_per_step": effective,
        "batches_per_step": float(batches),
        "p_capped": float(kept[:groups].sum()) if max_batches else 0.0,
        "rollouts_per_effective_group": _ratio(rollouts, effective),
    }
