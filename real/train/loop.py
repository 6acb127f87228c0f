"""The GRPO training loop with allocator-driven collection (cleanrl style: one config, one loop).

Crash safety: the metrics line of step s is appended (and fsynced) before the checkpoint of step s
is written (to a temp file, then os.replace). A run killed anywhere — even by SIGKILL — therefore
resumes from the last checkpoint c with every metrics line of steps <= c on disk; lines of later
steps (and a torn last line) are dropped on resume and recomputed, so none is lost or duplicated;
the checkpoint keeps a copy of step c's line, restored if that line is found torn.
The checkpoint holds everything the next step depends on: model, optimizer, allocator state, the
rollout pool (in-progress prompts and carried groups), the prompt stream position and the
sampling-seed counter."""

import io
import time
from dataclasses import asdict
from pathlib import Path

from real.base import env as _env  # noqa: F401  (before torch / vllm)
from real.base.config import Config
from real.io.runlog import (
    TRAIN_KEYS,
    append_metrics,
    atomic_write,
    collect_fields,
    metrics_row,
    pass_at_1,
    read_metrics,
    summarize,
    truncate_metrics,
)
from real.models.resolve import resolve_model
from real.rollout.collect import RolloutCollector
from real.rollout.evaluation import eval_wins
from real.sampling import build  # the module: a test may swap build.make_engine
from real.tasks import PromptStream
from sara_sim.core.files import dumps_json


def _mean(xs) -> float:
    import numpy as np

    return float(np.mean(xs)) if xs else 0.0


def load_policy(cfg: Config, model_dir):
    """The fp32 master weights on the training device."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if cfg.device == "auto":
        model.to("cuda" if torch.cuda.is_available() else "cpu")
    else:
        model.to(cfg.device)
    if cfg.grad_checkpointing:
        model.gradient_checkpointing_enable()
    return model


def train_native(cfg: Config, checked, out: Path, engine=None) -> dict:
    """One run through our GRPO (`real.app.run.train` checks `cfg` and holds the folder's lock
    first); returns the summary (also OUT/summary.json)."""
    model_dir = resolve_model(cfg.model, progress=cfg.progress)
    metrics_path, ckpt_path = out / "metrics.jsonl", out / "checkpoint.pt"

    import torch

    from real.train.grpo import GRPO  # imports torch: not before the config is checked

    # ---------------- setup: task, policy, optimizer, engine, allocator, stream
    torch.manual_seed(cfg.seed)  # nothing below draws from global RNGs; belt and braces
    task = checked.task
    model = load_policy(cfg, model_dir)
    pad_id = model.config.pad_token_id or 0
    trainer = GRPO(model, cfg.grpo, pad_id=pad_id, temperature=cfg.temperature)
    if engine is None:
        engine = build.make_engine(cfg, model_dir)
    probe = task.eval_problems()[:64] + [task.problem(i) for i in range(64)]
    engine.check_fits([p.prompt for p in probe], cfg.max_tokens or task.max_tokens)
    rc = RolloutCollector(
        engine,
        task,
        checked.collector,  # built once, by check_config
        cfg.k,
        seed=cfg.seed,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        audit=cfg.audit_abandoned,
    )
    stream = PromptStream(task, seed=cfg.seed)
    totals = {
        "rollouts": 0,
        "tokens": 0,
        "effective": 0,
        "groups": 0,
        "rounds": 0,
        "abandoned": 0,
        "wall_s": 0.0,
        "gen_s": 0.0,
        "alloc_s": 0.0,
        "reward_errors": 0,
    }
    start, eval_initial, saved_row = 0, None, None

    # ---------------- resume: restore everything the next step depends on
    # (a --resume of a run that never completed a step has no checkpoint: it starts at 0)
    if cfg.resume and ckpt_path.is_file():  # check_config proved it readable, same experiment
        ck = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        trainer.load_state_dict(ck["trainer"])
        rc.load_state_dict(ck["collector"])
        stream.load_state_dict(ck["stream"])
        totals, eval_initial, start = ck["totals"], ck["eval_initial"], ck["step"] + 1
        saved_row = ck.get("metrics_row")
        torch.set_rng_state(ck["torch_rng"])
    else:
        for p in (metrics_path, ckpt_path, out / "summary.json"):
            p.unlink(missing_ok=True)
    # drop lines of steps after the checkpoint; a torn last line is repaired (see real.io.runlog)
    truncate_metrics(metrics_path, start, restore=saved_row)
    engine.push_weights(model)  # the engine may hold another run's weights (compare)
    initial_wins = None
    if eval_initial is None:
        initial_wins = eval_wins(engine, task, cfg, tag=0)
        eval_initial = pass_at_1(initial_wins, cfg.eval_samples)

    bar = None
    if cfg.progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc=f"{cfg.allocator}", unit="step")
    for step in range(start, cfg.steps):
        t_step = time.perf_counter()

        # ---------------- collect: rounds of (allocator requests -> one engine call)
        batch = rc.collect(stream)
        res = batch.result

        # ---------------- train: GRPO on this step's groups
        t0 = time.perf_counter()
        stats = trainer.step([g.as_rows() for g in batch.groups], seed=cfg.seed * 100003 + step)
        train_s = time.perf_counter() - t0

        # ---------------- sync: push the new weights into the running engine
        t0 = time.perf_counter()
        engine.push_weights(model)
        sync_s = time.perf_counter() - t0

        # ---------------- evaluate: held-out pass@1 every E steps and after the last
        eval_acc, eval_s, wins = None, 0.0, None
        if (step + 1) % cfg.eval_every == 0 or step == cfg.steps - 1:
            t0 = time.perf_counter()
            wins = eval_wins(engine, task, cfg, tag=step + 1)
            eval_acc = pass_at_1(wins, cfg.eval_samples)
            eval_s = time.perf_counter() - t0

        # ---------------- log: one metrics line per step (fsynced before the checkpoint)
        wall_s = time.perf_counter() - t_step
        n_eff = res.n_effective
        for key, v in (
            ("rollouts", res.rollouts),
            ("tokens", batch.tokens),
            ("effective", n_eff),
            ("groups", len(batch.groups)),
            ("rounds", res.rounds),
            ("abandoned", len(res.abandoned)),
            ("wall_s", wall_s),
            ("gen_s", batch.gen_s),
            ("alloc_s", batch.alloc_s),
            ("reward_errors", batch.reward_errors),
        ):
            totals[key] += v
        batch_rewards = [s.reward for g in batch.groups for s in g.samples]
        values = collect_fields(
            res,
            tokens=batch.tokens,
            effective=n_eff,
            groups=len(batch.groups),
            reward_mean=_mean(batch.rewards),
            batch_reward_mean=_mean(batch_rewards),
        )
        times = {"gen_s": batch.gen_s, "reward_s": batch.reward_s, "alloc_s": batch.alloc_s}
        times |= {"round_s": batch.round_s, "train_s": train_s, "sync_s": sync_s}
        values |= times | {"eval_s": eval_s, "wall_s": wall_s}
        values |= {"step": step, "allocator": cfg.allocator, "reward_errors": batch.reward_errors}
        values |= {k: stats.get(k, 0.0) for k in TRAIN_KEYS}
        values |= {f"cum_{k}": totals[k] for k in ("rollouts", "tokens", "effective")}
        values |= {"audited": batch.audited, "audit_mixed": batch.audit_mixed}
        first = initial_wins is not None and step == start
        row = metrics_row(
            values,
            eval_wins=wins,
            eval_samples=cfg.eval_samples,
            initial_wins=initial_wins if first else None,
        )
        append_metrics(metrics_path, row)

        # ---------------- checkpoint: atomically, after the line it covers
        if (step + 1) % cfg.ckpt_every == 0 or step == cfg.steps - 1:
            buf = io.BytesIO()
            torch.save(
                {
                    "step": step,
                    "model": model.state_dict(),
                    "trainer": trainer.state_dict(),
                    "collector": rc.state_dict(),
                    "stream": stream.state_dict(),
                    "totals": totals,
                    "eval_initial": eval_initial,
                    "torch_rng": torch.get_rng_state(),
                    "config": asdict(cfg),
                    "metrics_row": row,  # restores the line if a crash tears it after this
                },
                buf,
            )
            atomic_write(ckpt_path, buf.getvalue())
        if bar:
            bar.update(1)
            bar.set_postfix(
                r=f"{row['reward_mean']:.2f}",
                rounds=res.rounds,
                ro_per_eff=f"{res.rollouts / max(n_eff, 1):.1f}",
                **({"eval": f"{eval_acc:.2f}"} if eval_acc is not None else {}),
            )
    if bar:
        bar.close()

    # ---------------- summary: recomputed from the metrics file, the single source of truth
    summary = summarize(read_metrics(metrics_path), asdict(cfg), eval_initial, model_dir)
    atomic_write(out / "summary.json", dumps_json(summary))
    return summary
