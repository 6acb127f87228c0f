"""What every collector shares: the request, the step's result, the round bookkeeping."""

import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ParameterError, check_int, check_k


@dataclass(frozen=True)
class Request:
    """n more rollouts of prompt `prompt_id`; `visit` is unique per visit of a prompt over the run
    (key per-rollout data by it: a prompt may come round again while an earlier visit is open)."""

    prompt_id: object
    n: int
    visit: int = -1


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
    fresh_prompts: int = 0  # prompts pulled from the prompt source
    carried: int = 0  # complete committed groups carried to the next step
    carried_open: int = 0  # prompts still in progress, carried to the next step
    waste: int = 0  # rollouts in groups that were generated in full and thrown away
    capped: bool = False  # ds hit max_num_gen_batches before N kept groups
    prompts_exhausted: bool = False
    outcomes: dict = field(default_factory=dict)  # prompt_id -> rewards drawn this step
    prior: tuple = (1.0, 1.0)  # the prior / belief the step used
    plan: list = field(default_factory=list)


def _reward(x):
    """Exactly 0 or 1 (bool, int, float 0.0 / 1.0, numpy equivalents) -> int; else None.

    No threshold here: 0.5 or 0.99 is not a binary reward, and rounding it would silently change
    the training signal.  A caller with graded rewards applies its own documented rule first."""
    if isinstance(x, bool | np.bool_):
        return int(x)
    if isinstance(x, numbers.Real | np.integer | np.floating) and x in (0, 1):
        return int(x)
    return None


def _check_rewards(requests, rewards):
    try:
        rewards = list(rewards)
    except TypeError:
        raise ParameterError(
            "sample", f"must return a list of reward lists, got {type(rewards).__name__}"
        ) from None
    if len(rewards) != len(requests):
        raise ParameterError(
            "sample", f"returned {len(rewards)} reward lists for {len(requests)} requests"
        )
    out = []
    for req, r in zip(requests, rewards):
        try:
            r = list(r)
        except TypeError:
            raise ParameterError(
                "sample", f"request {req}: rewards must be a list, got {r!r}"
            ) from None
        vals = [_reward(x) for x in r]
        bad = [x for x, v in zip(r, vals) if v is None]
        if bad:
            raise ParameterError(
                "sample", f"request {req}: rewards must be exactly 0 or 1, got {bad[0]!r}"
            )
        if len(vals) != req.n:
            raise ParameterError("sample", f"request {req} needs {req.n} rewards, got {len(vals)}")
        out.append(vals)
    return out


def check_call(prompts, sample):
    """collect_step's arguments: an iterator of prompt ids and a callable sampler."""
    if not isinstance(prompts, Iterator):
        raise ParameterError(
            "prompts",
            f"must be an iterator of prompt ids (e.g. iter(ids)), got {type(prompts).__name__}: a "
            "list would restart from its first prompt at every step",
        )
    if not callable(sample):
        raise ParameterError(
            "sample", f"must be callable: sample(requests) -> rewards, got {sample!r}"
        )


class _Base:
    def __init__(self, name, k, groups, budget, seed):
        self.name = name
        self.k = check_k(k, "k")
        if budget is None:
            self.groups = check_int(groups, "groups", 1)
        else:
            budget = check_int(budget, "budget", self.k)
            self.groups = None if groups is None else check_int(groups, "groups", 1)
        self.budget = budget
        self.seed = check_int(seed, "seed", 0)
        # The visit (Request.visit) of each group of the last collect_step's result, same order:
        # a caller that keeps per-rollout data by visit claims a group's rollouts by it.
        self.group_visits = []

    def held_visits(self) -> set:
        """Visits whose rollouts the collector still holds after a step (in progress, or complete
        and carried to the next step); every other visit's rollouts can be dropped."""
        return set()

    def _round(self, res, requests, sample):
        rewards = _check_rewards(requests, sample(requests))
        res.rounds += 1
        size = sum(req.n for req in requests)
        res.round_sizes.append(size)
        res.rollouts += size
        for req, r in zip(requests, rewards):
            res.outcomes.setdefault(req.prompt_id, []).extend(r)
        return rewards

    def _whole_groups(self, res, pids, sample):
        """One round of k rollouts for each of `pids`; every group enters the batch (uniform,
        the peer selectors).  Returns the rewards in `pids` order."""
        self.group_visits, rewards = [], []
        if pids:
            requests = self._requests(pids)
            rewards = self._round(res, requests, sample)
            res.groups = list(zip(pids, rewards))
            self.group_visits = [req.visit for req in requests]
        res.n_effective = sum(0 < sum(r) < self.k for _, r in res.groups)
        res.saturated = len(res.groups) - res.n_effective
        return rewards

    def _requests(self, pids):
        first = getattr(self, "visits", 0)
        self.visits = first + len(pids)
        return [Request(p, self.k, first + i) for i, p in enumerate(pids)]

    @staticmethod
    def _pull(prompts, res):
        try:
            pid = next(prompts)
        except StopIteration:
            res.prompts_exhausted = True
            return None
        res.fresh_prompts += 1
        return pid

    @classmethod
    def _pull_some(cls, prompts, res, n):
        """Up to n fresh prompts, fewer only when the prompt source runs out."""
        pids = []
        for _ in range(n):
            pid = cls._pull(prompts, res)
            if pid is None:
                break
            pids.append(pid)
        return pids

    def state_dict(self):
        return {key: val for key, val in self.__dict__.items()}

    def load_state_dict(self, state):
        self.__dict__.update(state)
