"""Validated front doors of the jitted rule (what ``import sara_sim`` exports).

``policy.decide`` / ``decide_plan`` / ``threshold_plan`` are Numba functions that the kernels call
millions of times, so they check nothing (a float k is a Numba TypingError, a nan tau silently
abandons nothing).  These wrappers check every argument with ``errors.py`` first and then call
the very same jitted code, so their decisions are identical.

>>> import sara_sim
>>> [int(x) for x in sara_sim.threshold_plan(8, 0.3)]
[0, 1, 6, 1, 6]
>>> int(sara_sim.decide(6, 0, 8, 0.3)) == sara_sim.ABANDON
True
>>> sara_sim.decide(6, 0, 8, float("nan"))
Traceback (most recent call last):
...
sara_sim.core.errors.ParameterError: tau_low: must be a finite number in [0, 1], got nan
"""

import numpy as np

from . import policy
from .errors import ParameterError, check_int, check_k, check_prior, check_unit


def _tau_high(tau_high, tau_low):
    if tau_high is None or (isinstance(tau_high, float) and tau_high == np.inf):
        return policy.NO_TAU_HIGH  # off
    th = check_unit(tau_high, "tau_high")
    if th <= tau_low:
        raise ParameterError("tau_high", f"must exceed tau_low={tau_low}, got {tau_high!r}")
    return th


def _state(n, s, k):
    k = check_k(k, "k")
    n = check_int(n, "n", 0, k)
    s = check_int(s, "s", 0, n)
    return n, s, k


def decide(n, s, k, tau_low, tau_high=None, a0=1.0, b0=1.0):
    """The rule for one prompt with n rollouts and s successes (tau_high None / inf: off)."""
    n, s, k = _state(n, s, k)
    tau_low = check_unit(tau_low, "tau_low")
    th = _tau_high(tau_high, tau_low)
    a0, b0 = check_prior((a0, b0), "a0/b0")
    return policy.decide(n, s, k, tau_low, th, a0, b0)


def threshold_plan(k, tau_low, tau_high=None, a0=1.0, b0=1.0, allow_skip=False):
    """The tau rule's plan (``policy.threshold_plan``) after checking every argument."""
    k = check_k(k, "k")
    tau_low = check_unit(tau_low, "tau_low")
    th = _tau_high(tau_high, tau_low)
    a0, b0 = check_prior((a0, b0), "a0/b0")
    if not isinstance(allow_skip, bool | np.bool_):
        raise ParameterError("allow_skip", f"must be True or False, got {allow_skip!r}")
    return policy.threshold_plan(k, tau_low, th, a0, b0, bool(allow_skip))


def decide_plan(n, s, k, plan):
    """Decision of a plan (``policy.py`` layout) for a prompt with n rollouts, s successes."""
    from .theory import check_plan

    n, s, k = _state(n, s, k)
    return policy.decide_plan(n, s, k, check_plan(plan, k))
