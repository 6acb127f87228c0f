"""Round-free collection (sara_sim/sim/stream.py) on the live engine (sim/live_engine.py): the
live engine against run_engine, the stream driver's invariants, its rollouts per prompt against
exact theory, its per-prompt decisions against the round driver's, fewer rounds, the CLI."""

import math

import numpy as np
import pytest

from sara_sim.cli.app import main
from sara_sim.collect.collectors import make_collector
from sara_sim.core.difficulty import BetaLaw, parse_law
from sara_sim.core.theory import plan_law
from sara_sim.sim.live_engine import LiveEngine
from sara_sim.sim.stream import Live, stream_driver
from sara_sim.sim.wallclock import EngineConfig, lognormal_lengths, run_engine
from sara_sim.sim.wallclock_run import OutcomeSource, Setup, run_strategy

# fails ~1.75x as long as passes: rollouts return out of order
SETUP = Setup(EngineConfig(0.01, 0.001, 0.02, 48), lognormal_lengths(200, 350, 0.5))


@pytest.mark.parametrize("seed", range(5))
def test_the_live_engine_times_requests_added_together_as_run_engine(seed):
    rng = np.random.default_rng(seed)
    cfg = EngineConfig(0.5, 0.25, 1.5, int(rng.integers(1, 6)), 0.75)
    lengths = rng.integers(1, 12, size=int(rng.integers(1, 20)))
    opens = rng.integers(0, 2, size=len(lengths)).astype(bool)  # client requests of several
    ref = run_engine(cfg, np.zeros(len(lengths)), lengths, opens)
    eng, finish = LiveEngine(cfg), {}
    for n, first in zip(lengths, opens):
        eng.add(n, opens=first)
    while done := eng.step():
        finish.update({rid: eng.t for rid in done})
    assert [finish[i] for i in range(len(lengths))] == list(ref.finish)
    assert (eng.iterations, eng.tokens, eng.slot_iterations) == (ref.iterations, ref.busy, ref.busy)


def test_an_aborted_request_costs_the_tokens_it_generated_once():
    eng = LiveEngine(EngineConfig(1.0, 0.0, 0.0, 2))
    a, b, c = eng.add(10), eng.add(2), eng.add(5)  # c waits for a slot
    assert eng.step() == [b] and eng.abort(a) == 2 and eng.abort(c) == 0
    assert eng.step() == [] and eng.tokens == 4 == eng.slot_iterations


def _drive(name, law, steps=6, groups=6, seed=0, boundary="carry", **knobs):
    src = OutcomeSource(law, seed, pool=4096)
    col = make_collector(name, k=8, groups=groups, seed=seed, epoch_size=src.pool, **knobs)
    live = Live(SETUP, src, seed)
    drv = stream_driver(col, live, SETUP.engine.max_num_seqs, boundary)
    prompts = src.prompts()
    return col, live, [(drv.collect_step(prompts), list(drv_visits(col))) for _ in range(steps)]


def drv_visits(col):
    return getattr(col, "group_visits", [])


@pytest.mark.parametrize("boundary", ["carry", "abort"])
@pytest.mark.parametrize(
    "name, knobs",
    [("sara", {}), ("sara-auto", {"max_inflight": 3}), ("sara-history", {}), ("ds", {})],
)
def test_every_step_commits_its_groups_of_k_rollouts_of_one_prompt(name, knobs, boundary):
    col, live, steps = _drive(name, parse_law("beta:0.6,0.6"), boundary=boundary, **knobs)
    seen = set()
    for res, visits in steps:
        assert len(res.groups) == 6 and res.n_effective == 6 and not res.capped
        for _pid, r in res.groups:
            assert len(r) == 8 and 0 < sum(r) < 8
        if name != "ds":  # each group is one visit of one prompt, used once over the run
            assert len(set(visits)) == 6 and not seen & set(visits)
            seen |= set(visits)
    for visit in list(live.by_visit):  # the run's end: what is in flight is aborted
        live.cancel(visit)
    eng = live.engine
    # every token generated is counted once: completed lengths + aborted partials = slot-iterations
    assert eng.inflight == 0 and eng.tokens == eng.slot_iterations
    sent = sum(res.rollouts for res, _ in steps)
    assert sent == len(eng.length) and live.cancelled <= sent


@pytest.mark.parametrize("schedule, max_inflight", [("stream", 1), ("stream", 0), ("rounds", 1)])
def test_rollouts_per_prompt_match_exact_theory(schedule, max_inflight):
    """max_inflight 1 (sequential) and 0 (the plan's own requests) decide on exchangeable
    outcomes: the mean rollouts per decided prompt is exact theory's, within 4 standard errors."""
    law = BetaLaw(0.7, 0.9)
    decided = []
    src = OutcomeSource(law, 3, pool=20000)
    col = make_collector("sara", k=8, groups=40, seed=3, tau_low=0.3, max_inflight=max_inflight)
    col.observer = lambda d: decided.append(d.n)
    prompts = src.prompts()
    if schedule == "rounds":  # a round's requests are in flight together: one per prompt
        for _ in range(30):
            col.collect_step(prompts, src)
    else:
        drv = stream_driver(col, Live(SETUP, src, 3), SETUP.engine.max_num_seqs, "carry")
        for _ in range(30):
            drv.collect_step(prompts)
    x = np.array(decided, float)
    want = plan_law(law, 8, col.plan)["rollouts_per_prompt"]
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert len(x) > 1500 and abs(x.mean() - want) < 4 * se, (x.mean(), want, se)


class CountedLive(Live):
    """Live that counts the requests each prompt was sent."""

    def __init__(self, *a):
        super().__init__(*a)
        self.per_prompt = {}

    def submit(self, pid, visit, n):
        self.per_prompt[pid] = self.per_prompt.get(pid, 0) + 1
        super().submit(pid, visit, n)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.4, 1.0)])  # plans [0,1,6,1,6], [0,1,3,1,6]
def test_requests_per_prompt_match_exact_theory(prior):
    """A stream sends each stage of a plan as one request (the probe, a continue, a fill): the
    mean requests per prompt decided in the first 25 of 30 steps (their fills long sent) is
    exact theory's E[requests] (``plan_law``'s rounds_per_prompt), within 4 standard errors.
    The second plan's sides stop apart: a probe of 3, then a continue to 6 on the pass side."""
    law, step, decided = BetaLaw(0.7, 0.9), [0], []
    src = OutcomeSource(law, 5, pool=50000)
    col = make_collector("sara", k=8, groups=40, seed=5, tau_low=0.3, prior=prior)
    col.observer = lambda d: decided.append((d.prompt_id, step[0]))
    live = CountedLive(SETUP, src, 5)
    drv, prompts = stream_driver(col, live, SETUP.engine.max_num_seqs, "carry"), src.prompts()
    for step[0] in range(30):
        drv.collect_step(prompts)
    x = np.array([live.per_prompt[pid] for pid, at in decided if at < 25], float)
    want = plan_law(law, 8, col.plan)["rounds_per_prompt"]
    se = x.std(ddof=1) / math.sqrt(len(x))
    assert len(x) > 1000 and abs(x.mean() - want) < 4 * se, (x.mean(), want, se)


def test_eager_inflight_overshoots_and_pays_its_aborts():
    """max_inflight 8: an abandoned prompt's rollouts in flight are aborted (paid for)."""
    law = parse_law("beta:0.3,0.3")
    _, live1, _ = _drive("sara", law, max_inflight=1, tau_low=0.3)
    _, live8, _ = _drive("sara", law, max_inflight=8, tau_low=0.3)
    assert live1.cancelled_tokens <= live8.cancelled_tokens and live8.cancelled > 0


class TableSource:
    """Outcomes fixed per (prompt, rollout index): both drivers see the same sequences."""

    def __init__(self, seed):
        self.seed, self.used, self.back = seed, {}, {}

    def __call__(self, requests):
        out = []
        for r in requests:
            rng = np.random.default_rng([self.seed, r.prompt_id])
            seq = (rng.random(64) < rng.beta(0.5, 0.5)).astype(int).tolist()
            j = self.used.get(r.visit, 0)
            back = self.back.setdefault(r.visit, [])
            take = [back.pop() for _ in range(min(len(back), r.n))]
            self.used[r.visit] = j + r.n - len(take)
            out.append(take + seq[j : self.used[r.visit]])
        return out

    def unsee(self, visit, outcome):
        self.back.setdefault(visit, []).append(outcome)


def test_rounds_and_stream_decide_every_prompt_alike():
    """With the plan's own requests, a prompt's decision and rollouts depend on its outcomes
    only: for every prompt both drivers decided, the two agree."""
    got = []
    for stream_it in (False, True):
        decided = {}
        col = make_collector("sara", k=8, groups=8, tau_low=0.25)
        col.observer = lambda d, out=decided: out.setdefault(d.prompt_id, (d.decision, d.n, d.s))
        src, ids = TableSource(7), iter(range(10**6))
        if stream_it:
            drv = stream_driver(col, Live(SETUP, src, 7), SETUP.engine.max_num_seqs, "carry")
            for _ in range(8):
                drv.collect_step(ids)
        else:
            for _ in range(8):
                col.collect_step(ids, src)
        got.append(decided)
    both = got[0].keys() & got[1].keys()
    assert len(both) > 50 and all(got[0][p] == got[1][p] for p in both)


def test_overprovision_takes_fewer_rounds_at_a_similar_rollout_cost():
    law = parse_law("beta:0.5,0.5")
    kw = {"k": 8, "groups": 32, "steps": 20, "seed": 1}
    base = run_strategy(law, "sara", SETUP, **kw)
    over = run_strategy(law, "sara", SETUP, overprovision=2.0, **kw)
    assert over["median_rounds"] < base["median_rounds"]
    ratio = over["rollouts_per_effective_group"] / base["rollouts_per_effective_group"]
    # the surplus groups still carried at the run's end are paid for and not counted
    assert 0.9 < ratio < 1.15


WC = ["wallclock", "--difficulty", "beta:0.5,0.5", "--steps", "2", "--groups", "4"]


@pytest.mark.parametrize(
    "extra, flag",
    [
        (["--schedule", "streamed"], "--schedule"),
        (["--boundary", "drop"], "--boundary"),
        (["--max-inflight", "9"], "--max-inflight"),
        (["--max-inflight", "-1"], "--max-inflight"),
        (["--overprovision", "0.5"], "--overprovision"),
        (["--overprovision", "nan"], "--overprovision"),
        (["--schedule", "stream", "--strategies", "uniform"], "--strategies"),
    ],
)
def test_bad_stream_input_is_one_line_naming_the_flag(capsys, extra, flag):
    assert main([*WC, *extra]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1 and flag in lines[0], lines


def test_the_cli_streams(capsys):
    assert main([*WC, "--schedule", "stream", "--strategies", "sara", "--max-num-seqs", "32"]) == 0
    out = capsys.readouterr().out
    table, _, refs = out.partition("against DS streamed")
    assert "streamed (carry)" in out and table.count("\nsara ") == 1 and refs.count("\nsara ") == 1


@pytest.mark.parametrize(
    "knob, value",
    [
        ("overprovision", 0.5),
        ("overprovision", math.nan),
        ("overprovision", "2"),
        ("max_inflight", -1),
        ("max_inflight", 1.5),
        ("max_inflight", True),
    ],
)
def test_make_collector_refuses_a_bad_schedule_knob(knob, value):
    from sara_sim.core.errors import ParameterError

    with pytest.raises(ParameterError, match=knob):
        make_collector("sara", k=8, groups=4, **{knob: value})


class CountingLive(Live):
    """`Live` that records each request's size and the most rollouts it held at once."""

    def __init__(self, *a):
        super().__init__(*a)
        self.sizes, self.most = [], 0

    def submit(self, pid, visit, n):
        super().submit(pid, visit, n)
        self.sizes.append(n)
        self.most = max(self.most, self.inflight)


def test_a_stream_sends_each_plan_request_whole():
    """The free slots decide whether a request starts, never its size: sara's flat plan (a probe
    of 7, then a fill of 1) goes out as requests of 7 and 1 only, though the engine is full at
    every completion; the engine holds at most its slots + k - 1 (the excess waits in it)."""
    src = OutcomeSource(parse_law("beta:0.6,0.6"), 0, pool=4096)
    col = make_collector("sara", k=8, groups=6, seed=0, epoch_size=src.pool, overprovision=2.0)
    live = CountingLive(SETUP, src, 0)
    drv = stream_driver(col, live, SETUP.engine.max_num_seqs, "fresh")
    prompts = src.prompts()
    for _ in range(6):
        drv.collect_step(prompts)
    assert set(live.sizes) == {1, 7} and len(live.sizes) > 100
    assert SETUP.engine.max_num_seqs < live.most <= SETUP.engine.max_num_seqs + 7


@pytest.mark.parametrize("schedule", ["rounds", "stream"])
def test_the_engine_requests_are_counted_per_planned_request(schedule):
    """DS asks for k rollouts of a prompt at once: requests x k = rollouts, by rounds or
    streamed; SARA's plan asks for a probe, then a fill: between one and k rollouts a request,
    one request at least per prompt it pulled."""
    law, kw = parse_law("beta:0.6,0.6"), {"schedule": schedule, "steps": 4, "groups": 6}
    ds = run_strategy(law, "ds", SETUP, **kw)
    assert ds["requests_per_effective_group"] * 8 == pytest.approx(
        ds["rollouts_per_effective_group"]
    )
    sara = run_strategy(law, "sara", SETUP, **kw)
    per = sara["rollouts_per_effective_group"] / sara["requests_per_effective_group"]
    prompts = sum(r["prompts"] for r in sara["per_step"])
    assert 1 < per < 8 and sum(r["requests"] for r in sara["per_step"]) >= prompts > 0
