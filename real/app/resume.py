"""The run folder's rules that need the run's settings (real.app.run.check_config calls
`check_run_folder` last, before anything heavy starts); the folder's files and their names are
`real/io/runfolder.py`'s.

* a used `--out` (a checkpoint, a summary or a completed step) needs `--resume` or
  `--overwrite` (only `--overwrite` when there is no checkpoint to resume); a run that failed on
  its first step left nothing to lose, so a plain start — or a `--resume`, from step 0 — is
  accepted (never a circle of advice);
* a resumed run's metrics lines must cover every step its checkpoint does (a torn last line is
  repaired, `real.io.runlog.resume_metrics`), checked here, before any engine starts;
* `--resume` needs a readable checkpoint written with the same experiment: only the settings in
  `RESUMABLE` (steps, evaluation / checkpoint cadence, progress) may differ (the saved config is
  `asdict(Config)`); the default model (None) and the tiny model's folder are the same model;
* a folder another live run is writing (its `.lock` is held) is refused."""

import json
import os
import sys
from pathlib import Path

from real.base.config import Config
from real.io.runfolder import (
    RESUMABLE,
    RUN_FILES,
    check_writable,
    checkpoint_step,
    done_steps,
    has_checkpoint,
    holds_run,
    read_checkpoint_config,
    saved_row,
    trl_checkpoints,
)
from real.io.runlog import lock_holder, resume_metrics
from real.models.tiny import default_dir
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import path_problem


def check_run_folder(cfg, flag: str = "--out") -> None:
    """The used-folder rule, resume compatibility and the lock (see the module docstring)."""
    out = Path(cfg.out)
    check_writable(out, flag)
    if cfg.resume and cfg.overwrite:
        raise ParameterError("--resume", "--resume and --overwrite exclude each other")
    pid = lock_holder(out)
    if pid is not None:
        raise ParameterError(flag, f"{out} is being written by another run (pid {pid})")
    for name in RUN_FILES:  # a run file that is a directory, a FIFO, a device: its true reason
        if os.path.lexists(out / name):
            problem = path_problem(out / name, f"{name.split('.')[0]} file")
            if problem is not None:
                raise ParameterError(
                    "--resume" if cfg.resume else flag,
                    f"{problem}: move it away (a run never removes what it did not write, "
                    "not even with --overwrite)",
                )
    if not holds_run(out):  # nothing to continue, nothing to lose: a plain start is accepted
        if cfg.resume and not (out / "metrics.jsonl").exists():
            raise ParameterError(
                "--resume", f"no checkpoint and no step in {out} to resume (start without --resume)"
            )
        if cfg.resume:  # a run that failed on its first step: resuming it is starting it
            print(f"note: {out} holds no completed step; the run starts at step 0", file=sys.stderr)
        return
    if not cfg.resume:
        if not cfg.overwrite:
            advice = "pass --resume to continue it or --overwrite"
            if not has_checkpoint(out, cfg.trainer):  # a resume would be refused: say so
                advice = "it stopped before its first checkpoint; pass --overwrite to start over"
            raise ParameterError(flag, f"{out} already holds a run; {advice}")
        return
    if cfg.trainer == "trl":
        return _check_trl_resume(cfg, out)
    if (out / "trl").is_dir():
        raise ParameterError("--resume", f"{out} holds a --trainer trl run; resume it with that")
    ckpt = out / "checkpoint.pt"
    if not ckpt.is_file():
        raise ParameterError(
            "--resume",
            f"no checkpoint in {out} to resume: the run stopped before its first checkpoint "
            f"({done_steps(out)} steps done); --overwrite starts it over",
        )
    saved = read_checkpoint_config(ckpt)
    check_same_run(saved["config"], cfg)
    if cfg.steps < saved["step"] + 1:
        raise ParameterError(
            "--steps", f"the run in {out} has done {saved['step'] + 1} steps; give at least that"
        )
    resume_metrics(out / "metrics.jsonl", saved["step"] + 1, saved["row"])  # repairable?


def _check_trl_resume(cfg, out: Path) -> None:
    """A TRL run resumes from TRL's own OUT/trl/checkpoint-N; its settings are in config.json."""
    ckpts, torn = trl_checkpoints(out)
    if not ckpts:
        if (out / "checkpoint.pt").is_file():
            raise ParameterError("--resume", f"{out} holds a --trainer native run; resume it so")
        cut = f" ({torn[-1].name} was cut off while saving)" if torn else ""
        raise ParameterError(
            "--resume",
            f"no complete TRL checkpoint in {out}/trl to resume{cut}: the run stopped before its "
            f"first checkpoint ({done_steps(out)} steps done); --overwrite starts it over",
        )
    saved = out / "config.json"
    try:
        check_same_run(json.loads(saved.read_text()), cfg)
    except (OSError, ValueError) as e:
        if isinstance(e, ParameterError):
            raise
        raise ParameterError("--resume", f"{saved} is missing or unreadable ({e})") from None
    start = checkpoint_step(ckpts[-1]) // cfg.grpo.minibatches
    resume_metrics(out / "metrics.jsonl", start, saved_row(ckpts[-1]))  # repairable?


def check_same_run(saved: dict, cfg) -> None:
    """Resuming with another strategy, k, lr, temperature... would silently splice two runs."""
    try:
        then_cfg = Config.from_dict(saved)
    except (TypeError, ValueError) as e:  # a setting this version does not know
        raise ParameterError(
            "--resume",
            f"the run in {cfg.out} was written with other settings ({e}); "
            "use --overwrite to start over",
        ) from None
    then_all, changed = then_cfg.flat(), []
    for name, now in cfg.flat().items():
        if name in RESUMABLE:
            continue
        then = then_all[name]
        if name == "model":
            now, then = _model_key(now), _model_key(then)
        if isinstance(now, tuple | list):
            now, then = list(now), list(then) if isinstance(then, tuple | list) else then
        if now != then:
            changed.append(f"{name}={then!r} (now {now!r})")
    if changed:
        raise ParameterError(
            "--resume",
            f"the checkpoint in {cfg.out} was written with {', '.join(changed)}; only "
            f"{', '.join(RESUMABLE[:4])} may change on resume",
        )


def _model_key(model) -> str | None:
    if model is None:
        return str(default_dir().resolve())
    p = Path(model).expanduser()
    return str(p.resolve()) if p.exists() else str(model)
