"""The Numba kernel and the core's Python strategy take identical decisions on identical
outcome sequences (docs/design.md §6: one source of truth for the rule; both take the round's
decisions through ``schedule``).  Fresh prompts, and a finite pool revisited epoch after epoch,
where sara-history plans from evidence — including visits that end after a later visit of the
same prompt was recorded (out-of-order observations)."""

import numpy as np
import pytest

from sara_sim.collect.collectors import make_collector
from sara_sim.core.informed import PromptHistory
from sara_sim.sim.kernels import EV_DECISION, EV_N, EV_PID, EV_ROUND, EV_S, EV_STEP, EV_TARGET
from sara_sim.sim.laws import SequenceLaw, TokenModel
from sara_sim.sim.simulate import simulate

TOKENS = TokenModel()  # the kernel's lengths (simulate's default)


def _rows(seed, n_prompts, k, law=(0.4, 0.4)):
    rng = np.random.default_rng(seed)
    g = rng.beta(*law, n_prompts)
    return (rng.random((n_prompts, k)) < g[:, None]).astype(np.int64)


class _Counted(PromptHistory):
    """The history, unchanged, counting observations older than the prompt's last one."""

    out_of_order = 0

    def observe(self, pid, rewards, epoch):
        ev = self.evidence.get(self.key(pid))
        _Counted.out_of_order += ev is not None and self.epoch_of(pid) < ev[2]
        super().observe(pid, rewards, epoch)


def _run_strategy(name, rows, k, steps, pool=0, **kw):
    if name == "sara-history":
        opts = {x: kw.pop(x) for x in ("rho", "kappa", "explore", "max_skip")}
        opts["pop_prior"] = kw.get("prior", (1.0, 1.0))
        if pool:  # row i is prompt i % pool in epoch i // pool, the kernel's SequenceLaw(pool)
            opts.update(key=lambda u: u % pool, epoch_of=lambda u: u // pool)
            kw["history"] = _Counted(**opts)
        else:  # fresh prompts: no evidence of their own, so never skipped
            kw["history"] = PromptHistory(**opts)
        kw["epoch_size"] = pool or len(rows)
    col = make_collector(name, k=k, **kw)
    events, step = [], [0]  # every decided prompt: (step, round, id, decision, n, s, target)
    col.observer = lambda e: events.append((step[0], e.round, e.prompt_id, *e[2:]))
    draw = SequenceLaw(rows).sampler()

    def sample(requests):  # the driver tells the lengths: the kernel's TokenModel, by outcome
        out = draw(requests)
        for req, r in zip(requests, out):
            col.observe_lengths(req.visit, [TOKENS.len_pass if x else TOKENS.len_fail for x in r])
        return out

    prompts = iter(range(len(rows)))
    results = []
    for t in range(steps):
        step[0] = t
        results.append(col.collect_step(prompts, sample))
    return results, events


CASES = [
    ("sara", dict(groups=16, tau_low=0.3)),
    ("sara", dict(groups=16, tau_low=0.05)),
    ("sara", dict(groups=16, tau_low=0.5, prior=(0.4, 0.7))),
    ("sara", dict(groups=16, tau_low=0.2, probe=2, increment=1)),
    ("sara", dict(groups=16, tau_low=0.2, tau_high=0.9, prior=(2.0, 2.0))),
    ("sara", dict(groups=24, tau_low=0.3, capacity=40)),
    ("sara", dict(groups=80, tau_low=0.3)),  # a first round wider than the collector's table
    ("sara", dict(groups=None, budget=150, tau_low=0.3)),
    ("sara", dict(groups=16, tau_low=0.7)),  # abandons after 2 equal outcomes
    ("sara", dict(groups=16, tau_low=0.0)),  # never abandons: k at once, committed
    ("sara", dict(groups=16, tau_low=0.3, carry=False)),  # surplus and open groups dropped
    ("sara", dict(groups=24, tau_low=0.3, capacity=40, carry=False)),
    ("sara-eb", dict(groups=16, tau_low=0.3)),
    ("sara-auto", dict(groups=16, tau_low=0.3)),
    ("sara-auto", dict(groups=16, tau_low=0.3, priced_in="tokens")),  # lengths learned
    (
        "sara-history",
        dict(groups=16, tau_low=0.3, rule="price", rho=0.8, kappa=0.25, explore=0.0, max_skip=2),
    ),
    (
        "sara-history",
        dict(groups=16, tau_low=0.3, rule="tau", rho=0.8, kappa=1.0, explore=0.0, max_skip=2),
    ),
]


HIST = dict(rho=0.8, kappa=0.25, explore=0.0, max_skip=2)
POOL_CASES = [  # a pool of 20 prompts revisited every epoch: sara-history has evidence
    ("sara-history", dict(groups=16, tau_low=0.3, rule="price", **HIST)),
    ("sara-history", dict(groups=16, tau_low=0.3, rule="price", priced_in="tokens", **HIST)),
    ("sara-history", dict(groups=16, tau_low=0.3, rule="price", capacity=40, **HIST)),
    ("sara-history", dict(groups=12, tau_low=0.4, rule="tau", **{**HIST, "kappa": 1.0})),
    ("sara-history", dict(groups=16, tau_low=0.3, rule="price", **{**HIST, "rho": 0.5})),
    ("sara-eb", dict(groups=16, tau_low=0.3)),
    ("sara-history", dict(groups=16, tau_low=0.3, rule="price", carry=False, **HIST)),
]


def _compare(name, kw, k, pool=0, steps=6):
    rows = _rows(k + len(kw), 6000, k)
    results, ref_events = _run_strategy(name, rows, k, steps, pool=pool, **kw)
    sim_kw = {key: v for key, v in kw.items() if key != "groups"}
    groups = kw.get("groups") or 1
    extra = {"exact_core_fit": True} if name != "sara" else {}
    res = simulate(
        name,
        SequenceLaw(rows, pool=pool),
        k=k,
        groups=groups,
        steps=steps,
        replicates=1,
        seed=0,
        log_events=20000,
        **sim_kw,
        **extra,
    )
    f = res.frame
    for step, r in enumerate(results):
        row = f.iloc[step]
        assert row["rollouts"] == r.rollouts
        assert row["rounds"] == r.rounds
        assert row["groups"] == len(r.groups)
        assert row["effective"] == r.n_effective
        assert row["abandoned"] == len(r.abandoned)
        assert row["skipped"] == r.skipped
        assert row["saturated"] == r.saturated
        assert row["carried"] == r.carried
        assert row["carried_open"] == r.carried_open
        assert row["fresh_prompts"] == r.fresh_prompts
        assert [int(x) for x in (row[f"plan{j}"] for j in range(5))] == r.plan
    ev = res.events[0]
    cols = [EV_STEP, EV_ROUND, EV_PID, EV_DECISION, EV_N, EV_S, EV_TARGET]
    got = [tuple(int(x) for x in e[cols]) for e in ev]
    assert got == ref_events
    assert len(got) > 50
    return results


@pytest.mark.parametrize("name,kw", CASES)
@pytest.mark.parametrize("k", [8, 16])
def test_kernel_and_strategy_decide_identically(name, kw, k):
    _compare(name, kw, k)


@pytest.mark.parametrize("name,kw", POOL_CASES)
@pytest.mark.parametrize("k", [8, 16])
def test_kernel_and_strategy_decide_identically_on_a_revisited_pool(name, kw, k):
    _Counted.out_of_order = 0
    results = _compare(name, kw, k, pool=20, steps=10)
    if name == "sara-history":  # evidence at work: some visits are skipped before any rollout
        assert sum(r.skipped for r in results) > 0


def test_the_pool_cases_see_out_of_order_observations():
    """At least one pool case merges a visit that ended after a later visit was recorded."""
    seen = 0
    for name, kw in POOL_CASES[:2]:
        _Counted.out_of_order = 0
        _compare(name, kw, 8, pool=20, steps=10)
        seen += _Counted.out_of_order
    assert seen > 0


def test_a_plan_that_can_never_commit_collector_refuses_simulator_reports():
    """tau_low above p_eff(1) on both sides.  The collector drives real engines, where rollouts
    cost money: it refuses, naming tau_low.  The simulator sweeps tau_low over [0, 1]: such cells
    run to the round cap and report zero groups and `capped` — never a hang."""
    from sara_sim import ParameterError
    from sara_sim.collect.collectors import make_collector
    from sara_sim.core.difficulty import BetaLaw
    from sara_sim.sim.simulate import simulate

    with pytest.raises(ParameterError, match="tau_low"):
        make_collector("sara", k=8, groups=16, tau_low=0.99)
    df = simulate("sara", BetaLaw(1, 1), k=8, tau_low=0.99, groups=16, steps=2, replicates=1).frame
    assert (df["effective"] == 0).all() and df["capped"].all()
