"""A larger sweep of the simulator over (strategy, k, tau_low, law), cached to parquet.

    .venv/bin/python benchmarks/investigations/simulator/sim_sweep.py [--cache .cache/sim_sweep] \\
        [--steps 200]

Prints (1) cost per effective group of every strategy per law and k, (2) for sara, the Monte
Carlo estimate against the exact theory in standard errors for every (law, k, tau_low) cell.
Rows are cached per cell (``simulate.sweep``), so a rerun with the same arguments is instant.
"""

import argparse

import pandas as pd

from sara_sim.core.theory import sequential_law
from sara_sim.sim.laws import parse_sim_law
from sara_sim.sim.simulate import sweep
from sara_sim.sim.strategies import STRATEGIES


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=".cache/sim_sweep")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--replicates", type=int, default=4)
    args = ap.parse_args()
    laws = [("beta:0.3,0.3", None, 0), ("beta:1,1", None, 0), ("beta:0.34,0.67", None, 605)]
    laws.append(("history:deepscaler", "0-9", 0))  # the DeepScaleR histories of the package
    base = dict(steps=args.steps, replicates=args.replicates, groups=64, seed=0)
    cells = []
    for spec, epoch, pool in laws:
        for k in (4, 8, 16, 32, 64, 128):
            if spec.startswith("history:") and k > 8:
                continue
            for name in STRATEGIES:
                cells.append(
                    {
                        "strategy": name,
                        "difficulty": spec,
                        "epoch": epoch,
                        "k": k,
                        "tau_low": 0.3,
                        "pool": pool,
                        **base,
                    }
                )
            for tau in (0.1, 0.2, 0.5):
                cells.append(
                    {
                        "strategy": "sara",
                        "difficulty": spec,
                        "epoch": epoch,
                        "k": k,
                        "tau_low": tau,
                        "pool": pool,
                        **base,
                    }
                )
    df = sweep(cells, cache=args.cache, progress=True)
    df["k"] = df["k"].astype(int)
    df["law"] = df["difficulty"]
    pd.set_option("display.width", 200)
    at = df[df["tau_low"].astype(float) == 0.3]
    print("rollouts per effective group (tau_low = 0.3 where it applies)")
    print(
        at.pivot_table(
            index=["law", "strategy"], columns="k", values="cost_per_effective_group"
        ).round(2)
    )
    sara = df[df["strategy"] == "sara"].copy()
    z = []
    for row in sara.itertuples():
        law = parse_sim_law(row.difficulty, None if row.epoch in ("None", None) else row.epoch)
        th = sequential_law(law, row.k, float(row.tau_low))
        z.append((row.per_prompt_cost - th["cost_per_effective_group"]) / row.per_prompt_cost_se)
    sara["z_vs_exact"] = z
    print("\nsara: (Monte Carlo - exact) / SE, per-prompt cost per effective group")
    print(sara.pivot_table(index=["law", "tau_low"], columns="k", values="z_vs_exact").round(2))
    print(f"\nmax |z| = {sara['z_vs_exact'].abs().max():.2f} over {len(sara)} cells")


if __name__ == "__main__":
    main()
