"""Helpers for toy claim files (benchmarks/results/claims/NAME.csv + NAME.meta.json) built in
the tests, with effects chosen so that each claim's verdict is known in advance — never the
committed numbers."""

import json

import numpy as np
import pandas as pd

STEPS, EVAL_EVERY = 6, 3
# strategy -> (accuracy offset vs DS, rollouts per step, tokens per rollout, effective fraction
# at the first and at the last step)
ARITH = {
    "ds": (0.0, 400, 5.0, 1.0, 1.0),
    "sara": (0.0, 312, 5.0, 1.0, 1.0),  # 0.78x rollouts, same accuracy
    "sara-dps": (0.0, 264, 5.0, 1.0, 1.0),  # 0.66x: a third saved, not two thirds
    "mopps": (0.0, 256, 5.0, 0.9, 0.4),  # falls
    "dps": (0.0, 256, 5.0, 0.8, 0.3),
    "uniform": (-0.05, 256, 5.0, 0.4, 0.4),
}


def toy_rows(spec, seeds, k=8, tokens=None, noise=0.002):
    """learning.csv rows: accuracy 0.4 + 0.02 per step + offset (+ per-seed noise, shared by
    the strategies of a seed, and a little of each run's own), linear costs."""
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        shared = rng.normal(0, 0.01, STEPS + 1)
        for a, (off, rps, tpr, f0, f1) in spec.items():
            own = np.random.default_rng([seed, len(a), ord(a[-1])]).normal(0, noise, STEPS + 1)
            tpr = tokens(a, seed) if tokens else tpr
            for st in range(STEPS + 1):
                evaluated = st % EVAL_EVERY == 0 or st == STEPS
                acc = 0.4 + 0.02 * st + shared[st] + (off + own[st] if st else 0.0)
                frac = f0 + (f1 - f0) * (st - 1) / (STEPS - 1) if st else None
                rows.append(
                    {
                        "strategy": a,
                        "k": k,
                        "seed": seed,
                        "step": st,
                        "cum_rollouts": rps * st,
                        "cum_tokens": rps * st * tpr,
                        "wall_s": 0.1 * rps * st,
                        "eval_accuracy": acc if evaluated else None,
                        "effective_fraction": frac,
                        "rollouts": rps if st else None,
                    }
                )
    return pd.DataFrame(rows)


def toy_meta(estimator="grpo", task="arithmetic", lr=3e-4):
    config = {
        "task": task,
        "k": None,
        "seed": None,
        "out": None,
        "steps": STEPS,
        "grpo": {"lr": lr, "estimator": estimator},
        "knobs": {"tau_low": 0.2},
    }
    return {
        "command": "python benchmarks/real_learning.py --out OUT",
        "args": {"estimator": estimator, "task": task, "lr": lr},
        "config": config,
    }


def write(folder, name, frame, meta):
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{name}.csv", index=False)
    if meta is not None:
        (folder / f"{name}.meta.json").write_text(json.dumps(meta))
