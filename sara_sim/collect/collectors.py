"""Round-synchronous collection of one training step (docs/design.md §2), as plain state machines:
what every collector shares (the request, the step's result, the round bookkeeping), the uniform
and DS collectors, and `make_collector`, which builds any strategy's collector.

A collector does not know where rewards come from: each round it hands a list of requests
(prompt id, how many more rollouts) to ``sample`` — one batched engine call, or a simulator — and
gets the binary rewards back in request order.  The same objects drive the Python simulator checks
and the vLLM loop in ``real/``.

* ``uniform`` — N prompts x k rollouts in one round.
* ``ds`` — DAPO dynamic sampling, verl semantics: batches of gen_batch_size prompts x k, keep groups
  with reward std > 0 until N are kept, surplus discarded (counted as waste), at most
  max_num_gen_batches batches (reported as ``capped``, never an exception).
* ``mopps`` / ``dps`` — ``peer_select.py``: the peers' predict-then-select, whole groups of k for
  the prompts their posterior ranks best (a finite task: ids that come round again).
* ``sara`` / ``sara-eb`` / ``sara-auto`` / ``sara-history`` — ``sara_collector.py``: each prompt
  follows a stopping plan (``policy.py``): COMMIT when mixed (then filled to k), ABANDON when
  p_eff < tau_low, else CONTINUE, round by round.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> rate = {}                                  # latent success rate per prompt id
>>> def sample(requests):
...     return [list(rng.random(r.n) < rate.setdefault(r.prompt_id, rng.beta(0.3, 0.3)))
...             for r in requests]
>>> collector = make_collector("sara", k=8, groups=16, tau_low=0.3)
>>> res = collector.collect_step(iter(range(10**6)), sample)
>>> res.n_effective >= 16, all(0 < sum(r) < 8 for _, r in res.groups)
(True, True)
"""

import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.errors import ParameterError, check_int, check_k
from ..core.registry import HISTORY, DSParams, collector_params, names, row

SCHEDULES = ("rounds", "stream")  # round-synchronous (collect_step) or round-free (stream.py)

STRATEGIES = names("collector")  # registry order


# ---------------------------------------------------------------- what every collector shares


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
    lengths: tuple | None = None  # the mean (pass, fail) tokens its plans were priced at


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

    def observe_lengths(self, visit, lengths) -> None:
        """A driver tells the tokens of visit `visit`'s rollouts (``SaraCollector`` learns from
        them when its plans are priced in tokens; the others need no lengths)."""

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


# ---------------------------------------------------------------- uniform, DS, and the factory


class UniformCollector(_Base):
    """N prompts x k rollouts in one round (budget mode: budget // k prompts)."""

    def collect_step(self, prompts, sample):
        check_call(prompts, sample)
        res = StepResult()
        n_prompts = self.groups if self.budget is None else self.budget // self.k
        pids = self._pull_some(prompts, res, n_prompts)
        self._whole_groups(res, pids, sample)
        return res


class DSCollector(_Base):
    """DAPO dynamic sampling with verl semantics."""

    def __init__(self, name, *, k, groups=None, budget=None, seed=0, params=None):
        super().__init__(name, k, groups, None, seed)
        if budget is not None:
            raise ParameterError("budget", "ds is a fixed-yield strategy; use groups")
        p = DSParams() if params is None else params
        if not isinstance(p, DSParams):
            raise ParameterError("params", f"must be a registry.DSParams, got {p!r}")
        self.params = p
        gbs = p.gen_batch_size
        if gbs is None:  # N, or the row's multiple of it (ds-verl3n: verl's 3N)
            gbs = self.groups * row(name).gen_batch_factor
        self.gen_batch_size = check_int(gbs, "gen_batch_size", 1)
        try:
            self.max_num_gen_batches = check_int(p.max_num_gen_batches, "max_num_gen_batches", 0)
        except ParameterError:
            raise ParameterError(
                "max_num_gen_batches",
                f"must be an integer >= 0 (0 = no cap), got {p.max_num_gen_batches!r}",
            ) from None

    def collect_step(self, prompts, sample):
        check_call(prompts, sample)
        res = StepResult()
        kept, visits = [], []
        while len(kept) < self.groups:
            if self.max_num_gen_batches and res.rounds >= self.max_num_gen_batches:
                res.capped = True
                break
            pids = self._pull_some(prompts, res, self.gen_batch_size)
            if not pids:
                break
            requests = self._requests(pids)
            rewards = self._round(res, requests, sample)
            for req, r in zip(requests, rewards):
                if 0 < sum(r) < self.k:
                    kept.append((req.prompt_id, r))
                    visits.append(req.visit)
                else:
                    res.saturated += 1
                    res.waste += self.k
        res.waste += self.k * max(len(kept) - self.groups, 0)  # surplus kept groups: discarded
        res.groups, self.group_visits = kept[: self.groups], visits[: self.groups]
        res.n_effective = len(res.groups)
        return res


def make_collector(
    name,
    *,
    k=8,
    groups=None,
    budget=None,
    seed=0,
    params=None,
    history=None,
    epoch_size=None,
    selector=None,
    schedule="rounds",
    **knobs,
):
    """One collector object per run; it carries state (surplus, in-progress prompts, fitted prior,
    per-prompt histories) from step to step.

    Its knobs are one frozen parameter object (``registry.SaraParams`` for the SARA family,
    ``registry.DSParams`` for ds; uniform has none): `params`, or its defaults with the `knobs`
    given by name (``tau_low=0.3``, ``gen_batch_size=8``, ...; knobs of another family are
    ignored, so one options dict serves every collector).  sara-history needs `history` (an
    ``informed.PromptHistory``) and `epoch_size` (the dataset size: the replay clock);
    sara-mopps / sara-dps need those and a `selector` (``selectors.Selector``); mopps / dps
    need `epoch_size` (posterior and selector: the peer recipe's, ``peer_select.py``).  Given
    only `epoch_size` (SARA family), the prompt ids are taken as `epoch * epoch_size + index`
    and the cross-validated defaults (``registry.HistoryParams``) are built.  Every argument is
    validated here (ParameterError naming it), before any rollout is requested.

    `schedule`: "rounds" (``collect_step`` with a ``sample`` callback) or "stream" (the collector
    is driven round-free by ``stream.stream_driver`` on an engine that adds, polls and aborts
    rollouts): checked here against the collector (ds and the SARA collectors; fixed yield).

    >>> make_collector("sara", k=8, groups=4, tau_low=0.3).params.tau_low
    0.3
    """
    col = _make(name, k, groups, budget, seed, params, history, epoch_size, selector, knobs)
    if schedule not in SCHEDULES:
        allowed = ", ".join(SCHEDULES)
        raise ParameterError("schedule", f"must be one of {allowed}, got {schedule!r}")
    if schedule == "stream":
        from .stream import check_stream  # the stream driver imports this module

        check_stream(col)
    return col


def _make(name, k, groups, budget, seed, params, history, epoch_size, selector, knobs):
    meta = row(name, "collector", "strategy")
    if epoch_size is not None:
        epoch_size = check_int(epoch_size, "epoch_size", 1)
    params = collector_params(name, params, **knobs)
    if name == "uniform":
        return UniformCollector(name, k, groups, budget, seed)
    if meta.family == "dynamic-sampling":  # ds, ds-verl3n
        return DSCollector(name, k=k, groups=groups, budget=budget, seed=seed, params=params)
    if meta.family == "peer-select":
        from .peer_select import PeerSelectCollector  # collectors built on _Base, below this

        return PeerSelectCollector(
            name,
            k=k,
            groups=groups,
            budget=budget,
            seed=seed,
            epoch_size=epoch_size,
            history=history,
            selector=selector,
        )
    if meta.needs_history and history is None and epoch_size:
        # integer ids epoch * epoch_size + index (a finite task's prompts): build the defaults
        from ..core.informed import PromptHistory
        from .selectors import Selector

        history = PromptHistory.for_integer_ids(int(epoch_size), seed)
        params = replace(params, rule=HISTORY.rule)
        if meta.selector is not None and selector is None:
            selector = Selector(meta.selector, ratio=HISTORY.ratio, seed=seed)
    from .sara_collector import SaraCollector

    return SaraCollector(
        name,
        k=k,
        groups=groups,
        budget=budget,
        seed=seed,
        params=params,
        history=history,
        epoch_size=epoch_size,
        selector=selector,
    )
