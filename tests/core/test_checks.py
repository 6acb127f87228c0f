"""Public functions validate every input up front (ParameterError naming the parameter), rewards
are exactly 0/1, and the numerics of extreme but legal laws match independent references
(mpmath / scipy)."""

import json
import math

import mpmath as mp
import numpy as np
import pytest
from scipy.special import betaln

import sara_sim
from sara_sim import ParameterError, p_eff
from sara_sim.cli.app import main
from sara_sim.collect.collectors import make_collector
from sara_sim.core.difficulty import BetaLaw, MixtureLaw, parse_law
from sara_sim.core.informed import PromptHistory
from sara_sim.core.optimal import bayes_optimal
from sara_sim.core.theory import best_tau, plan_law, sequential_law, tau_breakpoints

NAN, INF = float("nan"), float("inf")


def _raises(fn, param, /, *args, **kw):
    with pytest.raises(ParameterError) as err:
        fn(*args, **kw)
    assert err.value.parameter == param, str(err.value)
    return str(err.value)


@pytest.mark.parametrize(
    "args,kw,name",
    [
        ((True, 0, 8), {}, "n"),
        (("2", 0, 8), {}, "n"),
        ((2.5, 0, 8), {}, "n"),
        ((2, NAN, 8), {}, "s"),
        ((2, 0, 8.5), {}, "k"),
        ((2, 0, 0), {}, "k"),
        ((2, 0, 2**60), {}, "k"),
        ((9, 0, 8), {}, "n"),
        ((2, 3, 8), {}, "s"),
        ((2, 0, 8), {"alpha0": NAN}, "alpha0/beta0"),
        ((2, 0, 8), {"beta0": INF}, "alpha0/beta0"),
        ((2, 0, 8), {"alpha0": -1.0}, "alpha0/beta0"),
        ((2, 0, 8), {"alpha0": True}, "alpha0/beta0"),
        ((2, 0, 8), {"alpha0": "1"}, "alpha0/beta0"),
    ],
)
def test_p_eff_rejects(args, kw, name):
    _raises(p_eff, name, *args, **kw)


def test_p_eff_accepts_numpy_and_integral_values():
    want = p_eff(2, 0, 8)
    assert p_eff(np.int32(2), np.int8(0), np.int64(8)) == want == p_eff(2.0, 0, 8)
    assert want == pytest.approx(6 / 9, rel=1e-14)


@pytest.mark.parametrize(
    "fn,args,name",
    [
        (sara_sim.decide, (6, 0, 8, NAN), "tau_low"),
        (sara_sim.decide, (6, 0, True, 0.3), "k"),
        (sara_sim.decide, (6, 0, 8, 0.3, 0.2), "tau_high"),
        (sara_sim.decide, (6, 0, 8, 0.3, None, -1.0), "a0/b0"),
        (sara_sim.threshold_plan, (8.5, 0.3), "k"),
        (sara_sim.threshold_plan, (8, 0.3, None, 1.0, 1.0, "yes"), "allow_skip"),
        (sara_sim.decide_plan, (1, 0, 8, [0, 1, 6, 1]), "plan"),
        (sara_sim.decide_plan, (1, 0, 8, [0, 1, 6, 1, 9.5]), "plan"),
        (sara_sim.decide_plan, (-1, 0, 8, [0, 1, 6, 1, 6]), "n"),
    ],
)
def test_exports_reject(fn, args, name):
    _raises(fn, name, *args)


def test_exports_decide_like_the_jitted_rule():
    from sara_sim.core import policy

    plan = sara_sim.threshold_plan(16, 0.3, None, 0.5, 0.5)
    assert list(plan) == list(policy.threshold_plan(16, 0.3, np.inf, 0.5, 0.5))
    for n in range(17):
        for s in range(n + 1):
            d = sara_sim.decide(n, s, 16, 0.3, None, 0.5, 0.5)
            assert d == policy.decide(n, s, 16, 0.3, np.inf, 0.5, 0.5)
            assert sara_sim.decide_plan(n, s, 16, plan) == policy.decide_plan(n, s, 16, plan)


@pytest.mark.parametrize(
    "kw,name",
    [
        ({"name": "bogus"}, "strategy"),
        ({"name": 3}, "strategy"),
        ({"k": True}, "k"),
        ({"k": 2.5}, "k"),
        ({"k": "8"}, "k"),
        ({"groups": 0}, "groups"),
        ({"groups": NAN}, "groups"),
        ({"groups": None}, "groups"),
        ({"budget": 3}, "budget"),
        ({"tau_low": NAN}, "tau_low"),
        ({"tau_low": 1.5}, "tau_low"),
        ({"tau_high": 0.1}, "tau_high"),
        ({"tau_high": INF}, "tau_high"),
        ({"prior": (-1, 1)}, "prior"),
        ({"prior": (NAN, 1)}, "prior"),
        ({"prior": 1.0}, "prior"),
        ({"capacity": 1}, "capacity"),
        ({"capacity": 20.5}, "capacity"),
        ({"probe": 9}, "probe"),
        ({"increment": -1}, "increment"),
        ({"eb_window": 0}, "eb_window"),
        ({"max_rounds": 0}, "max_rounds"),
        ({"max_rounds": True}, "max_rounds"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"rule": "bogus"}, "rule"),
        ({"name": "ds", "gen_batch_size": 0}, "gen_batch_size"),
        ({"name": "ds", "max_num_gen_batches": -1}, "max_num_gen_batches"),
        ({"name": "ds", "max_num_gen_batches": NAN}, "max_num_gen_batches"),
        ({"name": "uniform", "groups": 2.5}, "groups"),
        ({"name": "sara-history", "epoch_size": 0}, "epoch_size"),
        ({"name": "sara-history", "history": "x", "epoch_size": 8}, "history"),
        (
            {"name": "sara-mopps", "history": PromptHistory(), "epoch_size": 8, "selector": 1},
            "selector",
        ),
    ],
)
def test_make_collector_rejects(kw, name):
    kw = {"name": "sara", "k": 8, "groups": 4, **kw}
    _raises(make_collector, name, **kw)


def _sampler(value):
    return lambda requests: [[value] * r.n for r in requests]


@pytest.mark.parametrize("name", ["uniform", "ds", "sara"])
@pytest.mark.parametrize("bad", [0.5, 0.99, 2, -1, NAN, "1", None, 1 + 0j])
def test_collect_step_rewards_must_be_exactly_binary(name, bad):
    col = make_collector(name, k=4, groups=2)
    msg = _raises(col.collect_step, "sample", iter(range(100)), _sampler(bad))
    assert repr(bad) in msg


@pytest.mark.parametrize("name", ["uniform", "ds", "sara"])
def test_collect_step_arguments(name):
    col = make_collector(name, k=4, groups=2)
    _raises(col.collect_step, "prompts", list(range(100)), _sampler(1))
    _raises(col.collect_step, "sample", iter(range(100)), "not callable")
    _raises(col.collect_step, "sample", iter(range(100)), lambda reqs: [[1]] * (len(reqs) + 1))
    _raises(col.collect_step, "sample", iter(range(100)), lambda reqs: [[1, 0]] * len(reqs))


@pytest.mark.parametrize("name", ["uniform", "ds", "sara"])
def test_binary_rewards_in_any_exact_form_give_the_same_step(name):
    """bool / numpy / float 0.0 and 1.0 are the same rewards as ints 0 / 1."""

    def run(convert):
        rng = np.random.default_rng(0)
        col = make_collector(name, k=4, groups=3, tau_low=0.3)

        def sample(requests):
            return [[convert(int(x)) for x in rng.random(r.n) < 0.5] for r in requests]

        res = col.collect_step(iter(range(1000)), sample)
        return res.groups, res.rollouts, res.abandoned

    want = run(int)
    for convert in (bool, float, np.float32, np.int8, np.bool_):
        assert run(convert) == want


@pytest.mark.parametrize(
    "kw,name",
    [
        ({"strategy": 5}, "--strategy"),
        ({"law": "beta:1,1"}, "--difficulty"),
        ({"k": True}, "--k"),
        ({"groups": 2.5}, "--groups"),
        ({"steps": 0}, "--steps"),
        ({"replicates": np.float64(NAN)}, "--replicates"),
        ({"seed": -1}, "--seed"),
        ({"tau_low": NAN}, "--tau-low"),
        ({"prior": (0, 1)}, "--prior"),
        ({"tokens": "x"}, "tokens"),
        ({"log_events": -1}, "log_events"),
        ({"probe": 2.5}, "--probe"),
        ({"strategy": "mopps", "ratio": NAN}, "--ratio"),
        ({"strategy": "ds", "gen_batch_size": "8"}, "--gen-batch-size"),
        ({"groups": 10**8}, "--groups"),  # refused before any allocation (was a MemoryError)
        ({"steps": 10**9}, "--steps"),
    ],
)
def test_simulate_rejects(kw, name):
    from sara_sim.sim.simulate import simulate

    kw = {"strategy": "sara", "law": BetaLaw(1, 1), "k": 8, "groups": 4, "steps": 2, **kw}
    _raises(simulate, name, **kw)


def test_force_runs_a_refused_simulation_with_identical_numbers(monkeypatch):
    from sara_sim.sim import budget
    from sara_sim.sim import simulate as sim

    kw = dict(k=8, groups=8, steps=5, replicates=2, seed=3)
    want = sim.simulate("sara", BetaLaw(0.3, 0.3), **kw).frame
    monkeypatch.setattr(budget, "ROLLOUT_LIMIT", 10.0)
    assert "--force" in _raises(sim.simulate, "--k", "sara", BetaLaw(0.3, 0.3), **kw)
    got = sim.simulate("sara", BetaLaw(0.3, 0.3), force=True, **kw).frame
    assert got.equals(want)


@pytest.mark.parametrize(
    "fn,args,kw,name",
    [
        (sequential_law, ("beta:1,1", 8, 0.2), {}, "--difficulty"),
        (sequential_law, (BetaLaw(1, 1), 2.5, 0.2), {}, "--k"),
        (sequential_law, (BetaLaw(1, 1), 8, NAN), {}, "--tau-low"),
        (sequential_law, (BetaLaw(1, 1), 8, 0.2, NAN), {}, "--tau-high"),
        (sequential_law, (BetaLaw(1, 1), 8, 0.2), {"prior": (1, INF)}, "--prior"),
        (sequential_law, (BetaLaw(1, 1), 8, 0.2), {"probe": 2.5}, "--probe"),
        (plan_law, (BetaLaw(1, 1), 8, [0, 1, 6, 1]), {}, "plan"),
        (plan_law, (BetaLaw(1, 1), 8, [0, 1, 6, 1, "6"]), {}, "plan"),
        (tau_breakpoints, (8, (0, 1)), {}, "--prior"),
        (best_tau, (BetaLaw(1, 1), 8.5), {}, "--k"),
        (bayes_optimal, (BetaLaw(1, 1), True), {}, "--k"),
        (bayes_optimal, (BetaLaw(1, 1), 8), {"tol": NAN}, "tol"),
        (bayes_optimal, (BetaLaw(1, 1), 8), {"max_iter": 0}, "max_iter"),
        (bayes_optimal, (BetaLaw(1, 1), 8, "x"), {}, "belief"),
        (BetaLaw, (NAN, 1), {}, "--difficulty"),
        (BetaLaw, (1, -2), {}, "--difficulty"),
        (MixtureLaw, ((0.5, 0.6), (BetaLaw(1, 1), BetaLaw(2, 2))), {}, "--difficulty"),
        (MixtureLaw, ((INF, 0.5), (BetaLaw(1, 1), BetaLaw(2, 2))), {}, "--difficulty"),
    ],
)
def test_theory_and_laws_reject(fn, args, kw, name):
    _raises(fn, name, *args, **kw)


# --- numerics against independent references ------------------------------------------------


def _mp_beta_moment(a, b, i, j):
    """E[g^i (1-g)^j] under Beta(a, b) as the exact finite product, term by term in mpmath."""
    a, b = mp.mpf(a), mp.mpf(b)
    out = mp.mpf(1)
    for t in range(i):
        out *= (a + t) / (a + b + t)
    for t in range(j):
        out *= (b + t) / (a + b + i + t)
    return out


def _mp_p_mixed(a, b, k):
    return 1 - _mp_beta_moment(a, b, 0, k) - _mp_beta_moment(a, b, k, 0)


@pytest.mark.parametrize("conc", [1e6, 1e8, 1e12, 1e15, 1e100, 1e300])
@pytest.mark.parametrize("k", [8, 32])
def test_concentrated_beta_laws_are_accurate(conc, k):
    """Beta(c, c) for huge c is (almost) the point law 0.5: p_mixed = 1 - 2 0.5^k, finite cost."""
    mp.mp.dps = 40
    res = sequential_law(BetaLaw(conc, conc), k, 0.2)
    want = float(_mp_p_mixed(conc, conc, k))
    assert res["p_mixed"] == pytest.approx(want, rel=1e-12)
    assert res["p_mixed"] == pytest.approx(1 - 2 * 0.5**k, rel=1e-6)
    assert res["ds_cost_per_effective_group"] == pytest.approx(k / want, rel=1e-12)
    assert all(math.isfinite(v) for v in res.values() if isinstance(v, float))
    assert 1.0 <= res["rounds_per_prompt"] <= 3.0


@pytest.mark.parametrize("a,b", [(3e6, 1e6), (1e9, 3e9), (0.5, 1e7)])
def test_concentrated_asymmetric_moments(a, b):
    mp.mp.dps = 40
    law = BetaLaw(a, b)
    i = np.array([0, 1, 3, 8, 0, 5])
    j = np.array([8, 7, 5, 0, 0, 20])
    got = np.exp(law.log_moment(i, j))
    want = [float(_mp_beta_moment(a, b, int(x), int(y))) for x, y in zip(i, j)]
    np.testing.assert_allclose(got, want, rtol=1e-11)


def test_moderate_beta_laws_keep_their_numbers_bit_for_bit():
    """Below the switch the moments are scipy's betaln difference, exactly as before."""
    for a, b in [(0.3, 0.3), (1.0, 1.0), (2.0, 5.0), (1097.0, 1097.0), (1e-3, 10.0)]:
        i, j = np.arange(9), 8 - np.arange(9)
        want = betaln(a + i, b + j) - betaln(a, b)
        assert np.array_equal(BetaLaw(a, b).log_moment(i, j), want)


def test_mixture_weights_that_overflow_when_summed():
    mp.mp.dps = 30
    want = 0.5 * float(_mp_p_mixed(1, 5, 8) + _mp_p_mixed(5, 1, 8))
    huge = sequential_law(parse_law("mix:1e308*beta:1,5+1e308*beta:5,1"), 8, 0.2)
    unit = sequential_law(parse_law("mix:1*beta:1,5+1*beta:5,1"), 8, 0.2)
    assert huge["p_mixed"] == pytest.approx(want, rel=1e-13) == pytest.approx(0.6146, abs=1e-4)
    assert huge == unit
    tiny = parse_law("mix:1e-320*beta:1,5+3e-320*beta:5,1")
    assert tiny.weights == pytest.approx((0.25, 0.75), rel=1e-2)


def _strict(text):
    def refuse(token):
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "argv,null_key",
    [
        (["--difficulty", "point:0", "--tau-low", "0.2"], "cost_per_effective_group"),
        (["--difficulty", "point:1", "--tau-low", "0.2"], "savings_vs_ds"),
        (["--difficulty", "beta:1,1", "--tau-low", "1"], "cost_per_effective_group"),
        (["--difficulty", "point:0.5", "--tau-low", "1"], "cost_per_effective_group"),
    ],
)
def test_theory_json_is_strict_with_null_for_undefined(capsys, argv, null_key):
    assert main(["theory", "--k", "8", "--json", *argv]) == 0
    out = _strict(capsys.readouterr().out)
    assert out[null_key] is None
    json.dumps(out, allow_nan=False)
