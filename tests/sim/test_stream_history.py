"""Per-prompt history streamed: sara-history and the selectors in front of it (sara-mopps,
sara-dps) driven round-free (``collect/stream.py``) through the collector's one state machine and
one selection; their state — histories, selector, its queue of chosen prompts, the lengths a
plan priced in tokens learned — checkpointed and resumed identically."""

import pickle
from collections import deque

import numpy as np
import pytest

from sara_sim.collect.collectors import make_collector
from sara_sim.core.difficulty import parse_law
from sara_sim.sim.stream import Live, stream_driver
from sara_sim.sim.wallclock import EngineConfig, lognormal_lengths
from sara_sim.sim.wallclock_run import OutcomeSource, Setup

K, GROUPS, POOL = 8, 6, 60
SETUP = Setup(EngineConfig(0.01, 0.001, 0.02, 32), lognormal_lengths(200, 350, 0.5))
INFORMED = ("sara-history", "sara-mopps", "sara-dps")


class FifoEngine:
    """A deterministic engine for the stream driver: rollouts finish one per poll, first in
    first out; rollout j of visit v passes iff a draw keyed by (prompt, visit, j) falls below
    the prompt's latent rate (so a run and its resumed copy see the same outcomes); a pass is
    10 tokens long, a fail 25.  Nothing of it outlives a step ("fresh"), so it needs no state."""

    def __init__(self, seed=0):
        rng = np.random.default_rng([seed, 11])
        self.rates = np.where(rng.random(POOL) < 0.5, rng.beta(0.3, 0.3, POOL), 0.0)
        self.seed, self.queue, self.sent = seed, [], {}

    @property
    def inflight(self):
        return len(self.queue)

    def submit(self, pid, visit, n):
        j = self.sent.get(visit, 0)
        self.sent[visit] = j + n
        for i in range(j, j + n):
            u = np.random.default_rng([self.seed, pid, visit, i]).random()
            self.queue.append((visit, int(u < self.rates[pid % POOL])))

    def poll(self):
        if not self.queue:
            return []
        visit, o = self.queue.pop(0)
        return [(visit, o, 10 if o else 25)]

    def cancel(self, visit):
        before = len(self.queue)
        self.queue = [x for x in self.queue if x[0] != visit]
        return before - len(self.queue)


def _prompts(start=0):
    """Integer prompt ids epoch * POOL + index, from position `start` (a resumed run's)."""
    i = start
    while True:
        yield i
        i += 1


def _run(name, steps, state=None, start=0, **knobs):
    """`steps` streamed steps of `name` ("fresh" boundary), optionally from a saved collector
    state: the steps' results, the collector's state after them and the prompt position."""
    col = make_collector(
        name, k=K, groups=GROUPS, seed=3, epoch_size=POOL, schedule="stream", **knobs
    )
    if state is not None:
        col.load_state_dict(pickle.loads(state))
    engine = FifoEngine()
    drv = stream_driver(col, engine, 24, "fresh")
    pulled = iter(_prompts(start))
    counted = _Counted(pulled)
    out = [drv.collect_step(counted) for _ in range(steps)]
    return out, pickle.dumps(col.state_dict()), start + counted.n


class _Counted:
    def __init__(self, it):
        self.it, self.n = it, 0

    def __iter__(self):
        return self

    def __next__(self):
        self.n += 1
        return next(self.it)


def _summary(res):
    return (
        res.rollouts,
        res.n_effective,
        res.skipped,
        sorted(res.abandoned),
        res.waste,
        [(p, list(r)) for p, r in res.groups],
        res.lengths,
    )


@pytest.mark.parametrize("name", INFORMED)
@pytest.mark.parametrize("priced_in", ["rollouts", "tokens"])
def test_streamed_history_resumes_identically(name, priced_in):
    """Six steps straight, or three, the collector's state through pickle into a collector
    built afresh, then three more: the same steps, decision for decision, and the same state
    (histories, the selector's counts and generator, its queue, the learned lengths)."""
    knobs = {"priced_in": priced_in}
    whole, end, _ = _run(name, 6, **knobs)
    first, mid, pos = _run(name, 3, **knobs)
    second, end2, _ = _run(name, 3, state=mid, start=pos, **knobs)
    assert [_summary(r) for r in whole] == [_summary(r) for r in first + second]
    a, b = pickle.loads(end), pickle.loads(end2)
    assert _deep(a) == _deep(b)
    if priced_in == "tokens":  # the plans were priced at the engine's lengths
        assert whole[-1].lengths == (10.0, 25.0)


def _deep(x):
    """A comparable copy of a nested state (arrays as lists, objects as their fields)."""
    if isinstance(x, dict):
        return {k: _deep(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, deque)):
        return [type(x).__name__, *(_deep(v) for v in x)]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return {"__class__": type(x).__name__, **_deep(vars(x))}
    return x


@pytest.mark.parametrize("name", INFORMED)
def test_streamed_history_commits_its_groups_and_skips_by_history(name):
    """On a pool revisited epoch after epoch, every streamed step commits its groups of k of one
    prompt; the history skips (or the selector passes over) prompts it has learned never mix."""
    src = OutcomeSource(parse_law("mix:0.5*point:0+0.5*beta:0.5,0.5"), 0, pool=80)
    col = make_collector(name, k=K, groups=GROUPS, seed=0, epoch_size=src.pool, schedule="stream")
    drv = stream_driver(col, Live(SETUP, src, 0), SETUP.engine.max_num_seqs, "fresh")
    prompts = src.prompts()
    steps = [drv.collect_step(prompts) for _ in range(40)]
    for res in steps:
        assert res.n_effective == GROUPS and not res.capped
        assert all(len(r) == K and 0 < sum(r) < K for _, r in res.groups)
    assert sum(r.skipped for r in steps[20:]) > 0  # learned: skipped before any rollout


def test_a_selector_ranks_what_the_streams_quota_pulls():
    """sara-mopps streamed: every prompt pulled is probed, skipped by its plan or passed over by
    the selector, and over the run the selector passes over about ratio - 1 per chosen one."""
    src = OutcomeSource(parse_law("beta:0.3,0.3"), 1, pool=200)
    col = make_collector(
        "sara-mopps", k=K, groups=GROUPS, seed=1, epoch_size=src.pool, schedule="stream"
    )
    chosen = []
    select = col.selector.select

    def spy(cands, want, history, epoch):
        got = select(cands, want, history, epoch)
        chosen.append((len(cands), len(got[0]), len(got[1])))
        return got

    col.selector.select = spy
    drv = stream_driver(col, Live(SETUP, src, 1), SETUP.engine.max_num_seqs, "fresh")
    prompts = src.prompts()
    steps = [drv.collect_step(prompts) for _ in range(20)]
    assert chosen and all(c == a + b and a >= 1 for c, a, b in chosen)
    pulled, picked = sum(c for c, _, _ in chosen), sum(a for _, a, _ in chosen)
    assert 1.4 <= pulled / picked <= 2.0  # ratio 1.5, rounded up at the stream's small quotas
    assert col.pulled == pulled and sum(r.skipped for r in steps) >= pulled - picked


@pytest.mark.parametrize("name", ["sara", "sara-history", "sara-mopps", "sara-dps"])
def test_the_selectors_stream_in_the_wallclock_cli(name, capsys):
    from sara_sim.cli.app import main

    argv = ["wallclock", "--difficulty", "beta:0.4,0.4", "--steps", "3", "--groups", "4",
            "--schedule", "stream", "--strategies", name, "--max-num-seqs", "32"]  # fmt: skip
    assert main(argv) == 0
    assert f"\n{name} " in capsys.readouterr().out
