"""The peers' predict-then-select collectors (mopps, dps): whole groups for the prompts their
posterior ranks best, decisions checked against rankings computed by hand."""

import numpy as np
import pytest

from sara_sim.collect.collectors import make_collector
from sara_sim.collect.peer_select import PeerSelectCollector
from sara_sim.core.errors import ParameterError
from sara_sim.core.registry import row

RATES = {0: 1.0, 1: 0.0, 2: 0.5, 3: 0.5, 4: 1.0, 5: 0.0, 6: 0.5, 7: 1.0}  # pool of 8


def _sampler(seed=0):
    rng = np.random.default_rng(seed)

    def sample(requests):
        return [[int(x) for x in rng.random(r.n) < RATES[r.prompt_id % 8]] for r in requests]

    return sample


def test_registry_values_and_whole_groups():
    col = make_collector("dps", k=4, groups=2, epoch_size=8)
    assert isinstance(col, PeerSelectCollector) and col.selector.ratio == 4.0
    mopps = make_collector("mopps", epoch_size=8, groups=1)
    assert mopps.selector.ratio == row("mopps").sim_defaults["ratio"]
    res = col.collect_step(iter(range(100)), _sampler())
    assert res.fresh_prompts == 8 and res.skipped == 6 and len(res.abandoned) == 6
    assert res.rollouts == 8 and res.rounds == 1 and all(len(r) == 4 for _, r in res.groups)
    assert res.n_effective + res.saturated == 2  # saturated groups stay in the batch


def test_dps_ranks_by_hand_computed_transitions():
    """Each step pulls the 8 ids of one epoch; the first step has no evidence (ties: pull
    order), later ones rank by P(mixed | last state) from the pooled transition counts, an
    unseen prompt by the Laplace-smoothed mixed share of all visits (the kernel's rule)."""
    col = make_collector("dps", k=4, groups=2, epoch_size=8)
    sample, prompts = _sampler(), iter(range(10**6))
    first = col.collect_step(prompts, sample)
    assert [p for p, _ in first.groups] == [0, 1]  # no evidence: pull order
    drawn = [r for _, r in first.groups]
    spread = []
    for _ in range(3):
        t = col.selector.transitions.copy()
        last = dict(col.selector.last_state)
        states = [0 if sum(r) == 0 else (2 if sum(r) == 4 else 1) for r in drawn]
        unseen = (states.count(1) + 1) / (len(states) + 3)
        res = col.collect_step(prompts, sample)
        drawn += [r for _, r in res.groups]
        want = []
        for pid in range(8):
            if pid in last:
                want.append(t[last[pid], 1] / t[last[pid]].sum())
            else:
                want.append(unseen)
        order = sorted(range(8), key=lambda i: want[i], reverse=True)  # stable: pull order
        assert [p % 8 for p, _ in res.groups] == order[:2]
        spread.append(max(want) - min(want))
    assert min(spread) > 0  # the scores differed: the ranking was not pull order by default


def test_mopps_thompson_ranking_by_hand():
    col = make_collector("mopps", k=4, groups=3, epoch_size=8, seed=5)
    sample, prompts = _sampler(1), iter(range(10**6))
    col.collect_step(prompts, sample)
    col.collect_step(prompts, sample)  # 6 prompts of epoch 0 (and 1) seen, some twice
    rng = np.random.default_rng()
    rng.bit_generator.state = col.selector.rng.bit_generator.state
    ev = {key: list(v) for key, v in col.informed.evidence.items()}
    cands = list(range(24, 36))
    scores = []
    for uid in cands:  # Beta(1 + S, 1 + F): the recipe's pseudo-counts, decay 1
        s, f = ev.get(uid % 8, [0.0, 0.0])[:2]
        scores.append(-abs(rng.beta(1 + s, 1 + f) - 0.5))
    order = sorted(range(12), key=lambda i: scores[i], reverse=True)
    res = col.collect_step(iter(cands), sample)
    assert [p for p, _ in res.groups] == [cands[i] for i in order[:3]]


def test_resume_repeats_the_same_decisions():
    a = make_collector("mopps", k=4, groups=2, epoch_size=8, seed=3)
    sample = _sampler(2)
    a.collect_step(iter(range(8)), sample)
    b = make_collector("mopps", k=4, groups=2, epoch_size=8, seed=3)
    b.load_state_dict(a.state_dict())
    s1, s2 = _sampler(9), _sampler(9)
    ra, rb = a.collect_step(iter(range(8, 16)), s1), b.collect_step(iter(range(8, 16)), s2)
    assert ra.groups == rb.groups


def test_bad_arguments_are_one_clear_error():
    with pytest.raises(ParameterError, match="epoch_size"):
        make_collector("mopps", groups=2)
    with pytest.raises(ParameterError, match="budget"):
        make_collector("dps", budget=64, epoch_size=8)
    with pytest.raises(ParameterError, match="strategy"):
        PeerSelectCollector("sara", k=4, groups=2, epoch_size=8)
