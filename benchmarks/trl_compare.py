"""TRL's GRPOTrainer as users run it (its own sampling: uniform) vs TRL + our adapter with
uniform, ds and sara: same model, seed, steps, G and B; ratios measured in one run.

    .venv/bin/python benchmarks/trl_compare.py [--model DIR] [--steps 10] [--groups 8] [--k 8]
    .venv/bin/python benchmarks/trl_compare.py --engine [...]   # rounds vs stream on vLLM

Generation is transformers `generate` everywhere (TRL's default path with use_vllm=False; the
adapter's HF backend), so the rows differ only in who allocates the rollouts.  With `--engine`
the adapter samples on one in-process vLLM engine instead (shared by the runs; each run pushes
its own fresh weights first) and the rows are uniform, ds and sara in rounds and ds and sara
streamed (`schedule="stream"`, "/stream"), as ratios to trl+uniform.  Per strategy:
rollouts and tokens per effective group (effective = mixed group in TRL's batch; for TRL's own
sampling from its logged frac_reward_zero_std), effective fraction of the batch, generation calls
(rounds) per step, wall time per step (TRL's step_time: generation + scoring + update), and each
as a ratio to TRL default.
Results: benchmarks/trl_compare.out.txt (committed)."""

import argparse
import os
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
import real.base.env  # noqa: F401

# isort: split
import numpy as np


def correct(completions, answer, **kw):
    from real.tasks.arithmetic import extract_integer

    return [1.0 if extract_integer(c) == a else 0.0 for c, a in zip(completions, answer)]


def run(name, model_dir, ds, a, out, engine=None):
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import GRPOTrainer

    from real.trl.adapter import SaraRollout
    from real.trl.backends import cpu_grpo_config

    args = cpu_grpo_config(out / name, k=a.k, groups=a.groups, steps=a.steps, seed=a.seed)
    kw = {}
    if name != "trl-default":
        strategy, _, schedule = name.removeprefix("trl+").partition("/")
        sara = SaraRollout(
            args,
            ds,
            [correct],
            strategy,
            tau_low=a.tau_low,
            engine=engine,
            schedule=schedule or "rounds",
        )
        kw = dict(reward_funcs=sara.reward_funcs, rollout_func=sara, callbacks=[sara.callback])
    else:
        kw = dict(reward_funcs=[correct])
    tr = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32"),
        args=args,
        train_dataset=ds,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        **kw,
    )
    tr.remove_callback(PrinterCallback)  # one table at the end, not every log dict
    t0 = time.perf_counter()
    tr.train()
    wall = time.perf_counter() - t0
    logs = [h for h in tr.state.log_history if "loss" in h]
    rows = a.k * a.groups
    if name == "trl-default":
        rollouts = rows * len(logs)
        tokens = sum(h["completions/mean_length"] * rows for h in logs)
        eff = sum(round((1 - h["frac_reward_zero_std"]) * a.groups) for h in logs)
        rounds, cancelled = 1.0, 0  # one generate call per step
    else:
        rollouts = sum(h["rollouts"] for h in sara.step_log)
        tokens = sum(h["tokens"] for h in sara.step_log)
        eff = sum(h["effective_groups"] for h in sara.step_log)
        rounds = float(np.mean([h["rounds"] for h in sara.step_log]))  # stream: engine waits
        cancelled = sum(h["cancelled"] for h in sara.step_log)
    return {
        "strategy": name,
        "steps": len(logs),
        "rollouts": rollouts,
        "effective_groups": eff,
        "rollouts_per_eff": rollouts / eff if eff else None,  # undefined: "-" in the table
        "tokens_per_eff": tokens / eff if eff else None,
        "effective_fraction": eff / (a.groups * len(logs)),
        "rounds": rounds,
        "cancelled": cancelled,
        "step_s": float(np.mean([h["step_time"] for h in logs])),
        "wall_s": wall,
        "reward_mean": float(np.mean([h["reward"] for h in logs])),
    }


def main(argv=None):
    from pathlib import Path
    from tempfile import mkdtemp

    import pandas as pd
    from datasets import Dataset

    from real.models.tiny import build_tiny
    from real.tasks.arithmetic import ArithmeticTask

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="HF model dir (default: the tiny model)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--groups", type=int, default=8, help="B: groups per step")
    ap.add_argument("--k", type=int, default=8, help="G: rollouts per group")
    ap.add_argument("--tau-low", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine", action="store_true", help="sample on in-process vLLM; +stream")
    a = ap.parse_args(argv)
    model_dir = a.model or build_tiny(progress=True)
    task = ArithmeticTask(seed=a.seed)
    ds = Dataset.from_list(
        [{"prompt": p.prompt, "answer": p.answer} for p in map(task.problem, range(4096))]
    )
    out = Path(mkdtemp(prefix="trl_compare_"))
    names, engine = ["trl-default", "trl+uniform", "trl+ds", "trl+sara"], None
    if a.engine:
        from real.sampling.engine import VLLMEngine

        names, engine = (
            names[1:] + ["trl+ds/stream", "trl+sara/stream"],
            VLLMEngine(model_dir, seed=a.seed),
        )
    table = pd.DataFrame([run(n, model_dir, ds, a, out, engine) for n in names])
    ref = table.iloc[0]
    for c in ("rollouts_per_eff", "tokens_per_eff", "effective_fraction", "step_s"):
        table[c + "_ratio"] = (table[c] / ref[c]).replace([np.inf, -np.inf], np.nan)
    model = f"tiny cache key {Path(model_dir).name}"  # never this machine's path
    if a.model:  # a folder by its name, a hub id as given
        model = f"model dir {Path(a.model).name}" if Path(a.model).is_dir() else a.model
    where = "in-process vLLM" if a.engine else "transformers generate"
    print(f"model={model} steps={a.steps} k={a.k} groups={a.groups} seed={a.seed} ({where})")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}", na_rep="-"))


if __name__ == "__main__":
    main()
