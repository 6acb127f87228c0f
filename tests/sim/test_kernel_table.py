"""The open-prompt table's size never changes a result: the kernel drops decided slots at the end
of a step, or mid-round when the table fills (its planned requests follow their slots).  The
table's size is invisible by design, so simulate()'s `table` keyword fixes it for these tests."""

import numpy as np
import pytest

from sara_sim.core.errors import ParameterError
from sara_sim.sim.laws import parse_sim_law
from sara_sim.sim.simulate import TableOverflow, simulate

SIZE = dict(k=8, steps=10, replicates=2, seed=5)


def _same(x, y):
    a = x.frame.drop(columns="strategy").to_numpy(float)
    b = y.frame.drop(columns="strategy").to_numpy(float)
    assert np.array_equal(a, b, equal_nan=True)
    assert all(np.array_equal(p, q) for p, q in zip(x.events, y.events))


@pytest.mark.parametrize("tau_low", [0.2, 0.3])
def test_small_table_same_result(tau_low):
    law = parse_sim_law("beta:0.5,0.5")
    kw = dict(tau_low=tau_low, capacity=768, log_events=4000, groups=24, **SIZE)
    # table=0: 64 slots, full mid-round (k=8, 24 groups, tau_low 0.3 compacts); it must not
    # overflow here (TableOverflow would fail the test)
    _same(simulate("sara", law, **kw), simulate("sara", law, table=0, **kw))


def test_overflow_is_reported_and_simulate_reruns_with_a_bigger_table():
    """A 4096-rollout round opens more prompts than a 64-slot table holds: the kernel reports the
    overflow, and simulate() reruns with bigger tables until one fits — the same result as the
    biggest table's."""
    law = parse_sim_law("beta:0.5,0.5")
    kw = dict(tau_low=0.3, capacity=4096, log_events=4000, groups=64, **SIZE)
    with pytest.raises(TableOverflow, match="more than 64 open prompts"):
        simulate("sara", law, table=0, **kw)
    _same(simulate("sara", law, table=256, **kw), simulate("sara", law, **kw))


def test_table_must_be_a_non_negative_int():
    with pytest.raises(ParameterError, match="table"):
        simulate("sara", parse_sim_law("beta:0.5,0.5"), table=-1, **SIZE)
