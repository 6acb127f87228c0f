"""Bayes-optimal stopping (``sara-auto``): the fewest rollouts per effective group over *all*
sequential stopping policies, for a belief about the prompt's success rate.

For a price lam per effective group, backward induction over prefix states (n, all-fail | all-pass)
gives the policy minimising E[rollouts] - lam * E[effective]: from an unmixed prefix, one more
rollout costs 1 and with the predictive probability q makes the group mixed, after which the
k - n - 1 fills are paid and lam is earned; abandoning is worth 0.  Dinkelbach's iteration
lam <- E[rollouts] / E[effective] of that policy converges to the optimal ratio lam*.  The result is
a plan (``policy.py``) with side-specific abandonment points, evaluated exactly by ``theory``.

>>> from sara_sim.core.difficulty import BetaLaw
>>> res = bayes_optimal(BetaLaw(0.2, 0.8), 8)
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
from .theory import can_mix, check_law, full_group_law, plan_law


def _predictive(belief, k):
    """q[side, n]: P(next rollout breaks the side prefix | n outcomes all on that side)."""
    n = np.arange(k)
    q = np.zeros((2, k))
    for side in (FAIL, PASS):
        lm_here = belief.log_moment(0, n) if side == FAIL else belief.log_moment(n, 0)
        lm_break = belief.log_moment(1, n) if side == FAIL else belief.log_moment(n, 1)
        with np.errstate(invalid="ignore"):
            q[side] = np.where(np.isfinite(lm_here), np.exp(lm_break - lm_here), 0.0)
    return q


@njit(cache=True)
def beta_predictive(a, b, k):
    """q[side, n] of ``_predictive`` for a Beta(a, b) belief, in closed form (jitted)."""
    q = np.zeros((2, k))
    for n in range(k):
        q[FAIL, n] = a / (a + b + n)  # P(success | n fails)
        q[PASS, n] = b / (a + b + n)  # P(failure | n passes)
    return q


@njit(cache=True)
def price_plan(q, k, lam, allow_skip):
    """Backward induction: (plan, E[rollouts], E[effective]) minimising rollouts - lam*effective.

    allow_skip: may the policy abandon before the first rollout (useful when the belief is one
    prompt's own and lam is the price set by the whole stream, as in ``informed.py``)."""
    rollouts = np.zeros((2, k + 1))  # from (side, n) on; n = k: saturated, nothing left
    effective = np.zeros((2, k + 1))
    stop = np.ones((2, k + 1), np.bool_)
    for side in (FAIL, PASS):
        for n in range(k - 1, 0, -1):
            qq = q[side, n]
            cont_r = 1.0 + qq * (k - n - 1) + (1.0 - qq) * rollouts[side, n + 1]
            cont_e = qq + (1.0 - qq) * effective[side, n + 1]
            if cont_r - lam * cont_e < 0.0:  # ties abandon: same value, fewer rollouts
                rollouts[side, n], effective[side, n] = cont_r, cont_e
                stop[side, n] = False
    # n = 0: the first rollout lands on the pass side with probability q[FAIL, 0] = M(1, 0)
    p1 = q[FAIL, 0]
    r0 = 1.0 + p1 * rollouts[PASS, 1] + (1 - p1) * rollouts[FAIL, 1]
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


def prior_plan(name, k, tau_low, tau_high, prior):
    """The plan a SARA strategy gives every prompt under the Beta `prior` (a, b): sara-auto the
    Bayes-optimal plan for it, the others the tau rule (``policy.threshold_plan``).  Shared by the
    collector and the simulator so that both derive a plan from a fitted prior the same way."""
    if name == "sara-auto":
        return np.asarray(bayes_optimal(BetaLaw(*prior), k)["plan"], np.int64)
    return threshold_plan(k, tau_low, tau_high, prior[0], prior[1])


def bayes_optimal(law, k, belief=None, tol=1e-12, max_iter=200):
    """Optimal plan for `belief` (default: the law itself), evaluated exactly under `law`."""
    check_law(law, "--difficulty")
    k = check_k(k, "--k")
    belief = law if belief is None else check_law(belief, "belief")
    tol = check_float(tol, "tol", 0.0, lo_open=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    q = _predictive(belief, k)
    p_mixed = 1.0 - math.exp(belief.log_moment(0, k)) - math.exp(belief.log_moment(k, 0))
    if not (p_mixed > 0 and can_mix(full_group_law(belief, k))):  # > 0 may be a float residue
        raise ParameterError("--difficulty", "the law gives no mixed groups at this k")
    # start just above the DS cost (the never-abandon policy) so that ties do not abandon it
    lam = k / p_mixed * (1.0 + 1e-9)
    plan = None
    for _ in range(max_iter):
        new_plan, r, e = price_plan(q, k, lam, False)
        if e <= 0:
            break
        new_lam = r / e
        done = plan is not None and np.array_equal(plan, new_plan)
        plan, converged = new_plan, abs(new_lam - lam) <= tol * lam
        lam = min(lam, new_lam)
        if done or converged:
            break
    res = plan_law(law, k, plan)
    res["plan"] = [int(x) for x in plan]
    res["belief_cost_per_effective_group"] = lam
    return res
