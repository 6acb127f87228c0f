"""SARA's round-synchronous collector (docs/design.md §2) — the one behind sara, sara-eb,
sara-auto and sara-history (see ``collectors.py`` for the shared interface and the peers uniform /
ds).

Each prompt carries its own plan (``policy.py``).  The step is the core's round state machine
(``rounds.py``): each round issues, in order, fills for committed prompts (certain effective
groups), continues for prompts still undecided, then probes of fresh prompts — as many as the
missing groups call for (fixed-yield) or as the budget allows (fixed-budget) — up to the per-round
capacity; groups completed beyond N and prompts still in progress are carried to the next step:
counted, never dropped.  This class is its driver with an engine: it supplies the prompts (the
prompt source, a selector's queue) and their plans, sends each round's requests to ``sample``
and feeds the rewards back; it keeps what only it knows (prompt ids, rewards, the step's result).

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
from typing import NamedTuple

import numpy as np

from ..core import rounds as sm_step
from ..core.errors import ParameterError
from ..core.informed import PromptHistory
from ..core.optimal import learned_lengths, learned_weights, prior_plan
from ..core.policy import ABANDON, CONTINUE
from ..core.registry import SaraParams, row
from ..core.rounds import (
    BATCH,
    C_CAPPED,
    C_NREQ,
    C_WANT,
    CARRIED,
    F_KEY,
    RoundConfig,
    absorb,
    grown,
    launch,
    new_rounds,
    note_skip,
    offer,
    plan_round,
    settle,
    wants_prompt,
)
from ..core.schedule import price
from .collectors import Request, StepResult, _Base, check_call
from .sara_settings import check_commits, check_history, checked_settings, fitted_prior
from .selectors import Selector


@dataclass
class _Prompt:
    """What only the driver knows of an open visit (its plan and counts are in ``rounds``)."""

    pid: object
    visit: int  # unique per visit: a prompt id may come round again while still open
    rewards: list = field(default_factory=list)
    lengths: list = field(default_factory=list)  # tokens of its rollouts, where the driver says


class Decided(NamedTuple):
    """A prompt whose fate was sealed (``SaraCollector.observer``): in round `round` of the step,
    `decision` (policy's COMMIT / ABANDON / SATURATED) after n rollouts with s passes; target:
    ``rounds.BATCH`` (this step's groups), ``rounds.CARRIED`` (the next step's) or 0 (dropped)."""

    round: int
    prompt_id: object
    decision: int
    n: int
    s: int
    target: int


def _restored(obj, state):
    obj.load_state_dict(state)
    return obj


class SaraCollector(_Base):
    """SARA's collector (fixed-yield: `groups`; fixed-budget: `budget`)."""

    def __init__(
        self,
        name,
        *,
        k,
        groups=None,
        budget=None,
        seed=0,
        params=None,
        history=None,
        epoch_size=None,
        selector=None,
    ):
        """`params`: a ``registry.SaraParams`` (None: its defaults), passed whole; sara-history
        needs `history` and `epoch_size`, sara-mopps / sara-dps also a `selector`."""
        super().__init__(name, k, groups, budget, seed)
        p = SaraParams() if params is None else params
        cfg = checked_settings(name, p, self.k, self.groups, self.budget)
        self.params = p
        self.tau_low, self.tau_high, self.prior, self.capacity = cfg[:4]
        self.probe, self.increment, self.max_rounds, self.eb_window, self.rule = cfg[4:9]
        self.request_cost = cfg.request_cost  # sara-auto: a request's price in rollouts
        self.priced_in = cfg.priced_in  # "tokens": plans priced by the learned mean lengths
        self.informed = history  # informed.PromptHistory for sara-history, else None
        self.selector = selector  # selectors.Selector for sara-mopps / sara-dps
        self.plan_log = None  # set to a list to log (prompt id, plan) per visit (exact referee)
        self.observer = None  # set to a callable(Decided) to see every decided prompt
        self.queue = deque()  # selected but not yet probed (never dropped)
        check_history(name, row(name, "collector", "strategy"), history, epoch_size, selector)
        self.epoch_size = None if epoch_size is None else int(epoch_size)
        self.window = deque(maxlen=self.eb_window)  # per step: [(successes, trials)] decided
        self.finished = []  # (successes, trials) of prompts decided during the current step
        # per step: [pass tokens, passes, fail tokens, fails] of the rollouts of the prompts
        # decided in it (the same prompts as `window`'s), where the driver told their lengths
        self.lengths_window = deque(maxlen=self.eb_window)
        self.tally = np.zeros(4)
        self.step_lengths = None  # the mean (pass, fail) lengths the step's plans are priced at
        self.step_weights = (1.0, 1.0)  # sara-history's price rule: (w_fail, w_pass)
        self.open = {}  # visit -> _Prompt, in progress (carried across steps)
        self.done_groups = []  # complete committed groups carried to the next step
        self.done_visits = []  # their visits (same order)
        # the round state machine: open prompts, counters and the running rates (``schedule.R_*``:
        # commit rate, rollouts per decided prompt, the run's rollouts and effective groups)
        self.rc = RoundConfig(
            self.k,
            self.groups or 0,
            self.budget or 0,
            self.capacity,
            self.probe,
            self.increment,
            self.max_rounds,
            float(self.tau_low),
            p.carry,
            *cfg.knobs,
        )
        self.rounds = new_rounds(64)
        self.pulled = 0  # prompts pulled from the prompt source over the run (the replay clock)
        self.visit_seq = 0  # visits probed over the run: unique request keys
        self.step_prior = self.prior
        self.plan = self._prior_plan(self.prior)
        self._check_plan()

    # --- the prior / plan ----------------------------------------------------------------------
    def _fit_prior(self):
        self.step_prior = self.prior
        self.step_lengths, self.step_weights = None, (1.0, 1.0)
        if self.priced_in == "tokens" and self.lengths_window:
            tally = np.sum(self.lengths_window, axis=0)
            self.step_lengths, self.step_weights = learned_lengths(tally), learned_weights(tally)
        fitted = None if self.name == "sara" else fitted_prior(self.window, self.prior)
        if fitted is None:
            return
        self.step_prior = fitted
        if self.informed is not None:
            self.informed.pop_prior = fitted
        else:
            self.plan = self._prior_plan(fitted)
        self._check_plan()

    def _prior_plan(self, prior):
        return prior_plan(
            self.name,
            self.k,
            self.tau_low,
            self.tau_high,
            prior,
            self.request_cost,
            self.step_lengths,
        )

    def _check_plan(self):
        if self.informed is None:
            check_commits(self.plan, self.step_prior, self.k, self.tau_low)

    def price(self):
        """Rollouts per effective group so far (DS's k / 0.5 before any group is complete)."""
        return float(price(self.rounds.rates, self.k))

    def _plan_for(self, pid):
        if self.informed is None:
            return self.plan.copy()
        epoch = (self.pulled - 1) // self.epoch_size
        return self.informed.plan(
            pid, epoch, self.k, self.tau_low, self.rule, self.price(), self.step_weights
        )

    # --- one step: the driver of ``rounds`` -------------------------------------------------------
    def collect_step(self, prompts, sample):
        check_call(prompts, sample)
        res = self.begin_step()
        while plan_round(self.rounds, self.rc):
            self.open_prompts(res, prompts)
            requests = self._round_requests()
            if launch(self.rounds) == 0:
                break
            rewards = self._round(res, requests, sample)
            for q, (req, r) in enumerate(zip(requests, rewards)):
                self.absorb(q, req, r, res)
        res.capped = bool(self.rounds.cnt[C_CAPPED])  # e.g. a law with (almost) no mixed groups
        self.end_step(res)
        return res

    # --- the step interface of a driver: collect_step above, collect/stream.py's --------------
    def begin_step(self):
        """Open a step: this step's prior and plan, the groups carried from the last step first
        in its batch, the state machine's step begun.  Returns the step's StepResult."""
        self._fit_prior()
        res = StepResult(
            prior=tuple(self.step_prior),
            plan=[int(x) for x in self.plan],
            lengths=self.step_lengths,
        )
        res.groups, self.done_groups = self.done_groups, []
        self.group_visits, self.done_visits = self.done_visits, []
        sm_step.begin_step(self.rounds, self.rc)
        return res

    def end_step(self, res):
        """Close the step: decided slots dropped, open prompts and surplus groups carried (or
        dropped without carrying: their rollouts count as waste), the step's counts booked."""
        res.waste += int(sm_step.end_step(self.rounds, self.rc))  # > 0 only without carrying
        if not self.rc.carry:  # the state machine dropped them: so do their payloads
            self.open, self.done_groups, self.done_visits = {}, [], []
        res.n_effective = sum(0 < sum(r) < self.k for _, r in res.groups)
        res.carried = len(self.done_groups)
        res.carried_open = len(self.open) + len(self.queue)
        if self.priced_in == "tokens" and self.finished and not self.tally[1] + self.tally[3]:
            raise ParameterError(  # a driver that tells no length: never priced in rollouts
                "priced_in",
                "tokens needs each rollout's length from the driver (observe_lengths); this "
                f"one told none for the {len(self.finished)} prompts decided in the step",
            )
        self.window.append(self.finished)
        self.finished = []
        self.lengths_window.append(self.tally)
        self.tally = np.zeros(4)

    def observe_lengths(self, visit, lengths):
        """The driver's word on the tokens of visit `visit`'s rollouts, in the order their
        rewards come (before them: a round's sampler, a stream's completion): what a plan
        priced in tokens learns its lengths from, once the visit is decided."""
        p = self.open.get(visit)
        if p is not None:
            p.lengths.extend(int(x) for x in lengths)

    def _tally(self, p):
        """A decided visit's rollouts into the step's tally (those whose length was told)."""
        for r, n in zip(p.rewards, p.lengths):
            self.tally[0 if r else 2] += n
            self.tally[1 if r else 3] += 1

    def drop_open(self, res):
        """Drop every prompt still open (a stream's "fresh" step end: none outlives its policy
        version); their rollouts are waste.  What they drew feeds the window and the histories
        as a decided prompt's does: left out, the prompts still undecided at a step's end —
        those on the plan's later side, more of them the more are open — would be missing from
        the prior's fit, which then leans to the other side and moves the plan further that
        way (sara-auto streamed, probes x 2: some runs settled at 1.2x the rollouts of others;
        the fit is the likelihood of what was drawn, whatever stopped the drawing)."""
        for p in self.open.values():
            if p.rewards:
                self.finished.append((sum(p.rewards), len(p.rewards)))
                self._tally(p)
                self._observe(p.pid, p.rewards)
        res.waste += int(sm_step.drop_open(self.rounds))
        self.open = {}

    def open_prompts(self, res, prompts):
        """Fresh prompts, one at a time, while the state machine wants them (after
        ``plan_round`` / ``plan_stream``); each opened one's first request is queued."""
        queue = self.queue  # a selector's chosen candidates, best first (kept across rounds)
        while wants_prompt(self.rounds):
            if self.selector is not None and not queue:
                queue.extend(self._select(prompts, res, int(self.rounds.cnt[C_WANT])))
                note_skip(self.rounds)
            if self.selector is not None:
                if not queue:
                    break
                pid = queue.popleft()
            else:
                pid = self._pull(prompts, res)
                if pid is None:
                    break
                self.pulled += 1
            plan = self._plan_for(pid)
            if plan[0] == ABANDON:  # skipped before any rollout (cost 0)
                self._skip(pid, res)
                note_skip(self.rounds)
                continue
            self._open(pid, plan)

    def _open(self, pid, plan):
        """A new visit of `pid` enters the state machine's open table with `plan`."""
        j = offer(self.rounds, self.rc, plan)
        while j < 0:  # the open table is full: twice the room
            self.rounds = grown(self.rounds)
            j = offer(self.rounds, self.rc, plan)
        self.visit_seq += 1
        self.rounds.slots[j, F_KEY] = self.visit_seq
        self.open[self.visit_seq] = _Prompt(pid, self.visit_seq)
        if self.plan_log is not None:
            self.plan_log.append((pid, plan))

    def _round_requests(self):
        out = []
        for i, n in self.rounds.req[: self.rounds.cnt[C_NREQ]]:
            visit = int(self.rounds.slots[i, F_KEY])
            out.append(Request(self.open[visit].pid, int(n), visit))
        return out

    def absorb(self, q, req, rewards, res):
        """Request q's rewards are in (q: its row in ``rounds.req``): the state machine decides;
        a decided prompt is booked (batch, carried or dropped) and leaves ``open``."""
        p = self.open[req.visit]
        p.rewards.extend(rewards)
        i, n, s = int(self.rounds.req[q, 0]), len(p.rewards), sum(p.rewards)
        d = absorb(self.rounds, self.rc, q, s)
        if d == CONTINUE:
            return
        self.finished.append((s, n))  # only outcomes actually drawn feed any prior
        self._tally(p)
        self._observe(p.pid, p.rewards)
        target = settle(self.rounds, self.rc, i, d, s)
        del self.open[p.visit]
        if target == BATCH:
            res.groups.append((p.pid, p.rewards[: self.k]))
            self.group_visits.append(p.visit)
        elif target == CARRIED:  # surplus: the next step's batch
            self.done_groups.append((p.pid, p.rewards[: self.k]))
            self.done_visits.append(p.visit)
        elif d == ABANDON:
            res.abandoned.append(p.pid)
            res.abandoned_rollouts += n
        else:
            res.saturated += 1
        if self.observer is not None:
            self.observer(Decided(res.rounds, p.pid, int(d), n, s, int(target)))

    def _select(self, prompts, res, want):
        """Pull ratio x want candidates; the selector's best `want` are returned, the rest
        are passed over (skipped)."""
        cands = self._pull_some(prompts, res, math.ceil(self.selector.ratio * want))
        self.pulled += len(cands)
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

    def held_visits(self):
        return {p.visit for p in self.open.values()} | set(self.done_visits)

    def state_dict(self):
        state = dict(self.__dict__)
        state.pop("observer", None)  # the caller's hook, not state
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
            self.selector = _restored(mine[1] or Selector(selector["kind"]), selector)
        if informed is not None:
            self.informed = _restored(mine[0] or PromptHistory(), informed)
