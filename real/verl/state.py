"""SARA's state in a verl run: one collector shared by every agent-loop worker (docs/verl.md).

verl runs each prompt in its own coroutine, on several Ray workers; the decisions of all of them
go through one ``SaraCollector`` (``real.base.config.build_collector``, as the native loop and
the TRL adapter build theirs) held by ``SaraState``, which verl's workers reach as a named Ray
actor (``state_actor``).  So the fitted prior (sara-eb / sara-auto), the running price and each
prompt's history (sara-history) are one state, saved with the trainer's checkpoint
(``checkpoint.py``).

This is the collector's streamed schedule (docs/design.md §2), driven by verl: verl owns the
prompt flow — ``data.train_batch_size`` prompts in play, one fresh prompt for each abandoned
one (exact refill) — and the round state machine (``sara_sim/core/rounds.py``) owns every
prompt's decisions, through the collector's step interface as the stream driver
(``sara_sim/collect/stream.py``) uses it: ``open_prompts`` opens a prompt with its plan (or skips
it, sara-history), ``absorb`` takes a request's rewards and decides, ``held_request`` is the
next request (the plan's next stage; a committed prompt's fill), ``stream_plan.send`` books
what was sent.  A prompt's next request goes once its last one has returned, as the stream
driver sends an undecided prompt's stages (``max_inflight`` 0), so its decisions and rollouts
are the sequential rule's."""

import copy
import functools
from collections import defaultdict

import numpy as np

from real.base.config import StrategyConfig, build_collector
from sara_sim.collect.collectors import Request
from sara_sim.core.policy import ABANDON, COMMIT
from sara_sim.core.rounds import (
    BATCH,
    C_CAP,
    C_NREQ,
    C_OPEN,
    C_SKIPS,
    C_USED,
    C_WANT,
    CARRIED,
    F_KEY,
    F_N,
    F_S,
    held_request,
    settle,
)
from sara_sim.core.stream_plan import send

CONTINUE, FINISHED, FAILED = "continue", "finished", "failure"  # a prompt's verdict for verl
STATE_VERSION = 1


def _recorded(method):
    """A failure inside the shared state is kept (``error``) for the replay buffer to raise: a
    prompt whose decision failed travels as a failure and would be refilled, again and again."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            self.error = f"{method.__name__}: {e!r}"
            raise

    return wrapper


def make_collector_for(s):
    """The run's collector (``SaraSettings`` s): k = rollout.n, groups = train_batch_size."""
    return build_collector(
        s.strategy,
        StrategyConfig(**s.options, schedule="stream"),
        k=s.k,
        groups=s.groups,
        seed=s.seed,
        epoch_size=s.epoch_size,
    )


class SaraState:
    """The shared decisions and books of one verl run (plain Python; ``state_actor`` hosts it)."""

    def __init__(self, settings):
        self.s = settings
        self.col = make_collector_for(settings) if settings.is_sara else None
        if self.col is not None:  # requests whole, as a stream sends them (RoundConfig.whole)
            self.col.rc = self.col.rc._replace(whole=True)
        self.step = None  # verl's global step of the collector's open step
        self.res = None  # that step's StepResult
        self.visits_of = defaultdict(int)  # dataset index -> visits so far (its epoch)
        self.books = defaultdict(lambda: defaultdict(int))  # step -> counters
        self.mixed = {}  # uid -> was its group mixed (finished prompts not yet in a batch)
        self.decided = None  # the observer's last Decided
        self.restored_from = None
        self.error = None  # the first failure inside the state (see _recorded)
        if self.col is not None:
            self.col.observer = self._observe

    # ------------------------------------------------------------------ one prompt
    @_recorded
    def open(self, uid: str, index: int, step: int) -> tuple[int, int]:
        """A fresh prompt (verl's uid, its dataset index) in verl step `step`: (visit, rollouts of
        its first request); 0 rollouts: skipped before any rollout (sara-history)."""
        self._at_step(step)
        col, sm = self.col, self.col.rounds
        pid = self._pid(int(index))
        sm.cnt[C_WANT], sm.cnt[C_SKIPS], sm.cnt[C_USED], sm.cnt[C_NREQ] = 1, 1, 0, 0
        sm.cnt[C_CAP] = 1 << 62  # verl decides how many prompts are in play, not the plan
        before = col.visit_seq
        col.open_prompts(self.res, iter([pid]))
        self.books[step]["prompts"] += 1
        if col.visit_seq == before:  # its plan skipped it: no rollout at all
            self.books[step]["abandoned"] += 1
            self.books[step]["skipped"] += 1
            return -1, 0
        sm = col.rounds
        n = int(sm.req[0, 1])
        send(sm, n)
        self.res.rollouts += n
        return col.visit_seq, n

    @_recorded
    def absorb(self, visit: int, step: int, rewards: list, lengths: list) -> tuple[str, int]:
        """Rewards (0/1) of the visit's last request and each rollout's tokens (in the same
        order: what plans priced in tokens learn from): (verdict, rollouts of its next request).
        Verdicts: CONTINUE (send the next request), FINISHED (a complete mixed group: write it),
        FAILED (abandoned or saturated: nothing is written)."""
        col, books = self.col, self.books[step]
        if len(lengths) != len(rewards):
            raise ValueError(f"{len(rewards)} rewards but {len(lengths)} lengths")
        books["rollouts"] += len(rewards)
        books["tokens"] += int(sum(lengths))
        col.observe_lengths(visit, lengths)
        p = col.open[visit]
        sm = col.rounds
        i = self._slot(visit)
        sm.req[0, 0], sm.req[0, 1] = i, len(rewards)
        self.decided = None
        col.absorb(0, Request(p.pid, len(rewards), visit), list(rewards), self.res)
        d = self.decided
        if d is None:  # open: committed (its fill) or undecided (its plan's next stage)
            i = self._slot(visit)
            n = int(min(held_request(sm, col.rc, i), col.k - sm.slots[i, F_N]))
            send(sm, n)
            self.res.rollouts += n
            return CONTINUE, n
        if d.decision == COMMIT and d.target in (BATCH, CARRIED):
            books["committed"] += 1
            return FINISHED, 0
        books["abandoned" if d.decision == ABANDON else "saturated"] += 1
        return FAILED, 0

    def lost(self, visit: int, step: int) -> None:
        """The visit's sessions failed (a server died, a malformed reply): it leaves the open
        table as an abandoned prompt would (its rollouts stay spent), booked as lost."""
        col, sm = self.col, self.col.rounds
        p = col.open.pop(visit, None)
        if p is not None:
            i = self._slot(visit)
            settle(sm, col.rc, i, ABANDON, int(sm.slots[i, F_S]))
            self.books[step]["lost"] += 1

    def finished(self, uid: str, step: int, rewards: list, rollouts: int, tokens: int) -> None:
        """A group handed to verl (SARA's committed ones, every DS one): its mixedness for the
        step's effective-group count; DS's rollouts and tokens booked here too."""
        self.mixed[uid] = 0 < sum(rewards) < len(rewards)
        if not self.s.is_sara:
            books = self.books[step]
            books["prompts"] += 1
            books["rollouts"] += rollouts
            books["tokens"] += tokens

    # ------------------------------------------------------------------ verl's step
    def step_metrics(self, step: int, selected: list) -> dict:
        """verl's metrics of step `step` (logged under sara/): what it cost, what it yielded —
        the groups `selected` for the batch that were mixed are its effective groups."""
        b = self.books.pop(step, {})
        effective = sum(bool(self.mixed.pop(uid, False)) for uid in selected)
        rollouts, tokens = b.get("rollouts", 0), b.get("tokens", 0)
        out = {
            "sara/rollouts": rollouts,
            "sara/tokens": tokens,
            "sara/effective_groups": effective,
            "sara/groups": len(selected),
            "sara/abandoned": b.get("abandoned", 0),
            "sara/skipped": b.get("skipped", 0),
            "sara/saturated": b.get("saturated", 0),
            "sara/prompts": b.get("prompts", 0),
            "sara/lost": b.get("lost", 0),
        }
        if effective:  # undefined without an effective group: left out, never a stand-in
            out["sara/rollouts_per_effective_group"] = rollouts / effective
            out["sara/tokens_per_effective_group"] = tokens / effective
        for old in [s for s in self.books if s < step]:  # nothing of an old step stays
            del self.books[old]
        return out

    # ------------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict:
        col = None if self.col is None else self.col.state_dict()
        return {
            "version": STATE_VERSION,
            "strategy": self.s.strategy,
            "k": self.s.k,
            "groups": self.s.groups,
            "collector": col,
            "step": self.step,
            "res": self.res,
            "visits_of": dict(self.visits_of),
        }

    def load_state_dict(self, state: dict, where: str = "") -> None:
        state = copy.deepcopy(state)  # arrays that came through Ray's object store are read-only
        mine = (self.s.strategy, self.s.k, self.s.groups)
        saved = (state["strategy"], state["k"], state["groups"])
        if saved != mine:
            from sara_sim.core.errors import ParameterError

            raise ParameterError(
                "trainer.resume_mode",
                f"{where} holds SARA's state of strategy/n/train_batch_size {saved}, not {mine}; "
                "resume with the same settings or start fresh (sampler_kwargs.fresh=true)",
            )
        if self.col is not None:
            self.col.load_state_dict(state["collector"])
        self.step, self.res = state["step"], state["res"]
        self.visits_of = defaultdict(int, state["visits_of"])
        self.restored_from = where
        if self.col is not None:
            self.col.observer = self._observe

    def restored(self):
        return self.restored_from

    def failed(self):
        """The first failure inside the state, or None."""
        return self.error

    # ------------------------------------------------------------------ helpers
    def _at_step(self, step: int) -> None:
        """verl moved to step `step`: the collector's step ends and the next begins (sara-eb /
        sara-auto refit their prior from the window of decided prompts here)."""
        if self.step == step:
            return
        col = self.col
        if self.res is not None:
            col.end_step(self.res)
        self.res = col.begin_step()
        self.step = step

    def _observe(self, decided) -> None:
        self.decided = decided

    def _pid(self, index: int) -> int:
        """The collector's prompt id: epoch * epoch_size + index for the history strategies (a
        prompt's n-th visit is its epoch n), the dataset index otherwise."""
        size = self.s.epoch_size
        if size is None:
            return index
        if not 0 <= index < size:
            raise ValueError(f"prompt index {index} outside [0, epoch_size={size})")
        epoch = self.visits_of[index]
        self.visits_of[index] = epoch + 1
        return epoch * size + index

    def _slot(self, visit: int) -> int:
        sm = self.col.rounds  # open slots keep visit order (offered in order, compacted in order)
        return int(np.searchsorted(sm.slots[: sm.cnt[C_OPEN], F_KEY], visit))


def state_actor(settings, create: bool = True):
    """The run's named Ray actor hosting a SaraState (created by the manager, found by the
    workers and the replay buffer by name)."""
    import ray

    cls = ray.remote(num_cpus=0)(SaraState)
    if create:
        return cls.options(name=settings.state_name, get_if_exists=True).remote(settings)
    return ray.get_actor(settings.state_name)
