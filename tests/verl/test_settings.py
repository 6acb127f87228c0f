"""Bad input is refused before verl starts, in one line naming the setting and its fix: by
``check_config``, which verl's own trainer constructor reaches first (the checkpoint callback and
the replay buffer it builds), before any model, worker or server exists."""

import pytest
from omegaconf import OmegaConf

from real.verl import toy
from real.verl.settings import SECTION, check_config
from sara_sim.core.errors import ParameterError


def config(tmp_path, *extra, strategy="sara"):
    data = str(tmp_path / "train.parquet")
    if not any(x.startswith("data.gen_batch_size") for x in extra):
        extra = ("data.gen_batch_size=1", *extra)
    return toy.verl_config(str(tmp_path / "model"), data, [*toy.sara_lines(strategy), *extra])


def refused(cfg, setting, fix):
    with pytest.raises(ParameterError) as e:
        check_config(cfg)
    line = str(e.value)
    assert "\n" not in line and line.startswith(setting) and fix in line, line
    return line


def test_a_good_config_passes(tmp_path):
    s = check_config(config(tmp_path, f"+{SECTION}.tau_low=0.3"))
    assert (s.strategy, s.k, s.options["tau_low"]) == ("sara", 8, 0.3)


@pytest.mark.parametrize(
    ("extra", "strategy", "setting", "fix"),
    [
        ((), "sarah", f"{SECTION}.strategy", "choose one of ds, sara, sara-eb"),
        ((f"+{SECTION}.tau_low=1.5",), "sara", f"{SECTION}.tau_low", "[0, 1]"),
        ((f"+{SECTION}.tau_low=-0.1",), "sara", f"{SECTION}.tau_low", "[0, 1]"),
        (("actor_rollout_ref.rollout.n=1",), "sara", "actor_rollout_ref.rollout.n", "n >= 2"),
        (("data.gen_batch_size=4",), "sara", "data.gen_batch_size", "data.gen_batch_size=1"),
        ((f"+{SECTION}.taulow=0.3",), "sara", f"{SECTION}.taulow", "choose from"),
        (("trainer.v1.trainer_mode=separate_async",), "sara", "trainer.v1.trainer_mode", "sync"),
        ((), "ds", "algorithm.filter_groups.enable", "=true"),
        ((f"+{SECTION}.epoch_size=0",), "sara-history", f"{SECTION}.epoch_size", ">= 1"),
    ],
)
def test_bad_settings_are_one_line(tmp_path, extra, strategy, setting, fix):
    refused(config(tmp_path, *extra, strategy=strategy), setting, fix)


def test_the_manager_needs_the_replay_buffer_setting(tmp_path):
    cfg = config(tmp_path)
    OmegaConf.update(cfg, "trainer.v1.sampler.custom_sampler.path", None)
    refused(cfg, "trainer.v1.sampler.custom_sampler", "custom_sampler.path=pkg://real.verl.buffer")
    cfg = config(tmp_path)
    cfg.actor_rollout_ref.rollout.agent.agent_loop_manager_class = "verl.Other"
    refused(cfg, "actor_rollout_ref.rollout.agent.agent_loop_manager_class", "SaraAgentLoopManager")


def test_checkpoints_need_the_callback(tmp_path):
    cfg = config(tmp_path, "trainer.save_freq=10")
    OmegaConf.update(cfg, "trainer.checkpoint_callback_class", None)
    refused(cfg, "trainer.checkpoint_callback_class", "real.verl.SaraCheckpoint")


def test_verl_outside_the_pinned_range(tmp_path):
    with pytest.raises(ParameterError, match=r"^verl: version 0\.9\.0 is untested.*verl==0\.9\.1"):
        check_config(config(tmp_path), version="0.9.0")


def test_verls_own_trainer_refuses_before_anything_starts(tmp_path):
    """verl's PPOTrainerSync constructor builds our checkpoint callback and replay buffer first:
    the bad tau_low stops it there, with no Ray, model or server started."""
    import ray
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    cfg = config(tmp_path, f"+{SECTION}.tau_low=2")
    with pytest.raises(ParameterError, match=rf"^{SECTION}\.tau_low: "):
        PPOTrainerSync(cfg)
    assert not ray.is_initialized()
