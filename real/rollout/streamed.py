"""One step of round-free collection (``schedule="stream"``) on a `StreamEngine`.

`sara_sim.collect.stream`'s driver (the same one the simulator runs) decides; `StreamRollouts` is
its engine: ``submit`` adds a visit's planned rollouts as one seeded group request (`add_group`),
``poll`` advances the engine to its next completions and hands them to its host to score and store
with their visit (`RolloutStore`, as a round does), ``cancel`` aborts a visit's rollouts in flight.

Two hosts drive it, each through the same few calls (`StreamHost`): the native loop's
`RolloutDriver` (text prompts, the task's verifier) and TRL's adapter `real.trl.adapter`
(TRL's token-id prompts, the user's reward functions).

Seeds are per rollout: rollout i of visit v gets ``rollout_seed(seed, v) + i``, whatever the
order the engine finishes them in — so a stream and a round that give a visit's rollouts the same
seeds see the same completions (tests/real/test_stream_real.py).

One policy version per group: the step ends with the driver's "fresh" boundary — what is in
flight is aborted (its tokens are paid and counted: `cancelled_tokens`) and every prompt still
open is dropped (its rollouts count as waste), so no rollout outlives the weights it was sampled
with and every group the trainer gets was sampled in one step; complete surplus groups are
carried, as round collection carries them.

What a streamed step reports: `rollouts` counts every rollout sent (cancelled ones too), `tokens`
every token generated (cancelled rollouts' partials too: the host adds `StreamCost`'s), `cancelled`
/ `cancelled_tokens` the aborted ones, `rounds` the engine waits (`poll` calls: each waits for the
next completion)."""

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sara_sim.collect.collectors import Request
from sara_sim.collect.stream import stream_capacity, stream_driver

BOUNDARY = "fresh"  # no rollout and no open prompt outlives a weight push


def rollout_seed(seed: int, visit: int) -> int:
    """The base seed of visit `visit`'s rollouts (rollout i: base + i)."""
    return int(np.random.default_rng([seed, 0x57E4, visit]).integers(0, 2**30))


def engine_slots(engine) -> int | None:
    """The sequences `engine` runs at once where it knows them (in-process vLLM: its scheduler's
    max_num_seqs); None for a server behind HTTP (its slots are the server's)."""
    llm = getattr(engine, "llm", None)
    if llm is None:
        return None
    return int(llm.llm_engine.vllm_config.scheduler_config.max_num_seqs)


class StreamHost(Protocol):
    """What `StreamRollouts` asks of the collection it serves."""

    store: object  # a collect.RolloutStore: visit -> entry (with "samples")
    seed: int  # the run's seed: rollout seeds derive from it

    def entry(self, req) -> dict: ...  # the request's visit's entry (made at its first rollout)

    def stream_prompt(self, entry: dict) -> str | list[int]: ...  # what the engine samples

    def open_stream(self): ...  # a StreamEngine for one step

    def land(self, finished: list) -> list[int]: ...  # [(entry, Completion)] -> pass bits


@dataclass
class StreamCost:
    """One streamed step's engine books: time inside the engine (the host times its own
    scoring), and the rollouts aborted in flight with the tokens they had generated."""

    gen_s: float = 0.0
    cancelled: int = 0
    cancelled_tokens: int = 0


class StreamRollouts:
    """The stream driver's engine for one `StreamHost` (see the module docstring)."""

    def __init__(self, host):
        self.host = host
        self.engine = None  # the step's StreamEngine
        self.owner: dict[int, int] = {}  # rollout id -> visit
        self.by_visit: dict[int, set] = {}  # visit -> its rollout ids in flight
        self.sent: dict[int, int] = {}  # visit -> rollouts sent (the next one's seed index)
        self.base: dict[int, int] = {}  # visit -> rollout_seed (a fill reuses its probe's)
        self.cost = StreamCost()

    @property
    def inflight(self) -> int:
        return self.engine.in_flight

    def submit(self, pid, visit: int, n: int) -> None:
        host, t0 = self.host, time.perf_counter()
        entry = host.entry(Request(pid, n, visit))
        prompt = host.stream_prompt(entry)
        if visit not in self.base:  # numpy's seeding costs ~0.2 ms: once a visit, not a request
            self.base[visit] = rollout_seed(host.seed, visit)
        base, j = self.base[visit], self.sent.get(visit, 0)
        # one engine request for the n rollouts (seeds base+j ..): the per-rollout request cost
        # the served client most of its wall time; `cancel` aborts whole requests, as it must
        for rid in self.engine.add_group(prompt, base + j, n):
            self.owner[rid] = visit
            self.by_visit.setdefault(visit, set()).add(rid)
        self.sent[visit] = j + n
        self.cost.gen_s += time.perf_counter() - t0

    def poll(self) -> list[tuple[int, int, int]]:
        """The next completions: [(visit, reward, tokens)]."""
        t0 = time.perf_counter()
        done = self.engine.poll()
        self.cost.gen_s += time.perf_counter() - t0
        visits, landed, lengths = [], [], []
        for f in done:
            visit = self.owner.pop(f.rid)
            self.by_visit[visit].discard(f.rid)
            entry = self.host.store.entries[visit]
            entry["prompt_ids"] = entry["prompt_ids"] or f.prompt_token_ids
            visits.append(visit)
            landed.append((entry, f.completion))
            lengths.append(len(f.completion.token_ids))
        rewards = self.host.land(landed) if landed else []
        return list(zip(visits, rewards, lengths, strict=True))

    def cancel(self, visit: int) -> int:
        rids = self.by_visit.pop(visit, set())
        if rids:
            for rid in rids:
                del self.owner[rid]
            self._cancelled(len(rids), self.engine.abort(sorted(rids)))
        return len(rids)

    def _cancelled(self, n: int, tokens: int) -> None:
        self.cost.cancelled += n
        self.cost.cancelled_tokens += tokens

    def collect_step(self, driver, prompts):
        """One step of `driver` on a fresh stream engine; what is still in flight at its end (the
        prompt source ran out, or the step was capped) is aborted and counted. The step's
        engine books are `self.cost` afterwards."""
        self.cost = StreamCost()
        self.engine = self.host.open_stream()
        try:
            res = driver.collect_step(prompts)
            left = self.engine.in_flight
            self._cancelled(left, self.engine.close())
        finally:
            self.engine.close()
            self.engine = None
            self.owner.clear()
            self.by_visit.clear()
        held = driver.held_visits()
        self.sent = {v: n for v, n in self.sent.items() if v in held}
        self.base = {v: b for v, b in self.base.items() if v in held}
        return res


def make_driver(host, collector):
    """The stream driver of `collector` on `host`'s engine (``BOUNDARY``: one policy version a
    group; in flight: ``stream_capacity``, at most the engine's slots where it knows them); a
    collector a stream cannot drive is a ParameterError naming --schedule."""
    slots = engine_slots(getattr(host, "engine", None))
    capacity = stream_capacity(collector, slots, BOUNDARY)
    return stream_driver(collector, StreamRollouts(host), capacity, BOUNDARY)
