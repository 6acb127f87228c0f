"""Round-synchronous collection of one training step (docs/design.md §2), as plain state machines.

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

from dataclasses import replace

from ..core.errors import ParameterError, check_int
from ..core.registry import HISTORY, DSParams, collector_params, names, row
from .collect_base import Request, StepResult, _Base, check_call
from .peer_select import PeerSelectCollector
from .sara_collector import SaraCollector
from .stream import check_stream

SCHEDULES = ("rounds", "stream")  # round-synchronous (collect_step) or round-free (stream.py)

__all__ = ["Request", "StepResult", "SaraCollector", "make_collector", "STRATEGIES"]

STRATEGIES = names("collector")  # registry order


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
    name, *, k=8, groups=None, budget=None, seed=0, params=None, history=None, epoch_size=None,
    selector=None, schedule="rounds", **knobs,
):  # fmt: skip
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
    rollouts): checked here against the collector (ds and the SARA collectors without a
    selector; fixed yield; no overprovision).

    >>> make_collector("sara", k=8, groups=4, tau_low=0.3).params.tau_low
    0.3
    """
    col = _make(name, k, groups, budget, seed, params, history, epoch_size, selector, knobs)
    if schedule not in SCHEDULES:
        allowed = ", ".join(SCHEDULES)
        raise ParameterError("schedule", f"must be one of {allowed}, got {schedule!r}")
    if schedule == "stream":
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
        return PeerSelectCollector(
            name, k=k, groups=groups, budget=budget, seed=seed, epoch_size=epoch_size,
            history=history, selector=selector,
        )  # fmt: skip
    if meta.needs_history and history is None and epoch_size:
        # integer ids epoch * epoch_size + index (a finite task's prompts): build the defaults
        from ..core.informed import PromptHistory
        from .selectors import Selector

        history = PromptHistory.for_integer_ids(int(epoch_size), seed)
        params = replace(params, rule=HISTORY.rule)
        if meta.selector is not None and selector is None:
            selector = Selector(meta.selector, ratio=HISTORY.ratio, seed=seed)
    return SaraCollector(
        name, k=k, groups=groups, budget=budget, seed=seed, params=params, history=history,
        epoch_size=epoch_size, selector=selector,
    )  # fmt: skip
