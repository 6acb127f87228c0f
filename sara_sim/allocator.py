"""Round-synchronous collection of one training step (DESIGN §2), as plain state machines.

A collector does not know where rewards come from: each round it hands a list of requests
(prompt id, how many more rollouts) to ``sample`` — one batched engine call, or a simulator — and
gets the binary rewards back in request order.  The same objects drive the Python simulator checks
and the vLLM loop in ``real/``.

* ``uniform`` — N prompts x k rollouts in one round.
* ``ds`` — DAPO dynamic sampling, verl semantics: batches of gen_batch_size prompts x k, keep groups
  with reward std > 0 until N are kept, surplus discarded (counted as waste), at most
  max_num_gen_batches batches (reported as ``capped``, never an exception).
* ``sara`` / ``sara-eb`` / ``sara-auto`` — each prompt follows a stopping plan (``policy.py``):
  COMMIT when mixed (then filled to k), ABANDON when p_eff < tau_low, else CONTINUE.  Each round
  issues fills for committed prompts, continues, then probes of fresh prompts, up to a per-round
  capacity.  sara-eb fits the prior to outcomes it drew (beta-binomial MLE); sara-auto uses the
  Bayes-optimal plan for that fitted prior.  Groups completed beyond N and prompts still in progress
  are carried to the next step (counted, never dropped).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> rate = {}                                  # latent success rate per prompt id
>>> def sample(requests):
...     return [list(rng.random(r.n) < rate.setdefault(r.prompt_id, rng.beta(0.3, 0.3)))
...             for r in requests]
>>> col = make_collector("sara", k=8, groups=16, tau_low=0.3)
>>> res = col.collect_step(iter(range(10**6)), sample)
>>> res.n_effective >= 16, all(0 < sum(r) < 8 for _, r in res.groups)
(True, True)
"""

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .errors import ParameterError, check_k, check_prior, check_unit
from .policy import (
    ABANDON,
    COMMIT,
    CONTINUE,
    NO_TAU_HIGH,
    SATURATED,
    decide_plan,
    next_request,
    threshold_plan,
)

STRATEGIES = ("uniform", "ds", "sara", "sara-eb", "sara-auto")


@dataclass(frozen=True)
class Request:
    prompt_id: object
    n: int


@dataclass
class StepResult:
    groups: list = field(
        default_factory=list
    )  # [(prompt_id, k rewards)] entering this step's batch
    n_effective: int = 0  # mixed groups in `groups`
    rollouts: int = 0  # rollouts generated during this step
    rounds: int = 0
    round_sizes: list = field(default_factory=list)
    abandoned: list = field(default_factory=list)  # prompt ids abandoned (incl. skipped)
    abandoned_rollouts: int = 0
    skipped: int = 0  # abandoned before any rollout
    saturated: int = 0  # full groups that never mixed (sara) / discarded (ds) / in batch (uniform)
    fresh_prompts: int = 0  # prompts pulled from the stream
    carried: int = 0  # complete committed groups carried to the next step
    carried_open: int = 0  # prompts still in progress, carried to the next step
    waste: int = 0  # rollouts in groups that were generated in full and thrown away
    capped: bool = False  # ds hit max_num_gen_batches before N kept groups
    stream_exhausted: bool = False
    outcomes: dict = field(default_factory=dict)  # prompt_id -> rewards drawn this step
    prior: tuple = (1.0, 1.0)  # the prior / belief the step used
    plan: list = field(default_factory=list)


def _check_rewards(requests, rewards):
    if len(rewards) != len(requests):
        raise ValueError(
            f"sample: returned {len(rewards)} reward lists for {len(requests)} requests"
        )
    out = []
    for req, r in zip(requests, rewards):
        r = [int(x) for x in r]
        if len(r) != req.n or any(x not in (0, 1) for x in r):
            raise ValueError(f"sample: request {req} needs {req.n} binary rewards, got {r}")
        out.append(r)
    return out


class _Base:
    def __init__(self, name, k, groups, budget, seed):
        self.name = name
        self.k = check_k(k, "k")
        if budget is None:
            if groups is None or int(groups) != groups or groups < 1:
                raise ParameterError("groups", f"must be an integer >= 1, got {groups!r}")
            self.groups = int(groups)
        else:
            if int(budget) != budget or budget < self.k:
                raise ParameterError("budget", f"must be an integer >= k={self.k}, got {budget!r}")
            self.groups = None if groups is None else int(groups)
        self.budget = None if budget is None else int(budget)
        self.seed = seed

    def _round(self, res, requests, sample):
        rewards = _check_rewards(requests, sample(requests))
        res.rounds += 1
        size = sum(req.n for req in requests)
        res.round_sizes.append(size)
        res.rollouts += size
        for req, r in zip(requests, rewards):
            res.outcomes.setdefault(req.prompt_id, []).extend(r)
        return rewards

    @staticmethod
    def _pull(stream, res):
        try:
            pid = next(stream)
        except StopIteration:
            res.stream_exhausted = True
            return None
        res.fresh_prompts += 1
        return pid

    def state_dict(self):
        return {key: val for key, val in self.__dict__.items()}

    def load_state_dict(self, state):
        self.__dict__.update(state)


class UniformCollector(_Base):
    """N prompts x k rollouts in one round (budget mode: budget // k prompts)."""

    def collect_step(self, stream, sample):
        res = StepResult()
        n_prompts = self.groups if self.budget is None else self.budget // self.k
        pids = []
        for _ in range(n_prompts):
            pid = self._pull(stream, res)
            if pid is None:
                break
            pids.append(pid)
        if pids:
            rewards = self._round(res, [Request(p, self.k) for p in pids], sample)
            res.groups = list(zip(pids, rewards))
        res.n_effective = sum(0 < sum(r) < self.k for _, r in res.groups)
        res.saturated = len(res.groups) - res.n_effective
        return res


class DSCollector(_Base):
    """DAPO dynamic sampling with verl semantics."""

    def __init__(self, name, k, groups, budget, seed, gen_batch_size=None, max_num_gen_batches=10):
        super().__init__(name, k, groups, None, seed)
        if budget is not None:
            raise ParameterError("budget", "ds is a fixed-yield strategy; use groups")
        gbs = self.groups if gen_batch_size is None else gen_batch_size
        if int(gbs) != gbs or gbs < 1:
            raise ParameterError("gen_batch_size", f"must be an integer >= 1, got {gbs!r}")
        if int(max_num_gen_batches) != max_num_gen_batches or max_num_gen_batches < 0:
            raise ParameterError("max_num_gen_batches", "must be an integer >= 0 (0 = no cap)")
        self.gen_batch_size = int(gbs)
        self.max_num_gen_batches = int(max_num_gen_batches)

    def collect_step(self, stream, sample):
        res = StepResult()
        kept = []
        while len(kept) < self.groups:
            if self.max_num_gen_batches and res.rounds >= self.max_num_gen_batches:
                res.capped = True
                break
            pids = []
            for _ in range(self.gen_batch_size):
                pid = self._pull(stream, res)
                if pid is None:
                    break
                pids.append(pid)
            if not pids:
                break
            rewards = self._round(res, [Request(p, self.k) for p in pids], sample)
            for pid, r in zip(pids, rewards):
                if 0 < sum(r) < self.k:
                    kept.append((pid, r))
                else:
                    res.saturated += 1
                    res.waste += self.k
        res.waste += self.k * max(len(kept) - self.groups, 0)  # surplus kept groups: discarded
        res.groups = kept[: self.groups]
        res.n_effective = len(res.groups)
        return res


@dataclass
class _Prompt:
    pid: object
    plan: np.ndarray
    rewards: list = field(default_factory=list)
    committed: bool = False


class SaraCollector(_Base):
    """SARA's round-synchronous allocator (fixed-yield: `groups`; fixed-budget: `budget`)."""

    def __init__(
        self,
        name,
        k,
        groups,
        budget,
        seed,
        tau_low=0.2,
        tau_high=None,
        prior=(1.0, 1.0),
        capacity=None,
        probe=0,
        increment=0,
        eb_window=4,
        max_rounds=100,
    ):
        super().__init__(name, k, groups, budget, seed)
        if int(max_rounds) != max_rounds or max_rounds < 1:
            raise ParameterError("max_rounds", f"must be an integer >= 1, got {max_rounds!r}")
        self.max_rounds = int(max_rounds)
        self.tau_low = check_unit(tau_low, "tau_low")
        self.tau_high = NO_TAU_HIGH if tau_high is None else check_unit(tau_high, "tau_high")
        if self.tau_high <= self.tau_low:
            raise ParameterError("tau_high", f"must exceed tau_low={tau_low}, got {tau_high}")
        self.prior = check_prior(prior, "prior")
        default_cap = self.groups * self.k if self.groups else self.budget
        cap = default_cap if capacity is None else capacity
        if int(cap) != cap or cap < self.k:
            raise ParameterError("capacity", f"must be an integer >= k={self.k}, got {capacity!r}")
        self.capacity = int(cap)
        for pname, v in (("probe", probe), ("increment", increment)):
            if int(v) != v or not 0 <= v <= self.k:
                raise ParameterError(pname, f"must be an integer in [0, k={self.k}] (0 = auto)")
        self.probe, self.increment = int(probe), int(increment)
        self.eb_window = int(eb_window)
        self.history = deque(maxlen=max(self.eb_window, 1))  # per step: [(successes, trials)]
        self.finished = []  # (successes, trials) of prompts decided during the current step
        self.open = {}  # prompt id -> _Prompt, in progress (carried across steps)
        self.done_groups = []  # complete committed groups carried to the next step
        self.commit_rate = None  # running fraction of fresh prompts that commit
        self.cost_rate = None  # running rollouts per decided fresh prompt
        self.plan = self._make_plan(self.prior)

    # --- the prior / plan for this step --------------------------------------------------------
    def _make_plan(self, prior):
        if self.name == "sara-auto":
            from .difficulty import BetaLaw
            from .optimal import bayes_optimal

            return np.asarray(bayes_optimal(BetaLaw(*prior), self.k)["plan"], np.int64)
        return threshold_plan(self.k, self.tau_low, self.tau_high, prior[0], prior[1])

    def _begin_step(self):
        if self.name in ("sara-eb", "sara-auto") and self.history:
            from .difficulty import fit_beta_binomial

            obs = [o for step in self.history for o in step]
            if obs:
                s, t = np.asarray(obs, float).T
                self.step_prior = fit_beta_binomial(s, t, init=self.prior)
                self.plan = self._make_plan(self.step_prior)
                return
        self.step_prior = self.prior

    # --- one step ------------------------------------------------------------------------------
    def collect_step(self, stream, sample):
        self._begin_step()
        res = StepResult(prior=tuple(self.step_prior), plan=[int(x) for x in self.plan])
        res.groups, self.done_groups = self.done_groups, []
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
            for req, r in zip(requests, rewards):
                self._update(self.open[req.prompt_id], r, res)
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
                requests.append(Request(p.pid, n))
                used += n
        if self.budget is None:
            deficit = self.groups - len(res.groups) - len(committed)
            if deficit <= 0:
                return requests  # enough groups are certain: in-progress prompts wait
        # 2) continues
        for p in continuing:
            s = sum(p.rewards)
            n = min(
                int(next_request(len(p.rewards), s, k, p.plan, self.probe, self.increment)),
                cap - used,
            )
            if n > 0:
                requests.append(Request(p.pid, n))
                used += n
        # 3) probes of fresh prompts: as many as the deficit (or the budget) calls for
        probe = int(next_request(0, 0, k, self.plan, self.probe, self.increment))
        if self.budget is None:
            rate = self.commit_rate if self.commit_rate else max(1.0 - self.tau_low, 0.05)
            want = math.ceil(max(deficit - 0.5 * len(continuing), 0) / max(rate, 0.05))
        else:
            reserved = sum(k - len(p.rewards) for p in committed)
            per_prompt = self.cost_rate if self.cost_rate else float(k)
            want = math.floor(max(budget_left - used - reserved, 0) / per_prompt)
            want = max(want, 1 if not self.open and budget_left - used >= probe else 0)
        first = probe if self.plan[0] == CONTINUE else k  # a COMMIT-at-0 plan sends k at once
        while want > 0 and used + first <= cap:
            pid = self._pull(stream, res)
            if pid is None:
                break
            want -= 1
            if self.plan[0] == ABANDON:  # the plan skips fresh prompts before any rollout
                res.abandoned.append(pid)
                res.skipped += 1
                continue
            self.open[pid] = _Prompt(pid, self.plan.copy(), committed=first == k)
            requests.append(Request(pid, first))
            used += first
        return requests

    def _update(self, p, rewards, res):
        p.rewards.extend(rewards)
        n, s, k = len(p.rewards), sum(p.rewards), self.k
        if p.committed:
            d = COMMIT
        else:
            d = decide_plan(n, s, k, p.plan)
        if d != CONTINUE and (d != COMMIT or n >= k):
            self.finished.append((s, n))  # only outcomes actually drawn feed the EB prior
        if d == COMMIT:
            if not p.committed:
                p.committed = True
                self._track(commit=True, rollouts=k)
            if n >= k:
                del self.open[p.pid]
                target = res.groups
                if self.budget is None and len(res.groups) >= self.groups:
                    target = self.done_groups  # surplus: carried to the next step
                target.append((p.pid, p.rewards[:k]))
        elif d == ABANDON or d == SATURATED:
            del self.open[p.pid]
            self._track(commit=False, rollouts=n)
            if d == ABANDON:
                res.abandoned.append(p.pid)
                res.abandoned_rollouts += n
            else:
                res.saturated += 1

    def _track(self, commit, rollouts, weight=0.05):
        c, r = float(commit), float(rollouts)
        self.commit_rate = (
            c if self.commit_rate is None else (1 - weight) * self.commit_rate + weight * c
        )
        self.cost_rate = r if self.cost_rate is None else (1 - weight) * self.cost_rate + weight * r

    def _end_step(self, res):
        res.n_effective = sum(0 < sum(r) < self.k for _, r in res.groups)
        res.carried = len(self.done_groups)
        res.carried_open = len(self.open)
        self.history.append(self.finished)
        self.finished = []


def make_collector(
    name,
    k=8,
    groups=None,
    budget=None,
    tau_low=0.2,
    tau_high=None,
    prior=(1.0, 1.0),
    capacity=None,
    probe=0,
    increment=0,
    gen_batch_size=None,
    max_num_gen_batches=10,
    seed=0,
    eb_window=4,
    max_rounds=100,
):
    """One collector object per run; it carries state (surplus, in-progress prompts, fitted prior)
    from step to step."""
    if name == "uniform":
        return UniformCollector(name, k, groups, budget, seed)
    if name == "ds":
        return DSCollector(name, k, groups, budget, seed, gen_batch_size, max_num_gen_batches)
    if name in ("sara", "sara-eb", "sara-auto"):
        return SaraCollector(
            name,
            k,
            groups,
            budget,
            seed,
            tau_low,
            tau_high,
            prior,
            capacity,
            probe,
            increment,
            eb_window,
            max_rounds,
        )
    raise ParameterError(
        "allocator", f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}"
    )
