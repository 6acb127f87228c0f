"""Benchmark: learning per rollout in the real GRPO loop — held-out accuracy against cumulative
rollouts, tokens and wall time, for several strategies, k values and seeds.

    .venv/bin/python benchmarks/real_learning.py --strategies uniform,ds,sara --k 8,16 \\
        --seeds 0,1,2 --out runs/real_learning

For each (k, seed) one `real.app.compare.run_compare` trains every strategy from the same start
(the graded tiny model, `real.models.tiny.TinySettings.graded()`), with the same seed, the same
finite pool of training problems (so sara-history's prompts come round again) and the same number of
effective groups per step (uniform: groups per step); one vLLM engine serves every run. Runs live
under OUT/runs/k<K>-seed<S>/<strategy>/ (metrics.jsonl, checkpoint.pt); after each (k, seed) the
table OUT/learning.csv is rewritten from every finished run, with OUT/learning.meta.json (command,
settings, package versions, wall time; the model by its tiny-cache key and runs relative to OUT,
never a path of this machine). A killed benchmark continues with --resume (finished compares are
kept, the interrupted one resumes from its checkpoints) — with the settings it was run with: a
changed one is refused, naming it, since the kept data would not match the meta file's claim;
--overwrite starts over.
The defaults reproduce the committed benchmarks/results/real_learning.csv (a copy of
OUT/learning.csv, with real_learning.meta.json): rerun rows are equal in every column but wall_s.
After the table, one verdict line per claim and strategy against DS (paper_figs.claims_stats:
paired 90 % intervals over the seeds; TOST at --margin on the late accuracy); --summary prints
them for OUT's finished table alone. --task reasoning starts from the reasoning tiny model
(a worked scratchpad before the answer, its length set by the problem: hard problems fail and
are long); --task reasoning-long from the model whose failures run long within a prompt (it
loses the thread, re-checks, runs to the budget). The sized plan of the claim run, with the
pilot's measured per-run costs:
benchmarks/investigations/claim_run/README.md.

learning.csv: one row per (strategy, k, seed, step); step 0 is the start model.
  strategy, k, seed    the run
  step                 optimizer steps done (0 = before training)
  cum_rollouts         rollouts sampled so far (budget: every rollout the strategy asked for)
  cum_tokens           completion tokens sampled so far
  cum_effective        effective (mixed, trained-on) groups so far
  wall_s               cumulative wall seconds of the training steps (collect + train + sync),
                       without the held-out evaluations (their cost is the benchmark's, not the
                       strategy's); with the audit's one extra engine call per step (SARA family,
                       --audit > 0), which slightly overstates their time
  eval_accuracy        held-out pass@1 (mean success over eval_problems x eval_samples samples);
                       empty where the step was not evaluated
  eval_se              its standard error over problems (clustered: per-problem success rates are
                       resampled, so correlation between a problem's samples is accounted for)
  eval_se_sampling     its standard error from sampling alone, on this fixed problem set (what
                       limits a comparison between runs evaluated on the same problems)
  rollouts, tokens     this step's
  groups               groups trained on this step (= effective groups, for every strategy but
                       uniform, which trains on saturated groups too)
  effective_groups     this step's mixed groups (nonzero GRPO advantage)
  effective_fraction   effective_groups / groups (uniform: < 1; the others: 1 by construction)
  rounds               engine calls (rounds) this step's collection took
  abandoned            prompts abandoned this step (SARA family; 0 for uniform and ds)
  audited              abandoned prompts whose groups were completed to k off-budget (audit:
                       up to --audit per step, drawn among those abandoned after >= 1 rollout,
                       sampled before the step's update; not counted in rollouts / tokens)
  audit_mixed          ... of which the completed group would have been mixed
  false_abandon_rate   audit_mixed / audited (empty when nothing was audited)
  reward_mean          mean reward of every rollout sampled this step
Step-0 rows carry the start evaluation and zeros; their per-step columns are empty.

Bad arguments exit 2 with one line before any engine starts."""

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import real.base.env  # noqa: F401  (env vars before torch / vllm)
from real.app.cli import deprecated_flag
from real.app.learning_meta import command, model_label, write_meta  # noqa: F401

COLUMNS = (
    "strategy", "k", "seed", "step", "cum_rollouts", "cum_tokens", "cum_effective", "wall_s",
    "eval_accuracy", "eval_se", "eval_se_sampling", "rollouts", "tokens", "groups",
    "effective_groups", "effective_fraction", "rounds", "abandoned", "audited", "audit_mixed",
    "false_abandon_rate", "reward_mean",
)  # fmt: skip
DEFAULT_STRATEGIES = "uniform,ds,sara,sara-auto,sara-history,sara-dps"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--strategies",
        default=DEFAULT_STRATEGIES,
        help="comma-separated (real.base.config.STRATEGIES, e.g. ds-verl3n: DS with verl's 3N "
        "generation batch); NAME+no-carry: a SARA-family run that drops its surplus and open "
        "groups at each step's end, as DS does (run folder and table rows named so)",
    )
    deprecated_flag(ap, "--allocators", "--strategies")
    ap.add_argument("--k", default="8,16", help="group sizes, comma-separated")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--groups", type=int, default=32, help="effective groups per step")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument(
        "--estimator", default="grpo", help="advantage: grpo | dr-grpo | rloo | reinforce++"
    )
    ap.add_argument(
        "--task",
        default="arithmetic",
        help="arithmetic (graded model) | reasoning | reasoning-long (their models)",
    )
    ap.add_argument("--task-size", type=int, default=512, help="training problems in the pool")
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--eval-problems", type=int, default=512)
    ap.add_argument("--eval-samples", type=int, default=4)
    ap.add_argument("--audit", type=int, default=4, help="abandoned prompts audited per step")
    ap.add_argument("--model", default=None, help="default: the graded tiny model (built once)")
    ap.add_argument("--test-model", action="store_true", help="the tests' tiny model (quick)")
    ap.add_argument("--out", default="runs/real_learning")
    ap.add_argument("--overwrite", action="store_true", help="start over in a used --out")
    ap.add_argument("--resume", action="store_true", help="continue a killed benchmark")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.add_argument("--margin", type=float, default=0.02, help="TOST margin (accuracy)")
    ap.add_argument(
        "--summary",
        action="store_true",
        help="only the verdicts of OUT's table (OUT: a run folder, or a CSV such as "
        "benchmarks/results/real_learning.csv)",
    )
    a = ap.parse_args(argv)
    from sara_sim.core.errors import ParameterError, check_float

    try:
        check_float(a.margin, "--margin", 0.0, 1.0, lo_open=True)
        if a.summary:
            table = Path(a.out)  # a committed table is a CSV; a run folder holds learning.csv
            return summary(table if table.suffix == ".csv" else table / "learning.csv", a.margin)
        plan = check_args(a)
        return run(a, plan)
    except ParameterError as e:
        print(f"real_learning: error: {e}", file=sys.stderr)
        return 2


def _list(text: str, flag: str, cast):
    from sara_sim.core.errors import ParameterError

    try:
        items = [cast(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ParameterError(flag, f"must be a comma-separated list, got {text!r}") from None
    if not items or len(set(items)) != len(items):
        raise ParameterError(flag, f"give one or more distinct values, got {text!r}")
    return items


def base_config(a, k: int, seed: int):
    from real.base.config import Config

    return Config.from_flat(  # lr lands in cfg.grpo
        dict(
            model=a.model,
            k=k,
            groups=a.groups,
            steps=a.steps,
            seed=seed,
            task=a.task,
            task_seed=0,  # one dataset (pool and held-out set) for every seed: the model's own
            task_size=a.task_size,
            eval_size=a.eval_problems,
            lr=a.lr,
            estimator=a.estimator,
            eval_every=a.eval_every,
            eval_problems=a.eval_problems,
            eval_samples=a.eval_samples,
            audit_abandoned=a.audit,
            ckpt_every=5,
            progress=not a.no_progress,
            out=str(Path(a.out) / "runs" / f"k{k}-seed{seed}"),
        )
    )


def check_args(a) -> list:
    """Every argument and every (k, seed) compare's folder, before any engine starts."""
    from real.app.compare import check_compare
    from real.base.config import SEED_MAX
    from sara_sim.core.errors import check_choice, check_int

    strategies = _list(a.strategies, "--strategies", str)
    ks = _list(a.k, "--k", int)
    seeds = _list(a.seeds, "--seeds", int)
    for s in seeds:
        check_int(s, "--seeds", 0, SEED_MAX)
    check_int(a.audit, "--audit", 0)
    check_folder(a, Path(a.out) / "learning.csv")
    check_choice(a.task, "--task", tuple(START))
    if a.model is None:
        from real.models.tiny import default_dir

        a.model = str(default_dir(start_settings(a)))
    plan = []
    for k in ks:
        for seed in seeds:
            cfg = base_config(a, k, seed)
            done = _finished(cfg)
            resume = a.resume and (Path(cfg.out) / "compare_config.json").exists() and not done
            cfg = replace(cfg, resume=resume, overwrite=a.overwrite or (a.resume and not resume))
            if a.resume and done:
                check_unchanged(cfg, strategies)  # its data are kept: same settings, or refuse
            else:
                check_compare(replace(cfg, model=None) if _unbuilt(a.model) else cfg, strategies)
            plan.append((cfg, strategies, a.resume and done))
    return plan


def check_folder(a, used: Path) -> None:
    """--resume and --overwrite exclude each other, so do --model and --test-model, and a --out
    that already holds a benchmark (`used` exists) needs one of --resume / --overwrite."""
    from sara_sim.core.errors import ParameterError

    if a.resume and a.overwrite:
        raise ParameterError("--resume", "--resume and --overwrite exclude each other")
    if a.model and a.test_model:
        raise ParameterError("--test-model", "give --model or --test-model, not both")
    if used.exists() and not (a.resume or a.overwrite):
        raise ParameterError("--out", f"{a.out} already holds a benchmark; --resume or --overwrite")


# Settings that change how a run is watched or where it lives, not what it computes.
NOT_DATA = ("progress", "resume", "overwrite", "force", "out", "engine_url", "strategy")


def check_unchanged(cfg, strategies) -> None:
    """A finished compare that --resume keeps was run with the settings asked now (one line
    naming the first that differs): otherwise learning.meta.json would claim settings its data
    were not made with."""
    from real.app.resume import _model_key
    from real.base.config import Config
    from sara_sim.core.errors import ParameterError

    record = json.loads((Path(cfg.out) / "compare_config.json").read_text())
    if list(record["strategies"]) != list(strategies):
        raise ParameterError(
            "--strategies",
            f"the finished runs in {cfg.out} compared {','.join(record['strategies'])}, not "
            f"{','.join(strategies)}; resume with the same settings or --overwrite",
        )
    then = Config.from_dict({**record["config"], "strategy": None}).flat()
    for name, now in cfg.flat().items():
        old = then[name]
        if name == "model":
            old, now = _model_key(old), _model_key(now)
        if name not in NOT_DATA and old != now:
            raise ParameterError(
                "--resume",
                f"the finished runs in {cfg.out} were made with {name}={old!r}, not {now!r}; "
                "resume with the same settings or --overwrite",
            )


# The start model of each task the benchmark runs: the tiny settings it is built with.
START = {"arithmetic": "graded", "reasoning": "reasoning", "reasoning-long": "reasoning_long"}


def start_settings(a):
    """The tiny model's settings: the tests' quick one, or the task's start model (built once)."""
    from real.models.tiny import TinySettings

    return TinySettings.test() if a.test_model else TinySettings.named(START[a.task])


def _unbuilt(model: str) -> bool:
    return not (Path(model) / "config.json").exists()


def _finished(cfg) -> bool:
    return (Path(cfg.out) / "compare.csv").exists()


def run(a, plan) -> int:
    from real.app.compare import run_compare
    from real.models.tiny import build_tiny
    from real.rollout.collect import make_engine

    t0 = time.time()
    out = Path(a.out)
    if _unbuilt(a.model):  # the default start model: built (deterministically) once, cached
        build_tiny(a.model, start_settings(a), progress=not a.no_progress)
    engine = None
    for i, (cfg, strategies, done) in enumerate(plan):
        if not done:
            if engine is None:  # one engine for every run: each pushes its start weights
                engine = make_engine(cfg, cfg.model)
            print(f"[{i + 1}/{len(plan)}] k={cfg.k} seed={cfg.seed}", file=sys.stderr)
            run_compare(cfg, strategies, engine=engine)
        write_table(out, [c for c, _, _ in plan[: i + 1]], strategies)
    write_meta(a, plan, time.time() - t0)
    print(f"wrote {out / 'learning.csv'} ({time.time() - t0:.0f} s)")
    return summary(out / "learning.csv", a.margin)


def summary(table: Path, margin: float) -> int:
    """One verdict line per claim and strategy (paper_figs.claims_stats), from a finished table."""
    import pandas as pd

    from paper_figs.claims_stats import verdicts
    from sara_sim.core.errors import ParameterError

    if not table.exists():
        raise ParameterError("--out", f"{table} does not exist: run the benchmark first")
    for line in verdicts(pd.read_csv(table), margin=margin):
        print(line)
    return 0


def run_rows(run_dir: Path, strategy: str, k: int, seed: int) -> list[dict]:
    """learning.csv rows of one finished run, from its metrics lines (the source of truth)."""
    from real.io.runlog import read_metrics

    metrics = read_metrics(run_dir / "metrics.jsonl")
    summary = json.loads((run_dir / "summary.json").read_text())
    n_samples = summary["config"]["eval_samples"]
    first = metrics[0].get("eval_initial_wins") if metrics else None
    base = {"strategy": strategy, "k": k, "seed": seed}
    rows = [
        {
            **base,
            "step": 0,
            "cum_rollouts": 0,
            "cum_tokens": 0,
            "cum_effective": 0,
            "wall_s": 0.0,
            "eval_accuracy": summary["eval_initial"],
            **eval_se(first, n_samples),
        }
    ]
    wall = 0.0
    for r in metrics:
        wall += r["wall_s"] - r["eval_s"]
        rows.append(
            {
                **base,
                "step": r["step"] + 1,
                "cum_rollouts": r["cum_rollouts"],
                "cum_tokens": r["cum_tokens"],
                "cum_effective": r["cum_effective"],
                "wall_s": round(wall, 3),
                "eval_accuracy": r.get("eval_accuracy"),
                **eval_se(r.get("eval_wins"), n_samples),
                "rollouts": r["rollouts"],
                "tokens": r["tokens"],
                "groups": r["groups"],
                "effective_groups": r["effective_groups"],
                "effective_fraction": r["effective_groups"] / r["groups"] if r["groups"] else None,
                "rounds": r["rounds"],
                "abandoned": r["abandoned"],
                "audited": r.get("audited", 0),
                "audit_mixed": r.get("audit_mixed", 0),
                "false_abandon_rate": r["audit_mixed"] / r["audited"] if r.get("audited") else None,
                "reward_mean": r["reward_mean"],
            }
        )
    return rows


def eval_se(wins, n_samples: int) -> dict:
    """Standard errors of a pass@1 from per-problem successes out of n_samples.

    Clustered (over problems): sd of the per-problem rates / sqrt(problems). Sampling only (this
    problem set fixed): sqrt(sum of the unbiased per-problem Bernoulli variances / m) / problems.

    >>> r = eval_se([0, 4, 2, 2], 4)
    >>> round(r["eval_se"], 4), round(r["eval_se_sampling"], 4)
    (0.2041, 0.1443)
    """
    if not wins:
        return {"eval_se": None, "eval_se_sampling": None}
    import numpy as np

    m = n_samples
    rate = np.asarray(wins, dtype=float) / m
    n = len(rate)
    clustered = rate.std(ddof=1) / np.sqrt(n) if n > 1 else None
    within = rate * (1 - rate) * m / (m - 1) if m > 1 else np.zeros(n)  # unbiased per problem
    sampling = np.sqrt(within.sum() / m) / n
    return {"eval_se": clustered, "eval_se_sampling": float(sampling)}


def write_table(out: Path, cfgs, strategies) -> None:
    """OUT/learning.csv from every finished run of `cfgs` (atomic: a crash keeps the old one)."""
    import pandas as pd

    from real.io.runlog import atomic_write

    rows = []
    for cfg in cfgs:
        if not _finished(cfg):
            continue
        for al in strategies:
            rows += run_rows(Path(cfg.out) / al, al, cfg.k, cfg.seed)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    atomic_write(out / "learning.csv", frame.to_csv(index=False, float_format="%.6g").encode())


if __name__ == "__main__":
    sys.exit(main())
