"""What every task provides, and the guard that keeps a broken verifier from stopping a run.

A task maps an integer prompt id to a Problem (prompt text + reference answer) and scores a
completion 0/1. Ids are what the strategy's prompt source hands out; generated tasks are
infinite (id = index), file tasks cycle through epochs (id = epoch * size + row), so an id never
names two different live prompts at once."""

import logging
from dataclasses import dataclass, field

log = logging.getLogger("real.tasks")


@dataclass(frozen=True)
class Problem:
    prompt: str
    answer: str
    meta: dict = field(default_factory=dict, compare=False, hash=False)


class Task:
    """Base class: subclasses set name/max_tokens and implement problem, eval_problems, reward."""

    name = "task"
    max_tokens = 16  # completion budget per rollout
    size: int | None = None  # number of distinct training problems; None = generated, unbounded

    def problem(self, uid: int) -> Problem:
        raise NotImplementedError

    def eval_problems(self) -> list[Problem]:
        raise NotImplementedError

    def reward(self, completion: str, problem: Problem) -> int:
        raise NotImplementedError


class RewardGuard:
    """Calls task.reward; a verifier that raises scores 0 for that rollout, is counted and logged.

    One bad completion (or a verifier bug on an odd input) must cost one rollout, not the run."""

    def __init__(self, fn, max_logged: int = 5):
        self.fn = fn
        self.errors = 0
        self.max_logged = max_logged

    def __call__(self, completion: str, problem: Problem) -> int:
        try:
            return 1 if self.fn(completion, problem) else 0
        except Exception as exc:  # any verifier failure: isolation is the point
            self.errors += 1
            if self.errors <= self.max_logged:
                log.warning("reward function raised %s: %s (reward 0)", type(exc).__name__, exc)
            return 0


class PromptSource:
    """Infinite iterator of prompt ids for a task; its position is its whole state.

    File tasks are reshuffled every epoch from (seed, epoch), so the order is reproducible after
    a resume from just the counter."""

    def __init__(self, task: Task, seed: int = 0):
        self.size = task.size
        self.seed = seed
        self.pos = 0
        self._perm_epoch = -1
        self._perm = None

    def __iter__(self):
        return self

    def __next__(self) -> int:
        i, self.pos = self.pos, self.pos + 1
        if self.size is None:
            return i
        import numpy as np

        epoch, j = divmod(i, self.size)
        if epoch != self._perm_epoch:
            self._perm = np.random.default_rng([self.seed, epoch]).permutation(self.size)
            self._perm_epoch = epoch
        return epoch * self.size + int(self._perm[j])

    def state_dict(self) -> dict:
        return {"pos": self.pos}

    def load_state_dict(self, d: dict) -> None:
        self.pos = int(d["pos"])
