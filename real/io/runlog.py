"""The run directory's files: metrics.jsonl (one line per step), summary.json, checkpoints.

Every write that must survive a SIGKILL or a full disk is either an fsynced append (a metrics line;
a failed write is cut back off) or a whole-file replace (write a temp file, fsync, os.replace), so
a reader never sees half a file (`sara_sim.core.files`). At worst the last metrics line is torn (a
kill mid-write): readers skip it, and a resume repairs it (`resume_metrics`): the line is dropped
and its step run again, or — when the checkpoint already covers that step — restored from the copy
the checkpoint keeps. A damaged line before the last is one error naming the file and the line."""

import json
import os
from pathlib import Path

from real.io.enginelog import user_stderr
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import (  # noqa: F401  (append_bytes, atomic_write: re-exported)
    append_bytes,
    atomic_write,
    dumps_json,
    read_input,
)

# ------------------------------------------------------------------ the metrics line
# One line per collection step, the same keys for both trainers (native loop and TRL run), in
# this order. A TRL line adds TRL_KEYS; a line that evaluated adds eval_accuracy / eval_wins; the
# first line of a fresh run adds eval_initial_wins.
COLLECT_KEYS = (
    "rollouts",
    "tokens",
    "effective_groups",
    "groups",
    "rounds",
    "round_sizes",
    "abandoned",
    "carried",
    "carried_open",
    "waste",
    "cancelled",
    "cancelled_tokens",
    "capped",
    "priced_lengths",
    "reward_mean",
    "batch_reward_mean",
)
TRAIN_KEYS = ("loss", "grad_norm", "clip_frac")
TIME_KEYS = ("gen_s", "reward_s", "alloc_s", "round_s", "train_s", "sync_s", "eval_s", "wall_s")
CUM_KEYS = ("cum_rollouts", "cum_tokens", "cum_effective")
METRICS_KEYS = (
    "step",
    "strategy",
    *COLLECT_KEYS,
    "reward_errors",
    *TRAIN_KEYS,
    *TIME_KEYS,
    *CUM_KEYS,
) + ("audited", "audit_mixed")
TRL_KEYS = ("trainer", "padded")
# What readers of older run folders may rely on (lines written before the later keys were added):
# the notebook's REQUIRED columns.
READER_KEYS = ("step", "strategy", "rollouts", "tokens", "effective_groups", "rounds") + (
    ("abandoned", "reward_mean", "gen_s", "train_s", "sync_s", "wall_s")
)


def pass_at_1(wins: list[int], samples: int) -> float:
    """Held-out pass@1: mean success over `samples` samples of each problem (wins per problem)."""
    return sum(wins) / (len(wins) * samples)


def collect_fields(
    res,
    *,
    tokens,
    effective,
    groups,
    reward_mean,
    batch_reward_mean,
    cancelled=0,
    cancelled_tokens=0,
) -> dict:
    """The collection part of a line from a collector's result `res`: `reward_mean` over all the
    rewards seen, `batch_reward_mean` over the samples handed to the trainer; `cancelled` /
    `cancelled_tokens`: rollouts a stream aborted in flight and the tokens they had generated
    (counted in `rollouts` / `tokens` too; 0 for rounds)."""
    return {
        "rollouts": res.rollouts,
        "tokens": tokens,
        "effective_groups": effective,
        "groups": groups,
        "rounds": res.rounds,
        "round_sizes": list(res.round_sizes),
        "abandoned": len(res.abandoned),
        "carried": res.carried,
        "carried_open": getattr(res, "carried_open", 0),
        "waste": res.waste,
        "cancelled": cancelled,
        "cancelled_tokens": cancelled_tokens,
        "capped": bool(getattr(res, "capped", False)),
        # the mean (pass, fail) tokens the step's plans were priced at (--priced-in tokens);
        # null: priced in rollouts (the default, or no length of both outcomes learned yet)
        "priced_lengths": _pair(getattr(res, "lengths", None)),
        "reward_mean": reward_mean,
        "batch_reward_mean": batch_reward_mean,
    }


def _pair(lengths):
    return None if lengths is None else [float(x) for x in lengths]


def metrics_row(values: dict, *, eval_wins=None, eval_samples=0, initial_wins=None) -> dict:
    """One step's line: exactly METRICS_KEYS (plus TRL_KEYS when given) from `values`, then the
    evaluation's pass@1 and wins when it ran, then the start model's wins (first line only).
    A missing or unknown key is a programming error: both trainers must write the same line."""
    known = set(METRICS_KEYS) | set(TRL_KEYS)
    missing = [k for k in METRICS_KEYS if k not in values]
    if missing or set(values) - known:
        raise KeyError(f"metrics line: missing {missing}, unknown {sorted(set(values) - known)}")
    row = {k: values[k] for k in METRICS_KEYS + TRL_KEYS if k in values}
    if eval_wins is not None:
        row["eval_accuracy"] = pass_at_1(eval_wins, eval_samples)
        row["eval_wins"] = eval_wins  # per held-out problem, out of eval_samples
    if initial_wins is not None:
        row["eval_initial_wins"] = initial_wins
    return row


def scan_metrics(path: Path, flag: str = "--out") -> tuple[list[dict], int | None]:
    """(parsed lines, number of a torn last line or None). Bytes, not text: a torn tail may end
    inside a UTF-8 character. A bad line before the last is not a crash's trace: an error."""
    path = Path(path)
    if not os.path.lexists(path):
        return [], None
    data = read_input(path, flag, "metrics file")  # a directory, FIFO, unreadable: its reason
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the file ends with a newline: no unterminated tail
    rows = []
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line.decode("utf-8"))
            if not isinstance(row, dict) or not isinstance(row.get("step"), int):
                raise ValueError("not a step record")
        except ValueError as e:  # UnicodeDecodeError and JSONDecodeError included
            if n == len(lines):
                return rows, n
            why = "not UTF-8" if isinstance(e, UnicodeDecodeError) else "not a metrics record"
            raise ParameterError(
                flag, f"{path} line {n} is {why}: the file is damaged; --overwrite starts over"
            ) from None
        rows.append(row)
    return rows, None


def read_metrics(path: Path) -> list[dict]:
    """Parsed lines; a torn last line (killed mid-write) is skipped."""
    return scan_metrics(path)[0]


def resume_metrics(path: Path, below_step: int, restore: dict | None = None, flag="--resume"):
    """(the lines a run resumed at `below_step` keeps, a note on a repair or None): one line per
    step < below_step (the first written). Every such step must have its line — except that the
    last one, if torn, is `restore` (the checkpoint's copy); a step missing otherwise is an error,
    never a silent gap."""
    rows, torn = scan_metrics(path, flag)
    kept, seen = [], set()
    for r in rows:
        if r["step"] < below_step and r["step"] not in seen:
            seen.add(r["step"])
            kept.append(r)
    missing = sorted(set(range(below_step)) - seen)
    note = None
    if torn is not None:
        note = f"{path}: line {torn} was cut off by a crash mid-write; removed"
        if missing == [below_step - 1] and (restore or {}).get("step") == missing[0]:
            kept.append(restore)
            missing = []
            note += f" and step {below_step - 1}'s line restored from the checkpoint"
        else:
            note += " (its step runs again)"
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ParameterError(
            flag,
            f"{path} lacks the line of step{'s' * (len(missing) > 1)} {shown}, which the "
            "checkpoint covers; "
            "--overwrite starts over",
        )
    return kept, note


def truncate_metrics(path: Path, below_step: int, restore: dict | None = None) -> list[dict]:
    """Keep the lines `resume_metrics` keeps, drop the rest, atomically; says what it repaired."""
    kept, note = resume_metrics(path, below_step, restore)
    if note:
        print(f"note: {note}", file=user_stderr())
    atomic_write(path, "".join(_line(r) for r in kept).encode())
    return kept


def _line(row: dict) -> str:
    """One strict-JSON metrics line: an undefined number is null (JSON has no nan)."""
    return dumps_json(row, indent=None) + "\n"


def append_metrics(path: Path, row: dict) -> None:
    append_bytes(path, _line(row).encode())


# What `validate` prints and `compare` tabulates, from the summary below.
SUMMARY_KEYS = (
    "strategy",
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
    groups = sum(r["groups"] for r in rows)
    evals = [
        (r["step"], r["cum_rollouts"], r["eval_accuracy"]) for r in rows if "eval_accuracy" in r
    ]
    return {
        "strategy": cfg["strategy"],
        "task": cfg["task"],
        "model": str(model_dir),
        "k": cfg["k"],
        "groups": cfg["groups"],
        "steps": len(rows),
        "seed": cfg["seed"],
        "rollouts": roll,
        "tokens": tok,
        "effective_groups": eff,
        "batch_groups": groups,
        "rollouts_per_effective_group": roll / eff if eff else None,
        "tokens_per_effective_group": tok / eff if eff else None,
        "effective_fraction": eff / groups if groups else None,
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

        from sara_sim.core.files import writing

        with writing(self.folder / LOCK):
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ParameterError(
                "--out", f"{self.folder} is being written by another run (pid {_pid(self.folder)})"
            ) from None
        try:
            with writing(self.folder / LOCK):  # the pid is only shown to a refused second run
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
        except BaseException:
            os.close(fd)
            raise
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
