"""What the simulator's drivers tell a collector, and what a stream keeps in flight.

* Plans priced in tokens learn their lengths from the driver, round by round and streamed: with
  lengths that never vary, the learned ones are exactly the engine's, from the second step on.
* A stream keeps its collector's capacity in flight, at most the engine's slots where its driver
  knows them ("carry": the slots) — one function for the engine model and the real loop.
* A "fresh" step end drops the prompts still open, and what they drew still feeds the prior's
  window: every outcome a step landed is in it.
* The engine model's "record" length law draws a prompt's lengths from its own record.
"""

import numpy as np
import pytest

from sara_sim.collect.collectors import make_collector
from sara_sim.collect.stream import stream_capacity
from sara_sim.core.difficulty import parse_law
from sara_sim.sim.stream import Live, stream_driver
from sara_sim.sim.wallclock import EngineConfig, LengthLaw, lognormal_lengths
from sara_sim.sim.wallclock_run import OutcomeSource, Setup, run_strategy

SETUP = Setup(EngineConfig(1e-3, 1e-5, 5e-4, 64), lognormal_lengths(200, 350, 0.0))


@pytest.mark.parametrize("schedule", ["rounds", "stream"])
def test_plans_priced_in_tokens_learn_the_engines_lengths(schedule, monkeypatch):
    from sara_sim.sim import wallclock_run

    seen, make = [], wallclock_run.make_collector

    def kept(*a, **kw):
        col = make(*a, **kw)
        seen.append(col)
        return col

    monkeypatch.setattr(wallclock_run, "make_collector", kept)
    law = parse_law("beta:0.4,0.6")
    out = run_strategy(
        law,
        "sara-auto",
        SETUP,
        k=8,
        groups=8,
        steps=4,
        seed=1,
        schedule=schedule,
        priced_in="tokens",
    )
    col = seen[0]
    assert col.step_lengths == (200.0, 350.0) and out["effective_groups"] >= 32
    tally = np.sum(col.lengths_window, axis=0)  # every told rollout of a decided prompt
    assert tally[0] == 200 * tally[1] and tally[2] == 350 * tally[3] and tally[1] > 0


def test_a_stream_keeps_at_most_the_slots_it_knows_in_flight():
    sara = make_collector("sara", k=8, groups=32, overprovision=2.0)  # capacity 512
    ds = make_collector("ds", k=8, groups=32)  # a generation batch: 256
    assert stream_capacity(sara) == 512 and stream_capacity(ds) == 256
    assert stream_capacity(sara, 256, "fresh") == 256 == stream_capacity(sara, 256, "abort")
    assert stream_capacity(sara, 1024, "fresh") == 512  # the collector's own, below the slots
    assert stream_capacity(sara, 1024, "carry") == 1024  # carrying: every slot filled
    assert stream_capacity(ds, 128, "fresh") == 128


def test_a_fresh_step_end_feeds_the_dropped_prompts_to_the_window():
    src = OutcomeSource(parse_law("beta:0.6,0.6"), 0, pool=4096)
    col = make_collector("sara-auto", k=8, groups=8, seed=0, overprovision=2.0)
    drv = stream_driver(col, Live(SETUP, src, 0), 64, "fresh")
    prompts = src.prompts()
    dropped = 0
    for _ in range(5):
        res = drv.collect_step(prompts)
        landed = sum(len(r) for r in res.outcomes.values())
        assert sum(n for _, n in col.window[-1]) == landed  # open prompts' outcomes included
        dropped += res.waste
    assert dropped > 0  # prompts were open at the steps' ends


def test_record_lengths_come_from_the_prompts_own_record():
    records = ((np.array([10, 12]), np.array([40])), (np.array([3]), np.array([90, 95])))
    law = LengthLaw(
        "record",
        pass_values=np.array([10, 12, 3]),
        fail_values=np.array([40, 90, 95]),
        records=records,
    )
    rng = np.random.default_rng(0)
    got = law.draw(rng, [1, 0, 1, 0, 1, 0], [0, 0, 1, 1, 2, 3])  # prompt 2, 3: records 0, 1
    assert got[0] in (10, 12) and got[1] == 40 and got[2] == 3 and got[3] in (90, 95)
    assert got[4] in (10, 12) and got[5] in (90, 95)
    empty = LengthLaw(
        "record",
        pass_values=np.array([7]),
        fail_values=np.array([9]),
        records=((np.array([], int), np.array([5])),),
    )
    assert list(empty.draw(rng, [1, 0], [0, 0])) == [7, 5]  # no pass recorded: the pooled ones
