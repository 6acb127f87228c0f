"""Bayes-optimal stopping (``sara-auto``): the fewest rollouts per effective group over *all*
sequential stopping policies, for a belief about the prompt's success rate.

For a price lam per effective group, backward induction over prefix states (n, all-fail | all-pass)
gives the policy minimising E[rollouts] - lam * E[effective]: from an unmixed prefix, one more
rollout costs 1 and with the predictive probability q makes the group mixed, after which the
k - n - 1 fills are paid and lam is earned; abandoning is worth 0.  Dinkelbach's iteration
lam <- E[rollouts] / E[effective] of that policy converges to the optimal ratio lam*.  The result is
a plan (``policy.py``) with side-specific abandonment points, evaluated exactly by ``theory``.

Priced in requests too (``request_cost`` = c rollouts a request, docs/design.md §5): an engine
pays per request as well as per rollout (on a served toy with 20-token traces a request costs
about two rollouts), and a plan's requests are its stages under the auto schedule — the probe,
a continue on the farther side, a fill once mixed (``theory.plan_law``'s rounds_per_prompt).  Any
sequential policy stops each side once, so the plans [0, 1, e_fail, 1, e_pass] (e in 1..k; k:
never abandoned) are every policy; ``plan_family`` gives their E[rollouts], E[requests] and
P(effective) exactly, and the cheapest (rollouts + c requests) / effective is the optimum.  At
c = 0 it is the backward induction's plan (a test holds them equal); as c grows it tends to DS's
(one request of k: the fewest requests per effective group).

>>> from sara_sim.core.difficulty import BetaLaw
>>> res = bayes_optimal(BetaLaw(0.2, 0.8), 8, request_cost=1.0)   # a request = one rollout
>>> res["plan"], round(res["requests_per_prompt"], 2)   # probe 2 (was 1): fewer prompts a group
([0, 1, 2, 1, 8], 1.28)
>>> [round(res[f"{x}priced_cost_per_effective_group"], 2) for x in ("", "ds_")]   # vs DS's
[20.74, 22.61]
>>> bayes_optimal(BetaLaw(0.2, 0.8), 8, request_cost=2.0)["plan"]   # two rollouts: DS's plan
[0, 1, 8, 1, 8]
>>> res = bayes_optimal(BetaLaw(0.2, 0.8), 8)   # rollouts only (the paper's price)
>>> res["abandon_after_fail"], res["abandon_after_pass"]   # one fail is enough; passes: never
(1, None)
>>> round(res["cost_per_effective_group"], 2), round(res["ds_cost_per_effective_group"], 2)
(15.08, 20.1)
"""

import math

import numpy as np
from numba import njit

from .difficulty import BetaLaw
from .errors import ParameterError, check_float, check_int, check_k
from .policy import ABANDON, CONTINUE, FAIL, PASS, threshold_plan
from .registry import PRICED_IN, row
from .theory import (
    can_mix,
    check_law,
    drawn_passes,
    full_group_law,
    outcome_counts,
    plan_law,
    plan_tokens,
)


def _predictive(belief, k):
    """q[side, n]: P(next rollout breaks the side prefix | n outcomes all on that side);
    q[2 + side, n]: P(a later rollout passes | those n, then the break) — the fills' pass rate,
    which prices them when a pass and a fail cost differently (``price_plan``)."""
    n = np.arange(k)
    q = np.zeros((4, k))
    for side in (FAIL, PASS):
        lm_here = belief.log_moment(0, n) if side == FAIL else belief.log_moment(n, 0)
        lm_break = belief.log_moment(1, n) if side == FAIL else belief.log_moment(n, 1)
        lm_fill = belief.log_moment(2, n) if side == FAIL else belief.log_moment(n + 1, 1)
        with np.errstate(invalid="ignore"):
            q[side] = np.where(np.isfinite(lm_here), np.exp(lm_break - lm_here), 0.0)
            q[2 + side] = np.where(np.isfinite(lm_break), np.exp(lm_fill - lm_break), 0.0)
    return q


@njit(cache=True)
def beta_predictive(a, b, k):
    """q of ``_predictive`` for a Beta(a, b) belief, in closed form (jitted)."""
    q = np.zeros((4, k))
    for n in range(k):
        q[FAIL, n] = a / (a + b + n)  # P(success | n fails)
        q[PASS, n] = b / (a + b + n)  # P(failure | n passes)
        q[2 + FAIL, n] = (a + 1) / (a + b + n + 1)  # P(success | n fails, then one)
        q[2 + PASS, n] = (a + n) / (a + b + n + 1)  # P(success | n passes, then a fail)
    return q


@njit(cache=True)
def price_plan(q, k, lam, allow_skip, w_fail=1.0, w_pass=1.0):
    """Backward induction: (plan, E[cost], E[effective]) minimising cost - lam*effective, where
    a failing rollout costs w_fail and a passing one w_pass (1, 1: rollouts; token lengths in
    units of a mean rollout: tokens, ``token_weights``).

    allow_skip: may the policy abandon before the first rollout (useful when the belief is one
    prompt's own and lam is the price set by the whole run, as in ``informed.py``)."""
    rollouts = np.zeros((2, k + 1))  # cost from (side, n) on; n = k: saturated, nothing left
    effective = np.zeros((2, k + 1))
    stop = np.ones((2, k + 1), np.bool_)
    flat = w_fail == 1.0 and w_pass == 1.0
    for side in (FAIL, PASS):
        w_here, w_break = (w_fail, w_pass) if side == FAIL else (w_pass, w_fail)
        for n in range(k - 1, 0, -1):
            qq = q[side, n]
            if flat:
                cont_r = 1.0 + qq * (k - n - 1) + (1.0 - qq) * rollouts[side, n + 1]
            else:  # the break, its k - n - 1 fills at their pass rate; or one more on the side
                fill = w_fail + q[2 + side, n] * (w_pass - w_fail)
                cont_r = qq * (w_break + (k - n - 1) * fill)
                cont_r += (1.0 - qq) * (w_here + rollouts[side, n + 1])
            cont_e = qq + (1.0 - qq) * effective[side, n + 1]
            if cont_r - lam * cont_e < 0.0:  # ties abandon: same value, fewer rollouts
                rollouts[side, n], effective[side, n] = cont_r, cont_e
                stop[side, n] = False
    # n = 0: the first rollout lands on the pass side with probability q[FAIL, 0] = M(1, 0)
    p1 = q[FAIL, 0]
    if flat:
        r0 = 1.0 + p1 * rollouts[PASS, 1] + (1 - p1) * rollouts[FAIL, 1]
    else:
        r0 = p1 * (w_pass + rollouts[PASS, 1]) + (1 - p1) * (w_fail + rollouts[FAIL, 1])
    e0 = p1 * effective[PASS, 1] + (1 - p1) * effective[FAIL, 1]
    plan = np.empty(5, np.int64)
    plan[0] = CONTINUE if (r0 - lam * e0 < 0.0 or not allow_skip) else ABANDON
    for side in (FAIL, PASS):
        plan[1 + 2 * side] = 1  # never commits before mixing
        plan[2 + 2 * side] = k
        for n in range(1, k):
            if stop[side, n]:
                plan[2 + 2 * side] = n
                break
    if plan[0] == ABANDON:
        return plan, 0.0, 0.0
    return plan, r0, e0


def check_lengths(lengths, flag="--len-pass"):
    """Mean tokens of a passing and a failing rollout, (pass, fail), both finite > 0; None:
    rollouts are the price."""
    if lengths is None:
        return None
    try:
        lp, lf = lengths
    except (TypeError, ValueError):
        raise ParameterError(flag, f"must be (pass, fail) mean lengths, got {lengths!r}") from None
    lp = check_float(lp, "--len-pass", 0.0, lo_open=True)
    return lp, check_float(lf, "--len-fail", 0.0, lo_open=True)


def token_weights(belief, lengths):
    """(w_fail, w_pass): a failing and a passing rollout's price in mean rollouts of the
    belief (a full group's mean length: M(1, 0) len_pass + M(0, 1) len_fail), so a plan priced
    in tokens has DS's cost k per prompt as a plan priced in rollouts does, and a request's price
    stays in rollouts (``request_cost``).  (1, 1) without lengths."""
    if lengths is None:
        return 1.0, 1.0
    lp, lf = lengths
    m = math.exp(belief.log_moment(1, 0))
    mean = m * lp + (1.0 - m) * lf
    return lf / mean, lp / mean


def learned_weights(tally):
    """(w_fail, w_pass) of a run's own rollouts from its tally (``learned_lengths``): each
    outcome's mean length over the mean length of all of them, so that a price in rollouts per
    effective group (the stream's, sara-history's lam) is in the same units; (1, 1) until both
    outcomes have been seen."""
    lengths = learned_lengths(tally)
    if lengths is None:
        return 1.0, 1.0
    pt, pn, ft, fn = (float(x) for x in tally)
    mean = (pt + ft) / (pn + fn)
    return lengths[1] / mean, lengths[0] / mean


def learned_lengths(tally):
    """The mean (pass, fail) lengths of a run's own rollouts from its tally [pass tokens,
    passes, fail tokens, fails] (summed over the window of steps a prior is fitted to); None
    until both outcomes have been seen: a plan priced in tokens is priced in rollouts till then
    (never from the future)."""
    pt, pn, ft, fn = (float(x) for x in tally)
    if pn <= 0 or fn <= 0:
        return None
    return pt / pn, ft / fn


def prior_plan(name, k, tau_low, tau_high, prior, request_cost=0.0, lengths=None):
    """The plan a SARA strategy gives every prompt under the Beta `prior` (a, b): sara-auto the
    Bayes-optimal plan for it (priced at `request_cost` rollouts a request, and in tokens with
    the mean `lengths` (pass, fail) when given), the others the tau rule
    (``policy.threshold_plan``).  Shared by the collector and the simulator so that both derive
    a plan from a fitted prior the same way."""
    if name == "sara-auto":
        res = bayes_optimal(BetaLaw(*prior), k, request_cost=request_cost, lengths=lengths)
        return np.asarray(res["plan"], np.int64)
    return threshold_plan(k, tau_low, tau_high, prior[0], prior[1])


def check_request_cost(name, request_cost, probe=0, increment=0, flag="request_cost"):
    """A request's price in rollouts: >= 0, and only for sara-auto's plan, whose requests are
    the auto schedule's stages (probe = increment = 0); the tau rule has no price."""
    c = check_float(request_cost, flag, 0.0)
    if c > 0 and name != "sara-auto":
        raise ParameterError(flag, f"prices sara-auto's plan only (0 for {name}), got {c:g}")
    if c > 0 and (probe or increment):
        raise ParameterError(
            flag,
            "prices the auto schedule's requests: needs probe 0, "
            f"increment 0 (got {probe}, {increment})",
        )
    return c


def check_priced_in(name, priced_in, rule="tau", flag="priced_in"):
    """What a plan minimises per effective group: "rollouts", or "tokens" (a rollout priced by
    its outcome's mean length) — for the Bayes-optimal plans only: sara-auto's, and the price
    rule of the strategies with per-prompt priors (sara-history, and sara-mopps / sara-dps
    behind their selectors); the tau rule, DS, uniform and the peers have no price, so "tokens"
    is refused for them (never silently priced in rollouts)."""
    if not isinstance(priced_in, str) or priced_in not in PRICED_IN:
        raise ParameterError(flag, f"must be one of {', '.join(PRICED_IN)}, got {priced_in!r}")
    if priced_in == "tokens" and not has_price(name, rule):
        raise ParameterError(
            flag,
            f"prices sara-auto's plan and the price rule of sara-history, "
            f"sara-mopps and sara-dps only, not {name} (rule {rule})",
        )
    return priced_in


def has_price(name, rule="tau"):
    """Does `name`'s plan minimise a price (``check_priced_in``)?  sara-auto's always; the
    per-prompt priors' (``informed.py``) under the price rule."""
    family = row(name).family if isinstance(name, str) else None
    return name == "sara-auto" or (family in ("sara-history", "sara-select") and rule == "price")


def plan_family(belief, k):
    """(rollouts, requests, effective): E[rollouts], E[requests] and P(effective) per prompt of
    every plan [0, 1, e_fail, 1, e_pass] under the auto schedule, exactly; arrays indexed
    [e_fail - 1, e_pass - 1] (their passes drawn: ``theory.drawn_passes``).  The probe goes to
    m = min(e_fail, e_pass), a continue to the farther side's stop, a fill once mixed short of
    k (``theory.plan_law``'s terms, all plans at once: a test holds each entry equal to
    plan_law's).

    >>> r, q, e = plan_family(BetaLaw(1, 1), 4)
    >>> float(r[3, 3]), float(q[3, 3]), round(float(e[3, 3]), 4)   # DS: one request of 4
    (4.0, 1.0, 0.6)
    """
    n = np.arange(k + 1)
    side = np.stack([np.exp(belief.log_moment(0, n)), np.exp(belief.log_moment(n, 0))])
    p_full = full_group_law(belief, k)
    p_mixed = float(max(1.0 - p_full[0] - p_full[k], 0.0)) if can_mix(p_full) else 0.0
    stop = np.arange(1, k + 1)
    ends = np.meshgrid(stop, stop, indexing="ij")  # e_fail, e_pass
    m = np.minimum(*ends)
    rollouts, effective = np.full(m.shape, float(k)), np.full(m.shape, p_mixed)
    mixed_probe = np.where(m > 1, np.maximum(1.0 - side[FAIL, m] - side[PASS, m], 0.0), 0.0)
    requests = 1.0 + np.where(m < k, mixed_probe, 0.0)  # the probe; a fill if it mixed
    for s, e in zip((FAIL, PASS), ends):
        through = side[s, e]  # P(all of the first e on this side)
        abandons = e < k
        rollouts -= np.where(abandons, through * (k - e), 0.0)
        if p_mixed > 0:  # abandoned, yet the k would have mixed
            effective -= np.where(abandons, np.maximum(through - side[s, k], 0.0), 0.0)
        further = side[s, m] + np.where(abandons, side[s, m] - through, 0.0)  # continue, fill
        requests += np.where(e > m, further, 0.0)
    never = (ends[0] == 1) & (ends[1] == 1)  # both sides stop at one rollout: never mixed
    effective = np.where(never, 0.0, np.maximum(effective, 0.0))
    return rollouts, requests, effective


def _request_priced(belief, k, request_cost, weights=(1.0, 1.0)):
    """The plan of least (cost + request_cost x requests) / effective over ``plan_family``, a
    rollout's cost w_fail or w_pass by its outcome (`weights`; ties: fewer rollouts, then the
    earlier stops)."""
    rollouts, requests, effective = plan_family(belief, k)
    cost = rollouts
    if weights != (1.0, 1.0):
        stop = np.arange(1, k + 1)
        passes = drawn_passes(belief, k, stop[:, None], stop[None, :])
        cost = weights[0] * (rollouts - passes) + weights[1] * passes
    price = np.full(rollouts.shape, np.inf)
    ok = effective > 0
    price[ok] = (cost[ok] + request_cost * requests[ok]) / effective[ok]
    best = price.min()
    tied = np.flatnonzero(price.ravel() <= best * (1.0 + 1e-12))
    i = tied[np.argmin(rollouts.ravel()[tied])]  # the first of the least
    e_fail, e_pass = np.unravel_index(i, price.shape)
    return np.array([CONTINUE, 1, e_fail + 1, 1, e_pass + 1], np.int64), float(best)


def bayes_optimal(law, k, belief=None, tol=1e-12, max_iter=200, request_cost=0.0, lengths=None):
    """Optimal plan for `belief` (default: the law itself), evaluated exactly under `law`;
    request_cost > 0 prices each request at that many rollouts (module docstring); `lengths`
    (mean tokens of a passing and a failing rollout) prices a rollout by its outcome: the plan
    of fewest tokens per effective group (``token_weights``)."""
    check_law(law, "--difficulty")
    k = check_k(k, "--k")
    belief = law if belief is None else check_law(belief, "belief")
    tol = check_float(tol, "tol", 0.0, lo_open=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    request_cost = check_float(request_cost, "--request-cost", 0.0)
    lengths = check_lengths(lengths)
    p_mixed = 1.0 - math.exp(belief.log_moment(0, k)) - math.exp(belief.log_moment(k, 0))
    if not (p_mixed > 0 and can_mix(full_group_law(belief, k))):  # > 0 may be a float residue
        raise ParameterError("--difficulty", "the law gives no mixed groups at this k")
    weights = token_weights(belief, lengths)
    if request_cost > 0:
        plan, lam = _request_priced(belief, k, request_cost, weights)
        return _result(law, k, plan, lam, request_cost, lengths)
    q = _predictive(belief, k)
    # start just above the DS cost (the never-abandon policy) so that ties do not abandon it:
    # k per prompt in rollouts, and in mean rollouts when priced in tokens (token_weights)
    lam = k / p_mixed * (1.0 + 1e-9)
    plan = None
    for _ in range(max_iter):
        new_plan, r, e = price_plan(q, k, lam, False, *weights)
        if e <= 0:
            break
        new_lam = r / e
        done = plan is not None and np.array_equal(plan, new_plan)
        plan, converged = new_plan, abs(new_lam - lam) <= tol * lam
        lam = min(lam, new_lam)
        if done or converged:
            break
    return _result(law, k, plan, lam, 0.0, lengths)


def _result(law, k, plan, lam, request_cost, lengths=None):
    """plan_law's exact quantities of `plan`, its belief's price lam, the request terms and,
    with `lengths`, the tokens per prompt and per effective group, DS's beside them."""
    res = plan_law(law, k, plan)
    res["plan"] = [int(x) for x in plan]
    res["belief_cost_per_effective_group"] = lam
    res["request_cost"] = request_cost
    res["requests_per_prompt"] = res["rounds_per_prompt"]  # one request per stage reached
    m10 = math.exp(law.log_moment(1, 0))
    cost, ds_cost = res["rollouts_per_prompt"], float(k)  # per prompt, in (mean) rollouts
    if lengths is not None:
        w_fail, w_pass = token_weights(law, lengths)
        passes, fails = outcome_counts(law, k, res)
        cost, ds_cost = w_fail * fails + w_pass * passes, k * (w_fail * (1.0 - m10) + w_pass * m10)
    res["priced_cost_per_effective_group"] = _priced(
        cost, res["requests_per_prompt"], res["p_effective"], request_cost
    )
    res["ds_priced_cost_per_effective_group"] = _priced(ds_cost, 1.0, res["p_mixed"], request_cost)
    if lengths is not None:
        ds = plan_law(law, k, np.array([CONTINUE, 1, k, 1, k], np.int64))
        res["tokens_per_prompt"], res["tokens_per_effective_group"] = plan_tokens(
            law, k, res, lengths
        )
        res["ds_tokens_per_effective_group"] = plan_tokens(law, k, ds, lengths)[1]
    return res


def _priced(cost, requests, effective, request_cost):
    """(cost + request_cost x requests) per effective group; None when none is effective."""
    return (cost + request_cost * requests) / effective if effective > 0 else None
