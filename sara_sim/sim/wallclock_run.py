"""The collectors against the wall-clock engine model (``wallclock.py``), round by round.

A strategy's collector (``make_collector``) calls ``sample(requests)`` once per round.  Here that
sampler (``RoundTimer``) draws the round's outcomes from the difficulty law (``OutcomeSource``),
a length per rollout from the per-outcome length law, and runs the round through the engine: all
its requests are submitted together when the previous round has finished and the collector has
decided (``decision_s``, default 0) — the round barrier.  A step's wall time is the sum of its
rounds' engine spans plus one decision time per round.

The prompt source has integer ids ``epoch * pool + index`` over a finite pool (what
``make_collector(epoch_size=pool)`` reads, so sara-history learns from revisits):

* ``history:...`` laws replay the selected epochs in order, each epoch's recorded prompts once in a
  seeded random order; a visit draws its outcomes without replacement from its record;
* rate laws (beta, mix, point) give each of ``pool`` prompts a latent rate drawn once; a visit's
  outcomes are Bernoulli draws at it.

>>> from sara_sim.core.difficulty import parse_law
>>> from sara_sim.sim.wallclock import EngineConfig, lognormal_lengths
>>> setup = Setup(EngineConfig(0.01, 0.001, 0.02, 64), lognormal_lengths(200, 350, 0.3))
>>> out = run_strategy(parse_law("beta:0.5,0.5"), "sara", setup, k=8, groups=16, steps=3)
>>> out["steps"], out["effective_groups"] >= 48, out["wall_s"] > 0
(3, True, True)
"""

import math
from typing import NamedTuple

import numpy as np

from ..collect.collectors import make_collector
from ..collect.stream import BOUNDARIES
from ..core.difficulty import HistoryLaw, check_k_for_law
from ..core.errors import check_choice, check_float, check_int, check_k
from ..core.registry import row
from .wallclock import EngineConfig, LengthLaw, run_engine

SCHEDULES = ("rounds", "stream")


class Setup(NamedTuple):
    """The engine, the length law, and the collector's decision time per round [s];
    knows_slots: whether a stream's driver knows the engine's slots (in-process: yes; a client
    of a server: no), which bounds what it keeps in flight (``stream.stream_capacity``)."""

    engine: EngineConfig
    lengths: LengthLaw
    decision_s: float = 0.0
    knows_slots: bool = True


class OutcomeSource:
    """The prompt source (integer ids epoch * pool + index) and the outcome sampler of one run."""

    def __init__(self, law, seed, pool=1024):
        self.order_rng = np.random.default_rng([seed, 0])  # the prompt order never depends on draws
        self.draw_rng = np.random.default_rng([seed, 1])
        self.urns = {}
        if isinstance(law, HistoryLaw):
            f = law.frame
            self.pids = np.unique(f["prompt_id"].to_numpy())
            self.epochs = np.unique(f["epoch"].to_numpy())
            uid = np.searchsorted(self.epochs, f["epoch"].to_numpy()) * len(self.pids)
            uid += np.searchsorted(self.pids, f["prompt_id"].to_numpy())
            pairs = zip(f["correct"].tolist(), f["samples"].tolist())
            self.rec = dict(zip(uid.tolist(), pairs))
            self.pool, self.rates = len(self.pids), None
        else:
            self.pool = check_int(pool, "--pool", 1)
            self.rates, self.rec = law.sample(self.draw_rng, self.pool), None

    def prompts(self):
        """Epoch after epoch (a history: its recorded epochs once; a rate law: without end)."""
        e = 0
        while self.rec is None or e < len(self.epochs):
            for i in self.order_rng.permutation(self.pool):
                uid = e * self.pool + int(i)
                if self.rec is None or uid in self.rec:
                    yield uid
            e += 1

    def __call__(self, requests):
        out = []
        for r in requests:
            if self.rec is None:
                p = self.rates[r.prompt_id % self.pool]
                out.append([int(x) for x in self.draw_rng.random(r.n) < p])
                continue
            if r.visit not in self.urns:
                c, s = self.rec[r.prompt_id]
                urn = np.r_[np.ones(c, int), np.zeros(s - c, int)]
                self.urns[r.visit] = [int(x) for x in self.draw_rng.permutation(urn)]
            out.append([self.urns[r.visit].pop() for _ in range(r.n)])
        return out

    def unsee(self, visit, outcome):
        """An outcome drawn but never observed (its rollout was aborted) goes back into its
        visit's urn at a random place: the next draw is again one of the unobserved ones."""
        if self.rec is not None:
            urn = self.urns[visit]
            urn.insert(int(self.draw_rng.integers(len(urn) + 1)), outcome)


class RoundTimer:
    """sample(requests) for a collector: outcomes, lengths, and the round timed by the engine."""

    def __init__(self, source, setup, seed, collector=None):
        """collector: told each request's rollout lengths (``observe_lengths``), as a real
        engine's driver tells them."""
        self.source, self.setup, self.collector = source, setup, collector
        self.len_rng = np.random.default_rng([seed, 2])
        self.t = 0.0  # when the next round can be submitted
        self.runs = []  # (submit time, EngineRun) per round
        self.requests = 0  # engine requests sent: one per (prompt, n) of a round

    def __call__(self, requests):
        out = self.source(requests)
        self.requests += len(requests)
        outcomes = np.array([x for r in out for x in r], dtype=np.int64)
        prompts = [r.prompt_id for r, o in zip(requests, out) for _ in o]
        lengths = self.setup.lengths.draw(self.len_rng, outcomes, prompts)
        if self.collector is not None:
            ends = np.cumsum([len(o) for o in out])
            for r, part in zip(requests, np.split(lengths, ends[:-1])):
                self.collector.observe_lengths(r.visit, part)
        opens = [i == 0 for r in out for i in range(len(r))]  # one client request per (prompt, n)
        run = run_engine(self.setup.engine, np.full(len(lengths), self.t), lengths, opens)
        self.runs.append((self.t, run))
        self.t = (run.end if len(lengths) else self.t) + self.setup.decision_s
        return out


def _collector(name, k, groups, seed, pool, kw):
    if row(name, "collector").needs_history:
        return make_collector(name, k=k, groups=groups, seed=seed, epoch_size=pool, **kw)
    return make_collector(name, k=k, groups=groups, seed=seed, **kw)


def run_strategy(
    law,
    strategy,
    setup,
    *,
    k=8,
    groups=64,
    steps=20,
    seed=0,
    pool=1024,
    trace_step=None,
    schedule="rounds",
    boundary="carry",
    **kw,
):
    """Run `strategy` for `steps` steps (fewer if a history runs out) against the engine model,
    round by round or streamed (``stream.py``; the engine's slots bound what is in flight).
    Returns totals and per-step rows; `trace` is the engine's running count over step
    `trace_step` (default: the middle step), times from that step's start.  `kw`: collector
    knobs (``make_collector``), e.g. overprovision or max_inflight."""
    steps = check_int(steps, "--steps", 1)
    check_k_for_law(check_k(k, "--k"), law)  # a visit draws k of a record's samples
    check_float(setup.decision_s, "--decision-s", 0.0)
    check_choice(schedule, "--schedule", SCHEDULES)
    check_choice(boundary, "--boundary", BOUNDARIES)  # "fresh": the real training loop's
    src = OutcomeSource(law, seed, pool)
    col = _collector(strategy, k, groups, seed, src.pool, kw)
    if schedule == "stream":
        rows, segments, marks = _run_stream(col, src, setup, seed, steps, boundary)
    else:
        rows, segments, marks = _run_rounds(col, src, setup, seed, steps)
    j = len(rows) // 2 if trace_step is None else min(int(trace_step), len(rows) - 1)
    out = _summary(strategy, rows, setup, segments[marks[j] : marks[j + 1]] if rows else [])
    return {**out, "schedule": schedule, "trace_step": j}


def _run_rounds(col, src, setup, seed, steps):
    """Each round through the engine after the last one (``RoundTimer``): per-step rows, the
    engine's segments over the run, and each step's first segment."""
    timer = RoundTimer(src, setup, seed, col)
    prompts, rows, marks, segments = src.prompts(), [], [0], []
    for _ in range(steps):
        t0, first, req0 = timer.t, len(timer.runs), timer.requests
        res = col.collect_step(prompts, timer)
        runs = [run for _, run in timer.runs[first:]]
        rows.append(
            _step_row(
                res,
                timer.t - t0,
                sum(run.busy for run in runs),
                res.rounds,
                sum(run.iterations for run in runs),
                sum(run.busy_slot_seconds for run in runs),
                requests=timer.requests - req0,
            )
        )
        segments += [seg for _, run in timer.runs[first:] for seg in run.segments]
        marks.append(len(segments))
        if res.prompts_exhausted:
            break
    return rows, segments, marks


def _run_stream(col, src, setup, seed, steps, boundary):
    """The streaming driver on the live engine: its rows, segments and step marks.  What is
    still in flight after the last step is aborted; its tokens are the last step's cost."""
    from .stream import Live, stream_capacity, stream_driver

    live = Live(setup, src, seed)
    eng = live.engine
    slots = setup.engine.max_num_seqs if setup.knows_slots else None
    drv = stream_driver(col, live, stream_capacity(col, slots, boundary), boundary)
    prompts, rows, marks = src.prompts(), [], [0]
    for _ in range(steps):
        t0, tok0, it0, bss0 = eng.t, eng.tokens, eng.iterations, eng.busy_slot_seconds
        can0, cantok0, req0 = live.cancelled, live.cancelled_tokens, live.requests
        res = drv.collect_step(prompts)
        rows.append(
            _step_row(
                res,
                eng.t - t0,
                eng.tokens - tok0,
                math.nan,
                eng.iterations - it0,
                eng.busy_slot_seconds - bss0,
                live.cancelled - can0,
                live.cancelled_tokens - cantok0,
                live.requests - req0,
            )
        )
        marks.append(len(eng.segments))
        if res.prompts_exhausted:
            break
    tok0, can0 = eng.tokens, live.cancelled
    for visit in list(live.by_visit):
        live.cancel(visit)
    rows[-1]["tokens"] += eng.tokens - tok0
    rows[-1]["cancelled"] += live.cancelled - can0
    rows[-1]["cancelled_tokens"] += eng.tokens - tok0
    return rows, eng.segments, marks


def _step_row(
    res, wall, tokens, rounds, iterations, busy, cancelled=0, cancelled_tokens=0, requests=0
):
    return {
        "wall_s": wall,
        "rollouts": res.rollouts,
        "tokens": tokens,
        "rounds": rounds,  # nan when streamed: no rounds
        "effective": res.n_effective,
        "prompts": res.fresh_prompts,  # pulled from the prompt source
        "iterations": iterations,
        "busy_slot_seconds": busy,
        "cancelled": cancelled,  # rollouts aborted in flight (in rollouts; tokens in tokens)
        "cancelled_tokens": cancelled_tokens,
        "requests": requests,  # engine requests (one per planned request of n rollouts)
    }


def _per(x, n):
    return x / n if n else math.nan  # undefined (JSON null), never a stand-in


def _summary(strategy, rows, setup, traced):
    """Totals per effective group; traced: the engine's segments over one step."""
    cap = setup.engine.max_num_seqs
    tot = {key: sum(r[key] for r in rows) for key in rows[0]} if rows else {}
    eff, wall = tot.get("effective", 0), tot.get("wall_s", 0.0)
    # the engine's running count over the traced step, times from its first segment
    seg = np.array(traced, dtype=np.float64).reshape(-1, 3)
    seg[:, :2] -= seg[0, 0] if len(seg) else 0.0
    return {
        "strategy": strategy,
        "steps": len(rows),
        "effective_groups": eff,
        "wall_s": wall,
        "wall_per_effective_group_s": _per(wall, eff),
        "tokens_per_effective_group": _per(tot.get("tokens", 0), eff),
        "rollouts_per_effective_group": _per(tot.get("rollouts", 0), eff),
        "requests_per_effective_group": _per(tot.get("requests", 0), eff),
        "rounds_per_step": _per(tot.get("rounds", 0), len(rows)),
        "median_rounds": float(np.median([r["rounds"] for r in rows])) if rows else math.nan,
        "cancelled_per_effective_group": _per(tot.get("cancelled", 0), eff),
        "cancelled_token_share": _per(tot.get("cancelled_tokens", 0), tot.get("tokens", 0)),
        "utilisation": _per(tot.get("tokens", 0), cap * tot.get("iterations", 0)),
        "time_utilisation": _per(tot.get("busy_slot_seconds", 0.0), cap * wall),
        "per_step": rows,
        "trace": seg,
        "step_occupancy": occupancy(seg, cap) if len(seg) else [],
    }


def occupancy(seg, cap, bins=10):
    """Mean running / cap in `bins` equal slices of [first start, last end] of segments
    [t0, t1, running] (idle gaps count as 0): the engine's utilisation over one step.

    >>> occupancy(np.array([[0.0, 1.0, 4.0], [3.0, 4.0, 2.0]]), 4, bins=4)
    [1.0, 0.0, 0.0, 0.5]
    """
    lo, hi = float(seg[0, 0]), float(seg[:, 1].max())
    edges = np.linspace(lo, hi, bins + 1)
    out = []
    for left, right in zip(edges[:-1], edges[1:]):
        overlap = np.clip(np.minimum(seg[:, 1], right) - np.maximum(seg[:, 0], left), 0, None)
        out.append(float((overlap * seg[:, 2]).sum() / (cap * (right - left))))
    return out


def ratios_to_ds(results):
    """Add each strategy's wall time and tokens per effective group over ds's (nan without ds:
    undefined, JSON null)."""
    ds = next((r for r in results if r["strategy"] == "ds"), None)
    for r in results:
        for key, col in (
            ("wall", "wall_per_effective_group_s"),
            ("token", "tokens_per_effective_group"),
        ):
            ref = ds[col] if ds is not None else math.nan
            r[f"{key}_ratio_vs_ds"] = r[col] / ref if ref > 0 else math.nan
    return results
