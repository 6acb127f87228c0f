"""One training step's collection: the core allocator decides, the vLLM engine samples.

`sara_sim.allocator` collectors are pure state machines: each round they hand us a list of
requests (prompt id, n more rollouts) and want n binary rewards back per request. Here one round
is one batched `Engine.generate` call. Because a group's rollouts span several rounds — and, for
committed groups carried over, several steps — we keep every prompt's completions in the order
their rewards were returned; a committed group's GRPO batch is that list cut to k, which is exactly
the reward list the collector reports for it (checked, not assumed).

Sampling seeds are drawn per request from (run seed, call counter) and run consecutively over the
request's rollouts, so a resumed run samples what an uninterrupted one would have, independent of
how vLLM batches the round or which engine (in-process or server) samples it."""

import time
from dataclasses import dataclass, field

import numpy as np

from real.tasks import PromptStream, RewardGuard, Task


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
    result: object  # the allocator's StepResult
    tokens: int = 0  # completion tokens generated during the step (all rollouts)
    rewards: list[int] = field(default_factory=list)  # every reward observed during the step
    gen_s: float = 0.0  # inside the engine
    reward_s: float = 0.0  # inside the verifiers
    collect_s: float = 0.0  # wall time of the whole collection
    round_s: list[float] = field(default_factory=list)  # wall time of each round
    reward_errors: int = 0  # verifier exceptions isolated during the step
    audited: int = 0  # abandoned prompts whose groups were completed off-budget (audit)
    audit_mixed: int = 0  # ... of which the completed group would have been mixed

    @property
    def alloc_s(self) -> float:
        """Time spent outside engine and verifiers: allocator decisions and bookkeeping."""
        return max(0.0, self.collect_s - self.gen_s - self.reward_s)


class RolloutCollector:
    """Drives a `make_collector` object with an Engine; owns the per-prompt rollout pool."""

    def __init__(
        self,
        engine,
        task: Task,
        allocator,
        k: int,
        *,
        seed: int = 0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int | None = None,
        audit: int = 0,
    ):
        self.engine, self.task, self.col, self.k = engine, task, allocator, k
        self.audit = audit  # abandoned prompts per step to complete off-budget (0: no audit)
        self.seed, self.temperature, self.top_p = seed, temperature, top_p
        self.max_tokens = max_tokens or task.max_tokens
        self.guard = RewardGuard(task.reward)
        self.pool: dict[int, dict] = {}  # prompt id -> visit, problem, prompt_ids, samples
        self.calls = 0  # engine calls so far: the sampling-seed counter
        self._step: StepBatch | None = None

    # ---------------------------------------------------------------- one round
    def _entry(self, req) -> dict:
        entry = self.pool.get(req.prompt_id)
        if entry is None:  # first visit: look the problem up once, not once per round
            entry = self.pool[req.prompt_id] = {
                "visit": req.visit,
                "problem": self.task.problem(req.prompt_id),
                "prompt_ids": None,
                "samples": [],
            }
        elif entry["visit"] != req.visit:  # two open visits of one id would mix their groups
            raise RuntimeError(f"prompt id {req.prompt_id} requested by two open visits")
        return entry

    def _sample(self, requests) -> list[list[int]]:
        t0 = time.perf_counter()
        st = self._step
        entries = [self._entry(r) for r in requests]
        ns = [int(r.n) for r in requests]
        # Each request's rollouts get consecutive seeds base, base + 1, ...: vLLM seeds the
        # i-th child of an n-sample request with seed + i, so a server client sends the whole
        # request as one HTTP call (real/client.py) and still samples exactly what n seeded
        # single-sample requests (the in-process engine) would.
        bases = np.random.default_rng([self.seed, 0x5A4A, self.calls]).integers(
            0, 2**31 - 1 - max(ns, default=0), size=len(ns)
        )
        self.calls += 1
        tg = time.perf_counter()
        results = self._generate(entries, ns, bases)
        st.gen_s += time.perf_counter() - tg
        out = []
        tr = time.perf_counter()
        before = self.guard.errors
        for entry, res in zip(entries, results, strict=True):
            entry["prompt_ids"] = entry["prompt_ids"] or res.prompt_token_ids
            rewards = [self.guard(c.text, entry["problem"]) for c in res.completions]
            for c, r in zip(res.completions, rewards, strict=True):
                entry["samples"].append(Sample(c.token_ids, c.logprobs, r))
                st.tokens += c.n_tokens
            st.rewards.extend(rewards)
            out.append(rewards)
        st.reward_errors += self.guard.errors - before
        st.reward_s += time.perf_counter() - tr  # verifiers and the (cheap) bookkeeping above
        st.round_s.append(time.perf_counter() - t0)
        return out

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

    # ---------------------------------------------------------------- one step
    def collect(self, stream: PromptStream) -> StepBatch:
        self._step = st = StepBatch(groups=[], result=None)
        t0 = time.perf_counter()
        res = self.col.collect_step(stream, self._sample)
        st.collect_s = time.perf_counter() - t0
        st.result = res
        for pid, rewards in res.groups:
            entry = self.pool.pop(pid, None)
            if entry is None or len(entry["samples"]) < self.k:
                raise RuntimeError(f"allocator returned group {pid} without {self.k} rollouts")
            samples = entry["samples"][: self.k]
            if [s.reward for s in samples] != list(rewards)[: self.k]:
                raise RuntimeError(f"group {pid}: rewards differ from the rollouts recorded")
            st.groups.append(Group(pid, entry["prompt_ids"], samples))
        if self.audit and res.abandoned:
            self._audit(st, res.abandoned)
        # Drop every rollout the allocator no longer holds (abandoned, saturated, DS waste);
        # keep in-progress prompts and carried groups, whose completions the next step needs.
        live = live_prompts(self.col)
        for pid in [p for p in self.pool if p not in live]:
            del self.pool[pid]
        self._step = None
        return st

    def _audit(self, st: StepBatch, abandoned) -> None:
        """False-abandon audit: complete a sample of this step's abandoned groups to k rollouts,
        off-budget (not in st.tokens / rollouts, own seeds: the run samples what it would without
        the audit), and count those that would have been mixed (0 < successes < k)."""
        rng = np.random.default_rng([self.seed, 0xAD17, self.calls])
        pids = [p for p in abandoned if p in self.pool and len(self.pool[p]["samples"]) < self.k]
        pids = [pids[i] for i in sorted(rng.permutation(len(pids))[: self.audit])]
        if not pids:
            return
        entries = [self.pool[p] for p in pids]
        ns = [self.k - len(e["samples"]) for e in entries]
        results = self._generate(entries, ns, rng.integers(0, 2**31 - 1 - self.k, size=len(ns)))
        for e, r in zip(entries, results, strict=True):
            wins = sum(s.reward for s in e["samples"])
            wins += sum(self.guard(c.text, e["problem"]) for c in r.completions)
            st.audited += 1
            st.audit_mixed += int(0 < wins < self.k)

    def state_dict(self) -> dict:
        return {
            "pool": self.pool,
            "calls": self.calls,
            "reward_errors": self.guard.errors,
            "allocator": self.col.state_dict(),
        }

    def load_state_dict(self, d: dict) -> None:
        self.pool, self.calls, self.guard.errors = d["pool"], d["calls"], d["reward_errors"]
        self.col.load_state_dict(d["allocator"])


def live_prompts(col) -> set:
    """Prompt ids whose rollouts the collector still holds: open prompts and carried groups."""
    live = {p.pid for p in getattr(col, "open", {}).values()}
    live.update(pid for pid, _ in getattr(col, "done_groups", []))
    return live
