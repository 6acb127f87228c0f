"""`sara-real validate|compare --trainer trl`: the same experiment through TRL's GRPOTrainer.

The run is the native loop's (`real/train/loop.py`) with TRL doing the optimisation: same task,
model, strategy, k, groups, seed and engine (our vLLM engine samples,
`real.trl.adapter.SaraRollout` allocates), and the same run-folder contract — one fsynced
metrics.jsonl line per collection step with the native keys, summary.json from
`real.io.runlog.summarize`. Config mapping: one collection step = one TRL generation batch of
`groups` x `k` rows, split into `minibatches` optimizer steps (`steps_per_generation`), so TRL's
`global_step` = step x minibatches; lr -> learning_rate (constant), betas -> adam_beta1/2,
weight_decay, eps_low/eps_high -> epsilon/epsilon_high, kl_coef
-> beta, epochs -> num_iterations, std_norm -> scale_rewards ("group" | "none"), max_tokens ->
max_completion_length. TRL's own checkpoints (and the adapter's state inside them) live in
OUT/trl/checkpoint-N; `--resume` continues from the newest complete one (real.io.runfolder).
`train_s` is the step's wall time minus collection, weight push and evaluation (TRL's logprob
passes, loss and optimizer step)."""

import errno
import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from real.base import env as _env  # noqa: F401  (before torch / vllm)
from real.io.enginelog import user_stderr
from real.io.runfolder import (
    TRL_MARKER,
    checkpoint_dir,
    checkpoint_step,
    saved_row,
    set_aside_incomplete,
    trl_checkpoints,
)
from real.io.runlog import (
    COLLECT_KEYS,
    append_metrics,
    atomic_write,
    metrics_row,
    read_metrics,
    summarize,
    truncate_metrics,
)
from real.models.resolve import resolve_model
from real.rollout import collect as rollout  # the module: a test may swap make_engine
from real.rollout.evaluation import evaluate
from real.tasks import RewardGuard
from real.trl.adapter import SaraRollout
from real.trl.backends import trainer_callback
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import WriteError, dumps_json

DATASET_ROWS = 4096  # rows of a generated task's TRL dataset (the adapter cycles epochs over it)


def _dataset(task, cfg):
    from datasets import Dataset

    n = task.size or cfg.task_size or DATASET_ROWS
    probs = [task.problem(i) for i in range(n)]
    return Dataset.from_list(
        [{"prompt": p.prompt, "answer": p.answer, "uid": i} for i, p in enumerate(probs)]
    )


def _reward(task, guard):
    """The task's verifier as a TRL reward function (a raising verifier scores 0, counted)."""

    def correct(completions, uid, **kw):
        return [float(guard(c, task.problem(int(u)))) for c, u in zip(completions, uid)]

    return correct


def _grpo_args(cfg, out: Path, max_tokens: int):
    from trl import GRPOConfig

    return GRPOConfig(**grpo_fields(cfg, out, max_tokens))


def grpo_fields(cfg, out: Path, max_tokens: int) -> dict:
    """The GRPOConfig fields of a run (the mapping in this module's docstring), as plain values:
    what `_grpo_args` builds TRL's config from, and what benchmarks/cgrpo_compare.py hands to a
    GRPOConfig subclass of another TRL release so both sides train with the same settings."""
    g = cfg.grpo
    return dict(
        output_dir=str(out / "trl"),
        num_generations=cfg.k,
        per_device_train_batch_size=cfg.k * cfg.groups // g.minibatches,
        steps_per_generation=g.minibatches,
        max_steps=cfg.steps * g.minibatches,
        max_completion_length=max_tokens,
        temperature=cfg.engine.temperature,
        learning_rate=g.lr,
        lr_scheduler_type="constant",
        weight_decay=g.weight_decay,
        adam_beta1=g.betas[0],
        adam_beta2=g.betas[1],
        epsilon=g.eps_low,
        epsilon_high=g.eps_high,
        beta=g.kl_coef,
        num_iterations=g.epochs,
        scale_rewards="group" if g.std_norm and g.estimator == "grpo" else "none",
        max_grad_norm=g.max_grad_norm,
        gradient_checkpointing=cfg.grpo.grad_checkpointing,
        bf16=g.bf16_autocast,
        use_cpu=cfg.grpo.device == "cpu" or (cfg.grpo.device == "auto" and not _cuda()),
        logging_steps=1,
        save_steps=cfg.ckpt_every * g.minibatches,
        save_total_limit=2,  # the newest and, while it is being written, the one before
        report_to="none",
        disable_tqdm=not cfg.progress,
        seed=cfg.seed,
    )


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def train_trl(cfg, checked, engine=None) -> dict:
    """Run (or resume) one run through TRL; returns the summary (also OUT/summary.json).
    Called by `real.app.run.train`, which has checked `cfg` (check_trl_config included; `checked`
    holds the task and the collector built then) and holds the run folder's lock."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    model_dir = resolve_model(cfg.model, progress=cfg.progress)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    metrics_path = out / "metrics.jsonl"

    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(cfg.seed)
    task = checked.task
    args = _grpo_args(cfg, out, cfg.engine.max_tokens or task.max_tokens)
    ckpts = trl_checkpoints(out)[0]
    resume = _prepare_folder(cfg, out, ckpts)
    guard = RewardGuard(task.reward)
    ds = _dataset(task, cfg)
    if engine is None:
        engine = rollout.make_engine(cfg, model_dir)
    sara = SaraRollout(
        args,
        ds,
        [_reward(task, guard)],
        cfg.strategy,
        engine=engine,
        collector=checked.collector,
        schedule=cfg.knobs.schedule,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    start = checkpoint_step(ckpts[-1]) // cfg.grpo.minibatches if resume else 0
    rows = truncate_metrics(metrics_path, start, restore=saved_row(ckpts[-1]) if resume else None)
    eval_initial, initial_wins = _initial_eval(cfg, out, engine, task, model, resume)
    log = _RunLog(cfg, sara, engine, task, guard, metrics_path, rows)
    log.initial_wins = initial_wins  # on the first line, as natively
    trainer = _trainer(cfg, model, model_dir, args, ds, sara, log)
    _train(trainer, out / "trl", str(ckpts[-1]) if resume else None)
    summary = summarize(read_metrics(metrics_path), asdict(cfg), eval_initial, model_dir)
    atomic_write(out / "summary.json", dumps_json(summary))
    return summary


def _prepare_folder(cfg, out: Path, ckpts: list[Path]) -> bool:
    """Whether the run resumes (from the newest complete checkpoint); a fresh start clears what
    an earlier run left (check_config refused a used --out without --overwrite) and records the
    settings a --resume must match (real.app.resume.check_same_run)."""
    if cfg.resume and not ckpts and (out / "checkpoint.pt").exists():
        raise ParameterError("--resume", f"{out} holds a --trainer native run; resume it so")
    resume = cfg.resume and bool(ckpts)
    if resume:  # a checkpoint cut off mid-save: out of TRL's sight (its rotation would count it)
        set_aside_incomplete(out)
        return True
    shutil.rmtree(out / "trl", ignore_errors=True)
    for p in (out / "metrics.jsonl", out / "summary.json", out / "eval_initial.json"):
        p.unlink(missing_ok=True)
    atomic_write(out / "config.json", json.dumps(asdict(cfg), indent=1).encode())
    return False


def _initial_eval(cfg, out: Path, engine, task, model, resume: bool):
    """(pass@1 of the start model, its per-problem wins or None): measured on a fresh start and
    kept in OUT/eval_initial.json, read back on resume."""
    if resume:
        return json.loads((out / "eval_initial.json").read_text())["eval_initial"], None
    engine.push_weights(model)  # the engine may hold another run's weights (compare)
    initial = evaluate(engine, task, cfg, tag=0)
    atomic_write(out / "eval_initial.json", json.dumps({"eval_initial": initial.accuracy}).encode())
    return initial.accuracy, initial.wins


def _trainer(cfg, model, model_dir, args, ds, sara, log):
    """TRL's GRPOTrainer with SARA as its rollout_func and our metrics log as a callback."""
    from transformers import AutoTokenizer, PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=sara.reward_funcs,
        args=args,
        train_dataset=ds,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        rollout_func=sara,
        callbacks=[sara.callback, log],
    )
    if not cfg.progress:  # TRL would print every log dict instead of the bar
        trainer.remove_callback(PrinterCallback)
    elif trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(_progress_callback())  # its bar on the terminal, not engine.log
    return trainer


def _progress_callback():
    """transformers' ProgressCallback whose bars are made on the user's terminal
    (`real.io.enginelog.user_stderr`): the run's other library output goes to OUT/engine.log."""
    import contextlib

    from transformers import ProgressCallback

    class TerminalProgress(ProgressCallback):
        def on_train_begin(self, *a, **kw):
            with contextlib.redirect_stderr(user_stderr()):
                return super().on_train_begin(*a, **kw)

        def on_prediction_step(self, *a, **kw):
            with contextlib.redirect_stderr(user_stderr()):
                return super().on_prediction_step(*a, **kw)

    return TerminalProgress


def _train(trainer, trl_dir: Path, resume_from) -> None:
    """`trainer.train`, with a checkpoint TRL could not write reported as one line naming its
    folder: torch's own save raises a RuntimeError that names no file and no reason.  The half-
    written folder is removed (never trusted), so a --resume continues from the last whole one."""
    try:
        trainer.train(resume_from_checkpoint=resume_from)
    except (OSError, RuntimeError) as e:
        ckpt = checkpoint_dir(trl_dir, trainer.state.global_step)
        if not ckpt.is_dir() or (ckpt / TRL_MARKER).exists():  # not failed while saving
            raise
        if isinstance(e, OSError) and e.errno:
            err = e if isinstance(e, WriteError) else WriteError(ckpt, e)  # names its file
        elif _disk_full(e, ckpt):
            err = WriteError(ckpt, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        else:
            raise
        shutil.rmtree(ckpt, ignore_errors=True)
        raise err from None


def _disk_full(e: Exception, folder: Path) -> bool:
    """The save failed on a full disk: the error says so, or the folder's filesystem has (next
    to) no room left — torch's writer reports only "file write failed"."""
    if "No space left" in str(e):
        return True
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize < 1 << 20


def _log_mean(logs: list[dict], key: str) -> float:
    import numpy as np

    return float(np.mean([x.get(key, 0.0) for x in logs]))


class _RunLog(trainer_callback()):
    """One native-format metrics line per collection step, written when TRL logs the step's last
    optimizer update (on_log runs before on_save, so the line is on disk before the checkpoint)."""

    def __init__(self, cfg, sara, engine, task, guard, path, rows):
        self.cfg, self.sara, self.engine, self.task, self.guard = cfg, sara, engine, task, guard
        self.path, self.initial_wins = path, None
        last = rows[-1] if rows else {}
        self.cum = {k: last.get(f"cum_{k}", 0) for k in ("rollouts", "tokens", "effective")}
        self.errors_seen, self.last_row = 0, None
        self.losses, self.t_last = [], time.perf_counter()

    def on_train_begin(self, args, state, control, **kw):
        self.t_last = time.perf_counter()  # per-step wall times exclude the setup, as natively

    def on_log(self, args, state, control, logs=None, model=None, **kw):
        if not logs or "loss" not in logs:
            return
        self.losses.append(logs)
        per_step = self.cfg.grpo.minibatches  # optimizer steps per collection step
        if state.global_step % per_step:
            return
        cfg, m, step = self.cfg, self.sara.last, state.global_step // per_step - 1
        wins, eval_s = None, 0.0
        if (step + 1) % cfg.eval_every == 0 or step == cfg.steps - 1:
            t0 = time.perf_counter()
            self.engine.push_weights(model)
            wins = evaluate(self.engine, self.task, cfg, tag=step + 1).wins
            eval_s = time.perf_counter() - t0
        now = time.perf_counter()
        wall_s, self.t_last = now - self.t_last, now
        for key, v in (("rollouts", m["rollouts"]), ("tokens", m["tokens"])):
            self.cum[key] += v
        self.cum["effective"] += m["effective_groups"]
        errors, self.errors_seen = self.guard.errors - self.errors_seen, self.guard.errors
        values = {k: m[k] for k in COLLECT_KEYS + ("padded",)}
        values |= {k: m[k] for k in ("gen_s", "reward_s", "alloc_s", "round_s", "sync_s")}
        values |= {
            "step": step,
            "strategy": cfg.strategy,
            "trainer": "trl",
            "reward_errors": errors,
            "loss": _log_mean(self.losses, "loss"),  # over the step's optimizer updates
            "grad_norm": _log_mean(self.losses, "grad_norm"),
            "clip_frac": _log_mean(self.losses, "clip_ratio/region_mean"),
            "train_s": max(0.0, wall_s - m["collect_s"] - m["sync_s"] - eval_s),
            "eval_s": eval_s,
            "wall_s": wall_s,
            **{f"cum_{k}": v for k, v in self.cum.items()},
            "audited": 0,  # check_trl_config refuses --audit-abandoned: nothing is audited here
            "audit_mixed": 0,
        }
        row = metrics_row(
            values, eval_wins=wins, eval_samples=cfg.eval_samples, initial_wins=self.initial_wins
        )
        self.initial_wins = None  # on the first line only
        append_metrics(self.path, row)
        self.losses, self.last_row = [], row

    def on_save(self, args, state, control, **kw):
        """After TRL wrote checkpoint-N (and after on_log): keep a copy of that step's line."""
        if self.last_row is not None and state.is_world_process_zero:
            ckpt = checkpoint_dir(args.output_dir, state.global_step)
            atomic_write(ckpt / TRL_MARKER, dumps_json(self.last_row, indent=None))
