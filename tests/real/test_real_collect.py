"""The collection protocol without an engine: a fake engine records every rollout it produces,
and each committed group must be exactly the first k rollouts of its prompt, in the order the
rewards were returned — across rounds and across steps (carried groups) — for every strategy."""

import pickle

import pytest

from real.rollout.collect import RolloutDriver
from real.sampling.engine import Completion, PromptResult
from real.tasks import Problem, PromptSource, Task
from sara_sim.collect.collectors import make_collector


class CoinTask(Task):
    """Prompt id u succeeds with rate (u * 7 % 11) / 10: a spread from 0 to 1."""

    name, max_tokens = "coin", 4

    def problem(self, uid):
        return Problem(prompt=f"q{uid}", answer="1", meta={"rate": (uid * 7 % 11) / 10})

    def eval_problems(self):
        return []

    def reward(self, completion, problem):
        return int(completion == "1")


def _u(seed):
    """A uniform draw named by the rollout's seed (a request's seeds are consecutive, so the
    seed itself is no uniform draw: hash it)."""
    return (seed * 2654435761 % 2**32) / 2**32


class FakeEngine:
    """Prompt "q<u>" passes with rate(u); a rollout's first logprob is minus its seed (unique)."""

    def __init__(self, rate=lambda u: (u * 7 % 11) / 10):
        self.log = {}  # prompt -> every completion produced, in order
        self.calls, self.rate = 0, rate

    def generate(self, prompts, ns, *, max_tokens, temperature, top_p, seeds):
        self.calls += 1
        out = []
        for p, n, sd in zip(prompts, ns, seeds, strict=True):
            rate = self.rate(int(p[1:]))
            cs = [
                Completion("1" if _u(s) < rate else "0", [s % 97 + 3, 1], [-float(s), -0.1])
                for s in sd
            ]
            assert len(cs) == n
            self.log.setdefault(p, []).extend(cs)
            out.append(PromptResult(p, [2, 3], cs))
        return out


@pytest.mark.parametrize("name", ["uniform", "ds", "sara", "sara-eb", "sara-auto"])
def test_groups_are_the_first_k_rollouts_of_their_prompt(name):
    eng, task = FakeEngine(), CoinTask()
    rc = RolloutDriver(eng, task, make_collector(name, k=8, groups=6, seed=0), 8, seed=1)
    prompts = PromptSource(task)
    seen = set()
    for _ in range(6):
        calls = eng.calls
        batch = rc.collect(prompts)
        assert eng.calls - calls == batch.result.rounds  # one engine call per round
        for g in batch.groups:
            first_k = eng.log[f"q{g.prompt_id}"][:8]
            assert [s.token_ids for s in g.samples] == [c.token_ids for c in first_k]
            assert [s.reward for s in g.samples] == [int(c.text == "1") for c in first_k]
            assert g.prompt_id not in seen  # a group is trained on once
            seen.add(g.prompt_id)
        assert set(rc.store.entries) <= rc.collector.held_visits()  # nothing kept that is unusable
        if name != "uniform":
            assert all(0 < sum(s.reward for s in g.samples) < 8 for g in batch.groups)
        assert batch.tokens == 2 * batch.result.rollouts


def test_state_survives_a_pickle_round_trip_and_continues_identically():
    def run(split):
        eng, task = FakeEngine(), CoinTask()
        rc = RolloutDriver(eng, task, make_collector("sara", k=8, groups=5), 8, seed=2)
        prompts = PromptSource(task)
        ids = []
        for step in range(6):
            if step == split:  # "crash": rebuild everything from the saved state
                state = pickle.loads(pickle.dumps((rc.state_dict(), prompts.state_dict())))
                assert state[0]["collector"]["done_groups"]  # a carried group crosses the split
                rc = RolloutDriver(eng, task, make_collector("sara", k=8, groups=5), 8, seed=2)
                rc.load_state_dict(state[0])
                prompts = PromptSource(task)
                prompts.load_state_dict(state[1])
            ids.append(
                [
                    (g.prompt_id, [s.token_ids for s in g.samples])
                    for g in rc.collect(prompts).groups
                ]
            )
        return ids

    assert run(split=3) == run(split=-1)


@pytest.mark.parametrize("name", ["uniform", "ds", "sara"])
def test_a_prompt_open_in_two_visits_keeps_two_groups(name):
    """The prompt source hands every prompt twice in a row, so with room for both in one round two
    visits of one prompt id are open at once: each group is still exactly its own visit's first
    k rollouts (rollouts are keyed by visit, not by prompt id), and none is trained on twice."""
    eng, task = FakeEngine(), CoinTask()
    col = make_collector(
        name, k=4, groups=4, seed=0, **({"capacity": 64} if name == "sara" else {})
    )
    rc = RolloutDriver(eng, task, col, 4, seed=3)
    prompts = (u for i in range(10**6) for u in (i, i))
    used, twice = set(), 0
    for _ in range(5):
        batch = rc.collect(prompts)
        ids = [g.prompt_id for g in batch.groups]
        twice += len(ids) - len(set(ids))
        for g in batch.groups:
            seeds = [-s.logprobs[0] for s in g.samples]
            assert len(seeds) == 4 and not used & set(seeds)  # k rollouts, each used once
            used.update(seeds)
            log = {-c.logprobs[0]: c for c in eng.log[f"q{g.prompt_id}"]}
            assert [s.reward for s in g.samples] == [int(log[x].text == "1") for x in seeds]
            # a request's rollouts have consecutive seeds: uniform and ds draw a group in one
            # request, so a group mixing two visits of its prompt would break the run
            if name != "sara":
                assert seeds == [seeds[0] + i for i in range(4)]
        assert set(rc.store.entries) <= rc.collector.held_visits()
    assert twice > 0  # some step trained both visits of a prompt


def test_inconsistent_strategy_rewards_are_caught():
    eng, task = FakeEngine(), CoinTask()
    col = make_collector("uniform", k=4, groups=3)
    rc = RolloutDriver(eng, task, col, 4, seed=0)
    real_step = col.collect_step

    def lying(prompts, sample):
        res = real_step(prompts, sample)
        pid, r = res.groups[0]
        res.groups[0] = (pid, [1 - x for x in r])
        return res

    col.collect_step = lying
    with pytest.raises(RuntimeError, match="rewards differ"):
        rc.collect(PromptSource(task))


class PoolTask(CoinTask):
    """A finite pool of 30 problems revisited every epoch (ids epoch * 30 + row); the rate of a
    row is fixed, so a history strategy can learn it."""

    size = 30

    def problem(self, uid):
        return Problem(prompt=f"q{uid}", answer="1", meta={})


@pytest.mark.parametrize("name", ["sara-history", "sara-mopps", "sara-dps"])
def test_history_strategies_learn_per_prompt_and_resume_identically(name):
    def build():
        eng, task = FakeEngine(rate=lambda u: (u % 30 * 7 % 11) / 10), PoolTask()
        col = make_collector(name, k=8, groups=4, seed=0, epoch_size=task.size)
        return eng, task, RolloutDriver(eng, task, col, 8, seed=1), PromptSource(task)

    eng, task, rc, prompts = build()
    for _ in range(12):
        batch = rc.collect(prompts)
        for g in batch.groups:
            first_k = eng.log[f"q{g.prompt_id}"][:8]
            assert [s.reward for s in g.samples] == [int(c.text == "1") for c in first_k]
    hist = rc.collector.informed
    assert set(hist.evidence) <= set(range(30)) and len(hist.evidence) > 10  # keyed by row
    skipped = sum(rc.collect(prompts).result.skipped for _ in range(4))
    assert skipped > 0  # rows that never mix (rate 0 or 1) get skipped once known
    blob = pickle.dumps((rc.state_dict(), prompts.state_dict()))
    want = [rc.collect(prompts) for _ in range(3)]
    eng2, task2, rc2, stream2 = build()
    state, sstate = pickle.loads(blob)
    rc2.load_state_dict(state)
    stream2.load_state_dict(sstate)
    got = [rc2.collect(stream2) for _ in range(3)]
    assert [[g.prompt_id for g in b.groups] for b in got] == [
        [g.prompt_id for g in b.groups] for b in want
    ]
    assert rc2.collector.informed.evidence == rc.collector.informed.evidence
