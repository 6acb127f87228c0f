"""Benchmark: trl-cgrpo (the nearest packaged peer) side by side with our TRL adapter.

    bash scripts/setup.sh --cgrpo            # once: the peer's own venv, .venv-cgrpo (TRL 1.14)
    nice .venv/bin/python benchmarks/cgrpo_compare.py [--seeds 0,1,2] [--steps 30] [--out DIR]

trl-cgrpo 0.2.0 (`CGRPOTrainer`, a subclass of TRL 1.12-1.14's GRPOTrainer) samples each prompt
along a budget grid (2, 4, 8, ...) and stops at the first budget whose split-conformal prediction
set over the extracted answers is a singleton; its thresholds are calibrated on a held-out set
with the current policy before the first step and every `recalibrate_every` optimizer steps
(`num_calibration_samples` x max(grid) rollouts each). A prompt that stops early is padded to
the group width with masked rows. It keeps every prompt it was handed: no replacement, so its
batches hold saturated groups too.

Every run starts from the same model (default: the graded tiny model of
benchmarks/trl_learning.py) with the same Config as trl_learning.py's runs (task arithmetic,
pool of 512 problems, 32 groups of k 8 per step, 30 steps, lr 1e-3, 2 optimizer steps per
collection step, constant lr; `real.trl.run.grpo_fields`; --task reasoning: the scratchpad task
and its tiny model, as real_learning.py's), one seed at a time, strategies:

  ds, sara  TRL 1.16's GRPOTrainer + our `SaraRollout` (main venv): 32 effective groups per step
            (ds: DAPO dynamic sampling; sara: our default rule), replacements drawn from the pool
  uniform   TRL 1.16's GRPOTrainer + SaraRollout("uniform"): 32 prompts x k per step, which is
            what TRL does by itself (as the next row, on the other TRL release)
  grpo      TRL 1.14's GRPOTrainer as it is (the peer's venv): 32 prompts x k per step
  cgrpo     trl-cgrpo's CGRPOTrainer (the peer's venv): 32 prompts per step, group width k =
            max(--budgets), the README's calibration (200 problems, recalibrate every 50
            optimizer steps) on problems outside the pool and the held-out set

Both sides sample with transformers `generate` on the trainer's model (TRL's own path with
use_vllm=False, our adapter's HF backend; temperature 1, top_p 1, no top_k), so only the
allocation differs, and the two environments share transformers 5.19, accelerate and datasets
(TRL itself differs: 1.16 vs 1.14). The peer runs as a subprocess (benchmarks/cgrpo_side.py,
whose docstring says how its generations are counted from outside and checked against its own
logs). After training, one in-process vLLM engine evaluates every final model and the start
model on the held-out set (`real.rollout.evaluation.evaluate`, 512 problems x 4 samples, the
same sampling seeds for every strategy of a seed).

Per strategy: rollouts and completion tokens per effective group (cgrpo: its calibration
rollouts counted; the row "cgrpo, calibration not counted" leaves them out), effective fraction
(effective groups / groups trained on; an effective group is one whose real rollouts' rewards
are not all equal), held-out pass@1 after the steps; each also as a ratio to ds, per seed, with
the geometric mean and the 90 % t-interval on the logs over seeds (`-`: undefined).
Writes OUT/runs/<strategy>-seed<S>/{spec.json,result.json,model/}, OUT/evals.json,
OUT/results.json (every run's totals) and OUT/table.md (also printed). Committed:
benchmarks/results/cgrpo_compare_{arithmetic,arithmetic_lr3e-4,reasoning}.json (copies of three
runs' OUT/results.json) and benchmarks/cgrpo_compare.out.txt (their tables).
A killed benchmark continues with --resume (finished runs whose spec is unchanged are kept);
--overwrite starts over; --table prints the table of OUT/results.json, or of a committed copy:

    .venv/bin/python benchmarks/cgrpo_compare.py --table \\
        --out benchmarks/results/cgrpo_compare_arithmetic.json"""

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace

import real.base.env  # noqa: F401  (env vars before torch / vllm)

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
OURS = ("ds", "sara", "uniform")  # our adapter in the main venv
PEER = ("grpo", "cgrpo")  # the peer's venv
STRATEGIES = OURS + PEER
TASKS = ("arithmetic", "reasoning")  # the peer's answer extractor: the task's own parse
CGRPO_VENV = ROOT / ".venv-cgrpo"
SETUP = "bash scripts/setup.sh --cgrpo"
NO_CAL = "cgrpo, calibration not counted"
LEVEL = 0.90  # the claims tables' level


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategies", default=",".join(STRATEGIES), help=", ".join(STRATEGIES))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=30, help="collection steps")
    ap.add_argument("--groups", type=int, default=32, help="groups (prompts) per step")
    ap.add_argument("--k", type=int, default=8, help="group width; = max(--budgets)")
    ap.add_argument("--budgets", default="2,4,8", help="cgrpo's budget grid (ascending)")
    ap.add_argument("--calibration", type=int, default=200, help="cgrpo's calibration problems")
    ap.add_argument(
        "--recalibrate-every", type=int, default=50, help="cgrpo: optimizer steps (0: once)"
    )
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--task", default="arithmetic", help="arithmetic | reasoning (its model)")
    ap.add_argument("--task-size", type=int, default=512, help="training problems in the pool")
    ap.add_argument("--eval-problems", type=int, default=512)
    ap.add_argument("--eval-samples", type=int, default=4)
    ap.add_argument("--model", default=None, help="default: the graded tiny model (built once)")
    ap.add_argument("--test-model", action="store_true", help="the tests' tiny model (quick)")
    ap.add_argument("--cgrpo-python", default=str(CGRPO_VENV / "bin/python"))
    ap.add_argument("--out", default="runs/cgrpo_compare")
    ap.add_argument("--resume", action="store_true", help="keep finished runs of the same spec")
    ap.add_argument("--overwrite", action="store_true", help="start over in a used --out")
    ap.add_argument(
        "--table", action="store_true", help="only the table of OUT (or of a results JSON file)"
    )
    return ap.parse_args(argv)


def check(a) -> dict:
    """Every argument, before any model or engine starts: the plan {strategies, seeds, budgets}."""
    from benchmarks.real_learning import _list as _names
    from benchmarks.real_learning import check_folder
    from real.base.config import SEED_MAX
    from sara_sim.core.errors import ParameterError, check_choice, check_int

    strategies = _names(a.strategies, "--strategies", str)
    bad = [s for s in strategies if s not in STRATEGIES]
    if bad:
        raise ParameterError("--strategies", f"unknown {bad[0]!r}; choose from {STRATEGIES}")
    if "ds" not in strategies:
        raise ParameterError("--strategies", "must include ds (every ratio is to ds)")
    seeds = _names(a.seeds, "--seeds", int)
    for s in seeds:
        check_int(s, "--seeds", 0, SEED_MAX)
    check_int(a.steps, "--steps", 1)
    check_int(a.groups, "--groups", 1)
    check_int(a.k, "--k", 2)
    budgets = _names(a.budgets, "--budgets", int)
    if budgets != sorted(budgets) or budgets[0] < 1 or budgets[-1] != a.k:
        raise ParameterError(
            "--budgets", f"must ascend from >= 1 to --k={a.k} (C-GRPO's group width), got {budgets}"
        )
    check_choice(a.task, "--task", TASKS)
    check_int(a.calibration, "--calibration", 1)
    check_int(a.recalibrate_every, "--recalibrate-every", 0)
    if not a.table:
        check_folder(a, Path(a.out) / "runs")
        if set(strategies) & set(PEER):
            check_peer(Path(a.cgrpo_python))
    return {"strategies": strategies, "seeds": seeds, "budgets": budgets}


def check_peer(python: Path) -> None:
    """The peer's venv exists and holds trl-cgrpo (asked without importing TRL: ~1 s)."""
    from sara_sim.core.errors import ParameterError

    if not python.exists():
        raise ParameterError("--cgrpo-python", f"{python} does not exist; make it with `{SETUP}`")
    ask = "from importlib.metadata import version as v; print(v('trl-cgrpo'), v('trl'))"
    res = subprocess.run([str(python), "-c", ask], capture_output=True, text=True)
    if res.returncode:
        raise ParameterError(
            "--cgrpo-python",
            f"{python} has no trl-cgrpo ({res.stderr.strip().splitlines()[-1]}); run `{SETUP}`",
        )


def config(a, seed: int):
    """trl_learning.py's run Config for this seed (real_learning.base_config, trainer trl)."""
    from real_learning import base_config  # a sibling script: benchmarks/ is on sys.path

    ns = SimpleNamespace(**vars(a), estimator="grpo", eval_every=a.steps)
    ns.audit, ns.no_progress = 0, True  # no off-budget audit; one line per run, no bars
    return replace(base_config(ns, a.k, seed), trainer="trl", out=None)


def our_run(strategy: str, cfg, model_dir: Path, out: Path) -> dict:
    """One run of TRL's GRPOTrainer with our SaraRollout (HF generate), as cgrpo_side.py does
    the peer's: the same task, dataset, reward and GRPOConfig fields from the same Config."""
    from cgrpo_side import train
    from trl import GRPOConfig, GRPOTrainer

    from real.base.config import build_collector
    from real.tasks import RewardGuard, make_run_task
    from real.trl.adapter import SaraRollout
    from real.trl.run import _dataset, _reward, grpo_fields

    task = make_run_task(cfg)
    ds = _dataset(task, cfg)
    fields = grpo_fields(cfg, out, cfg.engine.max_tokens or task.max_tokens) | {
        "save_strategy": "no"
    }
    args = GRPOConfig(**fields)
    collector = build_collector(
        strategy, cfg.knobs, k=cfg.k, groups=cfg.groups, seed=cfg.seed, epoch_size=task.size
    )
    sara = SaraRollout(
        args, ds, [_reward(task, RewardGuard(task.reward))], strategy, collector=collector
    )
    _, wall = train(
        GRPOTrainer,
        model_dir,
        cfg.seed,
        out,
        reward_funcs=sara.reward_funcs,
        args=args,
        train_dataset=ds,
        rollout_func=sara,
    )
    steps = [
        {
            "rollouts": s["rollouts"],
            "tokens": s["tokens"],
            "groups": s["groups"],
            "effective": s["effective_groups"],
            "calls": s["rounds"],
            "reward_mean": s["reward_mean"],
        }
        for s in sara.step_log
    ]
    return {
        "strategy": strategy,
        "seed": cfg.seed,
        "steps": steps,
        "calibrations": [],
        "wall_s": round(wall, 1),
    }


def run_one(strategy, cfg, plan, a, model_dir: Path, out: Path) -> dict:
    """A run's result: kept from an earlier benchmark when its spec is the same (--resume).
    OUT/spec.json is written only beside a finished result (both replaced whole), so a killed
    run leaves the last finished one and its spec as they were."""
    spec = {
        "strategy": strategy, "config": asdict(cfg), "model": str(model_dir), "out": str(out),
        "cgrpo": {"budgets": plan["budgets"], "calibration": a.calibration,
                  "recalibrate_every": a.recalibrate_every},
    }  # fmt: skip
    spec = json.loads(json.dumps(spec))  # as read back (tuples are lists)
    spec_path, result_path = out / "spec.json", out / "result.json"
    kept = spec_path.exists() and result_path.exists()
    if a.resume and kept and json.loads(spec_path.read_text()) == spec:
        return json.loads(result_path.read_text())
    out.mkdir(parents=True, exist_ok=True)
    pending = out / "spec.pending.json"  # what the peer's side reads
    _write(pending, spec)
    print(f"{strategy} seed {cfg.seed}", file=sys.stderr, flush=True)
    if strategy in OURS:
        _write(result_path, our_run(strategy, cfg, model_dir, out))
    else:
        side = [a.cgrpo_python, str(ROOT / "benchmarks/cgrpo_side.py"), str(pending)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the peer's venv imports this checkout
        subprocess.run(side, check=True, env=env)  # writes OUT/result.json whole at its end
    pending.replace(spec_path)
    return json.loads(result_path.read_text())


def _write(path: Path, data) -> None:
    """JSON written whole or not at all."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def evaluate_all(a, runs: list[dict], model_dir: Path, out: Path) -> dict:
    """Held-out pass@1 of every run's final model and of the start model (per seed), on one
    vLLM engine: {run name or 'start-seed<S>': accuracy}. Runs evaluated before are kept."""
    import torch
    from transformers import AutoModelForCausalLM

    from real.rollout.collect import make_engine
    from real.rollout.evaluation import evaluate
    from real.tasks import make_run_task

    path = out / "evals.json"
    evals = json.loads(path.read_text()) if path.exists() and a.resume else {}
    engine = None
    for r in runs:
        cfg = config(a, r["seed"])
        task = make_run_task(cfg)
        for name, folder, tag in (
            (f"start-seed{r['seed']}", model_dir, 0),
            (r["name"], out / "runs" / r["name"] / "model", a.steps),
        ):
            if name in evals:
                continue
            engine = engine or make_engine(cfg, model_dir)
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
            engine.push_weights(model)
            evals[name] = evaluate(engine, task, cfg, tag=tag).accuracy
            _write(path, evals)
    return evals


def totals(result: dict, accuracy: float | None, start: float | None) -> dict:
    """One run's sums over its steps (and calibrations)."""
    steps, cals = result["steps"], result["calibrations"]
    return {
        "strategy": result["strategy"],
        "seed": result["seed"],
        "steps": len(steps),
        "rollouts": sum(s["rollouts"] for s in steps),
        "tokens": sum(s["tokens"] for s in steps),
        "calibration_rollouts": sum(c["rollouts"] for c in cals),
        "calibration_tokens": sum(c["tokens"] for c in cals),
        "calibrations": len(cals),
        "groups": sum(s["groups"] for s in steps),
        "effective": sum(s["effective"] for s in steps),
        "accuracy": accuracy,
        "start_accuracy": start,
        "wall_s": result["wall_s"],
    }


# ---------------------------------------------------------------- the table (pure)


def measures(t: dict, calibration: bool = True) -> dict:
    """Per-run measures of a totals row; None where undefined (no effective group)."""
    rollouts = t["rollouts"] + (t["calibration_rollouts"] if calibration else 0)
    tokens = t["tokens"] + (t["calibration_tokens"] if calibration else 0)
    eff = t["effective"]
    return {
        "rollouts_per_eff": rollouts / eff if eff else None,
        "tokens_per_eff": tokens / eff if eff else None,
        "effective_fraction": eff / t["groups"] if t["groups"] else None,
        "accuracy": t["accuracy"],
    }


COLUMNS = {
    "rollouts_per_eff": "rollouts / eff. group",
    "tokens_per_eff": "tokens / eff. group",
    "effective_fraction": "effective fraction",
    "accuracy": "held-out pass@1",
}


def rows(runs: list[dict]) -> dict:
    """{label: {seed: measures}}: each strategy, and cgrpo once more without its calibration."""
    out = {}
    for t in runs:
        out.setdefault(t["strategy"], {})[t["seed"]] = measures(t)
        if t["strategy"] == "cgrpo":
            out.setdefault(NO_CAL, {})[t["seed"]] = measures(t, calibration=False)
    return out


def ratio_to(label_runs: dict, ref_runs: dict, key: str, level: float = LEVEL):
    """(geometric mean, low, high, seeds) of the per-seed ratios to the reference on the seeds
    both ran; None when no seed defines it; nan bounds with one seed."""
    from paper_figs.learning_stats import ratio_ci

    ratios = []
    for seed, m in label_runs.items():
        ref = ref_runs.get(seed, {}).get(key)
        if m[key] is not None and ref:  # ref None or 0: undefined
            ratios.append(m[key] / ref)
    if not ratios:
        return None
    if any(r <= 0 for r in ratios):  # a zero (no accuracy): no log; the arithmetic mean only
        return sum(ratios) / len(ratios), math.nan, math.nan, len(ratios)
    return (*ratio_ci(ratios, level), len(ratios))


def cell(label_runs: dict, ref_runs: dict, key: str) -> str:
    """'mean (ratio [low, high])', '-' for what is undefined."""
    vals = [m[key] for m in label_runs.values() if m[key] is not None]
    if not vals:
        return "-"
    mean = sum(vals) / len(vals)
    text = f"{mean:.3g}" if key != "effective_fraction" and key != "accuracy" else f"{mean:.3f}"
    r = ratio_to(label_runs, ref_runs, key)
    if r is None:
        return f"{text} (-)"
    g, lo, hi, _ = r
    if math.isnan(lo):
        return f"{text} ({g:.2f})"
    return f"{text} ({g:.2f} [{lo:.2f}, {hi:.2f}])"


def table(runs: list[dict], ref: str = "ds") -> str:
    """The markdown table: one line per strategy, each measure's mean over seeds and its ratio
    to `ref` (geometric mean of the per-seed ratios, 90 % t-interval on their logs)."""
    by = rows(runs)
    if ref not in by:
        raise ValueError(f"no {ref} runs: every ratio is to {ref}")
    head = ["strategy", "seeds", *COLUMNS.values()]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, per_seed in by.items():
        seeds = ",".join(str(s) for s in sorted(per_seed))
        cells = [cell(per_seed, by[ref], key) for key in COLUMNS]
        lines.append("| " + " | ".join([label, seeds, *cells]) + " |")
    return "\n".join(lines)


def per_seed(runs: list[dict]) -> str:
    """One line per run: the counts the table is made of."""
    head = (
        "strategy seed rollouts tokens cal_rollouts cal_tokens groups effective "
        "accuracy start wall_s"
    ).split()
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in runs:
        vals = [t["strategy"], t["seed"], t["rollouts"], t["tokens"], t["calibration_rollouts"],
                t["calibration_tokens"], t["groups"], t["effective"], _f(t["accuracy"]),
                _f(t["start_accuracy"]), t["wall_s"]]  # fmt: skip
        lines.append("| " + " | ".join(str(v) for v in vals) + " |")
    return "\n".join(lines)


def _f(x) -> str:
    return "-" if x is None else f"{x:.4f}"


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    from sara_sim.core.errors import ParameterError

    argv = sys.argv[1:] if argv is None else list(argv)
    a = parse(argv)
    try:
        plan = check(a)
    except ParameterError as e:
        print(f"cgrpo_compare: error: {e}", file=sys.stderr)
        return 2
    out = Path(a.out)
    if not a.table:
        bench(a, plan, out, argv)
    source = out if out.suffix == ".json" else out / "results.json"  # a committed copy, or OUT
    if not source.exists():
        print(f"cgrpo_compare: error: --out: {source} does not exist", file=sys.stderr)
        return 2
    text = report(json.loads(source.read_text()))
    if source.parent == out:
        (out / "table.md").write_text(text + "\n")
    print(text)
    return 0


def bench(a, plan, out: Path, argv) -> None:
    import shutil

    from benchmarks.learning_meta import command, model_label

    from benchmarks.real_learning import start_settings
    from real.models.tiny import build_tiny

    if a.overwrite and out.exists():
        shutil.rmtree(out)
    t0 = time.time()
    model_dir = a.model or build_tiny(settings=start_settings(a), progress=False)
    model_dir = Path(model_dir)
    a.model = str(model_dir)
    results = []
    for seed in plan["seeds"]:
        cfg = config(a, seed)
        for strategy in plan["strategies"]:
            name = f"{strategy}-seed{seed}"
            result = run_one(strategy, cfg, plan, a, model_dir, out / "runs" / name)
            results.append({**result, "name": name})
    evals = evaluate_all(a, results, model_dir, out)
    runs = [totals(r, evals[r["name"]], evals[f"start-seed{r['seed']}"]) for r in results]
    from importlib.metadata import version

    peer = next((r["packages"] for r in results if "packages" in r), None)
    doc = {
        "command": command("benchmarks/cgrpo_compare.py", argv, a.out, a.model),
        "model": model_label(model_dir),
        "settings": {
            "steps": a.steps,
            "groups": a.groups,
            "k": a.k,
            "lr": a.lr,
            "task": a.task,
            "task_size": a.task_size,
            "eval": f"{a.eval_problems} x {a.eval_samples}",
            "budgets": plan["budgets"],
            "calibration": a.calibration,
            "recalibrate_every": a.recalibrate_every,
        },
        "packages": {
            "ours": {p: version(p) for p in ("trl", "transformers", "accelerate", "torch")},
            "peer": peer,
        },
        "wall_s": round(time.time() - t0, 1),
        "runs": runs,
        "cgrpo_logged": {r["name"]: r["cgrpo"]["logged"] for r in results if "cgrpo" in r},
    }
    _write(out / "results.json", doc)


def report(doc: dict) -> str:
    s, pkgs = doc["settings"], doc["packages"]
    return "\n".join(
        [
            f"# {doc['command']}",
            f"# task {s['task']}, model: {doc['model']}; {s['steps']} steps x {s['groups']} groups "
            f"x k {s['k']}, "
            f"lr {s['lr']}, held-out {s['eval']}; cgrpo budgets {s['budgets']}, calibration "
            f"{s['calibration']} problems every {s['recalibrate_every']} optimizer steps",
            f"# ours: {json.dumps(pkgs['ours'])}; peer: {json.dumps(pkgs['peer'])}",
            f"# wall {doc['wall_s']} s",
            *([f"# note: {doc['note']}"] if "note" in doc else []),
            "",
            "mean over seeds (ratio to ds: geometric mean of per-seed ratios [90 % t-interval]):",
            table(doc["runs"]),
            "",
            "per run:",
            per_seed(doc["runs"]),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
