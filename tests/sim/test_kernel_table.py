"""The open-prompt table's size never changes a result: the kernel drops decided slots at the end
of a step, or mid-round when the table fills (its planned requests follow their slots)."""

import numpy as np
import pytest

from sara_sim.sim import simulate as sim
from sara_sim.sim.laws import parse_sim_law

SIZE = dict(k=8, budget=None, steps=10, replicates=2, seed=5)


@pytest.mark.parametrize("tau_low", [0.2, 0.3])
def test_small_table_same_result(tau_low):
    law = parse_sim_law("beta:0.5,0.5")
    kw = dict(tau_low=tau_low, capacity=768, log_events=4000)
    ref = sim.simulate("sara", law, k=8, groups=24, steps=10, replicates=2, seed=5, **kw)
    # slots=0: a table of 64 slots, full mid-round (k=8, 24 groups, tau_low 0.3 compacts); it
    # must not overflow here (an overflow raises and fails the test)
    run = sim._checked("sara", law, SIZE | {"groups": 24}, {**sim.OPTIONS, **kw}, {})
    small = sim._simulate(run, law, 0)
    a = ref.frame.drop(columns="strategy").to_numpy(float)
    b = small.frame.drop(columns="strategy").to_numpy(float)
    assert np.array_equal(a, b, equal_nan=True)
    assert all(np.array_equal(x, y) for x, y in zip(ref.events, small.events))


def test_overflow_is_reported_and_simulate_reruns_with_a_bigger_table():
    """A 4096-rollout round opens more prompts than a 64-slot table holds: the kernel reports the
    overflow, and simulate() reruns with bigger tables until one fits — the same result as the
    biggest table's."""
    law = parse_sim_law("beta:0.5,0.5")
    kw = dict(tau_low=0.3, capacity=4096, log_events=4000)
    run = sim._checked("sara", law, SIZE | {"groups": 64}, {**sim.OPTIONS, **kw}, {})
    with pytest.raises(sim._Overflow):
        sim._simulate(run, law, 0)
    big = sim._simulate(run, law, 256)
    got = sim.simulate("sara", law, k=8, groups=64, steps=10, replicates=2, seed=5, **kw)
    a = big.frame.drop(columns="strategy").to_numpy(float)
    b = got.frame.drop(columns="strategy").to_numpy(float)
    assert np.array_equal(a, b, equal_nan=True)
    assert all(np.array_equal(x, y) for x, y in zip(big.events, got.events))
