"""The parts of verl 0.9.1 this plug-in relies on, private ones included: a verl upgrade that
moves any of them fails here, by name, before anything subtler breaks."""

import inspect
from importlib import metadata

from real.verl.settings import VERL_PINNED


def params(fn):
    """A function's parameter names (Ray's tracing adds `_ray_trace_ctx` to an actor's methods)."""
    return [p for p in inspect.signature(fn).parameters if p != "_ray_trace_ctx"]


def test_the_pinned_verl_is_installed():
    assert metadata.version("verl") in VERL_PINNED


def test_agent_loop_worker_contract():
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

    plain = AgentLoopWorkerTQ.__ray_actor_class__  # trap: the worker is a Ray actor class
    assert params(plain.__init__)[:2] == ["self", "args"]  # (*args, **kwargs) -> AgentLoopWorker
    assert params(plain._run_prompt) == ["self", "prompt", "sampling_params", "trajectory", "trace"]
    assert params(plain._agent_loop_postprocess) == ["self", "output", "validate", "kwargs"]
    run = params(plain._run_agent_loop)
    assert run[:3] == ["self", "sampling_params", "trajectory"] and "kwargs" in run
    src = inspect.getsource(plain._run_agent_loop)  # the session's result is postprocess's
    assert "return await self._agent_loop_postprocess(" in src
    src = inspect.getsource(plain._run_prompt)  # a prompt's terminal status, per session keys
    assert 'tag={"status": status}' in src and "session_id=i" in src
    assert "agent_loop_workers_class" in inspect.getsource(AgentLoopManagerTQ.__init__)


def test_replay_buffer_contract():
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    init = params(ReplayBuffer.__init__)
    needed = ["poll_interval", "refill_fn", "filter_groups_metric", "train_batch_size"]
    needed += ["gen_batch_size", "max_inflight_gen_batches", "sync_refill_failed_groups"]
    assert [name for name in needed if name not in init] == []
    sample = params(ReplayBuffer.sample)
    assert sample == ["self", "global_steps", "partition_id", "batch_size"]
    # abandoned prompts: a failure with no trajectories is evicted and refilled one for one
    src = inspect.getsource(ReplayBuffer._terminal_eviction_reasons)
    assert "self.failure_keys[partition_id] - materializable_uids" in src
    # a custom sampler gets six arguments; sampler_kwargs is the config's own node (its root:
    # the whole config, read by buffer.root_config)
    src = inspect.getsource(PPOTrainer._build_replay_buffer)
    assert "sampler_kwargs=sampler_config.sampler_kwargs" in src
    assert "refill_fn=self._add_prompts_to_generate" in src


def test_omegaconf_root_of_a_node():
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"a": {"b": {"c": 1}}, "top": 2})
    assert cfg.a.b._get_root() is cfg


def test_checkpoint_and_resume_contract():
    from verl.trainer.ppo.checkpoint_callback import CheckpointCallback
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    assert params(CheckpointCallback.on_save)[:4] == [
        "self",
        "trainer",
        "global_step",
        "checkpoint_dir",
    ]
    assert params(find_latest_ckpt_path)[0] == "path"


def test_manager_creation_contract():
    from verl.trainer.main_ppo import TaskRunnerV1

    src = inspect.getsource(TaskRunnerV1.__ray_actor_class__.init_agent_loop_manager)
    assert "agent_loop_manager_class" in src and "load_class_from_fqn" in src
    for arg in ("llm_client=", "teacher_client=", "reward_loop_worker_handles="):
        assert arg in src
