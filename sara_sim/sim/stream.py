"""Round-free collection (``schedule="stream"``) on the live engine model (``live_engine.py``):
``Live``, the simulated engine that ``collect/stream.py``'s driver (one driver for this engine
and vLLM's) adds rollouts to, polls and aborts.  Each rollout's outcome is drawn from the
run's ``OutcomeSource`` when it is sent and its length from the per-outcome length law; the
outcome is seen only when the rollout completes, and an aborted rollout's outcome goes back to
its urn (never observed).  See ``collect/stream.py`` for the schedule and its boundaries.
"""

import numpy as np

from ..collect.collectors import Request
from ..collect.stream import (
    BOUNDARIES,
    FLY,
    StreamDS,
    StreamSara,
    stream_capacity,
    stream_driver,
)
from .live_engine import LiveEngine

__all__ = ["BOUNDARIES", "FLY", "Live", "StreamDS", "StreamSara", "stream_capacity"]
__all__ += ["stream_driver"]


class Live:
    """The engine, outcomes and lengths of one streaming run: rollouts sent per visit, their
    outcomes seen when they complete."""

    def __init__(self, setup, source, seed):
        self.engine = LiveEngine(setup.engine)
        self.source, self.lengths = source, setup.lengths
        self.len_rng = np.random.default_rng([seed, 2])
        self.meta = {}  # request -> (visit, outcome, tokens)
        self.by_visit = {}  # visit -> its requests in flight
        self.cancelled = 0  # rollouts aborted
        self.cancelled_tokens = 0
        self.requests = 0  # submits: one engine request each (a served one: an HTTP request)

    @property
    def inflight(self):
        return self.engine.inflight

    def submit(self, pid, visit, n):
        outcomes = self.source([Request(pid, n, visit)])[0]
        self.requests += 1
        mine = self.by_visit.setdefault(visit, set())
        lengths = self.lengths.draw(self.len_rng, outcomes, [pid] * len(outcomes))
        for i, (o, length) in enumerate(zip(outcomes, lengths)):
            rid = self.engine.add(length, opens=i == 0)  # one client request of n
            self.meta[rid] = (visit, o, int(length))
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
        """Run the engine to its next completion: [(visit, outcome, tokens)] ([] when nothing
        runs)."""
        out = []
        for rid in self.engine.step():
            visit, o, tokens = self.meta.pop(rid)
            self.by_visit[visit].discard(rid)
            out.append((visit, o, tokens))
        return out
