"""The stopping rule, its abandonment points, and the round schedule — one source of truth.

``decide`` is the rule as the paper states it (COMMIT if mixed, ABANDON if p_eff < tau_low,
optional COMMIT if p_eff >= tau_high, else CONTINUE).  Along an unmixed prefix p_eff only falls as
rollouts accumulate, so on each side the rule is fully described by two numbers: commit while
n < commit_below, abandon from n >= abandon_from.  ``threshold_plan`` finds them *by calling
decide*, and every consumer — exact theory, Numba kernels, the Python collector driving vLLM — acts
through ``decide_plan`` on that plan.  Any other sequential policy (e.g. the Bayes-optimal one in
``optimal.py``) is a plan too.

Plan layout (int64[5]):
[d0, commit_below_fail, abandon_from_fail, commit_below_pass, abandon_from_pass], where d0 is the
decision before any rollout (CONTINUE; ABANDON = skip, only for per-prompt priors; COMMIT = send
k at once, when tau_high is on).

>>> plan = threshold_plan(8, 0.3)             # uniform prior: p_eff(n, 0) = (8 - n) / 9
>>> [int(x) for x in plan]                    # abandon after 6 fails or 6 passes
[0, 1, 6, 1, 6]
>>> int(decide_plan(6, 0, 8, plan)) == ABANDON, int(decide_plan(6, 2, 8, plan)) == COMMIT
(True, True)
>>> int(next_request(0, 0, 8, plan, 0, 0))    # auto probe: straight to the abandonment point
6
"""

import numpy as np
from numba import njit

from .beta import p_eff_jit

CONTINUE, COMMIT, ABANDON, SATURATED = 0, 1, 2, 3
DECISION_NAMES = ("continue", "commit", "abandon", "saturated")
FAIL, PASS = 0, 1
NO_TAU_HIGH = np.inf


@njit(cache=True)
def decide(n, s, k, tau_low, tau_high, a0, b0):
    """The rule for one prompt with n rollouts, s successes (pass tau_high = inf to disable it)."""
    if 0 < s < n:
        return COMMIT
    if n >= k:
        return SATURATED  # a full group that never mixed
    p = p_eff_jit(n, s, k, a0, b0)
    if p >= tau_high:
        return COMMIT
    if p < tau_low:
        return ABANDON
    return CONTINUE


@njit(cache=True)
def _first_at_least(k, side, rank, tau_low, tau_high, a0, b0):
    """Smallest n in [1, k] whose decision on the side prefix ranks >= rank (COMMIT=0 < CONTINUE=1
    < ABANDON/SATURATED=2), by bisection: the rank never falls along a side prefix."""
    lo, hi = 1, k  # decision at n = k is SATURATED (rank 2), so the answer exists
    while lo < hi:
        mid = (lo + hi) // 2
        d = decide(mid, 0 if side == FAIL else mid, k, tau_low, tau_high, a0, b0)
        r = 0 if d == COMMIT else (1 if d == CONTINUE else 2)
        if r >= rank:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def threshold_plan(k, tau_low, tau_high=np.inf, a0=1.0, b0=1.0, allow_skip=False):
    """The plan of the tau rule for group size k and prior Beta(a0, b0).

    The paper evaluates the rule when rollouts return, so by default a prompt is always probed:
    with one prior shared by every prompt, a skip at n = 0 would skip them all.  allow_skip
    applies the rule at n = 0 too — for a prompt's *own* informed prior (``informed.py``)."""
    plan = np.empty(5, np.int64)
    plan[0] = decide(0, 0, k, tau_low, tau_high, a0, b0)
    if plan[0] == ABANDON and not allow_skip:
        plan[0] = CONTINUE
    for side in (FAIL, PASS):
        plan[1 + 2 * side] = _first_at_least(k, side, 1, tau_low, tau_high, a0, b0)
        plan[2 + 2 * side] = _first_at_least(k, side, 2, tau_low, tau_high, a0, b0)
    return plan


@njit(cache=True)
def plan_can_commit(plan):
    """False when the plan abandons every prompt before it can mix (after one rollout on both
    sides, or before any): such a plan spends rollouts and can never yield a group."""
    if plan[0] != CONTINUE:
        return plan[0] == COMMIT
    return plan[1] > 1 or plan[3] > 1 or plan[2] > 1 or plan[4] > 1


@njit(cache=True)
def decide_plan(n, s, k, plan):
    """Decision for a prompt with n rollouts and s successes under a plan."""
    if 0 < s < n:
        return COMMIT
    if n == 0:
        return plan[0]
    if n >= k:
        return SATURATED
    side = FAIL if s == 0 else PASS
    if n < plan[1 + 2 * side]:
        return COMMIT
    if n >= plan[2 + 2 * side]:
        return ABANDON
    return CONTINUE


@njit(cache=True)
def side_stop(k, plan, side):
    """First n >= 1 at which the side prefix stops continuing under the sequential rule."""
    if plan[1 + 2 * side] > 1:
        return 1
    return min(plan[2 + 2 * side], k)


@njit(cache=True)
def next_request(n, s, k, plan, probe, increment):
    """Rollouts to request next for a prompt in CONTINUE state (or k - n for a committed one).

    probe / increment = 0 means auto: probe straight to the nearer side's stopping point, and send a
    continuing prompt straight to its own side's stopping point — the sequential rule's decisions
    exactly, in at most two rounds plus the fill."""
    if 0 < s < n:
        return k - n
    if n == 0:
        if probe > 0:
            return min(probe, k)
        return min(side_stop(k, plan, FAIL), side_stop(k, plan, PASS))
    side = FAIL if s == 0 else PASS
    if n < plan[1 + 2 * side]:
        return k - n  # committed before mixing (tau_high): fill
    if increment > 0:
        return min(n + increment, k) - n
    return max(min(plan[2 + 2 * side], k) - n, 1)


@njit(cache=True)
def side_terminal(k, plan, side, probe, increment):
    """(n, decision) where a prompt whose rollouts all land on `side` stops, under the schedule."""
    if plan[0] != CONTINUE:
        return 0, plan[0]
    n = 0
    while True:
        n += next_request(n, 0 if side == FAIL else n, k, plan, probe, increment)
        d = decide_plan(n, 0 if side == FAIL else n, k, plan)
        if d != CONTINUE:
            return n, d


def abandonment_points(k, plan, probe=0, increment=0):
    """After how many all-fail / all-pass rollouts a prompt is abandoned (None: never, it is
    completed to k or committed); 0 means skipped before any rollout."""
    out = []
    for side in (FAIL, PASS):
        n, d = side_terminal(k, plan, side, probe, increment)
        out.append(int(n) if d == ABANDON else None)
    return tuple(out)
