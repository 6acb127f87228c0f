"""SARA (and DAPO dynamic sampling) inside Hugging Face TRL's `GRPOTrainer`, via `rollout_func`.

TRL hands `rollout_func(prompts, trainer)` this process's generation batch: `groups` prompts,
each repeated k = `num_generations` times, contiguous.  `SaraRollout` treats those prompts as the
first candidates of a prompt source, runs one of our collectors (`sara_sim.collect.collectors`:
uniform, ds, sara, sara-eb, sara-auto, sara-history, ...) round by round, draws replacements for
abandoned (sara) or discarded (ds) prompts from the train dataset through a seeded iterator it
owns, and returns exactly `groups` committed groups of k rollouts — TRL computes advantages over
contiguous groups of k and does not check the count itself, so a wrong count would train silently
misaligned.

Rewards (``rewards.py``): the user's own reward functions score every rollout as it is
generated.  Their weighted sum (TRL's `reward_weights`, default all 1) is what SARA decides on: a
rollout *passes* iff the sum is >= `threshold` (default 1.0, i.e. "correct" for the usual 0/1
accuracy reward; None counts as 0, as in TRL's nansum).  TRL then gets the very same floats back
through pass-through reward functions (`sara.reward_funcs`, one per user function, same names), so
nothing is scored twice.
Every dataset column of the row a rollout came from reaches the reward functions as a keyword
(replacement rows included); TRL's `prompts` argument still names the original row, so a reward
function that needs the prompt should read the `sara_prompt` column instead.

Generation, first match wins (``backends.generate``): our in-process
`real.sampling.engine.VLLMEngine` or running vLLM servers (`real.sampling.client.ServerEngine`,
`--engine-url`) given as `engine=` (the trainer's weights are pushed into it before each call),
TRL's colocated vLLM (`use_vllm=True, vllm_mode="colocate"`; TRL syncs its weights before each
call), else transformers `generate` (slow, runs anywhere). vLLM rollouts carry their own sampling
seed (resumed runs sample what uninterrupted ones would); HF `generate` is seeded per round.

Schedules (`schedule=`): "rounds" (the default) runs the collector round by round, one batched
generation call a round; "stream" (ds and the SARA collectors, selectors included; a vLLM backend)
drives the same collector round-free through the one stream driver (`sara_sim.collect.stream` via
`real.rollout.streamed`, as `sara-real --schedule stream` does): one seeded engine request per
planned request (n rollouts) with TRL's token-id prompt, an abandoned prompt's rollouts aborted in
flight (their tokens counted), and the step ended by the "fresh" boundary — nothing in flight and no
open prompt outlives the weights pushed before the next call, so every group handed to TRL is k
rollouts of one prompt from one policy version.

Per call the collector's metrics (rollouts, tokens, effective groups, abandoned, rounds, rollouts
per effective group, DS waste, carried, cancelled rollouts and their tokens, padded) go to TRL's
logs under `sara/` through the public `log_metric` hook (averaged over processes).  Resume:
`sara.callback` saves the adapter state into every TRL checkpoint (`sara_rollout_rank{R}.pt`); a
run resumed with `resume_from_checkpoint` restores it before its first rollout, so the prompt
source continues without repeats or gaps.
"""

import itertools
import time
from pathlib import Path

from real.base.config import StrategyConfig, build_collector, deprecated
from real.io.runfolder import checkpoint_dir
from real.io.runlog import collect_fields
from real.rollout.collect import RolloutStore
from real.rollout.streamed import make_driver
from real.tasks.base import PromptSource
from real.trl.backends import (
    SaveCallback,
    check_trl_args,
    generate,
    load_state,
    open_stream,
    save_state,
    tokenize,
)
from real.trl.rewards import Datasets, Rewards, prompt_key
from sara_sim.collect.collectors import STRATEGIES, Request
from sara_sim.core.errors import ParameterError, check_choice

SCHEDULES = ("rounds", "stream")


def _collector(strategy, collector, options, k, groups, seed, epoch_size, schedule):
    """The collector SaraRollout drives: `collector` as given (built for k and groups), else one
    built from `options` (``StrategyConfig`` fields) for `schedule` — never both."""
    if collector is None:
        known = StrategyConfig.__dataclass_fields__
        bad = sorted(set(options) - set(known))
        if bad:
            raise ParameterError(bad[0], f"unknown option; choose from {', '.join(known)}")
        # history strategies: prompt ids are epoch * size + row (see make_collector)
        return build_collector(
            strategy,
            StrategyConfig(**options, schedule=schedule),
            k=k,
            groups=groups,
            seed=seed,
            epoch_size=epoch_size,
        )
    if options or (collector.k, collector.groups) != (k, groups):
        raise ParameterError("collector", f"give a collector for k={k}, groups={groups} or options")
    return collector


def _batch(groups, data, n_funcs, k) -> dict:
    """TRL's rollout batch: k rows per group (prompt and completion ids, logprobs, the row's
    dataset columns, `sara_prompt`, each reward function's scores as `sara_reward_j`)."""
    out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "sara_prompt": []}
    cols = {c: [] for c in data.columns}
    scores = [[] for _ in range(n_funcs)]
    for g in groups:
        row = data.train[g["row"]]
        for ids, lps, s, _ in g["samples"][:k]:
            out["prompt_ids"].append(list(g["prompt_ids"]))
            out["completion_ids"].append(list(ids))
            out["logprobs"].append(lps)
            out["sara_prompt"].append(row["prompt"])
            for c in data.columns:
                cols[c].append(row[c])
            for j, x in enumerate(s):
                scores[j].append(x)
    if any(lp is None for lp in out["logprobs"]):
        out["logprobs"] = None  # HF generate: TRL recomputes what it needs
    out.update(cols)
    for j, vals in enumerate(scores):
        out[f"sara_reward_{j}"] = vals
    return out


def _step_metrics(res, groups, k, stats, padded, collect_s) -> dict:
    """One training call's metrics (TRL's `sara/` logs): the collector's step result `res`, the
    k-rollout `groups` handed to TRL, the call's timings and rewards `stats`, how many groups
    were padded, and the wall time of the collection."""
    bits = [[s[3] for s in g["samples"][:k]] for g in groups]
    eff = sum(0 < sum(b) < k for b in bits)
    fields = collect_fields(
        res,
        tokens=stats["tokens"],
        effective=eff,
        groups=len(groups),
        reward_mean=sum(stats["passes"]) / max(1, len(stats["passes"])),
        batch_reward_mean=sum(map(sum, bits)) / max(1, k * len(bits)),
        cancelled=stats["cancelled"],
        cancelled_tokens=stats["cancelled_tokens"],
    )
    return {
        **fields,
        "rollouts_per_effective_group": res.rollouts / eff if eff else None,  # undefined
        "padded": padded,
        "gen_s": stats["gen_s"],
        "reward_s": stats["reward_s"],
        "round_s": list(stats["round_s"]),
        "collect_s": collect_s,
        "alloc_s": max(0.0, collect_s - stats["gen_s"] - stats["reward_s"]),
    }


class SaraRollout:
    """`rollout_func` for TRL's GRPOTrainer that allocates rollouts with one of our collectors.

    Pass the trainer's own `args` (GRPOConfig) and `train_dataset`; everything is checked here,
    before any trainer or engine exists: k = num_generations >= 2, whole groups per process, the
    strategy name and its options (`real.base.config.StrategyConfig` fields: tau_low in [0, 1],
    probe, rho, ...), reward functions that are callables. `collector`: one already built for k
    and groups (`sara-real --trainer trl` passes the one its checks built) instead of the
    options. `schedule`: "rounds" or "stream" (round-free; needs a vLLM backend: `engine=` or
    `use_vllm=True`)."""

    def __init__(
        self,
        args,
        train_dataset,
        reward_funcs,
        strategy: str = "sara",
        *,
        threshold: float = 1.0,
        engine=None,
        seed: int | None = None,
        eval_dataset=None,
        collector=None,
        schedule: str = "rounds",
        **collector_options,
    ):
        if "allocator" in collector_options:  # the deprecated spelling of strategy=
            strategy = collector_options.pop("allocator")  # deprecated alias
            deprecated("allocator=", "strategy=")
        self.k, self.groups, funcs, weights = check_trl_args(args, reward_funcs)
        self.schedule = check_choice(schedule, "schedule", SCHEDULES)
        if strategy not in STRATEGIES:
            raise ParameterError(
                "strategy", f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}"
            )
        self.rewards = Rewards(funcs, weights, threshold)
        self.data = Datasets(train_dataset, eval_dataset)
        self.backend = "engine" if engine else ("trl-vllm" if args.use_vllm else "hf")
        self.engine = engine
        if schedule == "stream" and self.backend == "hf":
            raise ParameterError(
                "schedule", "stream needs a vLLM backend (engine= or use_vllm=True), not HF's"
            )
        # each process draws its own replacements and sampling seeds: its own seeded permutation
        self.rank = int(getattr(args, "process_index", 0))
        self.seed = (args.seed if seed is None else seed) + 1_000_003 * self.rank
        self.strategy = strategy
        self.collector = _collector(
            strategy,
            collector,
            collector_options,
            self.k,
            self.groups,
            self.seed,
            self.data.size,
            schedule,
        )
        self.driver = None  # schedule "stream": the stream driver of the collector (on self)
        if schedule == "stream":
            self.driver = _stream_driver(self, self.collector)
        self.prompts = PromptSource(self.data, seed=self.seed)
        self.store = RolloutStore()  # visit -> row, prompt_ids, samples [(ids, lps, scores, pass)]
        self.calls = 0  # generation calls so far: the sampling-seed counter
        self.last = {}  # the last step's metrics (logged by the pass-through reward function)
        self.step_log = []  # per training call: metrics + the rows used (for callers and tests)
        self.trainer = None
        self._loaded = False
        self.reward_funcs = [
            self.rewards.passthrough(i, f, self._training_metrics) for i, f in enumerate(funcs)
        ]
        self.callback = SaveCallback(self)
        self.rewards.check_on(train_dataset)

    # ------------------------------------------------------------ TRL's hook
    def __call__(self, prompts, trainer):
        self.trainer = trainer
        if not trainer.model.training:  # evaluation: plain k samples per prompt, no allocation
            return self._plain(prompts, trainer)
        if not self._loaded:
            self._maybe_resume(trainer)
        n, k = len(prompts), self.k
        if n != self.groups * k or any(
            prompt_key(prompts[i]) != prompt_key(prompts[i - i % k]) for i in range(n)
        ):
            raise RuntimeError(
                f"rollout_func got {n} prompts; expected {self.groups} blocks of {k} identical ones"
            )
        ts = time.perf_counter()
        if self.engine is not None:
            self.engine.push_weights(trainer.accelerator.unwrap_model(trainer.model))
        sync_s = time.perf_counter() - ts
        epoch = self.prompts.pos // self.data.size
        handed = [epoch * self.data.size + self.data.row(p) for p in prompts[::k]]
        self._stats = {"tokens": 0, "gen_s": 0.0, "reward_s": 0.0, "round_s": [], "passes": []}
        self._stats |= {"cancelled": 0, "cancelled_tokens": 0}
        t0, pos0 = time.perf_counter(), self.prompts.pos
        res = self._collect(itertools.chain(handed, self.prompts))
        holder = self.collector if self.driver is None else self.driver  # names groups, visits
        groups = self.store.claim(holder, res, k, reward=lambda s: s[3])
        padded = self._pad(groups, handed, holder)
        self.store.prune(holder)
        collect_s = time.perf_counter() - t0
        self.last = _step_metrics(res, groups, k, self._stats, padded, collect_s)
        self.last["sync_s"] = sync_s
        rows = [g["row"] for g in groups]
        self.step_log.append({**self.last, "rows": rows, "prompts": (pos0, self.prompts.pos)})
        out = _batch(groups, self.data, len(self.rewards.funcs), k)
        if len(out["completion_ids"]) != self.groups * k:
            raise RuntimeError(f"built {len(out['completion_ids'])} rows, not {self.groups * k}")
        return out

    def _collect(self, prompts):
        """The collector's step on `prompts`: round by round, or streamed (its engine books —
        time in the engine, cancelled rollouts and their tokens — join the step's stats)."""
        if self.driver is None:
            return self.collector.collect_step(prompts, self._sample)
        live = self.driver.live
        res = live.collect_step(self.driver, prompts)
        st, cost = self._stats, live.cost
        st["gen_s"] += cost.gen_s  # reward_s: counted by _score
        st["tokens"] += cost.cancelled_tokens  # finished rollouts': counted by _score
        st["cancelled"], st["cancelled_tokens"] = cost.cancelled, cost.cancelled_tokens
        return res

    # ------------------------------------------------------------ one round
    def _new_entry(self, req) -> dict:
        row = int(req.prompt_id) % self.data.size
        ids = tokenize(self.trainer, self.data.train[row]["prompt"])
        return {"row": row, "prompt_id": req.prompt_id, "prompt_ids": ids}

    def entry(self, req) -> dict:
        """The store's entry of the request's visit (made at its first request)."""
        return self.store.entry(req, self._new_entry)

    def _sample(self, requests):
        import numpy as np

        st = self._stats
        t0 = time.perf_counter()
        entries = [self.entry(r) for r in requests]
        ns = [int(r.n) for r in requests]
        draws = np.random.default_rng([self.seed, 0x7A1, self.calls]).integers(
            0, 2**31 - 1, sum(ns)
        )
        seeds = [x.tolist() for x in np.split(draws, np.cumsum(ns)[:-1])]
        self.calls += 1
        tg = time.perf_counter()
        outs = generate(self.trainer, self.engine, [e["prompt_ids"] for e in entries], ns, seeds)
        st["gen_s"] += time.perf_counter() - tg
        bits = self._score([(e, ids, lps) for e, out in zip(entries, outs) for ids, lps in out])
        for r, out in zip(requests, outs, strict=True):  # plans priced in tokens learn
            self.collector.observe_lengths(r.visit, [len(ids) for ids, _ in out])
        st["round_s"].append(time.perf_counter() - t0)
        ends = np.cumsum(ns).tolist()
        return [bits[e - n : e] for e, n in zip(ends, ns, strict=True)]

    def _score(self, flat) -> list:
        """Score rollouts [(entry, completion ids, logprobs)] with the user's reward functions
        (one batched call), keep each in its entry's samples; their pass bits."""
        st, tr = self._stats, time.perf_counter()
        records = [self.data.train[e["row"]] for e, _, _ in flat]
        scores = self.rewards.score(self.trainer, records, [ids for _, ids, _ in flat])
        bits = []
        for (e, ids, lps), s in zip(flat, scores, strict=True):
            passed = self.rewards.passed(s)
            e["samples"].append((ids, lps, s, passed))
            st["tokens"] += len(ids)
            bits.append(passed)
        st["passes"].extend(bits)
        st["reward_s"] += time.perf_counter() - tr
        return bits

    # ------------------------------------------------------------ a stream's host
    def stream_prompt(self, entry) -> list[int]:
        return entry["prompt_ids"]  # TRL's prompt, tokenised as TRL does (templated)

    def open_stream(self):
        return open_stream(self.trainer, self.engine)

    def land(self, finished) -> list:
        """Rollouts a stream returned [(entry, Completion)]: scored and kept; their pass bits."""
        return self._score([(e, c.token_ids, c.logprobs) for e, c in finished])

    # ------------------------------------------------------------ assembling the batch
    def _pad(self, groups, handed, holder) -> int:
        """DS capped or SARA out of rounds: fewer groups than asked.  TRL needs all of them;
        fill with full saturated groups already drawn (zero advantage), else fresh uniform
        groups.  Counted."""
        need = self.groups - len(groups)
        if need <= 0:
            return 0
        entries = self.store.entries
        full = [v for v in self.store.unheld(holder) if len(entries[v]["samples"]) >= self.k]
        for v in full:
            if len(groups) < self.groups:
                groups.append(entries.pop(v))
        for uid in handed[: self.groups - len(groups)]:
            self._sample([Request(uid, self.k, -1)])
            groups.append(entries.pop(-1))
        return need

    # ------------------------------------------------------------ evaluation calls
    def _plain(self, prompts, trainer):
        """TRL's evaluation batches: one sample per row (TRL repeats each prompt), no allocation;
        the rows' columns come from `eval_dataset` (given to SaraRollout) or the train dataset."""
        records = [self.data.record(p) for p in prompts]
        ids = [tokenize(self.trainer, p) for p in prompts]
        seeds = [[self.seed + i] for i in range(len(ids))]
        outs = generate(trainer, self.engine, ids, [1] * len(ids), seeds)
        comp = [o[0][0] for o in outs]
        scores = self.rewards.score(trainer, records, comp)
        out = {"prompt_ids": ids, "completion_ids": comp, "logprobs": None}
        out["sara_prompt"] = [r["prompt"] for r in records]
        for j in range(len(self.rewards.funcs)):
            out[f"sara_reward_{j}"] = [s[j] for s in scores]
        return out

    # ------------------------------------------------------------ TRL-facing reward functions
    def _training_metrics(self):
        """What the first pass-through reward function logs: the last step's metrics while
        training, nothing during evaluation."""
        return self.last if self.trainer.model.training else None

    # ------------------------------------------------------------ checkpoint state
    def state_dict(self) -> dict:
        state = {
            "pool": self.store.entries,
            "calls": self.calls,
            "prompts": self.prompts.state_dict(),
            "collector": self.collector.state_dict(),
            "strategy": self.strategy,
            "k": self.k,
            "groups": self.groups,
        }
        if self.driver is not None:  # DS streamed keeps its counters in the driver
            live = self.driver.live
            state["schedule"] = {"driver": self.driver.state_dict(), "sent": live.sent}
        return state

    def load_state_dict(self, d: dict) -> None:
        was = "stream" if "schedule" in d else "rounds"  # files before streaming: rounds
        saved = (d["strategy"], d["k"], d["groups"], was)
        if saved != (self.strategy, self.k, self.groups, self.schedule):
            raise ParameterError(
                "resume_from_checkpoint",
                f"saved by strategy={saved[0]} k={saved[1]} groups={saved[2]} schedule={was}, "
                f"not {self.strategy} k={self.k} groups={self.groups} schedule={self.schedule}",
            )
        self.store.entries, self.calls = d["pool"], d["calls"]
        self.prompts.load_state_dict(d["prompts"])
        self.collector.load_state_dict(d["collector"])
        if self.driver is not None:
            self.driver.load_state_dict(d["schedule"]["driver"])
            self.driver.live.sent = dict(d["schedule"]["sent"])
        self._loaded = True

    def save(self, ckpt_dir) -> Path:
        return save_state(self, ckpt_dir)

    def load(self, ckpt_dir) -> None:
        """Restore from a TRL checkpoint folder (done automatically for output_dir/checkpoint-N)."""
        load_state(self, ckpt_dir)

    def _maybe_resume(self, trainer):
        self._loaded = True
        step = trainer.state.global_step
        if step > 0:  # TRL resumed from a checkpoint: its step names the folder
            self.load(checkpoint_dir(trainer.args.output_dir, step))


def _stream_driver(host, collector):
    """The stream driver of `collector` on `host`, a collector no stream can drive refused as
    a ParameterError naming SaraRollout's argument (the driver names the CLI flag)."""
    try:
        return make_driver(host, collector)
    except ParameterError as e:
        message = str(e)[len(e.parameter) + 2 :]
        raise ParameterError(e.parameter.removeprefix("--"), message) from None
