"""SARA (and DAPO dynamic sampling) inside Hugging Face TRL's `GRPOTrainer`, via `rollout_func`.

TRL hands `rollout_func(prompts, trainer)` this process's generation batch: B prompts, each
repeated G = `num_generations` times, contiguous.  `SaraRollout` treats those B prompts as the
first candidates of a prompt stream, runs one of our collectors (`sara_sim.collect.allocator`:
uniform,
ds, sara, sara-eb, sara-auto, sara-history, ...) round by round, draws replacements for abandoned
(sara) or discarded (ds) prompts from the train dataset through a seeded iterator it owns, and
returns exactly B committed groups of G rollouts — TRL computes advantages over contiguous groups
of G and does not check the count itself, so a wrong count would train silently misaligned.

Rewards: the user's own reward functions score every rollout as it is generated.  Their weighted
sum (TRL's `reward_weights`, default all 1) is what SARA decides on: a rollout *passes* iff the sum
is >= `threshold` (default 1.0, i.e. "correct" for the usual 0/1 accuracy reward; None counts as
0, as in TRL's nansum).  TRL then gets the very same floats back through pass-through reward
functions (`sara.reward_funcs`, one per user function, same names), so nothing is scored twice.
Every dataset column of the row a rollout came from reaches the reward functions as a keyword
(replacement rows included); TRL's `prompts` argument still names the original row, so a reward
function that needs the prompt should read the `sara_prompt` column instead.

Generation, first match wins (``backends.generate``): our in-process
`real.sampling.engine.Engine` given as `engine=` (the trainer's weights are pushed into it before
each call), TRL's colocated vLLM (`use_vllm=True, vllm_mode="colocate"`; TRL syncs its weights
before each call), else transformers `generate` (slow, runs anywhere).  vLLM rollouts carry their
own sampling seed (resumed runs sample what uninterrupted ones would); HF `generate` is seeded per
round.

Per call the collector's metrics (rollouts, tokens, effective groups, abandoned, rounds, rollouts
per effective group, DS waste, carried, padded) go to TRL's logs under `sara/` through the public
`log_metric` hook (averaged over processes).  Resume: `sara.callback` saves the adapter state into
every TRL checkpoint (`sara_rollout_rank{R}.pt`); a run resumed with `resume_from_checkpoint`
restores it before its first rollout, so the prompt iterator continues without repeats or gaps.
"""

import itertools
import json
import math
import time
from pathlib import Path

from real.base.config import AllocatorConfig, build_collector
from real.io.runfolder import checkpoint_dir
from real.io.runlog import collect_fields
from real.rollout.collect import RolloutPool
from real.tasks.base import PromptStream
from real.trl.backends import (
    SaveCallback,
    check_reward_values,
    check_trl_args,
    generate,
    load_state,
    save_state,
    tokenize,
)
from sara_sim.collect.allocator import STRATEGIES
from sara_sim.core.errors import ParameterError


def _key(prompt) -> str:
    """Dataset rows are found by their prompt (TRL passes the prompt, not the row index)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)


class _Rows:
    """The train dataset as the stream sees it: only its size (PromptStream cycles epochs)."""

    def __init__(self, size):
        self.size = size


class SaraRollout:
    """`rollout_func` for TRL's GRPOTrainer that allocates rollouts with one of our collectors.

    Pass the trainer's own `args` (GRPOConfig) and `train_dataset`; everything is checked here,
    before any trainer or engine exists: G >= 2, whole groups per process, the allocator name and
    its options (`real.base.config.AllocatorConfig` fields: tau_low in [0, 1], probe, rho, ...),
    reward functions that are callables. `collector`: one already built for k = G, groups = B
    (`sara-real --trainer trl` passes the one its checks built) instead of the options."""

    def __init__(
        self,
        args,
        train_dataset,
        reward_funcs,
        allocator: str = "sara",
        *,
        threshold: float = 1.0,
        engine=None,
        seed: int | None = None,
        eval_dataset=None,
        collector=None,
        **collector_options,
    ):
        self.G, self.B, self.user_funcs, self.weights = check_trl_args(args, reward_funcs)
        if allocator not in STRATEGIES:
            raise ParameterError(
                "allocator", f"unknown strategy {allocator!r}; choose from {', '.join(STRATEGIES)}"
            )
        if not (isinstance(threshold, int | float) and math.isfinite(threshold)):
            raise ParameterError("threshold", f"must be a finite number, got {threshold!r}")
        self.threshold = float(threshold)
        if not hasattr(train_dataset, "__getitem__") or "prompt" not in train_dataset.column_names:
            raise ParameterError(
                "train_dataset", "needs a map-style datasets.Dataset with a 'prompt' column"
            )
        self.backend = "engine" if engine else ("trl-vllm" if args.use_vllm else "hf")
        self.engine = engine
        self.dataset = train_dataset
        self.columns = [c for c in train_dataset.column_names if c != "prompt"]
        self.row_of = {}
        for i, p in enumerate(train_dataset["prompt"]):
            self.row_of.setdefault(_key(p), i)
        self.size = len(train_dataset)
        self.eval_dataset = eval_dataset  # TRL's eval rows, found by prompt like the train rows
        self.eval_row_of = {}
        for i, p in enumerate(eval_dataset["prompt"] if eval_dataset is not None else []):
            self.eval_row_of.setdefault(_key(p), i)
        # each process draws its own replacements and sampling seeds: its own seeded permutation
        self.rank = int(getattr(args, "process_index", 0))
        self.seed = (args.seed if seed is None else seed) + 1_000_003 * self.rank
        self.name = allocator
        if collector is None:
            known = AllocatorConfig.__dataclass_fields__
            bad = sorted(set(collector_options) - set(known))
            if bad:
                raise ParameterError(bad[0], f"unknown option; choose from {', '.join(known)}")
            alloc = AllocatorConfig(**collector_options)
            # history allocators: stream ids are epoch * size + row (see make_collector)
            collector = build_collector(
                allocator, alloc, k=self.G, groups=self.B, seed=self.seed, epoch_size=self.size
            )
        elif collector_options or (collector.k, collector.groups) != (self.G, self.B):
            raise ParameterError(
                "collector", f"give a collector for k={self.G}, groups={self.B} or options"
            )
        self.col = collector
        self.stream = PromptStream(_Rows(self.size), seed=self.seed)
        self.pool = RolloutPool()  # visit -> row, prompt_ids, samples [(ids, lps, scores, pass)]
        self.calls = 0  # generation calls so far: the sampling-seed counter
        self.last = {}  # the last step's metrics (logged by the pass-through reward function)
        self.history = []  # per training call: metrics + the rows used (for callers and tests)
        self.trainer = None
        self._loaded = False
        self._pending = []  # log_metric calls made by user reward functions inside our scoring
        self.reward_funcs = [self._passthrough(i, f) for i, f in enumerate(self.user_funcs)]
        self.callback = SaveCallback(self)
        self._probe()

    def _probe(self):
        """Call each reward function once on two dataset rows with empty completions, so one that
        returns non-numbers fails here, before any trainer exists.  A function that raises on an
        empty completion is not judged here; the same check runs on every real rollout."""
        rows = [self.dataset[i] for i in range(min(2, self.size))]
        chat = not isinstance(rows[0]["prompt"], str)
        empty = [[{"role": "assistant", "content": ""}] if chat else "" for _ in rows]
        for f in self.user_funcs:
            try:
                vals = self._call(f, rows, empty, [[] for _ in rows], state=None)
            except ParameterError:
                raise
            except Exception:  # judged on the first real rollouts instead
                continue
            check_reward_values(f, vals, len(rows))

    # ------------------------------------------------------------ TRL's hook
    def __call__(self, prompts, trainer):
        self.trainer = trainer
        if not trainer.model.training:  # evaluation: plain G samples per prompt, no allocation
            return self._plain(prompts, trainer)
        if not self._loaded:
            self._maybe_resume(trainer)
        n = len(prompts)
        if n != self.B * self.G or any(
            _key(prompts[i]) != _key(prompts[i - i % self.G]) for i in range(n)
        ):
            raise RuntimeError(
                f"rollout_func got {n} prompts; expected {self.B} blocks of {self.G} identical ones"
            )
        ts = time.perf_counter()
        if self.engine is not None:
            self.engine.push_weights(trainer.accelerator.unwrap_model(trainer.model))
        sync_s = time.perf_counter() - ts
        epoch = self.stream.pos // self.size
        handed = [epoch * self.size + self._row(p) for p in prompts[:: self.G]]
        self._stats = {"tokens": 0, "gen_s": 0.0, "reward_s": 0.0, "round_s": [], "passes": []}
        t0, pos0 = time.perf_counter(), self.stream.pos
        res = self.col.collect_step(itertools.chain(handed, self.stream), self._sample)
        groups = self.pool.claim(self.col, res, self.G, reward=lambda s: s[3])
        padded = self._pad(groups, handed)
        self.pool.prune(self.col)
        self.last = self._metrics(res, groups, padded, time.perf_counter() - t0)
        self.last["sync_s"] = sync_s
        rows = [g["row"] for g in groups]
        self.history.append({**self.last, "rows": rows, "stream": (pos0, self.stream.pos)})
        return self._output(groups)

    def _row(self, prompt) -> int:
        row = self.row_of.get(_key(prompt))
        if row is None:
            raise RuntimeError(f"prompt {str(prompt)[:60]!r} is not in the train dataset")
        return row

    # ------------------------------------------------------------ one round
    def _new_entry(self, req) -> dict:
        row = int(req.prompt_id) % self.size
        ids = tokenize(self.trainer, self.dataset[row]["prompt"])
        return {"row": row, "prompt_id": req.prompt_id, "prompt_ids": ids}

    def _sample(self, requests):
        import numpy as np

        st = self._stats
        t0 = time.perf_counter()
        entries = [self.pool.entry(r, self._new_entry) for r in requests]
        ns = [int(r.n) for r in requests]
        draws = np.random.default_rng([self.seed, 0x7A1, self.calls]).integers(
            0, 2**31 - 1, sum(ns)
        )
        seeds = [x.tolist() for x in np.split(draws, np.cumsum(ns)[:-1])]
        self.calls += 1
        tg = time.perf_counter()
        outs = generate(self.trainer, self.engine, [e["prompt_ids"] for e in entries], ns, seeds)
        st["gen_s"] += time.perf_counter() - tg
        tr = time.perf_counter()
        flat = [(e, ids, lps) for e, out in zip(entries, outs) for ids, lps in out]
        records = [self.dataset[e["row"]] for e, _, _ in flat]
        scores = self._score(records, [ids for _, ids, _ in flat])
        out, i = [], 0
        for e, n in zip(entries, ns):
            bits = []
            for (_, ids, lps), s in zip(flat[i : i + n], scores[i : i + n]):
                passed = int(self._total(s) >= self.threshold)
                e["samples"].append((ids, lps, s, passed))
                st["tokens"] += len(ids)
                bits.append(passed)
            st["passes"].extend(bits)
            out.append(bits)
            i += n
        st["reward_s"] += time.perf_counter() - tr
        st["round_s"].append(time.perf_counter() - t0)
        return out

    def _total(self, scores) -> float:
        return sum(w * x for w, x in zip(self.weights, scores) if x is not None and x == x)

    def _score(self, records, completion_ids) -> list[list]:
        """Every user reward function on these rollouts, with their rows' dataset columns."""
        texts = self.trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        chat = not isinstance(records[0]["prompt"], str)
        completions = [[{"role": "assistant", "content": t}] for t in texts] if chat else texts
        per_func = []
        for f in self.user_funcs:
            vals = self._call(f, records, completions, completion_ids, self.trainer.state)
            per_func.append(check_reward_values(f, vals, len(records)))
        return [list(s) for s in zip(*per_func)]

    def _call(self, f, records, completions, completion_ids, state):
        prompts = [r["prompt"] for r in records]
        kw = {c: [r[c] for r in records] for c in records[0] if c != "prompt"}
        kw.update(sara_prompt=prompts, trainer_state=state, log_extra=lambda *a: None)
        kw["log_metric"] = lambda name, value: self._pending.append((name, value))
        return f(prompts=prompts, completions=completions, completion_ids=completion_ids, **kw)

    # ------------------------------------------------------------ assembling the batch
    def _pad(self, groups, handed) -> int:
        """DS capped or SARA out of rounds: fewer than B groups.  TRL needs B; fill with full
        saturated groups already drawn (zero advantage), else fresh uniform groups.  Counted."""
        need = self.B - len(groups)
        if need <= 0:
            return 0
        entries = self.pool.entries
        for v in [v for v in self.pool.unheld(self.col) if len(entries[v]["samples"]) >= self.G]:
            if len(groups) < self.B:
                groups.append(entries.pop(v))
        for uid in handed[: self.B - len(groups)]:
            from sara_sim.collect.collect_base import Request

            self._sample([Request(uid, self.G, -1)])
            groups.append(entries.pop(-1))
        return need

    def _output(self, groups) -> dict:
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "sara_prompt": []}
        cols = {c: [] for c in self.columns}
        scores = [[] for _ in self.user_funcs]
        for g in groups:
            row = self.dataset[g["row"]]
            for ids, lps, s, _ in g["samples"][: self.G]:
                out["prompt_ids"].append(list(g["prompt_ids"]))
                out["completion_ids"].append(list(ids))
                out["logprobs"].append(lps)
                out["sara_prompt"].append(row["prompt"])
                for c in self.columns:
                    cols[c].append(row[c])
                for j, x in enumerate(s):
                    scores[j].append(x)
        if any(lp is None for lp in out["logprobs"]):
            out["logprobs"] = None  # HF generate: TRL recomputes what it needs
        if len(out["completion_ids"]) != self.B * self.G:
            raise RuntimeError(f"built {len(out['completion_ids'])} rows, not {self.B * self.G}")
        out.update(cols)
        for j, vals in enumerate(scores):
            out[f"sara_reward_{j}"] = vals
        return out

    def _metrics(self, res, groups, padded, collect_s) -> dict:
        bits = [[s[3] for s in g["samples"][: self.G]] for g in groups]
        eff = sum(0 < sum(b) < self.G for b in bits)
        st = self._stats
        fields = collect_fields(
            res,
            tokens=st["tokens"],
            effective=eff,
            groups=len(groups),
            reward_mean=sum(st["passes"]) / max(1, len(st["passes"])),
            batch_reward_mean=sum(map(sum, bits)) / max(1, self.G * len(bits)),
        )
        return {
            **fields,
            "rollouts_per_effective_group": res.rollouts / eff if eff else None,  # undefined
            "padded": padded,
            "gen_s": st["gen_s"],
            "reward_s": st["reward_s"],
            "round_s": list(st["round_s"]),
            "collect_s": collect_s,
            "alloc_s": max(0.0, collect_s - st["gen_s"] - st["reward_s"]),
        }

    # ------------------------------------------------------------ evaluation calls
    def _plain(self, prompts, trainer):
        """TRL's evaluation batches: one sample per row (TRL repeats each prompt), no allocation;
        the rows' columns come from `eval_dataset` (given to SaraRollout) or the train dataset."""
        records = []
        for p in prompts:
            hit = self.eval_row_of.get(_key(p))
            ds, row = (self.eval_dataset, hit) if hit is not None else (self.dataset, self._row(p))
            records.append(ds[row])
        ids = [tokenize(self.trainer, p) for p in prompts]
        seeds = [[self.seed + i] for i in range(len(ids))]
        outs = generate(trainer, self.engine, ids, [1] * len(ids), seeds)
        comp = [o[0][0] for o in outs]
        scores = self._score(records, comp)
        out = {"prompt_ids": ids, "completion_ids": comp, "logprobs": None}
        out["sara_prompt"] = [r["prompt"] for r in records]
        for j in range(len(self.user_funcs)):
            out[f"sara_reward_{j}"] = [s[j] for s in scores]
        return out

    # ------------------------------------------------------------ TRL-facing reward functions
    def _passthrough(self, j, f):
        key = f"sara_reward_{j}"

        def reward(prompts, completions, log_metric=None, **kw):
            if key not in kw:
                raise RuntimeError("pass-through rewards need SaraRollout as rollout_func")
            if j == 0 and log_metric is not None and self.trainer.model.training:
                for name, v in self.last.items():
                    if isinstance(v, int | float) and not isinstance(v, bool):  # None: undefined
                        log_metric(f"sara/{name}", float(v))
                for name, v in self._pending:
                    log_metric(name, v)
            if j == 0:
                self._pending = []
            return kw[key]

        reward.__name__ = getattr(f, "__name__", f"reward_{j}")
        return reward

    # ------------------------------------------------------------ checkpoint state
    def state_dict(self) -> dict:
        return {
            "pool": self.pool.entries,
            "calls": self.calls,
            "stream": self.stream.state_dict(),
            "allocator": self.col.state_dict(),
            "name": self.name,
            "G": self.G,
            "B": self.B,
        }

    def load_state_dict(self, d: dict) -> None:
        if (d["name"], d["G"], d["B"]) != (self.name, self.G, self.B):
            raise ParameterError(
                "resume_from_checkpoint",
                f"saved by allocator={d['name']} G={d['G']} B={d['B']}, "
                f"not {self.name} G={self.G} B={self.B}",
            )
        self.pool.entries, self.calls = d["pool"], d["calls"]
        self.stream.load_state_dict(d["stream"])
        self.col.load_state_dict(d["allocator"])
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
