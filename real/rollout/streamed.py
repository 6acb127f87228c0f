"""One step of round-free collection (``schedule="stream"``, issue 20) on a `StreamSampler`.

`sara_sim.collect.stream`'s driver (the same one the simulator runs) decides; `StreamRollouts` is
its engine: ``submit`` adds one seeded request per rollout, ``poll`` advances the sampler to its
next completions, scores each with the task's reward and stores it with its visit
(`RolloutStore`, as a round does), ``cancel`` aborts a visit's rollouts in flight.

Seeds are per rollout: rollout i of visit v gets ``rollout_seed(seed, v) + i``, whatever the
order the engine finishes them in — so a stream and a round that give a visit's rollouts the same
seeds see the same completions (tests/real/test_stream_real.py).

One policy version per group: the step ends with the driver's "fresh" boundary — what is in
flight is aborted (its tokens are paid and counted: `cancelled_tokens`) and every prompt still
open is dropped (its rollouts count as waste), so no rollout outlives the weights it was sampled
with and every group the trainer gets was sampled in one step; complete surplus groups are
carried, as round collection carries them.

What a streamed step reports: `rollouts` counts every rollout sent (cancelled ones too), `tokens`
every token generated (cancelled rollouts' partials too), `cancelled` / `cancelled_tokens` the
aborted ones, `rounds` the engine waits (`poll` calls: each waits for the next completion)."""

import time

import numpy as np

from sara_sim.collect.collect_base import Request
from sara_sim.collect.stream import stream_driver

BOUNDARY = "fresh"  # no rollout and no open prompt outlives a weight push


def rollout_seed(seed: int, visit: int) -> int:
    """The base seed of visit `visit`'s rollouts (rollout i: base + i)."""
    return int(np.random.default_rng([seed, 0x57E4, visit]).integers(0, 2**30))


def stream_capacity(collector) -> int:
    """Rollouts in flight at once: a round's (SARA: its capacity; DS: a generation batch)."""
    if hasattr(collector, "gen_batch_size"):
        return collector.gen_batch_size * collector.k
    return collector.capacity


class StreamRollouts:
    """The stream driver's engine on one `RolloutCollector` (see the module docstring)."""

    def __init__(self, rc):
        self.rc = rc
        self.sampler = None  # the step's StreamSampler
        self.owner: dict[int, int] = {}  # rollout id -> visit
        self.by_visit: dict[int, set] = {}  # visit -> its rollout ids in flight
        self.sent: dict[int, int] = {}  # visit -> rollouts sent (the next one's seed index)
        self.cancelled = self.cancelled_tokens = 0

    @property
    def inflight(self) -> int:
        return self.sampler.in_flight

    def submit(self, pid, visit: int, n: int) -> None:
        rc, t0 = self.rc, time.perf_counter()
        entry = rc.entry(Request(pid, n, visit))
        base, j = rollout_seed(rc.seed, visit), self.sent.get(visit, 0)
        for i in range(j, j + n):
            rid = self.sampler.add(entry["problem"].prompt, seed=base + i)
            self.owner[rid] = visit
            self.by_visit.setdefault(visit, set()).add(rid)
        self.sent[visit] = j + n
        rc.batch.gen_s += time.perf_counter() - t0

    def poll(self) -> list[tuple[int, int]]:
        rc, t0 = self.rc, time.perf_counter()
        done = self.sampler.poll()
        rc.batch.gen_s += time.perf_counter() - t0
        out = []
        for f in done:
            visit = self.owner.pop(f.rid)
            self.by_visit[visit].discard(f.rid)
            (r,) = rc.score(rc.store.entries[visit], [f.completion], f.prompt_token_ids)
            out.append((visit, r))
        return out

    def cancel(self, visit: int) -> int:
        rids = self.by_visit.pop(visit, set())
        if rids:
            for rid in rids:
                del self.owner[rid]
            self._cancelled(len(rids), self.sampler.abort(sorted(rids)))
        return len(rids)

    def _cancelled(self, n: int, tokens: int) -> None:
        st = self.rc.batch
        st.tokens += tokens
        st.cancelled += n
        st.cancelled_tokens += tokens

    def collect_step(self, driver, stream):
        """One step of `driver` on a fresh stream; what is still in flight at its end (the
        prompt stream ran out, or the step was capped) is aborted and counted."""
        rc = self.rc
        self.sampler = rc.engine.open_stream(rc.max_tokens, rc.temperature, rc.top_p)
        try:
            res = driver.collect_step(stream)
            left = self.sampler.in_flight
            self._cancelled(left, self.sampler.close())
        finally:
            self.sampler.close()
            self.sampler = None
            self.owner.clear()
            self.by_visit.clear()
        held = driver.held_visits()
        self.sent = {v: n for v, n in self.sent.items() if v in held}
        return res


def make_driver(rc):
    """The run's stream driver for `rc.collector` (``BOUNDARY``: one policy version a group)."""
    return stream_driver(rc.collector, StreamRollouts(rc), stream_capacity(rc.collector), BOUNDARY)
