"""SARA's state beside verl's checkpoint: saved by a verl checkpoint callback, restored by the
manager when the trainer resumes (docs/verl.md).

verl calls ``trainer.checkpoint_callback_class``'s ``on_save`` after each checkpoint;
``SaraCheckpoint`` writes the state actor's ``state_dict`` into that ``global_step_N`` folder as
``sara_state.pkl``.
A resumed trainer finds its folder as verl does (``trainer.resume_mode`` auto: the latest under
``trainer.default_local_dir``; resume_path: ``trainer.resume_from_path``) and the manager loads
the file from it before any prompt runs.  A resume from a folder without the file is refused in
one line — SARA's fitted prior and per-prompt histories are never silently reset — unless
``sampler_kwargs.fresh=true`` asks to start them afresh."""

import os
import pickle

from verl.trainer.ppo.checkpoint_callback import CheckpointCallback
from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

from real.verl.settings import SECTION, check_config
from real.verl.state import state_actor
from sara_sim.core.errors import ParameterError

FILE = "sara_state.pkl"


class SaraCheckpoint(CheckpointCallback):
    """Writes SARA's state into every checkpoint verl saves.  verl builds it first of all, in the
    trainer's constructor: the settings are checked here too, before any model loads."""

    def __init__(self, config=None):
        CheckpointCallback.__init__(self, config)
        if config is not None:
            check_config(config)

    def on_save(self, trainer, global_step, checkpoint_dir, async_save=False, **kwargs):
        import ray

        settings = check_config(self.config)
        if not settings.is_sara:
            return
        state = ray.get(state_actor(settings, create=False).state_dict.remote())
        path = os.path.join(checkpoint_dir, FILE)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(state, f)
        os.replace(tmp, path)  # a crash mid-write leaves the last complete file


def resume_folder(config):
    """The global_step_N folder verl's trainer resumes from, or None (a fresh run)."""
    trainer = config.trainer
    mode = trainer.get("resume_mode", "auto")
    if mode == "disable":
        return None
    if mode == "resume_path":
        folder = trainer.resume_from_path
    else:
        folder = find_latest_ckpt_path(os.path.abspath(trainer.default_local_dir))
    return None if folder is None else os.path.abspath(folder)


def restore(state, config, settings):
    """Load SARA's state from the folder the trainer resumes from (nothing on a fresh run)."""
    import ray

    folder = resume_folder(config)
    if folder is None:
        return None
    path = os.path.join(folder, FILE)
    if not os.path.exists(path):
        if settings.fresh:
            return None
        raise ParameterError(
            "trainer.resume_mode",
            f"{folder} has no SARA state ({FILE}): resuming would reset SARA's prior and "
            f"histories; set +{SECTION}.fresh=true to start them afresh",
        )
    with open(path, "rb") as f:
        saved = pickle.load(f)
    ray.get(state.load_state_dict.remote(saved, path))
    return path
