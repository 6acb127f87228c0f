"""SARA through verl's real classes on the tiny model served by a real vLLM server: verl's trainer
constructor (our replay buffer from the config), verl's reward workers, the agent-loop manager
built by verl's TaskRunnerV1 from the config key (its workers Ray actors), the real TransferQueue
and verl's refill code.  Checks: every group verl gets is n rollouts of one prompt, all mixed;
abandoned prompts leave as failures and are refilled one for one; the sara/ metrics come out of
verl's replay buffer; DS is verl's own filter behind the same switch; a restart mid-epoch keeps
each prompt's history."""

from collections import deque

import numpy as np
import pytest
import ray

from real.verl import toy
from real.verl.settings import SECTION

pytestmark = pytest.mark.integration
N, K = 4, 8


def trainer(tiny_dir, url, data, strategy, *extra, resume_from=None, groups=N):
    lines = [*toy.sara_lines(strategy), *toy.TOY_LINES, f"data.train_batch_size={groups}"]
    lines += ["algorithm.filter_groups.enable=true", *extra]
    cfg = toy.verl_config(str(tiny_dir), data, lines)
    return toy.CollectTrainer(cfg, url, str(tiny_dir), resume_from=resume_from)


def same(a, b):
    """Deep equality of saved states (dicts, sequences, numpy arrays, plain values)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple | deque):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if hasattr(a, "__dict__") and not callable(a):
        return type(a) is type(b) and same(vars(a), vars(b))
    return a == b


def check_groups(groups, n=N):
    """n groups, each K rollouts of one prompt, each mixed."""
    assert len(groups) == n
    for rows in groups.values():
        assert len(rows) == K and len({prompt for prompt, _ in rows}) == 1
        rewards = [r for _, r in rows]
        assert 0 < sum(r >= 1.0 for r in rewards) < K, rewards


def test_sara_in_verl(tiny_dir, server_url, dataset, ray_session):
    tr = trainer(tiny_dir, server_url, dataset, "sara")
    assert type(tr.manager).__name__ == "SaraAgentLoopManager"
    assert tr.manager.agent_loop_workers_class.__ray_actor_class__.__name__ == "SaraAgentLoopWorker"
    assert type(tr.trainer.replay_buffer).__name__ == "SaraReplayBuffer"
    abandoned = 0
    for _ in range(3):
        m, groups = tr.step()
        check_groups(groups)
        # exact refill: each abandoned prompt left as a failure and one fresh prompt replaced it
        assert m["sara/prompts"] == N + m["sara/abandoned"]
        assert m.get("training/rollout_failure/evicted_samples", 0) == m["sara/abandoned"]
        assert m["sara/effective_groups"] == N and m["sara/lost"] == 0
        assert m["sara/rollouts_per_effective_group"] == m["sara/rollouts"] / N >= K
        assert m["sara/tokens"] > 0
        abandoned += m["sara/abandoned"]
    assert abandoned > 0  # the tiny model leaves many prompts all-fail: SARA abandons them


def test_ds_is_verls_own_filter(tiny_dir, server_url, dataset, ray_session):
    tr = trainer(tiny_dir, server_url, dataset, "ds")
    m, groups = tr.step()
    check_groups(groups)  # verl's DAPO filter kept only mixed groups
    assert m["sara/abandoned"] == 0 and m["sara/effective_groups"] == N
    assert m["sara/rollouts"] == K * m["sara/prompts"] and m["sara/prompts"] > N
    assert m["training/filter_groups/evicted_samples"] > 0


def test_a_restart_mid_epoch_keeps_each_prompts_history(tiny_dir, server_url, tmp_path):
    """sara-history on a 16-prompt set, 2 groups a step: steps until a prompt is visited more
    than once (most are abandoned: the test model fails most problems), verl's checkpoint
    (with SARA's state) is saved, Ray and everything stop; a new trainer resumes from the
    checkpoint and the histories, visit counts and prior are the ones saved; a resume whose
    checkpoint lacks SARA's state is refused in one line."""
    data = toy.write_dataset(tmp_path / "train.parquet", 16)
    ckpt = tmp_path / "ckpt"
    extra = [
        f"+{SECTION}.epoch_size=16",
        f"trainer.default_local_dir={ckpt}",
        "trainer.save_freq=1",
    ]
    toy.start_ray()
    try:
        tr = trainer(tiny_dir, server_url, data, "sara-history", *extra, groups=2)
        for _ in range(6):  # until a prompt comes round again (most are abandoned: 2-3 steps)
            check_groups(tr.step()[1], 2)
            visits = ray.get(tr.manager.state.state_dict.remote())["visits_of"]
            if max(visits.values()) >= 2:
                break
        path = tr.save(str(ckpt))
        state = tr.manager.state
        saved = ray.get(state.state_dict.remote())
    finally:
        toy.stop_ray()
    assert max(saved["visits_of"].values()) >= 2  # prompts came round again: history to keep
    assert saved["collector"]["informed"]  # the per-prompt histories are in the file
    toy.start_ray()
    try:
        tr = trainer(tiny_dir, server_url, data, "sara-history", *extra, resume_from=path, groups=2)
        state = tr.manager.state
        assert ray.get(state.restored.remote()).endswith("sara_state.pkl")
        assert same(ray.get(state.state_dict.remote()), saved)
        check_groups(tr.step()[1], 2)
        after = ray.get(state.state_dict.remote())
        assert sum(after["visits_of"].values()) > sum(saved["visits_of"].values())
    finally:
        toy.stop_ray()
