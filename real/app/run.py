"""`sara-real validate`'s run: check the config (`real.app.checks.check_config`), take the run
folder's lock, send engine noise to OUT/engine.log (`real.io.enginelog`), then train through our
GRPO loop (`real.train.loop`) or TRL's GRPOTrainer (`real.trl.run`): the one place the two
trainers meet."""

from pathlib import Path

from real.app.checks import check_config
from real.base.config import Config
from real.io.enginelog import engine_log
from real.io.runlog import RunLock
from real.train.loop import train_native


def train(cfg: Config, engine=None, checked=None) -> dict:
    """Run (or resume) one training run; returns the summary dict (also in out/summary.json).
    `checked`: what `real.app.checks.check_config(cfg)` returned, when the caller has checked `cfg`
    already (compare checks every run before the first); its collector is the run's."""
    checked = checked or check_config(cfg)
    out = Path(cfg.out)
    # one writer per run folder (the OS releases the lock if we are killed); engine and library
    # noise into OUT/engine.log, not the terminal
    with RunLock(out), engine_log(out):
        if cfg.trainer == "trl":  # the same experiment through TRL's GRPOTrainer
            # imported here: real.trl imports transformers and torch, the native loop does not
            from real.trl.run import train_trl

            return train_trl(cfg, checked, engine=engine)
        return train_native(cfg, checked, out, engine)
