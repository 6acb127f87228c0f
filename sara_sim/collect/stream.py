"""Round-free collection (``schedule="stream"``): one driver, any engine that can add, poll and
abort single rollouts — the simulated one (``sim/stream.py``'s ``Live`` on the live engine model)
and vLLM's (``real/rollout/streamed.py`` on a ``real.sampling.streaming.StreamEngine``).

**The engine a driver needs** (``RolloutEngine``): ``submit(pid, visit, n)`` queues n rollouts of
visit `visit` of prompt `pid`; ``poll()`` runs the engine to its next completions and returns
``[(visit, outcome, tokens)]`` (outcome: the rollout's binary reward, tokens: its length; ``[]``
only when nothing is in flight); ``cancel(visit)`` aborts the visit's rollouts in flight and
returns how many; ``inflight`` counts the rollouts in flight.  The engine keeps its own cost
books (tokens, cancelled rollouts and their tokens): a driver only decides.

**SARA streamed** is the third driver of the round state machine (``core/rounds.py``), beside the
Numba kernel and ``SaraCollector``'s round loop: the collector's own prompts, plans, priors and
booking through its step interface (``begin_step`` / ``open_prompts`` / ``absorb`` /
``end_step``), driven one completion at a time.  At every completion the driver

1. plans with ``stream_plan.plan_stream`` — the round's order (fills of committed prompts,
   continues of undecided ones while groups are missing, then the probe quota from the running
   commit rate), counting the rollouts already in flight — within the engine's free slots;
2. opens the fresh prompts through ``open_prompts`` (its prompt source, plans and skips; behind
   a selector, sara-mopps / sara-dps, the selector ranks ratio x the prompts the quota wants at
   that completion and the rest are passed over — the round collector's one selection, at the
   stream's quota; chosen prompts not yet opened wait in the collector's queue, across steps);
3. sends each request whole, as one engine request (``rc.whole``: the free slots decide whether
   a request starts, never its size — a request cut to the slots left would be sent as two, and
   a served request costs ~13 ms of CPU (client, API server, engine core) whatever its size: as
   much as ~39 tokens, benchmarks/investigations/stream_real; the engine queues the excess, at
   most k - 1 rollouts over its slots), and lands each finished rollout as a one-rollout request
   through ``absorb`` (the same rule, the same booking); an abandoned prompt's rollouts still in
   flight are aborted at once (their tokens are paid).

The step ends when `groups` groups are committed and complete.  Then (``boundary``):

* "carry" (the simulator's default) — the engine never stops: what is in flight runs on into the
  next step with its prompt (one policy step stale, as round collection's carried prompts), and
  fresh prompts fill every free slot (their groups are carried too); the run's end aborts what
  is in flight;
* "abort" — every rollout in flight is aborted at the step's end (no request outlives its policy
  version; its tokens are paid); its prompt keeps the rollouts that returned and is carried
  (so a carried prompt's group may mix two policy versions, as round collection's do); fresh
  prompts are opened only as the missing groups call for (the round's quota) — or, with
  ``rc.overprovision`` = x > 1 (the fill knob), for up to x times the missing groups, tapering
  as the step fills (``stream_plan._wanted``): more prompts in play keep the engine fuller and
  shorten the step's tail, at the price of the prompts still open at the step's end;
* "fresh" (a training loop's: weights change between steps) — as "abort", and every prompt still
  open is dropped too (its returned rollouts count as waste): each group the next step commits
  is sampled from one policy version; complete surplus groups (one version each) are carried.

``res.rounds`` of a streamed step counts the engine waits (``poll`` calls): the barriers a stream
still has, one per completion event instead of one per round.

With ``max_inflight`` 0 a prompt never has more in flight than its plan's next request, so its
decisions and rollouts are exactly the sequential rule's (exact theory holds).  With m >= 1 a
prompt keeps up to m rollouts in flight (eager): when it is abandoned, what is in flight (at most
m - 1) is aborted — the overshoot — and with outcome-dependent lengths the rollouts return out
of order (passes first when fails are longer), so the first n returned are no longer an
exchangeable sample: m = 1 is the sequential rule exactly; m > 1 pays the overshoot.

**DS streamed** keeps admitting prompts (k rollouts each) while the groups in flight, at the
running mixed rate, fall short of `groups` ("carry": while a slot is free); it ends when `groups`
mixed groups are complete; what is in flight runs on into the next step ("carry") or is aborted
("abort", "fresh": a DS group is whole or nothing), and complete mixed groups beyond `groups` are
discarded (DS's surplus).  So both lose the round barrier, and the wall-time saving of SARA over
DS streamed is its rule's, not the barrier's.
"""

from typing import Protocol

import numpy as np

from ..core.errors import ParameterError
from ..core.registry import row
from ..core.rounds import (
    C_NREQ,
    C_OPEN,
    F_KEY,
    S_FIELDS,
    new_rounds,
)
from ..core.stream_plan import plan_stream, send
from .collectors import Request, StepResult, _Base

FLY = S_FIELDS  # the stream driver's slot field: rollouts in flight
BOUNDARIES = ("carry", "abort", "fresh")  # what a step's end does to what is in flight / open


class RolloutEngine(Protocol):
    """What a stream driver asks of an engine (see the module docstring)."""

    inflight: int

    def submit(self, pid, visit: int, n: int) -> None: ...

    def poll(self) -> list: ...

    def cancel(self, visit: int) -> int: ...


def check_stream(col, boundary="carry"):
    """A collector a stream can drive, or a ParameterError naming the flag (before any engine
    starts): DS's family, or SARA's — sara-history and the selectors in front of it included —
    fixed-yield (``rc.overprovision`` scales the stream's probe quota:
    ``stream_plan._wanted``)."""
    if boundary not in BOUNDARIES:
        allowed = ", ".join(BOUNDARIES)
        raise ParameterError("--boundary", f"must be one of {allowed}, got {boundary!r}")
    family = row(col.name, "collector").family
    if family == "dynamic-sampling":
        return "ds"
    if not hasattr(col, "rounds"):  # uniform, the peers: no round state machine to drive
        what = "stream runs ds and the sara collectors"
        raise ParameterError("--schedule", f"{what}, not {col.name}")
    if col.budget is not None:
        raise ParameterError("--schedule", "stream collects a fixed yield (groups), no budget")
    return "sara"


class StreamSara:
    """The streaming driver of a ``SaraCollector`` (fixed-yield)."""

    def __init__(self, col, live, capacity, boundary="carry"):
        check_stream(col, boundary)
        if not col.open and not col.rounds.cnt[C_OPEN]:  # fresh (or resumed with nothing open)
            col.rounds = _with_fly(col.rounds)
        col.rc = col.rc._replace(whole=True)  # requests whole: the engine queues the excess
        self.col, self.live, self.capacity, self.boundary = col, live, capacity, boundary
        self.carry = boundary == "carry" and col.rc.carry  # in flight outlives the step
        self.max_rollouts = col.max_rounds * col.capacity  # as many as max_rounds full rounds

    def collect_step(self, prompts):
        col = self.col
        res = col.begin_step()
        while self._top_up(res, prompts):
            done = self.live.poll()
            if not done:  # nothing in flight and nothing to send: the prompts ran out
                break
            res.rounds += 1  # one engine wait
            for visit, o, tokens in done:
                self._land(visit, o, tokens, res)
        for visit in [] if self.carry else list(col.open):  # the step's end: "abort", "fresh"
            self._cancel(visit)
        if self.boundary == "fresh":  # no open prompt outlives its policy version
            col.drop_open(res)
        col.end_step(res)
        return res

    @property
    def group_visits(self):
        return self.col.group_visits

    def held_visits(self):
        return self.col.held_visits()

    def state_dict(self):
        return {}  # the collector holds it all

    def load_state_dict(self, state):
        pass

    def _top_up(self, res, prompts):
        """Plan and send at one completion; False once the step's groups are in (or capped)."""
        col = self.col
        if res.rollouts >= self.max_rollouts:
            res.capped = True  # e.g. a law with (almost) no mixed groups: report, not hang
            return False
        room = self.capacity - self.live.inflight
        if not plan_stream(col.rounds, col.rc, FLY, room, self.carry):
            return False
        seq = col.visit_seq
        col.open_prompts(res, prompts)  # may grow the table: read col.rounds after it
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

    def _land(self, visit, o, tokens, res):
        col = self.col
        p = col.open.get(visit)
        if p is None:  # finished in the very iteration its prompt was decided: paid, unused
            res.waste += 1
            return
        col.observe_lengths(visit, [tokens])
        sm, i = col.rounds, self._slot(visit)
        sm.slots[i, FLY] -= 1
        sm.req[0, 0], sm.req[0, 1] = i, 1  # the completion as request 0 of one rollout
        col.absorb(0, Request(p.pid, 1, visit), [o], res)
        res.outcomes.setdefault(p.pid, []).append(o)
        if visit not in col.open:  # decided: abandoned, or its group complete
            self._cancel(visit)

    def _cancel(self, visit):
        if self.live.cancel(visit) and visit in self.col.open:
            self.col.rounds.slots[self._slot(visit), FLY] = 0


def _with_fly(sm):
    """The state with the driver's in-flight field (an empty one: nothing is open)."""
    if sm.slots.shape[1] > FLY:
        return sm
    fresh = new_rounds(sm.slots.shape[0], FLY + 1)
    fresh.cnt[:] = sm.cnt
    fresh.rates[:] = sm.rates
    return fresh


class StreamDS:
    """DAPO dynamic sampling without generation-batch barriers (see the module docstring)."""

    def __init__(self, col, live, capacity, boundary="carry"):
        check_stream(col, boundary)
        self.k, self.groups, self.live, self.capacity = col.k, col.groups, live, capacity
        self.carry, self.flying = boundary == "carry", {}  # visit -> (prompt, rewards so far)
        p = col.params
        self.max_rollouts = p.max_num_gen_batches * col.gen_batch_size * col.k  # 0: no cap
        self.mixed, self.decided, self.visits = 0, 0, 0  # over the run: the mixed rate
        self.group_visits = []

    def collect_step(self, prompts):
        res, flying, kept = StepResult(), self.flying, []
        self.group_visits = []
        while len(kept) < self.groups:
            if self.max_rollouts and res.rollouts >= self.max_rollouts:
                res.capped = True
                break
            self._admit(res, prompts, flying, len(kept))
            done = self.live.poll()
            if not done:
                break
            res.rounds += 1  # one engine wait
            for visit, o, _ in done:
                pid, r = flying[visit]
                r.append(o)
                if len(r) == self.k:
                    del flying[visit]
                    self._decided(res, kept, pid, r, visit)
        for visit, (_, r) in [] if self.carry else list(flying.items()):  # "abort", "fresh"
            res.waste += len(r) + self.live.cancel(visit)
            del flying[visit]
        res.groups, res.n_effective = kept, len(kept)
        return res

    def _admit(self, res, prompts, flying, n_kept):
        rate = (self.mixed + 1) / (self.decided + 2)  # mixed groups per prompt; 1/2 at first
        while self.live.inflight < self.capacity and (
            self.carry or n_kept + rate * len(flying) < self.groups
        ):
            pid = _Base._pull(prompts, res)
            if pid is None:
                return
            flying[self.visits] = (pid, [])
            self.live.submit(pid, self.visits, self.k)
            self.visits += 1
            res.rollouts += self.k

    def _decided(self, res, kept, pid, r, visit):
        self.decided += 1
        res.outcomes.setdefault(pid, []).extend(r)
        if 0 < sum(r) < self.k:
            self.mixed += 1
            if len(kept) < self.groups:
                kept.append((pid, r))
                self.group_visits.append(visit)
                return
        else:
            res.saturated += 1
        res.waste += self.k

    def held_visits(self):
        """Visits whose rollouts are still wanted: the groups in flight."""
        return set(self.flying)

    def state_dict(self):
        """The run's counters (what is in flight cannot be saved: a checkpoint is taken at a
        step's end with nothing in flight, "abort" / "fresh")."""
        if self.flying:
            raise RuntimeError("a stream with rollouts in flight cannot be checkpointed")
        return {"mixed": self.mixed, "decided": self.decided, "visits": self.visits}

    def load_state_dict(self, state):
        self.mixed, self.decided, self.visits = state["mixed"], state["decided"], state["visits"]


def stream_capacity(col, slots=None, boundary="carry"):
    """Rollouts a stream keeps in flight (queued in the engine or running).  Its collector's
    own: a round's capacity (SARA: x N k with over-provisioning x; DS: a generation batch of
    rollouts) — but never more than the engine runs at once (`slots`, where the driver knows
    them: in-process vLLM, the engine model), since a rollout queued behind full slots starts no
    sooner for being queued early and, with boundary "abort" / "fresh", is lost at the step's
    end with the prompt it was queued for (on the in-process reasoning task, probes x 2 queued
    x 2 N k = 2 x the slots: 0.95 of DS by rounds' rollouts, 0.83 capped: benchmarks/
    stream_real_reasoning.out.txt).  With "carry" nothing is lost at a step's end and fresh
    prompts fill every free slot: the slots."""
    own = col.gen_batch_size * col.k if hasattr(col, "gen_batch_size") else col.capacity
    if slots is None:
        return own
    return int(slots) if boundary == "carry" else min(own, int(slots))


def stream_driver(col, live, capacity, boundary="carry"):
    """The streaming driver of a collector: SARA's family or DS's; others are refused."""
    if check_stream(col, boundary) == "ds":
        return StreamDS(col, live, capacity, boundary)
    return StreamSara(col, live, capacity, boundary)
