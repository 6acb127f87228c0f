"""Held-out evaluation, the one used by the native loop and the TRL run: each held-out problem
sampled `eval_samples` times with seeds fixed by (seed, tag), pass@1 = mean success
(`real.io.runlog.pass_at_1`)."""

from typing import NamedTuple

from real.base.config import Config
from real.io.runlog import pass_at_1


class Evaluation(NamedTuple):
    """One held-out evaluation: successes per problem (out of eval_samples; their spread gives
    the eval's standard error) and pass@1, their mean success."""

    wins: list[int]
    accuracy: float


def evaluate(engine, task, cfg: Config, tag: int) -> Evaluation:
    """Held-out pass@1 of the engine's current weights; `tag` seeds the samples (0: the start
    model, s: after step s), so a resumed run evaluates as the uninterrupted one did."""
    wins = eval_wins(engine, task, cfg, tag)
    return Evaluation(wins, pass_at_1(wins, cfg.eval_samples))


def eval_wins(engine, task, cfg: Config, tag: int) -> list[int]:
    """Successes out of eval_samples per held-out problem (their spread gives the eval's SE)."""
    import numpy as np

    probs = task.eval_problems()[: cfg.eval_problems or None]
    rng = np.random.default_rng([cfg.seed, 0xE7A1, tag])
    # consecutive seeds per problem: one request per problem on a server (see collect.py)
    bases = rng.integers(0, 2**31 - 1 - cfg.eval_samples, size=len(probs))
    seeds = [(b + np.arange(cfg.eval_samples)).tolist() for b in bases]
    res = engine.generate(
        [p.prompt for p in probs],
        [cfg.eval_samples] * len(probs),
        max_tokens=cfg.engine.max_tokens or task.max_tokens,
        temperature=cfg.engine.temperature,
        seeds=seeds,
    )
    wins = [0] * len(probs)
    for i, (p, r) in enumerate(zip(probs, res, strict=True)):
        for c in r.completions:
            try:
                wins[i] += int(bool(task.reward(c.text, p)))
            except Exception:  # a verifier error is a failed sample here too
                pass
    return wins
