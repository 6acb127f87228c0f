"""verl's replay buffer, configured for SARA or for verl's own DAPO filter by the one strategy
switch, and logging SARA's metrics through verl's own metrics (docs/verl.md).

Plugged in as ``trainer.v1.sampler.custom_sampler`` (path ``pkg://real.verl.buffer``, name
``SaraReplayBuffer``).  verl hands a custom sampler six arguments only; the rest of the run's
config is read from the root of the ``sampler_kwargs`` node it is given (OmegaConf's
``_get_root``, the one private call here, held by tests/verl/test_contract.py), which is also
where the settings are checked — in the trainer's constructor, before any model or worker starts.

* SARA strategies: verl's sync ``ReplayBuffer`` with ``sync_refill_failed_groups`` and
  ``gen_batch_size`` 1 — an abandoned prompt (a ``failure`` without trajectories) is evicted and
  refilled with exactly one fresh prompt; no DAPO filter (every group SARA finishes is mixed).
* ``ds``: the same buffer with verl's DAPO filter on ``algorithm.filter_groups.metric`` and its
  ``max_inflight_gen_batches`` — what verl builds itself when ``algorithm.filter_groups.enable``.

``sample`` returns verl's batch and metrics plus the step's ``sara/`` metrics (rollouts, tokens,
effective groups, abandoned, rollouts and tokens per effective group: ``state.step_metrics``),
which the trainer logs with its own (console, wandb, ...)."""

import ray
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

from real.verl.settings import check_config
from real.verl.state import state_actor


def root_config(sampler_kwargs):
    """The trainer's whole config, from the sampler_kwargs node verl hands a custom sampler."""
    return sampler_kwargs._get_root()


class SaraReplayBuffer(ReplayBuffer):
    def __init__(
        self,
        trainer_mode,
        trainer_config,
        max_off_policy_threshold,
        max_off_policy_strategy,
        sampler_kwargs,
        refill_fn=None,
    ):
        cfg = root_config(sampler_kwargs)
        self.settings = check_config(cfg)
        self._state = None
        if refill_fn is not None:
            refill_fn = self._checked(refill_fn)
        groups = cfg.algorithm.filter_groups
        ds = not self.settings.is_sara
        ReplayBuffer.__init__(
            self,
            trainer_mode,
            trainer_config,
            max_off_policy_threshold,
            max_off_policy_strategy,
            sampler_kwargs,
            poll_interval=self.settings.poll_interval,
            refill_fn=refill_fn,
            filter_groups_metric=str(groups.metric) if ds else None,
            train_batch_size=int(cfg.data.train_batch_size),
            gen_batch_size=1,
            max_inflight_gen_batches=int(groups.max_inflight_gen_batches) if ds else 1,
            sync_refill_failed_groups=True,
        )

    def state(self):
        if self._state is None:
            self._state = state_actor(self.settings, create=False)
        return self._state

    def _checked(self, refill_fn):
        """verl's refill, refused once SARA's shared state has failed: the failed prompts would
        otherwise be refilled for ever, each failing the same way."""

        def refill(n):
            error = ray.get(self.state().failed.remote())
            if error is not None:
                raise RuntimeError(f"SARA's state failed ({error}); stopping instead of refilling")
            return refill_fn(n)

        return refill

    def sample(self, global_steps, partition_id, batch_size):
        batch, metrics = ReplayBuffer.sample(self, global_steps, partition_id, batch_size)
        if partition_id == "train":
            uids = sorted({key.split("_")[0] for key in batch.keys})
            metrics.update(ray.get(self.state().step_metrics.remote(global_steps, uids)))
        return batch, metrics
