"""The GRPO training loop with collector-driven collection (cleanrl style: one config, one loop).

Crash safety: the metrics line of step s is appended (and fsynced) before the checkpoint of step s
is written (to a temp file, then os.replace). A run killed anywhere — even by SIGKILL — therefore
resumes from the last checkpoint c with every metrics line of steps <= c on disk; lines of later
steps (and a torn last line) are dropped on resume and recomputed, so none is lost or duplicated;
the checkpoint keeps a copy of step c's line, restored if that line is found torn.
The checkpoint holds everything the next step depends on: model, optimizer, collector state, the
rollout pool (in-progress prompts and carried groups), the prompt source position and the
sampling-seed counter."""

import io
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from real.base import env as _env  # noqa: F401  (before torch / vllm)
from real.base.config import Config
from real.io.enginelog import user_stderr
from real.io.runlog import (
    TRAIN_KEYS,
    append_metrics,
    atomic_write,
    collect_fields,
    metrics_row,
    read_metrics,
    summarize,
    truncate_metrics,
)
from real.models.resolve import resolve_model
from real.rollout import collect as rollout  # the module: a test may swap make_engine
from real.rollout.collect import RolloutDriver
from real.rollout.evaluation import evaluate
from real.tasks import PromptSource
from sara_sim.core.files import dumps_json

# running sums over the run's steps (kept in the checkpoint)
TOTAL_KEYS = (
    "rollouts",
    "tokens",
    "effective",
    "groups",
    "rounds",
    "abandoned",
    "wall_s",
    "gen_s",
    "alloc_s",
    "reward_errors",
)


def _mean(xs) -> float:
    import numpy as np

    return float(np.mean(xs)) if xs else 0.0


def load_policy(cfg: Config, model_dir):
    """The fp32 master weights on the training device."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if cfg.grpo.device == "auto":
        model.to("cuda" if torch.cuda.is_available() else "cpu")
    else:
        model.to(cfg.grpo.device)
    if cfg.grpo.grad_checkpointing:
        model.gradient_checkpointing_enable()
    return model


@dataclass
class Run:
    """Everything one run's steps read and write; the checkpoint holds what the next step needs."""

    cfg: Config
    out: Path
    model_dir: object
    task: object
    model: object
    trainer: object  # real.train.grpo.GRPO
    engine: object
    collector: RolloutDriver
    prompts: PromptSource
    totals: dict = field(default_factory=lambda: dict.fromkeys(TOTAL_KEYS, 0))
    start: int = 0  # the first step this process runs
    eval_initial: float | None = None
    initial_wins: list[int] | None = None  # the start model's, on the first line of a fresh run
    bar: object = None

    @property
    def metrics_path(self) -> Path:
        return self.out / "metrics.jsonl"

    @property
    def ckpt_path(self) -> Path:
        return self.out / "checkpoint.pt"


def train_native(cfg: Config, checked, out: Path, engine=None) -> dict:
    """One run through our GRPO (`real.app.run.train` checks `cfg` and holds the folder's lock
    first); returns the summary (also OUT/summary.json)."""
    run = _setup(cfg, checked, out, engine)
    _resume(run)
    _evaluate_start(run)
    _open_progress(run)
    try:
        for step in range(run.start, cfg.steps):
            _step(run, step)
    finally:  # closed on a failure too: the error's one line is the terminal's last
        if run.bar:
            run.bar.close()
    return _summary(run)


def _setup(cfg: Config, checked, out: Path, engine) -> Run:
    """Task, policy, optimizer, engine, strategy and prompt source of a fresh run."""
    model_dir = resolve_model(cfg.model, progress=cfg.progress)
    import torch

    from real.train.grpo import GRPO  # imports torch: not before the config is checked

    torch.manual_seed(cfg.seed)  # nothing below draws from global RNGs; belt and braces
    task = checked.task
    model = load_policy(cfg, model_dir)
    pad_id = model.config.pad_token_id or 0
    trainer = GRPO(model, cfg.grpo, pad_id=pad_id, temperature=cfg.engine.temperature)
    if engine is None:
        engine = rollout.make_engine(cfg, model_dir)
    probe = task.eval_problems()[:64] + [task.problem(i) for i in range(64)]
    engine.check_fits([p.prompt for p in probe], cfg.engine.max_tokens or task.max_tokens)
    rc = RolloutDriver(
        engine,
        task,
        checked.collector,  # built once, by check_config
        cfg.k,
        seed=cfg.seed,
        temperature=cfg.engine.temperature,
        max_tokens=cfg.engine.max_tokens,
        audit=cfg.audit_abandoned,
        schedule=cfg.knobs.schedule,
    )
    prompts = PromptSource(task, seed=cfg.seed)
    return Run(cfg, out, model_dir, task, model, trainer, engine, rc, prompts)


def _resume(run: Run) -> None:
    """Restore everything the next step depends on from the checkpoint (a --resume of a run that
    never completed a step has none: it starts at 0), or clear a fresh run's files; then drop
    metrics lines of steps after the checkpoint (a torn last line is repaired, real.io.runlog)."""
    import torch

    saved_row = None
    if run.cfg.resume and run.ckpt_path.is_file():  # check_config proved it readable, same run
        ck = torch.load(run.ckpt_path, map_location="cpu", weights_only=False)
        run.model.load_state_dict(ck["model"])
        run.trainer.load_state_dict(ck["trainer"])
        run.collector.load_state_dict(ck["collector"])
        run.prompts.load_state_dict(ck["prompts"])
        run.totals, run.eval_initial, run.start = ck["totals"], ck["eval_initial"], ck["step"] + 1
        saved_row = ck.get("metrics_row")
        torch.set_rng_state(ck["torch_rng"])
    else:
        for p in (run.metrics_path, run.ckpt_path, run.out / "summary.json"):
            p.unlink(missing_ok=True)
    truncate_metrics(run.metrics_path, run.start, restore=saved_row)


def _evaluate_start(run: Run) -> None:
    """Push the policy (the engine may hold another run's weights: compare); a fresh run
    evaluates its start model (tag 0), a resumed one kept that number in its checkpoint."""
    run.engine.push_weights(run.model)
    if run.eval_initial is None:
        initial = evaluate(run.engine, run.task, run.cfg, tag=0)
        run.eval_initial, run.initial_wins = initial.accuracy, initial.wins


def _open_progress(run: Run) -> None:
    if run.cfg.progress:
        from tqdm import tqdm

        cfg = run.cfg
        run.bar = tqdm(
            total=cfg.steps,
            initial=run.start,
            desc=f"{cfg.strategy}",
            unit="step",
            file=user_stderr(),
        )


def _step(run: Run, step: int) -> None:
    """One optimizer step: collect, train, sync, evaluate, log, checkpoint, progress."""
    cfg, t_step = run.cfg, time.perf_counter()
    batch = run.collector.collect(run.prompts)  # rounds, or a stream (real/rollout/streamed.py)
    t0 = time.perf_counter()
    stats = run.trainer.step([g.as_rows() for g in batch.groups], seed=cfg.seed * 100003 + step)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run.engine.push_weights(run.model)  # the new weights into the running engine
    sync_s = time.perf_counter() - t0
    ev, eval_s = None, 0.0
    if (step + 1) % cfg.eval_every == 0 or step == cfg.steps - 1:  # and after the last
        t0 = time.perf_counter()
        ev = evaluate(run.engine, run.task, cfg, tag=step + 1)
        eval_s = time.perf_counter() - t0
    times = {"train_s": train_s, "sync_s": sync_s, "eval_s": eval_s}
    times["wall_s"] = time.perf_counter() - t_step
    row = _metrics_row(run, step, batch, stats, times, ev)
    append_metrics(run.metrics_path, row)  # fsynced before the checkpoint that covers it
    if (step + 1) % cfg.ckpt_every == 0 or step == cfg.steps - 1:
        _checkpoint(run, step, row)
    if run.bar:
        res = batch.result
        run.bar.update(1)
        run.bar.set_postfix(
            r=f"{row['reward_mean']:.2f}",
            rounds=res.rounds,
            ro_per_eff=f"{res.rollouts / max(res.n_effective, 1):.1f}",
            **({"eval": f"{ev.accuracy:.2f}"} if ev is not None else {}),
        )


def _metrics_row(run: Run, step: int, batch, stats: dict, times: dict, ev) -> dict:
    """The step's metrics line (real.io.runlog.metrics_row), after adding the step to the
    run's totals."""
    res, n_eff = batch.result, batch.result.n_effective
    for key, v in (
        ("rollouts", res.rollouts),
        ("tokens", batch.tokens),
        ("effective", n_eff),
        ("groups", len(batch.groups)),
        ("rounds", res.rounds),
        ("abandoned", len(res.abandoned)),
        ("wall_s", times["wall_s"]),
        ("gen_s", batch.gen_s),
        ("alloc_s", batch.alloc_s),
        ("reward_errors", batch.reward_errors),
    ):
        run.totals[key] += v
    batch_rewards = [s.reward for g in batch.groups for s in g.samples]
    values = collect_fields(
        res,
        tokens=batch.tokens,
        effective=n_eff,
        groups=len(batch.groups),
        reward_mean=_mean(batch.rewards),
        batch_reward_mean=_mean(batch_rewards),
        cancelled=batch.cancelled,
        cancelled_tokens=batch.cancelled_tokens,
    )
    values |= {"gen_s": batch.gen_s, "reward_s": batch.reward_s, "alloc_s": batch.alloc_s}
    values |= {"round_s": batch.round_s, "train_s": times["train_s"], "sync_s": times["sync_s"]}
    values |= {"eval_s": times["eval_s"], "wall_s": times["wall_s"]}
    values |= {"step": step, "strategy": run.cfg.strategy, "reward_errors": batch.reward_errors}
    values |= {k: stats.get(k, 0.0) for k in TRAIN_KEYS}
    values |= {f"cum_{k}": run.totals[k] for k in ("rollouts", "tokens", "effective")}
    values |= {"audited": batch.audited, "audit_mixed": batch.audit_mixed}
    first = run.initial_wins is not None and step == run.start
    return metrics_row(
        values,
        eval_wins=ev.wins if ev is not None else None,
        eval_samples=run.cfg.eval_samples,
        initial_wins=run.initial_wins if first else None,
    )


def _checkpoint(run: Run, step: int, row: dict) -> None:
    """Atomically, after the metrics line it covers (a crash leaves the old or the new one)."""
    import torch

    buf = io.BytesIO()
    torch.save(
        {
            "step": step,
            "model": run.model.state_dict(),
            "trainer": run.trainer.state_dict(),
            "collector": run.collector.state_dict(),
            "prompts": run.prompts.state_dict(),
            "totals": run.totals,
            "eval_initial": run.eval_initial,
            "torch_rng": torch.get_rng_state(),
            "config": asdict(run.cfg),
            "metrics_row": row,  # restores the line if a crash tears it after this
        },
        buf,
    )
    atomic_write(run.ckpt_path, buf.getvalue())


def _summary(run: Run) -> dict:
    """Recomputed from the metrics file, the single source of truth."""
    rows = read_metrics(run.metrics_path)
    summary = summarize(rows, asdict(run.cfg), run.eval_initial, run.model_dir)
    atomic_write(run.out / "summary.json", dumps_json(summary))
    return summary
