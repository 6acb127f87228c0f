"""Exact-theory and predictor throughput; prints ratios measured in one run (no timed asserts).

    .venv/bin/python benchmarks/investigations/simulator/theory_bench.py [--kmax 1024]

1. the exact theory (sequential_law) on a grid of 64 k values x 100 tau_low values;
2. p_eff throughput: our log-space ufunc vs a naive scipy.stats.betabinom implementation.
"""

import argparse
import time

import numpy as np
from scipy import stats

from sara_sim.core.beta import p_eff_ufunc
from sara_sim.core.difficulty import BetaLaw
from sara_sim.core.theory import sequential_law


def naive_p_eff(n, s, k, a0, b0):
    """The textbook route: the Beta-Binomial law of the k - n outcomes still to come."""
    m = k - n
    rest_fail = stats.betabinom.pmf(0, m, a0 + s, b0 + n - s)
    rest_pass = stats.betabinom.pmf(m, m, a0 + s, b0 + n - s)
    mixed = (s > 0) & (s < n)
    p = 1.0 - np.where(s == 0, rest_fail, 0.0) - np.where(s == n, rest_pass, 0.0)
    return np.where(mixed, 1.0, p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kmax", type=int, default=1024)
    args = ap.parse_args()

    law = BetaLaw(0.3, 0.5)
    ks = np.unique(np.geomspace(2, args.kmax, 64).astype(int))
    while len(ks) < 64:  # pad with the next integers so the grid has 64 distinct k
        ks = np.unique(np.r_[ks, ks.max() + 1])
    taus = np.linspace(0.01, 0.99, 100)
    sequential_law(law, 8, 0.2)  # compile
    t = time.perf_counter()
    for k in ks:
        for tau in taus:
            sequential_law(law, int(k), float(tau))
    grid_s = time.perf_counter() - t
    print(
        f"exact theory grid: {len(ks)} k (2..{ks.max()}) x {len(taus)} tau in {grid_s:.2f} s "
        f"({len(ks) * len(taus) / grid_s:.0f} cells/s)"
    )

    rng = np.random.default_rng(0)
    size = 200_000
    k = rng.integers(2, 257, size)
    n = (rng.random(size) * (k + 1)).astype(np.int64)
    s = np.where(rng.random(size) < 0.5, 0, n)
    a0, b0 = 0.7, 1.3
    p_eff_ufunc(n[:10], s[:10], k[:10], a0, b0)  # compile
    t = time.perf_counter()
    ours = p_eff_ufunc(n, s, k, a0, b0)
    ours_s = time.perf_counter() - t
    t = time.perf_counter()
    ref = naive_p_eff(n, s, k, a0, b0)
    naive_s = time.perf_counter() - t
    err = np.max(np.abs(ours - ref))
    print(
        f"p_eff: ours {size / ours_s:,.0f}/s, naive scipy.stats {size / naive_s:,.0f}/s, "
        f"ratio {naive_s / ours_s:.1f}x, max |diff| {err:.1e}"
    )


if __name__ == "__main__":
    main()
