"""Round-free collection (``schedule="stream"``) on the live engine model (``live_engine.py``).

**SARA streamed** is the third driver of the round state machine (``core/rounds.py``), beside the
Numba kernel and ``SaraCollector``'s round loop: the collector's own prompts, plans, priors and
booking, driven one completion at a time.  At every completion the driver

1. plans with ``rounds.plan_stream`` — the round's order (fills of committed prompts, continues of
   undecided ones while groups are missing, then the probe quota from the running commit rate),
   counting the rollouts already in flight — within the engine's free slots;
2. opens the fresh prompts through the collector's ``_probe`` (its stream, its plans, its skips);
3. sends the requests (one engine request per rollout), and lands each finished rollout as a
   one-rollout request through the collector's ``_absorb`` (the same rule, the same booking);
   an abandoned prompt's rollouts still in flight are aborted at once (their tokens are paid).

The step ends when `groups` groups are committed and complete.  Then (``boundary``):

* "carry" (default) — the engine never stops: what is in flight runs on into the next step with
  its prompt (one policy step stale, as round collection's carried prompts), and fresh prompts
  fill every free slot (their groups are carried too); the run's end aborts what is in flight;
* "abort" — every rollout in flight is aborted at the step's end (no request outlives its policy
  version; its tokens are paid); its prompt keeps the rollouts that returned and is carried; fresh
  prompts are opened only as the missing groups call for (the round's quota).

With ``max_inflight`` 0 a prompt never has more in flight than its plan's next request, so its
decisions and rollouts are exactly the sequential rule's (exact theory holds).  With m >= 1 a
prompt keeps up to m rollouts in flight (eager): when it is abandoned, what is in flight (at most
m - 1) is aborted — the overshoot — and with outcome-dependent lengths the rollouts return out
of order (passes first when fails are longer), so the first n returned are no longer an
exchangeable sample: m = 1 is the sequential rule exactly; m > 1 pays the overshoot.

**DS streamed** keeps admitting prompts (k rollouts each) while the groups in flight, at the
running mixed rate, fall short of `groups` ("carry": while a slot is free); it ends when `groups`
mixed groups are complete; what is in flight runs on into the next step ("carry") or is aborted
("abort"), and complete mixed groups beyond `groups` are discarded (DS's surplus).  So both lose
the round barrier, and the wall-time saving of SARA over DS streamed is its rule's, not the
barrier's.
"""

import numpy as np

from ..collect.collect_base import Request, StepResult, _Base
from ..core.errors import ParameterError
from ..core.registry import row
from ..core.rounds import (
    C_NREQ,
    C_OPEN,
    F_KEY,
    S_FIELDS,
    begin_step,
    end_step,
    new_rounds,
    plan_stream,
    send,
)
from .live_engine import LiveEngine

FLY = S_FIELDS  # the stream driver's slot field: rollouts in flight
BOUNDARIES = ("carry", "abort")  # what a step's end does to the rollouts in flight


class Live:
    """The engine, outcomes and lengths of one streaming run: rollouts sent per visit, their
    outcomes seen when they complete."""

    def __init__(self, setup, source, seed):
        self.engine = LiveEngine(setup.engine)
        self.source, self.lengths = source, setup.lengths
        self.len_rng = np.random.default_rng([seed, 2])
        self.meta = {}  # request -> (visit, outcome)
        self.by_visit = {}  # visit -> its requests in flight
        self.cancelled = 0  # rollouts aborted
        self.cancelled_tokens = 0

    @property
    def inflight(self):
        return self.engine.inflight

    def submit(self, pid, visit, n):
        outcomes = self.source([Request(pid, n, visit)])[0]
        mine = self.by_visit.setdefault(visit, set())
        for o, length in zip(outcomes, self.lengths.draw(self.len_rng, outcomes)):
            rid = self.engine.add(length)
            self.meta[rid] = (visit, o)
            mine.add(rid)

    def cancel(self, visit):
        """Abort the visit's rollouts in flight; returns how many."""
        mine = self.by_visit.pop(visit, ())
        for rid in mine:
            self.cancelled_tokens += self.engine.abort(rid)
            self.source.unsee(visit, self.meta.pop(rid)[1])  # never observed: back in its urn
        self.cancelled += len(mine)
        return len(mine)

    def poll(self):
        """Run the engine to its next completion: [(visit, outcome)] ([] when nothing runs)."""
        out = []
        for rid in self.engine.step():
            visit, o = self.meta.pop(rid)
            self.by_visit[visit].discard(rid)
            out.append((visit, o))
        return out


class StreamSara:
    """The streaming driver of a ``SaraCollector`` (fixed-yield)."""

    def __init__(self, col, live, capacity, boundary="carry"):
        if col.budget is not None:
            raise ParameterError("--schedule", "stream collects a fixed yield (groups), no budget")
        if col.rc.overprovision != 1.0:
            raise ParameterError("overprovision", "over-provisions rounds; a stream has none")
        col.rounds = new_rounds(64, FLY + 1)  # a fresh collector: nothing open yet
        self.col, self.live, self.capacity = col, live, capacity
        self.carry = boundary == "carry" and col.rc.carry  # in flight outlives the step
        self.max_rollouts = col.max_rounds * col.capacity  # as many as max_rounds full rounds

    def collect_step(self, stream):
        col = self.col
        col._begin_step()
        res = StepResult(prior=tuple(col.step_prior), plan=[int(x) for x in col.plan])
        res.groups, col.done_groups = col.done_groups, []
        col.group_visits, col.done_visits = col.done_visits, []
        begin_step(col.rounds, col.rc)
        while self._top_up(res, stream):
            done = self.live.poll()
            if not done:  # nothing in flight and nothing to send: the stream ran out
                break
            for visit, o in done:
                self._land(visit, o, res)
        for visit in [] if self.carry else list(col.open):  # the step's end: "abort"
            self._cancel(visit)
        res.waste += int(end_step(col.rounds, col.rc))  # > 0 only without carrying
        if not col.rc.carry:
            col.open, col.done_groups, col.done_visits = {}, [], []
        col._end_step(res)
        return res

    def _top_up(self, res, stream):
        """Plan and send at one completion; False once the step's groups are in (or capped)."""
        col = self.col
        if res.rollouts >= self.max_rollouts:
            res.capped = True  # e.g. a law with (almost) no mixed groups: report, not hang
            return False
        room = self.capacity - self.live.inflight
        if not plan_stream(col.rounds, col.rc, FLY, room, self.carry):
            return False
        seq = col.visit_seq
        col._probe(res, stream)  # may grow the table: read col.rounds after it
        sm, sent = col.rounds, 0
        fresh = sm.slots[: sm.cnt[C_OPEN], F_KEY] > seq  # offered now: a row's old FLY is stale
        sm.slots[: sm.cnt[C_OPEN]][fresh, FLY] = 0
        for i, m in sm.req[: sm.cnt[C_NREQ]]:
            visit = int(sm.slots[i, F_KEY])
            self.live.submit(col.open[visit].pid, visit, int(m))
            sm.slots[i, FLY] += m
            sent += int(m)
        send(sm, sent)
        res.rollouts += sent
        return True

    def _slot(self, visit):
        """Open slots keep visit order (offered in order, compacted in order)."""
        sm = self.col.rounds
        return int(np.searchsorted(sm.slots[: sm.cnt[C_OPEN], F_KEY], visit))

    def _land(self, visit, o, res):
        col = self.col
        p = col.open.get(visit)
        if p is None:  # finished in the very iteration its prompt was decided: paid, unused
            res.waste += 1
            return
        sm, i = col.rounds, self._slot(visit)
        sm.slots[i, FLY] -= 1
        sm.req[0, 0], sm.req[0, 1] = i, 1  # the completion as request 0 of one rollout
        col._absorb(0, Request(p.pid, 1, visit), [o], res)
        res.outcomes.setdefault(p.pid, []).append(o)
        if visit not in col.open:  # decided: abandoned, or its group complete
            self._cancel(visit)

    def _cancel(self, visit):
        if self.live.cancel(visit) and visit in self.col.open:
            self.col.rounds.slots[self._slot(visit), FLY] = 0


class StreamDS:
    """DAPO dynamic sampling without generation-batch barriers (see the module docstring)."""

    def __init__(self, col, live, capacity, boundary="carry"):
        self.k, self.groups, self.live, self.capacity = col.k, col.groups, live, capacity
        self.carry, self.flying = boundary == "carry", {}  # visit -> (prompt, rewards so far)
        p = col.params
        self.max_rollouts = p.max_num_gen_batches * col.gen_batch_size * col.k  # 0: no cap
        self.mixed, self.decided, self.visits = 0, 0, 0  # over the run: the mixed rate
        self.group_visits = []

    def collect_step(self, stream):
        res, flying, kept = StepResult(), self.flying, []
        while len(kept) < self.groups:
            if self.max_rollouts and res.rollouts >= self.max_rollouts:
                res.capped = True
                break
            self._admit(res, stream, flying, len(kept))
            done = self.live.poll()
            if not done:
                break
            for visit, o in done:
                pid, r = flying[visit]
                r.append(o)
                if len(r) == self.k:
                    del flying[visit]
                    self._decided(res, kept, pid, r)
        for visit, (_, r) in [] if self.carry else list(flying.items()):  # "abort"
            res.waste += len(r) + self.live.cancel(visit)
            del flying[visit]
        res.groups, res.n_effective = kept, len(kept)
        return res

    def _admit(self, res, stream, flying, n_kept):
        rate = (self.mixed + 1) / (self.decided + 2)  # mixed groups per prompt; 1/2 at first
        while self.live.inflight < self.capacity and (
            self.carry or n_kept + rate * len(flying) < self.groups
        ):
            pid = _Base._pull(stream, res)
            if pid is None:
                return
            flying[self.visits] = (pid, [])
            self.live.submit(pid, self.visits, self.k)
            self.visits += 1
            res.rollouts += self.k

    def _decided(self, res, kept, pid, r):
        self.decided += 1
        res.outcomes.setdefault(pid, []).extend(r)
        if 0 < sum(r) < self.k:
            self.mixed += 1
            if len(kept) < self.groups:
                kept.append((pid, r))
                return
        else:
            res.saturated += 1
        res.waste += self.k


def stream_driver(col, live, capacity, boundary="carry"):
    """The streaming driver of a collector: SARA's family or DS's; others are refused."""
    family = row(col.name, "collector").family
    if family == "dynamic-sampling":
        return StreamDS(col, live, capacity, boundary)
    if hasattr(col, "rounds") and getattr(col, "selector", None) is None:
        return StreamSara(col, live, capacity, boundary)
    raise ParameterError(
        "--schedule", f"stream runs ds and the sara collectors without a selector, not {col.name}"
    )
