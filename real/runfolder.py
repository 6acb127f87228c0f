"""The run folder's rules, checked before anything heavy starts (real.checks.check_config calls
`check_run_folder` last); the files themselves are written by `real/runlog.py`.

* a used `--out` (a checkpoint, a summary or a completed step) needs `--resume` or
  `--overwrite` (only `--overwrite` when there is no checkpoint to resume); a run that failed on
  its first step left nothing to lose, so a plain start — or a `--resume`, from step 0 — is
  accepted (never a circle of advice);
* a resumed run's metrics lines must cover every step its checkpoint does (a torn last line is
  repaired, `real.runlog.resume_metrics`), checked here, before any engine starts;
* `--resume` needs a readable checkpoint written with the same experiment: only the settings in
  `RESUMABLE` (steps, evaluation / checkpoint cadence, progress) may differ; the saved config may
  be nested (`asdict(Config)`) or flat (runs written before Config had sections);
* a folder another live run is writing (its `.lock` is held) is refused;
* a TRL checkpoint folder counts only when complete: our `on_save` writes `TRL_MARKER` after TRL
  wrote everything else, so a folder without it was cut off mid-save (a kill, a crash); the
  resumed run moves it aside to OUT/trl/incomplete-checkpoint-N (kept, never deleted), since
  TRL's rotation (`save_total_limit`) would otherwise count it and delete a whole one."""

import sys
from pathlib import Path

from real.config import Config
from sara_sim.core.errors import ParameterError

# Settings a --resume may change: they change how a run is watched, not what it computes.
# A server address is where the weights are pushed, not part of the experiment.
RESUMABLE = (
    "steps", "eval_every", "ckpt_every", "progress",
    "resume", "overwrite", "force", "out", "engine_url",
)  # fmt: skip
RUN_FILES = ("metrics.jsonl", "checkpoint.pt", "summary.json")
TRL_MARKER = "sara_metrics_row.json"  # in OUT/trl/checkpoint-N: that step's line, written last
CKPT_PREFIX = "checkpoint-"  # transformers' name (PREFIX_CHECKPOINT_DIR) for step N's folder


def checkpoint_dir(output_dir, step: int) -> Path:
    """TRL's checkpoint folder of optimizer step `step` in `output_dir` (OUT/trl)."""
    return Path(output_dir) / f"{CKPT_PREFIX}{step}"


def checkpoint_step(path) -> int | None:
    """The optimizer step a checkpoint-N folder is named for; None for any other name."""
    name = Path(path).name
    tail = name.removeprefix(CKPT_PREFIX)
    return int(tail) if tail != name and tail.isdigit() else None


def check_writable(path: Path, flag: str) -> None:
    """`path` (a folder, existing or not) can be created and written, without creating it."""
    import tempfile

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ParameterError(flag, f"{path} is a file, not a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ParameterError(flag, f"cannot create {path}: {probe} is a file")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise ParameterError(flag, f"cannot write in {probe} ({e.strerror})") from None


def has_checkpoint(folder: Path, trainer: str = "native") -> bool:
    """A run in `folder` that --resume can continue (TRL keeps its own checkpoint-N folders)."""
    if trainer == "trl":
        return bool(trl_checkpoints(folder)[0])
    return Path(folder, "checkpoint.pt").is_file()


def trl_checkpoints(folder: Path) -> tuple[list[Path], list[Path]]:
    """OUT/trl's (complete, incomplete) checkpoint-N folders, each oldest first."""
    found = Path(folder, "trl").glob(f"{CKPT_PREFIX}*")
    found = sorted((p for p in found if checkpoint_step(p) is not None), key=checkpoint_step)
    complete = [p for p in found if (p / TRL_MARKER).is_file()]
    return complete, [p for p in found if p not in complete]


def set_aside_incomplete(folder: Path) -> None:
    """Move the TRL checkpoints cut off mid-save out of TRL's sight (one note on stderr)."""
    moved = []
    for p in trl_checkpoints(folder)[1]:
        dest, n = p.with_name(f"incomplete-{p.name}"), 1
        while dest.exists():  # the same step cut off twice: keep both
            n += 1
            dest = p.with_name(f"incomplete-{p.name}-{n}")
        p.rename(dest)
        moved.append(f"{p.name} -> {dest.name}")
    if moved:
        print(
            f"note: {Path(folder, 'trl')}: set aside incomplete checkpoint(s) (cut off while "
            f"saving; kept, not resumed from): {', '.join(moved)}",
            file=sys.stderr,
        )


def done_steps(folder: Path) -> int:
    """Complete metrics lines in `folder` (a damaged file counts as used: never overwritten)."""
    from real.runlog import read_metrics

    try:
        return len(read_metrics(Path(folder) / "metrics.jsonl"))
    except ParameterError:
        return 1


def holds_run(folder: Path) -> bool:
    """A checkpoint (native or TRL), a summary or a completed step: a run not to be lost. A run
    that failed on its first step (an empty metrics file, no checkpoint) holds nothing."""
    folder = Path(folder)
    if has_checkpoint(folder) or any(Path(folder, "trl").glob(f"{CKPT_PREFIX}*")):
        return True
    return (folder / "summary.json").exists() or done_steps(folder) > 0


def check_run_folder(cfg, flag: str = "--out") -> None:
    """The used-folder rule, resume compatibility and the lock (see the module docstring)."""
    out = Path(cfg.out)
    check_writable(out, flag)
    if cfg.resume and cfg.overwrite:
        raise ParameterError("--resume", "--resume and --overwrite exclude each other")
    from real.runlog import lock_holder

    pid = lock_holder(out)
    if pid is not None:
        raise ParameterError(flag, f"{out} is being written by another run (pid {pid})")
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
    from real.runlog import resume_metrics

    resume_metrics(out / "metrics.jsonl", saved["step"] + 1, saved["row"])  # repairable?


def _check_trl_resume(cfg, out: Path) -> None:
    """A TRL run resumes from TRL's own OUT/trl/checkpoint-N; its settings are in config.json."""
    import json

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
    from real.runlog import resume_metrics
    from real.trl_run import saved_row

    start = checkpoint_step(ckpts[-1]) // cfg.grpo.minibatches
    resume_metrics(out / "metrics.jsonl", start, saved_row(ckpts[-1]))  # repairable?


def read_checkpoint_config(ckpt: Path) -> dict:
    """{"step", "config", "row"} of a checkpoint, or a one-line error naming the file when it is
    torn or corrupted (every zip record's CRC is checked; tensors are memory-mapped, not read)."""
    import zipfile

    bad = None
    try:
        with zipfile.ZipFile(ckpt) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError) as e:
        bad = str(e)
    if bad is None:
        import torch

        try:
            ck = torch.load(ckpt, map_location="cpu", weights_only=False, mmap=True)
            row = ck.get("metrics_row")  # the step's metrics line (a torn one is restored)
            return {"step": int(ck["step"]), "config": dict(ck["config"]), "row": row}
        except Exception as e:  # unpickling a damaged file can raise almost anything
            bad = f"{type(e).__name__}: {e}"
    raise ParameterError(
        "--resume", f"{ckpt} is corrupted or truncated ({bad}); use --overwrite to start over"
    )


def check_same_run(saved: dict, cfg) -> None:
    """Resuming with another allocator, k, lr, temperature... would silently splice two runs."""
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
        from real.tiny import default_dir

        return str(default_dir().resolve())
    p = Path(model).expanduser()
    return str(p.resolve()) if p.exists() else str(model)
