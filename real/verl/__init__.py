"""SARA as a verl V1 plug-in (its own environment: `bash scripts/setup.sh --verl`; docs/verl.md).

    +actor_rollout_ref.rollout.agent.agent_loop_manager_class=real.verl.SaraAgentLoopManager
    trainer.v1.sampler.custom_sampler.path=pkg://real.verl.buffer
    trainer.v1.sampler.custom_sampler.name=SaraReplayBuffer
    trainer.checkpoint_callback_class=real.verl.SaraCheckpoint
    +trainer.v1.sampler.sampler_kwargs.strategy=sara      # ds: verl's own DAPO filter

settings.py (the checks), state.py (the shared collector, a named Ray actor), worker.py (the
agent-loop worker and manager), buffer.py (the replay buffer and metrics), checkpoint.py (save /
resume), client.py (verl's client for a plain vLLM server), toy.py (the tiny model's data and
reward for the tests and the benchmark).  Nothing outside real/verl and its tests imports it."""

from real.verl.checkpoint import SaraCheckpoint
from real.verl.worker import SaraAgentLoopManager, SaraAgentLoopWorker

__all__ = ["SaraAgentLoopManager", "SaraAgentLoopWorker", "SaraCheckpoint"]
