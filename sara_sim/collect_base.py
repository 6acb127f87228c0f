"""What every collector shares: the request, the step's result, the round bookkeeping."""

from dataclasses import dataclass, field

from .errors import ParameterError, check_k


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

    def _requests(self, pids):
        first = getattr(self, "visits", 0)
        self.visits = first + len(pids)
        return [Request(p, self.k, first + i) for i, p in enumerate(pids)]

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
