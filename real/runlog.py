"""The run directory's files: metrics.jsonl (one line per step), summary.json, checkpoints.

Every write that must survive a SIGKILL is either an fsynced append (a metrics line) or a
whole-file replace (write a temp file, fsync, os.replace), so a reader never sees half a file;
at worst the last metrics line is torn, and readers skip it."""

import json
import os
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_metrics(path: Path) -> list[dict]:
    """Parsed lines; a torn last line (killed mid-write) is skipped."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def truncate_metrics(path: Path, below_step: int) -> list[dict]:
    """Keep one line per step < below_step (the first written), drop the rest, atomically."""
    kept, seen = [], set()
    for r in read_metrics(path):
        if r.get("step", -1) < below_step and r["step"] not in seen:
            seen.add(r["step"])
            kept.append(r)
    atomic_write(path, "".join(json.dumps(r) + "\n" for r in kept).encode())
    return kept


def append_metrics(path: Path, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


# What `validate` prints and `compare` tabulates, from the summary below.
SUMMARY_KEYS = (
    "allocator",
    "steps",
    "rollouts",
    "tokens",
    "effective_groups",
    "rollouts_per_effective_group",
    "tokens_per_effective_group",
    "rounds_median",
    "effective_fraction",
    "abandoned",
    "reward_errors",
    "eval_initial",
    "eval_final",
    "alloc_share",
    "wall_s",
)


def summarize(rows: list[dict], cfg: dict, eval_initial, model_dir) -> dict:
    """Run totals and ratios, recomputed from the metrics lines (the single source of truth)."""
    import numpy as np

    eff = sum(r["effective_groups"] for r in rows)
    roll = sum(r["rollouts"] for r in rows)
    tok = sum(r["tokens"] for r in rows)
    wall = sum(r["wall_s"] for r in rows)
    evals = [
        (r["step"], r["cum_rollouts"], r["eval_accuracy"]) for r in rows if "eval_accuracy" in r
    ]
    return {
        "allocator": cfg["allocator"],
        "task": cfg["task"],
        "model": str(model_dir),
        "k": cfg["k"],
        "groups": cfg["groups"],
        "steps": len(rows),
        "seed": cfg["seed"],
        "rollouts": roll,
        "tokens": tok,
        "effective_groups": eff,
        "batch_groups": sum(r["groups"] for r in rows),
        "rollouts_per_effective_group": roll / eff if eff else None,
        "tokens_per_effective_group": tok / eff if eff else None,
        "effective_fraction": eff / max(1, sum(r["groups"] for r in rows)),
        "rounds_median": float(np.median([r["rounds"] for r in rows])) if rows else None,
        "rounds_mean": float(np.mean([r["rounds"] for r in rows])) if rows else None,
        "abandoned": sum(r["abandoned"] for r in rows),
        "reward_errors": sum(r["reward_errors"] for r in rows),
        "wall_s": wall,
        "gen_s": sum(r["gen_s"] for r in rows),
        "train_s": sum(r["train_s"] for r in rows),
        "sync_s": sum(r["sync_s"] for r in rows),
        "alloc_s": sum(r["alloc_s"] for r in rows),
        "alloc_share": sum(r["alloc_s"] for r in rows) / wall if wall else None,
        "eval_initial": eval_initial,
        "eval": [{"step": s, "cum_rollouts": c, "accuracy": a} for s, c, a in evals],
        "eval_final": evals[-1][2] if evals else None,
        "config": {k: v for k, v in cfg.items() if k != "progress"},
    }


# ---------------------------------------------------------------- one writer per run folder

LOCK = ".lock"


class RunLock:
    """Exclusive advisory lock (flock) on FOLDER/.lock while a run writes FOLDER.

    The OS drops the lock when the process dies — SIGKILL included — so a crashed run never blocks
    its own `--resume`, while a second live run on the same folder is refused at once."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.fd = None

    def __enter__(self):
        import fcntl

        from sara_sim.core.errors import ParameterError

        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ParameterError(
                "--out", f"{self.folder} is being written by another run (pid {_pid(self.folder)})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc):
        import fcntl

        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False


def _pid(folder: Path) -> str:
    try:
        return (Path(folder) / LOCK).read_text().strip() or "?"
    except OSError:
        return "?"


def lock_holder(folder) -> str | None:
    """The pid of another process holding FOLDER's lock, or None (never blocks)."""
    import fcntl

    path = Path(folder) / LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _pid(folder)
        return None if pid == str(os.getpid()) else pid
    finally:
        os.close(fd)  # closing releases a lock we just took
    return None
