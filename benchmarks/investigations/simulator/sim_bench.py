"""Simulator speed as ratios measured on this machine (no timed asserts).

    .venv/bin/python benchmarks/investigations/simulator/sim_bench.py [--k 128] \\
        [--difficulty beta:0.5,0.5]

Simulated rollouts per second on one core against (a) the raw Bernoulli draw rate of a plain
Numba loop, (b) the same loop on the simulator's own generator, (c) the numpy/Python collector
driving the same rule; and the speed-up over k (run-length sampling makes it grow with k).
"""

import argparse

from sara_sim.sim.bench import bench_report, run_bench


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=128)
    ap.add_argument("--difficulty", default="beta:0.5,0.5")
    args = ap.parse_args()
    out = run_bench(k=args.k, spec=args.difficulty, ks=(8, 16, 32, 64, 128, 256, 512, 1024))
    print(bench_report(out))


if __name__ == "__main__":
    main()
