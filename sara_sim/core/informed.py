"""History-informed priors (``sara-history``): beyond the paper's uniform prior.

A prompt's prior is what the run itself observed about it in earlier epochs — only outcomes it
actually drew — discounted by age and shrunk toward the dataset-level empirical-Bayes prior (A, B):

    prior_i = Beta(kappa*A + rho^age * S_i,  kappa*B + rho^age * F_i)

S_i, F_i are the prompt's discounted success / failure counts (each visit adds what was drawn),
age is the number of epochs since its last visit, rho in (0, 1] forgets, kappa > 0 sets how hard
the prompt is pulled toward the population.  With no history at all the prior is (kappa*A, kappa*B):
with kappa = 1 and (A, B) = (1, 1) that is plain SARA.

A prompt is then handled by a plan for its own prior (``policy.py``):
* rule "tau": the paper's threshold rule, p_eff < tau_low abandons — now also at n = 0 (skip);
* rule "price": the Bayes-optimal plan for the ratio objective at the run's current price lam
  (rollouts per effective group), from ``optimal.price_plan``: skip iff even the best way of
  probing this prompt costs more per effective group than the run pays on average.
Starvation guards: a prompt without evidence of its own is never skipped (skipping it would rest on
the population alone, and nothing would ever be learnt about it); a prompt skipped `max_skip` visits
in a row is probed at its next visit; and any skip is overridden with probability `explore`.

>>> h = PromptHistory(rho=0.5, kappa=1.0, pop_prior=(0.34, 0.67), explore=0.0)  # DeepScaleR EB
>>> h.observe("q1", [0] * 8, epoch=0)             # all wrong at its first visit
>>> a, b = h.prior("q1", epoch=1)                 # one epoch later: 8 fails, discounted by 0.5
>>> round(a, 3), round(b, 3)
(0.34, 4.67)
>>> plan = h.plan("q1", epoch=1, k=8, tau_low=0.3, rule="tau")
>>> int(plan[0])                                  # p_eff(0) = 0.298 < 0.3: skip without rollouts
2
>>> int(h.plan("new", epoch=1, k=8, tau_low=0.3)[0])  # no history: the population prior, probe
0
"""

import math

import numpy as np

from .errors import ParameterError, check_int, check_positive, check_prior, check_unit
from .registry import HISTORY
from .schedule import (  # noqa: F401 (informed_prior / informed_plan: re-exported)
    HistoryKnobs,
    history_plan,
    informed_plan,
    informed_prior,
    new_evidence,
    observe,
    prior_of,
)

RULES = ("tau", "price")

# chosen by benchmarks/fit_informed.py (values and their source: registry.HistoryParams)
_KEYS = ("rho", "kappa", "explore", "max_skip", "rule")
INFORMED_DEFAULTS = {x: getattr(HISTORY, x) for x in _KEYS}
SELECTOR_RATIO = HISTORY.ratio  # candidates per probed prompt for sara-mopps / sara-dps


class PromptHistory:
    """Per-prompt discounted evidence, keyed by any hashable prompt id (picklable state)."""

    def __init__(
        self,
        rho=HISTORY.rho,  # defaults: registry.HistoryParams (cross-validated)
        kappa=HISTORY.kappa,
        pop_prior=(1.0, 1.0),
        explore=HISTORY.explore,
        max_skip=HISTORY.max_skip,
        seed=0,
        key=None,
        epoch_of=None,
    ):
        self.rho = check_unit(rho, "rho")
        if self.rho == 0.0:
            raise ParameterError("rho", "must be in (0, 1]; 0 forgets everything (use plain sara)")
        self.kappa = check_positive(kappa, "kappa")
        self.explore = check_unit(explore, "explore")
        self.max_skip = check_int(max_skip, "max_skip", 0)
        self.pop_prior = check_prior(pop_prior, "pop_prior")
        check_int(seed, "seed", 0)
        # prompt id -> [discounted successes, discounted failures, last epoch, skips in a row]
        self.evidence = {}
        self.rng = np.random.default_rng(seed)
        # the prompt behind a prompt id, e.g. a replay's (prompt, epoch) -> prompt (not saved)
        self.key = key if key is not None else (lambda pid: pid)
        # the epoch of a prompt id, when the id carries it (a replay); else the caller's clock
        self.epoch_of = epoch_of

    def params(self, rule="tau"):
        """The knobs as the jitted schedule takes them (``schedule.HistoryKnobs``)."""
        return HistoryKnobs(
            float(self.rho),
            float(self.kappa),
            float(self.explore),
            float(self.max_skip),
            rule == "price",
        )

    def _evidence(self, pid):
        ev = self.evidence.get(self.key(pid))
        return new_evidence() if ev is None else np.array(ev, np.float64)

    def observe(self, pid, rewards, epoch):
        """Add the outcomes drawn for `pid` at `epoch` (call once per visit, any length); a visit
        that ends after a later visit was recorded is merged at its age (``schedule.observe``)."""
        epoch = self.epoch_of(pid) if self.epoch_of else epoch
        ev = self._evidence(pid)
        observe(ev, float(sum(rewards)), float(len(rewards)), float(epoch), float(self.rho))
        self.evidence[self.key(pid)] = ev.tolist()

    def prior(self, pid, epoch):
        epoch = self.epoch_of(pid) if self.epoch_of else epoch
        ev = self._evidence(pid)
        return prior_of(ev, float(epoch), self.params(), np.asarray(self.pop_prior, np.float64))

    def plan(self, pid, epoch, k, tau_low, rule="tau", lam=math.inf, weights=(1.0, 1.0)):
        """`weights`: the price rule's (w_fail, w_pass) per rollout (``schedule.history_plan``)."""
        if rule not in RULES:
            raise ParameterError("rule", f"must be one of {RULES}, got {rule!r}")
        epoch = self.epoch_of(pid) if self.epoch_of else epoch
        ev, pop = self._evidence(pid), np.asarray(self.pop_prior, np.float64)
        u = float(self.rng.random())
        w_fail, w_pass = (float(x) for x in weights)
        return history_plan(
            ev, float(epoch), self.params(rule), pop, k, tau_low, float(lam), u, w_fail, w_pass
        )

    @classmethod
    def for_integer_ids(cls, epoch_size, seed=0, **overrides):
        """History for integer prompt ids `epoch * epoch_size + index` (the real loop's
        PromptSource over a finite task), with the cross-validated defaults."""
        opts = {**INFORMED_DEFAULTS, **overrides}
        opts.pop("rule")
        return cls(
            **opts,
            seed=seed,
            key=lambda uid: uid % epoch_size,
            epoch_of=lambda uid: uid // epoch_size,
        )

    def fit_population(self, successes, trials):
        """Refit the dataset-level EB prior (A, B) to observed (successes, trials) pairs."""
        from .difficulty import fit_beta_binomial

        self.pop_prior = fit_beta_binomial(successes, trials, init=self.pop_prior)
        return self.pop_prior

    def state_dict(self):
        return {
            "rho": self.rho,
            "kappa": self.kappa,
            "explore": self.explore,
            "max_skip": self.max_skip,
            "pop_prior": self.pop_prior,
            "evidence": {pid: list(v) for pid, v in self.evidence.items()},
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state):
        self.rho, self.kappa, self.explore = state["rho"], state["kappa"], state["explore"]
        self.max_skip = state["max_skip"]
        self.pop_prior = tuple(state["pop_prior"])
        self.evidence = {pid: list(v) for pid, v in state["evidence"].items()}
        self.rng.bit_generator.state = state["rng"]
