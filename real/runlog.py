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
