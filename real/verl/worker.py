"""SARA's agent-loop worker and manager for verl's V1 trainer (docs/verl.md).

verl's ``AgentLoopWorkerTQ`` runs each prompt of a batch in its own coroutine (``_run_prompt``):
n sessions of the agent loop, each written to TransferQueue as it finishes, then the prompt's
status.  ``SaraAgentLoopWorker`` runs SARA's plan for the prompt instead: the state actor
(``state.py``, shared by all workers) opens it with its plan and its first request, the worker
runs that many sessions, reads their 0/1 rewards (a rollout passes iff its reward >= threshold;
verl scores each session as it finishes, so rewards are known at sampling time) and asks the
state for the verdict — continue (the next request), finished (a complete mixed group of n:
status ``finished``, its rollouts already in TransferQueue) or failure (abandoned or saturated:
its rollouts are cleared from TransferQueue and it travels as ``failure``, which the replay
buffer evicts and refills with one fresh prompt).  So every group verl trains on is n rollouts
of one prompt, all mixed.  Validation and ``strategy=ds`` run verl's own per-prompt coroutine;
DS's groups go to verl's own DAPO filter, so DS and SARA differ by the one strategy switch.

Two traps of verl 0.9.1 (tests/verl/test_contract.py keeps them): ``AgentLoopWorkerTQ`` is a
Ray actor class, so the worker subclasses the plain class behind it (``__ray_actor_class__``)
and calls its methods by name, never by zero-argument ``super()`` (Ray ships the subclass's
methods by value and the ``super`` cell then names a copy); and ``_agent_loop_postprocess``
returns nothing in verl, so this worker's returns the session's reward and tokens."""

import asyncio
import logging

import ray
import transfer_queue as tq
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

from real.verl.checkpoint import restore
from real.verl.settings import check_config
from real.verl.state import CONTINUE, FAILED, FINISHED, state_actor
from sara_sim.core.errors import ParameterError

logger = logging.getLogger(__name__)
PlainWorker = AgentLoopWorkerTQ.__ray_actor_class__  # the class behind verl's @ray.remote


class SaraAgentLoopWorker(PlainWorker):
    """verl's TransferQueue agent-loop worker, SARA deciding each training prompt."""

    def __init__(self, config, llm_client, teacher_client=None, reward_loop_worker_handles=None):
        PlainWorker.__init__(self, config, llm_client, teacher_client, reward_loop_worker_handles)
        self.settings = check_config(config)
        self.state = state_actor(self.settings, create=False)
        self.sessions = {}  # uid -> [(reward, tokens)] of a DS prompt's sessions

    async def _agent_loop_postprocess(self, output, validate, **kwargs):
        """verl's (score, write to TransferQueue), then the session's (reward, response tokens)."""
        await PlainWorker._agent_loop_postprocess(self, output, validate, **kwargs)
        outputs = output if isinstance(output, list) else [output]
        result = (outputs[-1].reward_score, sum(len(o.response_ids) for o in outputs))
        if not validate and kwargs.get("uid") in self.sessions:
            self.sessions[kwargs["uid"]].append(result)
        return result

    async def _run_prompt(self, prompt, sampling_params, trajectory, trace=False):
        if trajectory["validate"]:
            return await PlainWorker._run_prompt(self, prompt, sampling_params, trajectory, trace)
        if not self.settings.is_sara:
            return await self._ds_prompt(prompt, sampling_params, trajectory, trace)
        uid = prompt["uid"]
        await tq.async_kv_put(key=uid, partition_id="train", tag={"status": "running"})
        status = FAILED
        try:
            status = await self._sara_prompt(uid, prompt, sampling_params, trajectory, trace)
        except Exception:
            logger.exception(f"SARA prompt {uid} failed; it travels as a failure")
            await self._clear(uid)
        await tq.async_kv_put(key=uid, partition_id="train", tag={"status": status})

    async def _sara_prompt(self, uid, prompt, sampling_params, trajectory, trace):
        prompt.pop("__rollout_n__", None)  # SARA sets each prompt's rollouts
        prompt.pop("__do_sample__", None)
        step, index = int(prompt["global_steps"]), int(prompt.get("index", 0))
        visit, n = await self.state.open.remote(uid, index, step)
        sent, bits, verdict = 0, [], CONTINUE if n else FAILED
        try:
            while verdict == CONTINUE:
                runs = [
                    self._run_agent_loop(
                        sampling_params,
                        trajectory=trajectory,
                        trace=trace,
                        session_id=sent + i,
                        **prompt,
                    )
                    for i in range(n)
                ]
                sent += n
                done = await asyncio.gather(*runs, return_exceptions=True)
                errors = [r for r in done if isinstance(r, BaseException)]
                if errors:
                    raise errors[0]
                new = [int(float(r) >= self.settings.threshold) for r, _ in done]
                bits += new
                lengths = [int(t) for _, t in done]  # each session's tokens, as its reward
                verdict, n = await self.state.absorb.remote(visit, step, new, lengths)
        except Exception:
            if visit >= 0 and verdict == CONTINUE:
                await self.state.lost.remote(visit, step)
            raise
        if verdict == FINISHED:
            await self.state.finished.remote(uid, step, bits, sent, 0)
        else:
            await self._clear(uid)
        return verdict

    async def _ds_prompt(self, prompt, sampling_params, trajectory, trace):
        """verl's own coroutine (n sessions, every group written); its cost booked for sara/."""
        uid, step = prompt["uid"], int(prompt["global_steps"])
        self.sessions[uid] = []
        try:
            await PlainWorker._run_prompt(self, prompt, sampling_params, trajectory, trace)
        finally:
            got = self.sessions.pop(uid)
        bits = [int(float(r) >= self.settings.threshold) for r, _ in got]
        await self.state.finished.remote(uid, step, bits, len(got), sum(t for _, t in got))

    async def _clear(self, uid):
        """Drop the prompt's rollouts from TransferQueue: a failure without trajectories is what
        verl's replay buffer evicts and refills one for one."""
        listed = (await tq.async_kv_list("train") or {}).get("train", {})
        keys = [key for key in listed if key.startswith(f"{uid}_")]
        if keys:
            await tq.async_kv_clear(keys=keys, partition_id="train")


class SaraAgentLoopManager(AgentLoopManagerTQ):
    """verl's TransferQueue agent-loop manager with SARA's workers and the shared state actor
    (restored from the checkpoint a run resumes from: ``checkpoint.restore``)."""

    def __init__(self, config, llm_client, teacher_client=None, reward_loop_worker_handles=None):
        self.settings = check_config(config)
        if self.settings.is_sara and reward_loop_worker_handles is None:
            raise ParameterError(
                "reward.reward_model",
                "SARA decides on rewards at sampling time: use a rule-based reward or "
                "reward.reward_model.enable_resource_pool=true",
            )
        AgentLoopManagerTQ.__init__(
            self, config, llm_client, teacher_client, reward_loop_worker_handles
        )
        self.agent_loop_workers_class = ray.remote(SaraAgentLoopWorker)
        self.state = state_actor(self.settings)
        if self.settings.is_sara:
            restore(self.state, config, self.settings)
