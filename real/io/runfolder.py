"""The run folder's files and their names: checkpoint-N naming (`checkpoint_dir`,
`checkpoint_step`, the one spelling of "checkpoint-N"), what counts as a run to keep, a
checkpoint's saved config, and `check_writable`; the files themselves are written by
`real/io/runlog.py`, the rules that need the run's settings (used folder, resume) are
`real/app/resume.py`'s.

* a TRL checkpoint folder counts only when complete: our `on_save` writes `TRL_MARKER` after TRL
  wrote everything else, so a folder without it was cut off mid-save (a kill, a crash); the
  resumed run moves it aside to OUT/trl/incomplete-checkpoint-N (kept, never deleted), since
  TRL's rotation (`save_total_limit`) would otherwise count it and delete a whole one."""

import json
import os
from pathlib import Path

from real.io.enginelog import user_stderr
from real.io.runlog import read_metrics
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import check_input, path_problem

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
    if os.path.lexists(path) and not path.is_dir():  # a file, FIFO, device, dangling link
        raise ParameterError(flag, path_problem(path, "folder", folder=True))
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
            file=user_stderr(),
        )


def done_steps(folder: Path) -> int:
    """Complete metrics lines in `folder` (a damaged file counts as used: never overwritten)."""
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


def read_checkpoint_config(ckpt: Path) -> dict:
    """{"step", "config", "row"} of a checkpoint, or a one-line error naming the file when it is
    torn or corrupted (every zip record's CRC is checked; tensors are memory-mapped, not read)."""
    import zipfile

    check_input(ckpt, "--resume", "checkpoint file")  # unreadable is not corrupted: say which
    bad = None
    try:
        with zipfile.ZipFile(ckpt) as z:
            bad = z.testzip()
    except zipfile.BadZipFile as e:
        bad = str(e)
    except OSError as e:
        raise ParameterError("--resume", f"cannot read {ckpt}: {e.strerror or e}") from None
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


def saved_row(ckpt_dir: Path) -> dict | None:
    """The metrics line a TRL checkpoint keeps of its step (restores a torn one), if readable."""
    try:
        return json.loads((Path(ckpt_dir) / TRL_MARKER).read_text())
    except (OSError, ValueError):
        return None
