"""SARA's round-synchronous allocator (docs/design.md §2) — the collector behind sara, sara-eb,
sara-auto and sara-history (see ``allocator.py`` for the shared interface and the peers uniform /
ds).

Each prompt carries its own plan (``policy.py``); the collector only asks ``decide_plan`` what to
do with a prompt and ``next_request`` how many rollouts to send it.  Each round issues, in order:
fills for committed prompts (certain effective groups), continues for prompts still undecided, then
probes of fresh prompts — as many as the missing groups call for (fixed-yield) or as the budget
allows (fixed-budget) — up to the per-round capacity.  Groups completed beyond N and prompts still
in progress are carried to the next step: counted, never dropped.  How many fresh prompts a round
probes, the skip budget, the running rates and each prompt's history update are ``schedule``'s
jitted functions — the ones the simulator's kernel (``kernels.py``) calls.

Which plan a prompt gets:
* sara — the tau rule with the fixed prior (paper-faithful with the uniform prior);
* sara-eb — the tau rule with a prior fitted (beta-binomial MLE) to the outcomes the collector drew
  in its last `eb_window` steps;
* sara-auto — the Bayes-optimal plan (``optimal.py``) for that fitted prior;
* sara-history — the prompt's own informed prior (``informed.py``): its earlier outcomes, discounted
  and shrunk toward the fitted population prior; it may skip a prompt before any rollout;
* sara-mopps / sara-dps — sara-history behind a predictive selector (``selectors.py``) that ranks
  `ratio` candidates per wanted prompt and passes over the rest.
"""

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..core.beta import p_eff_jit
from ..core.errors import ParameterError, check_int, check_prior, check_schedule, check_unit
from ..core.policy import (
    ABANDON,
    COMMIT,
    CONTINUE,
    NO_TAU_HIGH,
    SATURATED,
    decide_plan,
    next_request,
    plan_can_commit,
    threshold_plan,
)
from ..core.registry import SaraParams, row
from ..core.schedule import (
    R_EFFECTIVE,
    R_ROLLOUTS,
    budget_probes,
    new_rates,
    price,
    skip_budget,
    track,
    yield_probes,
)
from .collect_base import Request, StepResult, _Base, check_call


@dataclass
class _Prompt:
    pid: object
    visit: int  # unique per visit: a prompt id may come round again while still open
    plan: np.ndarray
    rewards: list = field(default_factory=list)
    committed: bool = False


class SaraCollector(_Base):
    """SARA's allocator (fixed-yield: `groups`; fixed-budget: `budget`)."""

    def __init__(
        self, name, *, k, groups=None, budget=None, seed=0, params=None, history=None,
        epoch_size=None, selector=None,
    ):  # fmt: skip
        """`params`: a ``registry.SaraParams`` (None: its defaults), passed whole; sara-history
        needs `history` and `epoch_size`, sara-mopps / sara-dps also a `selector`."""
        super().__init__(name, k, groups, budget, seed)
        meta = row(name, "collector", "allocator")
        p = SaraParams() if params is None else params
        if not isinstance(p, SaraParams):
            raise ParameterError("params", f"must be a registry.SaraParams, got {p!r}")
        self.params = p
        tau_low, tau_high, prior, capacity = p.tau_low, p.tau_high, p.prior, p.capacity
        self.max_rounds = check_int(p.max_rounds, "max_rounds", 1)
        self.tau_low = check_unit(tau_low, "tau_low")
        self.tau_high = NO_TAU_HIGH if tau_high is None else check_unit(tau_high, "tau_high")
        if self.tau_high <= self.tau_low:
            raise ParameterError("tau_high", f"must exceed tau_low={tau_low}, got {tau_high}")
        self.prior = check_prior(prior, "prior")
        default_cap = self.groups * self.k if self.groups else self.budget
        cap = default_cap if capacity is None else capacity
        self.capacity = check_int(cap, "capacity", self.k)
        self.probe, self.increment = check_schedule(p.probe, p.increment, self.k, prefix="")
        self.eb_window = check_int(p.eb_window, "eb_window", 1)
        self.informed = history  # informed.PromptHistory for sara-history, else None
        self.selector = selector  # selectors.Selector for sara-mopps / sara-dps
        self.plan_log = None  # set to a list to log (prompt id, plan) per visit (exact referee)
        self.queue = deque()  # selected but not yet probed (never dropped)
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
        if not isinstance(p.rule, str) or p.rule not in ("tau", "price"):
            raise ParameterError("rule", f"must be 'tau' or 'price', got {p.rule!r}")
        self.rule = p.rule
        self.epoch_size = None if epoch_size is None else int(epoch_size)
        self.window = deque(maxlen=self.eb_window)  # per step: [(successes, trials)] decided
        self.finished = []  # (successes, trials) of prompts decided during the current step
        self.open = {}  # visit -> _Prompt, in progress (carried across steps)
        self.done_groups = []  # complete committed groups carried to the next step
        self.done_visits = []  # their visits (same order)
        # running commit rate and rollouts per decided prompt, and the run's totals of rollouts
        # and effective groups (the stream's price): ``schedule.R_*``, as the kernel keeps them
        self.rates = new_rates()
        self.pulled = 0  # prompts pulled from the stream over the run (the replay clock)
        self.visit_seq = 0  # visits probed over the run: unique request keys
        self.step_prior = self.prior
        self.plan = self._make_plan(self.prior)
        self._check_plan()

    # --- the prior / plan ----------------------------------------------------------------------
    def _make_plan(self, prior):
        if self.name == "sara-auto":
            from ..core.difficulty import BetaLaw
            from ..core.optimal import bayes_optimal

            return np.asarray(bayes_optimal(BetaLaw(*prior), self.k)["plan"], np.int64)
        return threshold_plan(self.k, self.tau_low, self.tau_high, prior[0], prior[1])

    def _begin_step(self):
        self.step_prior = self.prior
        if self.name == "sara" or not self.window:
            return
        obs = [o for step in self.window for o in step]
        if not obs:
            return
        from ..core.difficulty import fit_beta_binomial

        s, t = np.asarray(obs, float).T
        self.step_prior = fit_beta_binomial(s, t, init=self.prior)
        if self.informed is not None:
            self.informed.pop_prior = self.step_prior
        else:
            self.plan = self._make_plan(self.step_prior)
        self._check_plan()

    def _check_plan(self):
        if self.informed is None and not plan_can_commit(self.plan):
            a, b = self.step_prior
            raise ParameterError(
                "tau_low",
                f"{self.tau_low} is too high for the fitted prior Beta({a:.3g}, {b:.3g}): every "
                "prompt would be abandoned after one rollout and no group could ever commit "
                f"(p_eff(1) = {p_eff_jit(1, 0, self.k, a, b):.3g} after a fail, "
                f"{p_eff_jit(1, 1, self.k, a, b):.3g} after a pass); lower tau_low",
            )

    def price(self):
        """Rollouts per effective group so far (DS's k / 0.5 before any group is complete)."""
        return float(price(self.rates, self.k))

    def _plan_for(self, pid):
        if self.informed is None:
            return self.plan.copy()
        epoch = (self.pulled - 1) // self.epoch_size
        return self.informed.plan(pid, epoch, self.k, self.tau_low, self.rule, self.price())

    # --- one step ------------------------------------------------------------------------------
    def collect_step(self, stream, sample):
        check_call(stream, sample)
        self._begin_step()
        res = StepResult(prior=tuple(self.step_prior), plan=[int(x) for x in self.plan])
        res.groups, self.done_groups = self.done_groups, []
        self.group_visits, self.done_visits = self.done_visits, []
        budget_left = math.inf if self.budget is None else self.budget
        while True:
            if self.budget is None and len(res.groups) >= self.groups:
                break
            if res.rounds >= self.max_rounds:
                res.capped = True  # e.g. a law with (almost) no mixed groups: report, not hang
                break
            requests = self._plan_round(res, stream, budget_left)
            if not requests:
                break
            rewards = self._round(res, requests, sample)
            budget_left -= res.round_sizes[-1]
            self.rates[R_ROLLOUTS] += res.round_sizes[-1]
            for req, r in zip(requests, rewards):
                self._update(self.open[req.visit], r, res)
        self._end_step(res)
        return res

    def _plan_round(self, res, stream, budget_left):
        k, cap = self.k, min(self.capacity, budget_left)
        requests, used = [], 0
        committed = [p for p in self.open.values() if p.committed]
        continuing = [p for p in self.open.values() if not p.committed]
        # 1) fills: certain effective groups, never starved
        for p in committed:
            n = min(k - len(p.rewards), cap - used)
            if n > 0:
                requests.append(Request(p.pid, n, p.visit))
                used += n
        if self.budget is None:
            deficit = self.groups - len(res.groups) - len(committed)
            if deficit <= 0:
                return requests  # enough groups are certain: in-progress prompts wait
        # 2) continues
        for p in continuing:
            nxt = int(
                next_request(len(p.rewards), sum(p.rewards), k, p.plan, self.probe, self.increment)
            )
            n = min(nxt, cap - used)
            if n > 0:
                requests.append(Request(p.pid, n, p.visit))
                used += n
        # 3) probes of fresh prompts: as many as the deficit (or the budget) calls for
        if self.budget is None:
            want = yield_probes(self.rates, self.tau_low, deficit, len(continuing))
        else:
            reserved = sum(k - len(p.rewards) for p in committed)
            want = budget_probes(self.rates, k, budget_left, used, reserved, bool(self.open))
        skips_left = skip_budget(want)
        queue = self.queue  # a selector's chosen candidates, best first (kept across rounds)
        while want > 0 and used < cap and skips_left > 0:
            if self.selector is not None and not queue:
                queue.extend(self._select(stream, res, want))
                skips_left -= 1
            if self.selector is not None:
                if not queue:
                    break
                pid = queue.popleft()
            else:
                pid = self._pull(stream, res)
                if pid is None:
                    break
                self.pulled += 1
            plan = self._plan_for(pid)
            if plan[0] == ABANDON:  # skipped before any rollout (cost 0)
                self._skip(pid, res)
                skips_left -= 1
                continue
            first = (
                k
                if plan[0] == COMMIT
                else int(next_request(0, 0, k, plan, self.probe, self.increment))
            )
            n = min(first, cap - used)  # the rest of a too-big probe follows next round
            self.visit_seq += 1
            visit = self.visit_seq
            self.open[visit] = _Prompt(pid, visit, plan, committed=plan[0] == COMMIT)
            if self.plan_log is not None:
                self.plan_log.append((pid, plan))
            requests.append(Request(pid, n, visit))
            used += n
            want -= 1
        return requests

    def _select(self, stream, res, want):
        """Pull ratio x want candidates; the selector's best `want` are returned, the rest
        are passed over (skipped)."""
        cands = []
        for _ in range(math.ceil(self.selector.ratio * want)):
            pid = self._pull(stream, res)
            if pid is None:
                break
            self.pulled += 1
            cands.append(pid)
        epoch = (self.pulled - 1) // self.epoch_size
        chosen, passed = self.selector.select(cands, want, self.informed, epoch)
        for pid in passed:
            self._skip(pid, res)
        return chosen

    def _skip(self, pid, res):
        if self.plan_log is not None:
            self.plan_log.append((pid, None))
        res.abandoned.append(pid)
        res.skipped += 1
        self._observe(pid, [])

    def _observe(self, pid, rewards):
        if self.informed is not None:
            epoch = (self.pulled - 1) // self.epoch_size
            self.informed.observe(pid, rewards, epoch)
        if self.selector is not None:
            self.selector.observe(self.informed.key(pid), rewards)

    def _update(self, p, rewards, res):
        p.rewards.extend(rewards)
        n, s, k = len(p.rewards), sum(p.rewards), self.k
        d = COMMIT if p.committed else decide_plan(n, s, k, p.plan)
        if d == CONTINUE and n < int(next_request(0, 0, k, p.plan, self.probe, self.increment)):
            return  # a probe split by the capacity: not an evaluation point yet
        if d != CONTINUE and (d != COMMIT or n >= k):
            self.finished.append((s, n))  # only outcomes actually drawn feed any prior
            self._observe(p.pid, p.rewards)
        if d == COMMIT:
            if not p.committed:
                p.committed = True
                track(self.rates, True, k)
            if n >= k:
                del self.open[p.visit]
                self.rates[R_EFFECTIVE] += 0 < s < k
                target, visits = res.groups, self.group_visits
                if self.budget is None and len(res.groups) >= self.groups:
                    target, visits = self.done_groups, self.done_visits  # surplus: carried
                target.append((p.pid, p.rewards[:k]))
                visits.append(p.visit)
        elif d == ABANDON or d == SATURATED:
            del self.open[p.visit]
            track(self.rates, False, n)
            if d == ABANDON:
                res.abandoned.append(p.pid)
                res.abandoned_rollouts += n
            else:
                res.saturated += 1

    def held_visits(self):
        return {p.visit for p in self.open.values()} | set(self.done_visits)

    def _end_step(self, res):
        res.n_effective = sum(0 < sum(r) < self.k for _, r in res.groups)
        res.carried = len(self.done_groups)
        res.carried_open = len(self.open) + len(self.queue)
        self.window.append(self.finished)
        self.finished = []

    def state_dict(self):
        state = dict(self.__dict__)
        if self.informed is not None:
            state["informed"] = self.informed.state_dict()
        if self.selector is not None:
            state["selector"] = self.selector.state_dict()
        return state

    def load_state_dict(self, state):
        state = dict(state)
        informed = state.pop("informed", None)
        selector = state.pop("selector", None)
        mine = self.informed, self.selector  # built by the caller, with its key functions
        self.__dict__.update(state)
        if selector is not None:
            from .selectors import Selector

            self.selector = mine[1] or Selector(selector["kind"])
            self.selector.load_state_dict(selector)
        if informed is not None:
            from ..core.informed import PromptHistory

            self.informed = mine[0] or PromptHistory()
            self.informed.load_state_dict(informed)
