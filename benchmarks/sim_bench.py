"""Simulator speed as ratios measured on this machine (no timed asserts).

    .venv/bin/python benchmarks/sim_bench.py [--k 128] [--difficulty beta:0.5,0.5]

Simulated rollouts per second on one core against (a) the raw Bernoulli draw rate of a plain
Numba loop, (b) the same loop on the simulator's own generator, (c) the numpy/Python collector
driving the same rule; and the speed-up over k (run-length sampling makes it grow with k).
"""

import argparse

from sara_sim.bench import run_bench


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=128)
    ap.add_argument("--difficulty", default="beta:0.5,0.5")
    args = ap.parse_args()
    out = run_bench(k=args.k, spec=args.difficulty, ks=(8, 16, 32, 64, 128, 256, 512, 1024))
    print(f"law {out['law']}, sara tau_low 0.3, one core")
    for key in (
        "sim_rollouts_per_second",
        "bernoulli_per_second",
        "speedup_vs_bernoulli",
        "bernoulli_same_rng_per_second",
        "speedup_vs_bernoulli_same_rng",
        "python_rollouts_per_second",
        "speedup_vs_python",
    ):
        print(f"  {key:<32} {out[key]:.4g}")
    print("  k      rollouts/s   x Bernoulli")
    for row in out["by_k"]:
        rate, ratio = row["sim_rollouts_per_second"], row["speedup_vs_bernoulli"]
        print(f"  {row['k']:<6} {rate:11.4g}   {ratio:.2f}")


if __name__ == "__main__":
    main()
