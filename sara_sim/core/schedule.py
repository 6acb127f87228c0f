"""SARA's round schedule: the per-round decisions of a step, written once (docs/design.md §2).

The round state machine (``rounds.py``, driven by the Python collector and by the Numba kernel)
and both drivers' history bookkeeping call these jitted functions, so how many fresh prompts a
round probes, how long a run of skipped prompts may last, how the running rates move and how a
prompt's history absorbs a visit exist in one place only.

* ``yield_probes`` / ``budget_probes`` — how many fresh prompts to probe this round: the missing
  groups over the running commit rate (fixed-yield), or the budget left over the running cost per
  prompt (fixed-budget).
* ``skip_budget`` — how many skips (prompts abandoned before any rollout) a round may see.
* ``track`` — the running commit and cost rates (``rates``, layout ``R_*``: NaN until the first
  prompt is decided) and ``price`` — the run's rollouts per effective group so far.
* ``observe`` — a prompt's evidence after a visit: [S, F, epoch, skips in a row] (``EV_*``),
  discounted by rho per epoch of age; a visit that ends after a later visit of the same prompt was
  recorded (an out-of-order observation) is merged at its own age, keeping the newer date.
* ``history_plan`` — the plan of a prompt from its evidence (``informed_plan``) with the
  starvation guards; its parameters travel as one ``HistoryKnobs``.

>>> rates = new_rates()
>>> track(rates, True, 8); track(rates, False, 2)
>>> round(float(rates[R_COMMIT]), 3), round(float(rates[R_COST]), 3)
(0.95, 7.7)
>>> int(yield_probes(rates, 0.2, 10, 4))        # (10 - 0.5 * 4) / 0.95 -> 9 probes
9
>>> ev = new_evidence()
>>> observe(ev, 3, 8, 2.0, 0.5)                 # epoch 2: 3 of 8 passed
>>> observe(ev, 0, 4, 1.0, 0.5)                 # a visit of epoch 1 ends later: merged at age 1
>>> [float(x) for x in ev]
[3.0, 7.0, 2.0, 0.0]
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .optimal import beta_predictive, price_plan
from .policy import ABANDON, CONTINUE, threshold_plan

R_COMMIT, R_COST, R_ROLLOUTS, R_EFFECTIVE = range(4)  # rates: running commit / cost, totals
EV_S, EV_F, EV_EPOCH, EV_SKIPS = range(4)  # evidence of one prompt; EV_EPOCH < 0: none yet
RATE_WEIGHT = 0.05  # weight of the newest decided prompt in the running rates
MIN_RATE = 0.05  # a commit rate below this would probe without bound


class HistoryKnobs(NamedTuple):
    """sara-history's knobs as the jitted code takes them (values: ``registry.HistoryParams``)."""

    rho: float  # discount per epoch of age
    kappa: float  # weight of the population prior
    explore: float  # probability that a skip is overridden
    max_skip: float  # skips in a row after which a prompt is probed
    rule_price: bool  # the price rule (else the tau rule)


@njit(cache=True)
def new_rates():
    """[commit rate, cost rate, total rollouts, total effective groups]: no prompt decided yet."""
    return np.array([math.nan, math.nan, 0.0, 0.0])


@njit(cache=True)
def new_evidence():
    """[S, F, epoch, skips in a row] of a prompt never observed."""
    return np.array([0.0, 0.0, -1.0, 0.0])


@njit(cache=True)
def track(rates, commit, rollouts):
    """Move the running commit rate and rollouts-per-decided-prompt by one decided prompt."""
    c, r, w = 1.0 if commit else 0.0, float(rollouts), RATE_WEIGHT
    cr, cs = rates[R_COMMIT], rates[R_COST]
    rates[R_COMMIT] = c if math.isnan(cr) else (1 - w) * cr + w * c
    rates[R_COST] = r if math.isnan(cs) else (1 - w) * cs + w * r


@njit(cache=True)
def price(rates, k):
    """Rollouts per effective group so far (DS's k / 0.5 before any group is complete)."""
    eff = rates[R_EFFECTIVE]
    return 2.0 * k if eff == 0 else rates[R_ROLLOUTS] / eff


@njit(cache=True)
def yield_probes(rates, tau_low, deficit, n_continuing):
    """Fresh prompts to probe for `deficit` missing groups (prompts still continuing count half);
    before any prompt commits the rate is guessed as 1 - tau_low."""
    cr = rates[R_COMMIT]
    rate = cr if (not math.isnan(cr) and cr != 0.0) else max(1.0 - tau_low, MIN_RATE)
    return math.ceil(max(deficit - 0.5 * n_continuing, 0.0) / max(rate, MIN_RATE))


@njit(cache=True)
def budget_probes(rates, k, budget_left, used, reserved, any_open):
    """Fresh prompts the budget left can pay for at the running cost per prompt (k before any is
    decided); one at least while nothing is open and a rollout is left."""
    cs = rates[R_COST]
    per = cs if (not math.isnan(cs) and cs != 0.0) else float(k)
    want = math.floor(max(budget_left - used - reserved, 0) / per)
    if not any_open and budget_left - used >= 1:
        want = max(want, 1)
    return want


@njit(cache=True)
def skip_budget(want):
    """Skips a round may see: a run of skipped prompts cannot spin forever."""
    return 20 * max(want, 1) + 100


@njit(cache=True)
def observe(ev, s, n, epoch, rho):
    """Add a visit's s passes of n drawn outcomes at `epoch` (>= 0) to a prompt's evidence."""
    if ev[EV_EPOCH] < 0:
        ev[EV_S], ev[EV_F], ev[EV_EPOCH], ev[EV_SKIPS] = s, n - s, epoch, 0.0 if n else 1.0
        return
    if epoch < ev[EV_EPOCH]:  # finished after a later visit was recorded: its counts at its age
        w = rho ** (ev[EV_EPOCH] - epoch)
        ev[EV_S], ev[EV_F] = ev[EV_S] + w * s, ev[EV_F] + w * (n - s)
        return
    w = rho ** (epoch - ev[EV_EPOCH])
    ev[EV_S], ev[EV_F], ev[EV_EPOCH] = w * ev[EV_S] + s, w * ev[EV_F] + (n - s), epoch
    ev[EV_SKIPS] = 0.0 if n else ev[EV_SKIPS] + 1.0


@njit(cache=True)
def informed_prior(s_ev, f_ev, age, rho, pop_a, pop_b, kappa):
    """The Beta prior of one prompt (``informed.py``): kappa * population + discounted evidence."""
    w = rho**age if age > 0 else 1.0
    return kappa * pop_a + w * s_ev, kappa * pop_b + w * f_ev


@njit(cache=True)
def informed_plan(
    a, b, k, tau_low, lam, rule_price, explore, u, must_probe=False, w_fail=1.0, w_pass=1.0
):
    """Plan for a prompt with prior Beta(a, b); a skip is overridden when u < explore or when
    must_probe (no own evidence, or skipped too often in a row).  The price rule's rollouts cost
    w_fail / w_pass by outcome (``optimal.price_plan``; 1, 1: rollouts)."""
    if rule_price:
        plan, _, _ = price_plan(beta_predictive(a, b, k), k, lam, True, w_fail, w_pass)
    else:
        plan = threshold_plan(k, tau_low, np.inf, a, b, True)
    if plan[0] == ABANDON and (u < explore or must_probe):
        if rule_price:  # the best plan given that we do probe
            plan, _, _ = price_plan(beta_predictive(a, b, k), k, lam, False, w_fail, w_pass)
        else:
            plan[0] = CONTINUE
    return plan


@njit(cache=True)
def prior_of(ev, epoch, hp, pop):
    """The informed Beta prior of a prompt with evidence ev at `epoch` (population prior pop)."""
    age = epoch - ev[EV_EPOCH] if ev[EV_EPOCH] >= 0 else 0.0
    return informed_prior(ev[EV_S], ev[EV_F], age, hp.rho, pop[0], pop[1], hp.kappa)


@njit(cache=True)
def history_plan(ev, epoch, hp, pop, k, tau_low, lam, u, w_fail=1.0, w_pass=1.0):
    """The plan of a prompt from its own prior at the run's price lam; never skipped without
    evidence of its own or after max_skip skips in a row (u < explore overrides a skip too).
    w_fail / w_pass: a rollout's price by outcome, in the run's mean rollouts, so that lam
    (rollouts per effective group) stays the run's price (``optimal.learned_weights``)."""
    must = ev[EV_EPOCH] < 0 or ev[EV_S] + ev[EV_F] == 0 or ev[EV_SKIPS] >= hp.max_skip
    a, b = prior_of(ev, epoch, hp, pop)
    return informed_plan(a, b, k, tau_low, lam, hp.rule_price, hp.explore, u, must, w_fail, w_pass)
