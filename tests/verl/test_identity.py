"""SARA in verl decides through the project's one state machine: on the same outcome sequences,
each prompt gets the same plan and the same decision (COMMIT / ABANDON / SATURATED after the same
n rollouts with the same s passes) as ``make_collector``'s round collector.

The reference runs round by round without carrying (``carry=False``: a prompt open at a step's
end is dropped undecided), so every prompt it decides was opened and decided in one step; verl's
side (``SaraState``, driven as verl's workers drive it: one prompt at a time, each request sent
once the last returned) is fed, step by step, the prompts the reference decided in that step.  So
the windows sara-eb and sara-auto fit their prior on hold the same decided prompts, and the
plans must agree exactly.  sara-history runs with rule "tau" and no exploration: its "price"
rule plans at the running rollouts per effective group, which counts the rollouts of the prompts
a round drops at its step's end — a quantity of the schedule, not of the decisions."""

import numpy as np
import pytest

from real.base.config import StrategyConfig
from real.verl.settings import SaraSettings
from real.verl.state import CONTINUE, FAILED, FINISHED, SaraState, make_collector_for

K, GROUPS, STEPS = 8, 6, 5
CASES = {  # label: (strategy, options)
    "sara": ("sara", {"tau_low": 0.3}),
    "sara-eb": ("sara-eb", {"tau_low": 0.3, "eb_window": 2}),
    "sara-auto": ("sara-auto", {}),
    # priced in tokens: the plan learns the lengths the workers report (failures 2.5x longer)
    "sara-auto tokens": ("sara-auto", {"priced_in": "tokens"}),
    "sara-history": ("sara-history", {"rule": "tau", "explore": 0.0}),
}
LENGTH = {1: 10, 0: 25}  # tokens of a passing / failing rollout


def outcomes(n_prompts, seed=0):
    """A fixed k-long 0/1 sequence per prompt, success rates from beta(0.5, 0.5)."""
    rng = np.random.default_rng(seed)
    rates = rng.beta(0.5, 0.5, n_prompts)
    return {p: [int(x) for x in rng.random(K) < rates[p]] for p in range(n_prompts)}


def reference(strategy, options, seq):
    """The round collector's decisions per step: [[(pid, decision, n, s)]]."""
    s = SaraSettings(strategy, K, GROUPS, epoch_size=len(seq), options={**options, "carry": False})
    col = make_collector_for(s)
    assert isinstance(col.params.carry, bool) and not col.params.carry
    decided, used = [], {}

    def sample(requests):
        out = []
        for r in requests:
            at = used.get(r.visit, 0)
            out.append(seq[r.prompt_id][at : at + r.n])
            used[r.visit] = at + r.n
            col.observe_lengths(r.visit, [LENGTH[x] for x in out[-1]])  # as a round driver tells
        return out

    col.observer = lambda d: decided[-1].append((d.prompt_id, d.decision, d.n, d.s))
    prompts = iter(range(len(seq)))
    for _ in range(STEPS):
        decided.append([])
        col.collect_step(prompts, sample)
    return decided


def run_prompt(state, step, pid, seq):
    """One prompt as verl's worker runs it: opened, each request sent once the last returned
    (its rewards and each rollout's tokens reported), to its verdict."""
    visit, n = state.open(f"u{pid}", pid, step)
    got, verdict = 0, CONTINUE if n else FAILED
    while verdict == CONTINUE:
        bits = seq[pid][got : got + n]
        got += n
        verdict, n = state.absorb(visit, step, bits, [LENGTH[x] for x in bits])
    return verdict


def verl_side(strategy, options, seq, per_step):
    """SaraState fed the reference's decided prompts of each step, one prompt at a time."""
    s = SaraSettings(strategy, K, GROUPS, epoch_size=len(seq), options=options)
    state = SaraState(s)
    decided = []
    for step, prompts in enumerate(per_step, start=1):
        decided.append([])
        for pid, *_ in prompts:
            verdict = run_prompt(state, step, pid, seq)
            d = state.decided
            decided[-1].append((pid, d.decision, d.n, d.s))
            assert verdict == (FINISHED if 0 < d.s < K and d.n == K else FAILED)
    return decided


@pytest.mark.parametrize("case", list(CASES))
def test_decisions_identical_to_make_collector(case):
    strategy, options = CASES[case]
    seq = outcomes(400)
    ref = reference(strategy, options, seq)
    assert sum(map(len, ref)) > 3 * GROUPS  # prompts were decided in every step
    mine = verl_side(strategy, options, seq, ref)
    for step, (a, b) in enumerate(zip(ref, mine)):
        assert sorted(a) == sorted(b), f"{case}: step {step + 1} decided differently"


def test_plans_priced_in_tokens_learn_the_lengths_verl_reports():
    """sara-auto priced in tokens in verl: the step after the first prices its plan at the mean
    lengths the workers reported (pass 10, fail 25 tokens), and its plan stops the long fail
    side no later than the plan priced in rollouts does."""
    seq = outcomes(400)
    plans = {}
    for priced in ("rollouts", "tokens"):
        s = SaraSettings("sara-auto", K, GROUPS, epoch_size=len(seq), options={"priced_in": priced})
        state = SaraState(s)
        for pid in range(40):
            run_prompt(state, 1, pid, seq)
        state.open("u-next", 40, 2)  # verl's next step: the collector's step ends and begins
        plans[priced] = (state.res.lengths, list(state.col.plan))
    assert plans["rollouts"][0] is None and plans["tokens"][0] == (10.0, 25.0)
    assert plans["tokens"][1][2] <= plans["rollouts"][1][2]  # the fail side's stop
    with pytest.raises(ValueError, match="lengths"):
        SaraState(SaraSettings("sara", K, GROUPS)).absorb(1, 1, [1, 0], [3])


def test_the_reference_is_the_run_collector():
    """make_collector_for is build_collector with the run's StrategyConfig: the same collector
    the native loop and the TRL adapter build for the same settings."""
    from real.base.config import build_collector

    s = SaraSettings("sara-auto", K, GROUPS, options={"tau_low": 0.25})
    a = make_collector_for(s)
    b = build_collector("sara-auto", StrategyConfig(tau_low=0.25), k=K, groups=GROUPS, seed=0)
    assert (type(a), a.params, list(a.plan)) == (type(b), b.params, list(b.plan))
