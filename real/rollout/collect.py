"""One training step's collection: the collector decides, the engine samples. `make_engine` builds
the run's engine, `RolloutDriver` drives the run's collector through it.

`sara_sim.collect.collectors` collectors are pure state machines: each round they hand us a list of
requests (prompt id, n more rollouts, visit) and want n binary rewards back per request. Here one
round is one batched `Engine.generate` call. Because a group's rollouts span several rounds — and,
for committed groups carried over, several steps — `RolloutStore` keeps every visit's completions
(once, keyed by `Request.visit`) in the order their rewards were returned; a committed group's GRPO
batch is its visit's list cut to k (the collector names each group's visit: `group_visits`), and
the rollouts of every visit the collector no longer holds are dropped after the step.

Sampling seeds are drawn per request from (run seed, call counter) and run consecutively over the
request's rollouts, so a resumed run samples what an uninterrupted one would have, independent of
how vLLM batches the round or which engine (in-process or server) samples it."""

import time
from dataclasses import dataclass, field

import numpy as np

from real.sampling import engine as _engine  # the module, so a test may swap VLLMEngine in it
from real.tasks import PromptSource, RewardGuard, Task


def make_engine(cfg, model_dir) -> _engine.Engine:
    """The run's engine: an in-process vLLM engine, or running vLLM servers (`--engine-url`). The
    one place every trainer asks for one (compare builds one and shares it between runs; a test
    swaps it here)."""
    if cfg.engine.engine_url:  # running vLLM servers instead of an in-process engine
        from real.sampling.client import ServerEngine

        return ServerEngine(cfg.engine.engine_url, model=model_dir)
    kw = {}
    if cfg.engine.gpu_memory_utilization:
        kw["gpu_memory_utilization"] = cfg.engine.gpu_memory_utilization
    return _engine.VLLMEngine(
        model_dir,
        seed=cfg.seed,
        dtype=cfg.engine.dtype,
        max_model_len=cfg.engine.max_model_len,
        # engine logprobs are the old policy's only if they include the temperature
        logprobs_mode="raw_logprobs" if cfg.engine.temperature == 1.0 else "processed_logprobs",
        **kw,
    )


@dataclass
class Sample:
    token_ids: list[int]
    logprobs: list[float]
    reward: int


@dataclass
class Group:
    prompt_id: int
    prompt_token_ids: list[int]
    samples: list[Sample]

    def as_rows(self):
        """(prompt_ids, completion_ids, old_logprobs, reward) rows for grpo.GRPO.step."""
        return [(self.prompt_token_ids, s.token_ids, s.logprobs, s.reward) for s in self.samples]


@dataclass
class StepBatch:
    groups: list[Group]
    result: object  # the collector's StepResult
    tokens: int = 0  # completion tokens generated during the step (all rollouts)
    rewards: list[int] = field(default_factory=list)  # every reward observed during the step
    lengths: list[int] = field(default_factory=list)  # ... and its rollout's tokens (aligned)
    gen_s: float = 0.0  # inside the engine
    reward_s: float = 0.0  # inside the verifiers
    collect_s: float = 0.0  # wall time of the whole collection
    round_s: list[float] = field(default_factory=list)  # wall time of each round
    reward_errors: int = 0  # verifier exceptions isolated during the step
    audited: int = 0  # abandoned prompts whose groups were completed off-budget (audit)
    audit_mixed: int = 0  # ... of which the completed group would have been mixed
    cancelled: int = 0  # rollouts a stream aborted in flight (in the result's rollouts too)
    cancelled_tokens: int = 0  # the tokens they had generated (in `tokens` too)

    @property
    def alloc_s(self) -> float:
        """Time spent outside engine and verifiers: collector decisions and bookkeeping."""
        return max(0.0, self.collect_s - self.gen_s - self.reward_s)


class RolloutStore:
    """Every rollout of the visits a collector still holds, keyed by `Request.visit` (one copy:
    the GRPO batch is cut from it). An entry is a dict: whatever the caller stores about the
    visit's prompt, plus "samples", in the order the rewards went to the collector."""

    def __init__(self):
        self.entries: dict[int, dict] = {}

    def entry(self, req, make) -> dict:
        """The visit's entry; `make(req)` builds it (without "samples") at the first request."""
        e = self.entries.get(req.visit)
        if e is None:  # first round of this visit: look the prompt up once
            e = self.entries[req.visit] = {**make(req), "samples": []}
        return e

    def claim(self, collector, res, k: int, reward=lambda s: s.reward) -> list[dict]:
        """The entries of the step's committed groups, in `res.groups` order (popped); each
        group's first k rewards are checked against what the collector reports."""
        out = []
        for (pid, rewards), visit in zip(res.groups, collector.group_visits, strict=True):
            e = self.entries.pop(visit, None)
            if e is None or len(e["samples"]) < k:
                raise RuntimeError(f"collector returned group {pid} without {k} rollouts")
            if [reward(s) for s in e["samples"][:k]] != list(rewards)[:k]:
                raise RuntimeError(f"group {pid}: rewards differ from the rollouts recorded")
            out.append(e)
        return out

    def unheld(self, collector) -> list[int]:
        """Visits whose rollouts the collector no longer holds (abandoned, saturated, DS waste)."""
        held = collector.held_visits()
        return [v for v in self.entries if v not in held]

    def prune(self, collector) -> None:
        """Drop every unheld visit; keep in-progress prompts and carried groups."""
        for v in self.unheld(collector):
            del self.entries[v]


class RolloutDriver:
    """Drives a `make_collector` object with an `Engine`; owns the run's rollout store."""

    def __init__(
        self,
        engine,
        task: Task,
        collector,
        k: int,
        *,
        seed: int = 0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int | None = None,
        audit: int = 0,
        schedule: str = "rounds",
    ):
        self.engine, self.task, self.collector, self.k = engine, task, collector, k
        self.audit = audit  # abandoned prompts per step to complete off-budget (0: no audit)
        self.seed, self.temperature, self.top_p = seed, temperature, top_p
        self.max_tokens = max_tokens or task.max_tokens
        self.guard = RewardGuard(task.reward)
        self.store = RolloutStore()  # visit -> prompt id, problem, prompt_ids, samples
        self.calls = 0  # engine calls so far: the sampling-seed counter
        self._step: StepBatch | None = None
        self.driver = None  # schedule "stream": real/rollout/streamed.py's driver of `collector`
        if schedule == "stream":
            from real.rollout.streamed import make_driver

            self.driver = make_driver(self, collector)

    # ---------------------------------------------------------------- one round
    def _new_entry(self, req) -> dict:
        problem = self.task.problem(req.prompt_id)
        return {"prompt_id": req.prompt_id, "problem": problem, "prompt_ids": None}

    def _sample(self, requests) -> list[list[int]]:
        t0 = time.perf_counter()
        st = self._step
        entries = [self.entry(r) for r in requests]
        ns = [int(r.n) for r in requests]
        # Each request's rollouts get consecutive seeds base, base + 1, ...: vLLM seeds the
        # i-th child of an n-sample request with seed + i, so a server client sends the whole
        # request as one HTTP call (real/sampling/client.py) and still samples exactly what n seeded
        # single-sample requests (the in-process engine) would.
        bases = np.random.default_rng([self.seed, 0x5A4A, self.calls]).integers(
            0, 2**31 - 1 - max(ns, default=0), size=len(ns)
        )
        self.calls += 1
        tg = time.perf_counter()
        results = self._generate(entries, ns, bases)
        st.gen_s += time.perf_counter() - tg
        out = [
            self.score(entry, res.completions, res.prompt_token_ids)
            for entry, res in zip(entries, results, strict=True)
        ]
        for req, res in zip(requests, results, strict=True):  # plans priced in tokens learn
            self.collector.observe_lengths(req.visit, [c.n_tokens for c in res.completions])
        st.round_s.append(time.perf_counter() - t0)
        return out

    # ------------------------------------------------------------ what a driver's engine calls
    @property
    def batch(self) -> StepBatch | None:
        """The step being collected (None between steps): an engine adds its times and counts."""
        return self._step

    def entry(self, req) -> dict:
        """The store's entry of the request's visit (made at its first request)."""
        return self.store.entry(req, self._new_entry)

    def score(self, entry: dict, completions, prompt_ids) -> list[int]:
        """The guarded rewards of completions of the entry's prompt; each joins the visit's
        samples (in this order) and the step's counts, its verifier time the step's reward_s."""
        t0, st = time.perf_counter(), self._step
        entry["prompt_ids"] = entry["prompt_ids"] or prompt_ids
        before = self.guard.errors
        rewards = [self.guard(c.text, entry["problem"]) for c in completions]
        for c, r in zip(completions, rewards, strict=True):
            entry["samples"].append(Sample(c.token_ids, c.logprobs, r))
            st.tokens += c.n_tokens
            st.rewards.append(r)
            st.lengths.append(c.n_tokens)
        st.reward_errors += self.guard.errors - before
        st.reward_s += time.perf_counter() - t0
        return rewards

    def _generate(self, entries, ns, bases):
        """One engine call: n_i rollouts of entry i with seeds base_i, base_i + 1, ..."""
        return self.engine.generate(
            [e["problem"].prompt for e in entries],
            ns,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            seeds=[(b + np.arange(n)).tolist() for b, n in zip(bases, ns, strict=True)],
        )

    # ---------------------------------------------------------------- a stream's host
    def stream_prompt(self, entry: dict) -> str | list[int]:
        # a fill: the token ids the engine returned with the probe (not tokenised again)
        return entry["prompt_ids"] or entry["problem"].prompt

    def open_stream(self):
        return self.engine.open_stream(self.max_tokens, self.temperature, self.top_p)

    def land(self, finished) -> list[int]:
        """Score and keep each (entry, completion) a stream returned; their rewards."""
        return [r for entry, c in finished for r in self.score(entry, [c], entry["prompt_ids"])]

    # ---------------------------------------------------------------- one step
    def collect(self, prompts: PromptSource) -> StepBatch:
        self._step = st = StepBatch(groups=[], result=None)
        t0 = time.perf_counter()
        if self.driver is None:
            res = self.collector.collect_step(prompts, self._sample)
        else:  # round-free: one engine wait per completion (real/rollout/streamed.py)
            live = self.driver.live
            res = live.collect_step(self.driver, prompts)
            self.calls += 1  # a streamed step: the audit's seed counter moves on
            cost = live.cost
            st.gen_s += cost.gen_s  # reward_s: counted by score
            st.tokens += cost.cancelled_tokens  # finished rollouts' tokens: counted by score
            st.cancelled, st.cancelled_tokens = cost.cancelled, cost.cancelled_tokens
        st.collect_s = time.perf_counter() - t0
        st.result = res
        holder = self.collector if self.driver is None else self.driver  # names groups, visits
        for e in self.store.claim(holder, res, self.k):
            st.groups.append(Group(e["prompt_id"], e["prompt_ids"], e["samples"][: self.k]))
        if self.audit and res.abandoned:
            self._audit(st, res.abandoned)
        self.store.prune(holder)
        self._step = None
        return st

    def _audit(self, st: StepBatch, abandoned) -> None:
        """False-abandon audit: complete a sample of this step's abandoned groups to k rollouts,
        off-budget (not in st.tokens / rollouts, own seeds: the run samples what it would without
        the audit), and count those that would have been mixed (0 < successes < k)."""
        rng = np.random.default_rng([self.seed, 0xAD17, self.calls])
        # res.abandoned names prompt ids; prompt ids are unique within a run, so each names
        # the one visit the collector no longer holds (skipped prompts have no rollouts)
        entries = self.store.entries
        holder = self.collector if self.driver is None else self.driver
        short = {entries[v]["prompt_id"]: v for v in self.store.unheld(holder)}
        short = {p: v for p, v in short.items() if len(entries[v]["samples"]) < self.k}
        pids = [p for p in abandoned if p in short]
        pids = [pids[i] for i in sorted(rng.permutation(len(pids))[: self.audit])]
        if not pids:
            return
        chosen = [entries[short[p]] for p in pids]
        ns = [self.k - len(e["samples"]) for e in chosen]
        results = self._generate(chosen, ns, rng.integers(0, 2**31 - 1 - self.k, size=len(ns)))
        for e, r in zip(chosen, results, strict=True):
            wins = sum(s.reward for s in e["samples"])
            wins += sum(self.guard(c.text, e["problem"]) for c in r.completions)
            st.audited += 1
            st.audit_mixed += int(0 < wins < self.k)

    def state_dict(self) -> dict:
        state = {
            "pool": self.store.entries,
            "calls": self.calls,
            "reward_errors": self.guard.errors,
            "collector": self.collector.state_dict(),
        }
        if self.driver is not None:  # DS streamed keeps its counters in the driver
            state["stream"] = {"driver": self.driver.state_dict(), "sent": self.driver.live.sent}
        return state

    def load_state_dict(self, d: dict) -> None:
        entries, state = d["pool"], dict(d["collector"])  # the checkpoint's keys, as written
        self.store.entries, self.calls, self.guard.errors = entries, d["calls"], d["reward_errors"]
        self.collector.load_state_dict(state)
        if self.driver is not None and "stream" in d:
            self.driver.load_state_dict(d["stream"]["driver"])
            self.driver.live.sent = dict(d["stream"]["sent"])
