"""The peer's side of benchmarks/cgrpo_compare.py: one run of trl-cgrpo's `CGRPOTrainer` (or of
the plain `GRPOTrainer` of the same TRL release) in the cgrpo environment, counted from outside.

    .venv-cgrpo/bin/python benchmarks/cgrpo_side.py SPEC.json   # written by cgrpo_compare.py

trl-cgrpo 0.2.0 needs TRL 1.12-1.14 (the project's environment has TRL 1.16), so it runs in its
own venv (`bash scripts/setup.sh --cgrpo`), sharing only files with the main side: SPEC names
the run (strategy "cgrpo" or "grpo", seed, output folder), the run's `real.base.config.Config`
(as `asdict`), the model folder and C-GRPO's own options. Everything the main side's runs are
built from is rebuilt here from the same Config with the same code: the task
(`real.tasks.make_run_task`), TRL's dataset and 0/1 reward (`real.trl.run._dataset`, `_reward`)
and the GRPOConfig fields (`real.trl.run.grpo_fields`; C-GRPO's `CGRPOConfig` takes them as they
are, plus `budget_grid`, `recalibrate_every`, `num_calibration_samples`). C-GRPO's
answer extractor for its APS score is the task's own (arithmetic: `extract_integer`), and its
calibration set is `calibration` problems of the same generator outside the training pool and
the held-out set (`calibration_rows`).

Counting, from outside the package: every completion TRL generates goes through
`GRPOTrainer._generate_single_turn` (C-GRPO's budget increments and its calibration both call it;
so does the plain trainer), which is wrapped here to count rollouts and completion tokens (EOS
included, as the main side counts them), booked to "calibration" while `CGRPOTrainer.calibrate`
runs and to "train" otherwise. The rewards TRL trains on (`_calculate_rewards`, after C-GRPO
marks padded rows NaN) give each group's real rollouts and whether it is effective (its real
rewards not all equal: TRL's nan-aware std is non-zero). The counts are checked against what
C-GRPO and TRL log themselves (`cgrpo/mean_k` x groups per generation batch,
`cgrpo/calibration_rollouts`, `frac_reward_zero_std`) and the run fails if they differ. Writes
OUT/result.json (per generation batch and per calibration) and the trained model in OUT/model
for the main side's held-out evaluation."""

import functools
import json
import math
import sys
import time
from importlib.metadata import version
from pathlib import Path

import real.base.env  # noqa: F401  (the main side's process environment, before torch)

PEER_PACKAGES = ("trl-cgrpo", "trl", "transformers", "accelerate", "datasets", "torch")


def calibration_rows(cfg, n: int) -> list[dict]:
    """C-GRPO's calibration set: n problems of the run's task generator that are neither in the
    training pool (ids task_size ..) nor in the held-out set (the generator excludes those),
    as TRL dataset rows {prompt, answer, uid} (uid: the problem id in the unbounded task)."""
    from dataclasses import replace

    from real.tasks import make_run_task

    unbounded = make_run_task(replace(cfg, task_size=None))
    first = cfg.task_size or 0
    rows = []
    for uid in range(first, first + n):
        p = unbounded.problem(uid)
        rows.append({"prompt": p.prompt, "answer": p.answer, "uid": uid})
    return rows


def answer_extractor(task):
    """The task's own final-answer parse (what its 0/1 reward compares to the reference)."""
    if task.name == "arithmetic":
        from real.tasks.arithmetic import extract_integer

        return extract_integer
    if task.name in ("reasoning", "reasoning-long"):
        from real.tasks.reasoning import final_answer

        return final_answer
    raise ValueError(f"no answer extractor for task {task.name!r}")


class Books:
    """Rollouts and tokens generated, by phase, and the groups TRL trained on."""

    def __init__(self, k: int):
        self.k, self.phase = k, "train"
        self.open = {"rollouts": 0, "tokens": 0, "calls": 0}
        self.steps, self.calibrations = [], []

    def generated(self, completion_ids) -> None:
        self.open["rollouts"] += len(completion_ids)
        self.open["tokens"] += sum(len(c) for c in completion_ids)
        self.open["calls"] += 1

    def close(self, into: list, **extra) -> None:
        into.append({**self.open, **extra})
        self.open = {"rollouts": 0, "tokens": 0, "calls": 0}

    def batch(self, rewards) -> None:
        """A training batch's rewards (rows x reward functions, NaN on padded rows): the groups,
        their real rollouts and how many are effective; closes the step's counts."""
        import torch

        r = rewards.nansum(dim=1)
        r[torch.isnan(rewards).all(dim=1)] = math.nan
        groups = r.view(-1, self.k)
        real_rows = (~torch.isnan(groups)).sum(dim=1)
        spread = [g[~torch.isnan(g)] for g in groups]
        eff = sum(int(len(g) > 1 and float(g.max() - g.min()) > 0) for g in spread)
        budgets = {}
        for n in real_rows.tolist():
            budgets[str(n)] = budgets.get(str(n), 0) + 1
        self.close(
            self.steps,
            groups=len(spread),
            effective=eff,
            real_rows=int(real_rows.sum()),
            budgets=budgets,
            reward_mean=float(r.nanmean()),
        )


def instrument(books: Books):
    """Count every generation TRL makes (wraps GRPOTrainer._generate_single_turn in place)."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    inner = GRPOTrainer._generate_single_turn

    @functools.wraps(inner)
    def counted(self, prompt_ids, *args, **kwargs):
        ids, logprobs = inner(self, prompt_ids, *args, **kwargs)
        books.generated(ids)
        return ids, logprobs

    GRPOTrainer._generate_single_turn = counted


def trainer_class(strategy: str, books: Books):
    """The trainer, subclassed only to book phases and rewards (no behaviour changes)."""
    from trl import GRPOTrainer

    if strategy == "cgrpo":
        from trl_cgrpo import CGRPOTrainer as base
    else:
        base = GRPOTrainer

    class Counted(base):
        def calibrate(self):
            if books.open["rollouts"]:  # never: calibration runs before a batch's generation
                raise RuntimeError("generation counted before calibration")
            books.phase = "calibration"
            try:
                return super().calibrate()
            finally:
                books.phase = "train"
                books.close(books.calibrations, step=self.state.global_step)

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            out = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            if self.model.training:
                books.batch(out)
            return out

    return Counted


def logged_counts(history: list[dict], groups: int) -> dict:
    """What C-GRPO and TRL log about the sampling, summed over the run: training rollouts
    (cgrpo/mean_k x groups per generation batch), calibration rollouts and effective groups
    ((1 - frac_reward_zero_std) x groups per generation batch); and each calibration's fit
    (delta, solve rate, one threshold per budget)."""
    train = sum(h["cgrpo/mean_k"] * groups for h in history if "cgrpo/mean_k" in h)
    cal = sum(h["cgrpo/calibration_rollouts"] for h in history if "cgrpo/calibration_rollouts" in h)
    zero = [h["frac_reward_zero_std"] for h in history if "frac_reward_zero_std" in h]
    fits = [
        {k.removeprefix("cgrpo/"): v for k, v in h.items() if k.startswith("cgrpo/")}
        for h in history
        if "cgrpo/delta" in h
    ]
    eff = round(sum((1 - z) * groups for z in zero))  # TRL's own: groups with reward spread
    return {
        "train_rollouts": train,
        "calibration_rollouts": cal,
        "effective": eff,
        "calibrations": fits,
    }


def train(trainer_cls, model_dir, seed: int, out: Path, **kwargs):
    """(trainer, wall seconds): `trainer_cls` built on the start model (seeded as every run of
    both sides is) and trained; the final model saved in OUT/model. Shared with the main side."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    trainer = trainer_cls(model=model, processing_class=tok, **kwargs)
    trainer.remove_callback(PrinterCallback)
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    trainer.model.save_pretrained(out / "model")
    tok.save_pretrained(out / "model")
    return trainer, wall


def run(spec: dict) -> dict:
    from datasets import Dataset

    from real.base.config import Config
    from real.tasks import RewardGuard, make_run_task
    from real.trl.run import _dataset, _reward, grpo_fields

    cfg = Config.from_dict(spec["config"])
    out = Path(spec["out"])
    task = make_run_task(cfg)
    books = Books(cfg.k)
    instrument(books)
    fields = grpo_fields(cfg, out, cfg.engine.max_tokens or task.max_tokens)
    fields |= {"save_strategy": "no"}  # the model is saved once, at the end
    kw = {}
    if spec["strategy"] == "cgrpo":
        from trl_cgrpo import CGRPOConfig

        p = spec["cgrpo"]
        args = CGRPOConfig(
            **fields,
            budget_grid=list(p["budgets"]),
            recalibrate_every=p["recalibrate_every"],
            num_calibration_samples=p["calibration"],
        )
        kw = dict(
            calibration_dataset=Dataset.from_list(calibration_rows(cfg, p["calibration"])),
            answer_extractor=answer_extractor(task),
        )
    else:
        from trl import GRPOConfig

        args = GRPOConfig(**fields)
    cls = trainer_class(spec["strategy"], books)
    reward = _reward(task, RewardGuard(task.reward))
    trainer, wall = train(
        cls,
        spec["model"],
        cfg.seed,
        out,
        reward_funcs=[reward],
        args=args,
        train_dataset=_dataset(task, cfg),
        **kw,
    )
    history = [h for h in trainer.state.log_history if "loss" in h]
    result = {
        "strategy": spec["strategy"],
        "seed": cfg.seed,
        "steps": books.steps,
        "calibrations": books.calibrations,
        "wall_s": round(wall, 1),
        "packages": {p: version(p) for p in PEER_PACKAGES},
        "frac_reward_zero_std": [h.get("frac_reward_zero_std") for h in history],
    }
    if spec["strategy"] == "cgrpo":
        result["cgrpo"] = dict(spec["cgrpo"], logged=logged_counts(history, cfg.groups))
        check_counts(result)
    return result


def check_counts(result: dict) -> None:
    """Our counts are C-GRPO's own: the rollouts of its budget increments and calibrations."""
    logged = result["cgrpo"]["logged"]
    train = sum(s["rollouts"] for s in result["steps"])
    real_rows = sum(s["real_rows"] for s in result["steps"])
    cal = sum(c["rollouts"] for c in result["calibrations"])
    if not (train == real_rows and abs(train - logged["train_rollouts"]) < 1e-6 * max(1, train)):
        raise RuntimeError(f"train rollouts: counted {train}, trained {real_rows}, logged {logged}")
    if cal != logged["calibration_rollouts"]:
        raise RuntimeError(f"calibration rollouts: counted {cal}, logged {logged}")
    eff = sum(s["effective"] for s in result["steps"])
    if eff != logged["effective"]:
        raise RuntimeError(f"effective groups: counted {eff}, logged {logged}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(argv[0]).read_text())
    result = run(spec)
    path = Path(spec["out"]) / "result.json"
    path.with_suffix(".tmp").write_text(json.dumps(result, indent=1))
    path.with_suffix(".tmp").replace(path)  # whole or absent
    return 0


if __name__ == "__main__":
    sys.exit(main())
