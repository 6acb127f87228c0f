"""Collectors name the visit of every group they return (`group_visits`) and the visits whose
rollouts they still hold (`held_visits`): a caller keeps per-rollout data by `Request.visit`
(real/rollout/collect.py) without matching groups back by prompt id — even when one prompt id is
open in two visits at once."""

import itertools

import numpy as np
import pytest

from sara_sim.collect.collectors import make_collector

CASES = [
    ("uniform", {}),
    ("ds", {"gen_batch_size": 3}),
    ("sara", {"capacity": 64}),
    ("sara-eb", {"capacity": 64}),
    ("sara", {"budget": 40, "probe": 1, "increment": 1}),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n} {sorted(kw)}" for n, kw in CASES])
def test_group_visits_name_the_requests_each_group_was_drawn_by(name, kw):
    rng = np.random.default_rng(0)
    col = make_collector(name, k=4, seed=0, **({"groups": 4} | kw))
    drawn = {}  # visit -> (prompt id, rewards handed back for it, in order)
    rate = {}

    def sample(requests):
        out = []
        for r in requests:
            p = rate.setdefault(r.prompt_id, rng.beta(0.5, 0.5))
            bits = [int(x) for x in rng.random(r.n) < p]
            pid, got = drawn.setdefault(r.visit, (r.prompt_id, []))
            assert pid == r.prompt_id  # a visit belongs to one prompt
            got.extend(bits)
            out.append(bits)
        return out

    prompts = itertools.chain.from_iterable((u, u) for u in itertools.count())  # ids twice
    used, doubled = set(), 0
    for _ in range(8):
        res = col.collect_step(prompts, sample)
        assert len(col.group_visits) == len(res.groups)
        for (pid, rewards), visit in zip(res.groups, col.group_visits, strict=True):
            assert visit not in used  # a visit is grouped once
            used.add(visit)
            assert drawn[visit][0] == pid and drawn[visit][1][: col.k] == list(rewards)
        pids = [pid for pid, _ in res.groups]
        doubled += len(pids) - len(set(pids))
        held = col.held_visits()
        assert held <= set(drawn) - used  # held: drawn, not yet grouped
        if name in ("uniform", "ds"):
            assert held == set()  # nothing outlives its step
    if "budget" not in kw:
        assert doubled > 0  # both visits of one prompt id were grouped in one step
