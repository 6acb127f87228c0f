"""The round schedule's jitted decisions (``sara_sim.core.schedule``), shared by the collector and
the kernel: hand-computed cases, and PromptHistory's evidence as the schedule computes it."""

import math

import numpy as np

from sara_sim.core.informed import PromptHistory
from sara_sim.core.policy import ABANDON
from sara_sim.core.schedule import (
    EV_EPOCH,
    EV_F,
    EV_S,
    EV_SKIPS,
    R_COMMIT,
    R_COST,
    HistoryKnobs,
    budget_probes,
    history_plan,
    new_evidence,
    new_rates,
    observe,
    skip_budget,
    track,
    yield_probes,
)


def test_out_of_order_visit_is_merged_at_its_age_keeping_the_newer_date():
    ev = new_evidence()
    observe(ev, 2.0, 8.0, 0.0, 0.5)  # epoch 0: 2 of 8
    observe(ev, 1.0, 4.0, 2.0, 0.5)  # epoch 2: the epoch-0 counts weigh 0.25
    assert (ev[EV_S], ev[EV_F], ev[EV_EPOCH]) == (2 * 0.25 + 1, 6 * 0.25 + 3, 2.0)
    observe(ev, 3.0, 4.0, 1.0, 0.5)  # a visit of epoch 1 ends now: its counts at age 1
    assert (ev[EV_S], ev[EV_F], ev[EV_EPOCH]) == (1.5 + 1.5, 4.5 + 0.5, 2.0)
    assert ev[EV_SKIPS] == 0.0
    # the evidence dated by when the visit ended (the kernel before this change) differs
    late = new_evidence()
    for s, n, e in ((2.0, 8.0, 0.0), (1.0, 4.0, 2.0), (3.0, 4.0, 2.0)):
        observe(late, s, n, e, 0.5)
    assert late[EV_S] == 4.5 and late[EV_S] != ev[EV_S]


def test_skips_in_a_row_count_and_a_drawn_visit_resets_them():
    ev = new_evidence()
    observe(ev, 0.0, 0.0, 0.0, 0.8)
    observe(ev, 0.0, 0.0, 1.0, 0.8)
    assert ev[EV_SKIPS] == 2.0 and ev[EV_S] + ev[EV_F] == 0.0
    observe(ev, 1.0, 2.0, 2.0, 0.8)
    assert ev[EV_SKIPS] == 0.0


def test_prompt_history_keeps_the_schedules_evidence():
    rng = np.random.default_rng(3)
    h = PromptHistory(rho=0.7, kappa=0.5, explore=0.0)
    ref = {}
    for _ in range(300):
        pid, epoch = int(rng.integers(5)), int(rng.integers(6))  # epochs arrive out of order
        rewards = [int(x) for x in rng.random(int(rng.integers(0, 5))) < 0.4]
        h.observe(pid, rewards, epoch)
        ev = ref.setdefault(pid, new_evidence())
        observe(ev, float(sum(rewards)), float(len(rewards)), float(epoch), 0.7)
    assert {p: list(v) for p, v in h.evidence.items()} == {p: list(v) for p, v in ref.items()}


def test_running_rates_and_probe_counts():
    rates = new_rates()
    assert math.isnan(rates[R_COMMIT])
    assert yield_probes(rates, 0.2, 8, 0) == math.ceil(8 / 0.8)  # guessed 1 - tau_low
    assert yield_probes(rates, 0.99, 8, 0) == math.ceil(8 / 0.05)  # floored at 0.05
    assert budget_probes(rates, 8, 100, 20, 16, True) == math.floor(64 / 8)
    track(rates, False, 3)
    track(rates, True, 8)
    assert rates[R_COMMIT] == 0.05 and rates[R_COST] == (1 - 0.05) * 3.0 + 0.05 * 8.0
    assert yield_probes(rates, 0.2, 8, 6) == math.ceil(5 / 0.05)
    assert budget_probes(rates, 8, 3, 3, 0, False) == 0  # nothing left to spend
    assert budget_probes(rates, 8, 2, 0, 0, False) == 1  # nothing open: one prompt at least
    assert budget_probes(rates, 8, 2, 0, 0, True) == 0
    assert skip_budget(0) == 120 and skip_budget(7) == 240


def test_history_plan_never_skips_without_own_evidence_or_after_max_skip():
    hp = HistoryKnobs(rho=0.8, kappa=1.0, explore=0.0, max_skip=2.0, rule_price=False)
    pop = np.array([0.34, 0.67])
    assert history_plan(new_evidence(), 1.0, hp, pop, 8, 0.3, 16.0, 0.5)[0] != ABANDON
    ev = new_evidence()
    observe(ev, 0.0, 8.0, 0.0, 0.8)
    assert history_plan(ev, 1.0, hp, pop, 8, 0.3, 16.0, 0.5)[0] == ABANDON  # 8 fails: skip
    observe(ev, 0.0, 0.0, 1.0, 0.8)
    observe(ev, 0.0, 0.0, 2.0, 0.8)  # skipped twice in a row: probed at the next visit
    assert history_plan(ev, 3.0, hp, pop, 8, 0.3, 16.0, 0.5)[0] != ABANDON
