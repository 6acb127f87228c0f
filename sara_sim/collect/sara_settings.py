"""The checks and the prior fit behind ``SaraCollector``: its settings field by field, what
sara-history and the selector strategies need, whether a plan can ever commit a group, and the
beta-binomial fit of the outcomes of the last steps (sara-eb, sara-auto, sara-history)."""

import math
from typing import NamedTuple

import numpy as np

from ..core.beta import p_eff_jit
from ..core.difficulty import fit_beta_binomial
from ..core.errors import ParameterError, check_int, check_prior, check_schedule, check_unit
from ..core.optimal import check_priced_in, check_request_cost
from ..core.policy import NO_TAU_HIGH, plan_can_commit
from ..core.registry import SaraParams
from ..core.rounds import schedule_knobs


def check_history(name, meta, history, epoch_size, selector):
    """sara-history needs a PromptHistory and the dataset size; sara-mopps / sara-dps a Selector."""
    if meta.family == "sara-select" and selector is None:
        raise ParameterError("selector", f"{name} needs a selectors.Selector")
    if meta.needs_history:
        if history is None:
            raise ParameterError("history", "sara-history needs an informed.PromptHistory")
        if epoch_size is None:
            raise ParameterError("epoch_size", "sara-history needs the dataset size (>= 1)")
        check_int(epoch_size, "epoch_size", 1)
        from ..core.informed import PromptHistory

        if not isinstance(history, PromptHistory):
            raise ParameterError(
                "history", f"must be an informed.PromptHistory, got {type(history).__name__}"
            )
    if selector is not None:
        from .selectors import Selector

        if not isinstance(selector, Selector):
            raise ParameterError(
                "selector", f"must be a selectors.Selector, got {type(selector).__name__}"
            )


class Settings(NamedTuple):
    """The checked knobs of a ``registry.SaraParams`` (the collector keeps them as attributes)."""

    tau_low: float
    tau_high: float
    prior: tuple
    capacity: int
    probe: int
    increment: int
    max_rounds: int
    eb_window: int
    rule: str
    knobs: tuple  # (overprovision, max_inflight): ``rounds.schedule_knobs``
    request_cost: float  # sara-auto's price of a request, in rollouts (``optimal.py``)
    priced_in: str  # "rollouts" or "tokens": what sara-auto's plan minimises per group


def checked_settings(name, p, k, groups, budget):
    """`p` (a ``registry.SaraParams``) of strategy `name` checked field by field: one
    ParameterError naming the first bad one.  `groups` / `budget`: the collector's; without
    `p.capacity` a round holds groups x k rollouts (times the over-provisioning) or the budget."""
    if not isinstance(p, SaraParams):
        raise ParameterError("params", f"must be a registry.SaraParams, got {p!r}")
    max_rounds = check_int(p.max_rounds, "max_rounds", 1)
    if not isinstance(p.carry, bool):
        raise ParameterError("carry", f"must be True or False, got {p.carry!r}")
    tau_low = check_unit(p.tau_low, "tau_low")
    tau_high = NO_TAU_HIGH if p.tau_high is None else check_unit(p.tau_high, "tau_high")
    if tau_high <= tau_low:
        raise ParameterError("tau_high", f"must exceed tau_low={p.tau_low}, got {p.tau_high}")
    prior = check_prior(p.prior, "prior")
    knobs = schedule_knobs(p)  # (overprovision, max_inflight), checked
    # an over-provisioned round needs the room for it (overprovision 1: groups x k)
    default_cap = math.ceil(knobs[0] * groups * k) if groups else budget
    capacity = check_int(default_cap if p.capacity is None else p.capacity, "capacity", k)
    probe, increment = check_schedule(p.probe, p.increment, k, prefix="")
    eb_window = check_int(p.eb_window, "eb_window", 1)
    if not isinstance(p.rule, str) or p.rule not in ("tau", "price"):
        raise ParameterError("rule", f"must be 'tau' or 'price', got {p.rule!r}")
    request_cost = check_request_cost(name, p.request_cost, probe, increment)
    priced_in = check_priced_in(name, p.priced_in, p.rule)
    return Settings(
        tau_low,
        tau_high,
        prior,
        capacity,
        probe,
        increment,
        max_rounds,
        eb_window,
        p.rule,
        knobs,
        request_cost,
        priced_in,
    )


def fitted_prior(window, prior):
    """The beta-binomial MLE of the outcomes decided in the window's steps (None: none yet)."""
    obs = [o for step in window for o in step]
    if not obs:
        return None
    s, t = np.asarray(obs, float).T
    return fit_beta_binomial(s, t, init=prior)


def check_commits(plan, prior, k, tau_low):
    """A plan that abandons every prompt after one rollout never commits a group: refused."""
    if not plan_can_commit(plan):
        a, b = prior
        raise ParameterError(
            "tau_low",
            f"{tau_low} is too high for the fitted prior Beta({a:.3g}, {b:.3g}): every "
            "prompt would be abandoned after one rollout and no group could ever commit "
            f"(p_eff(1) = {p_eff_jit(1, 0, k, a, b):.3g} after a fail, "
            f"{p_eff_jit(1, 1, k, a, b):.3g} after a pass); lower tau_low",
        )
