"""Cross-validate sara-history's hyperparameters on the shipped DeepScaleR histories.

    .venv/bin/python benchmarks/fit_informed.py [--seeds 2]

Never tuned on the data it reports: prompts are split in two folds (by prompt id, alternating);
each configuration is scored on fold A over epochs 0-25, the best is chosen there, and reported on
the held-out fold B over the held-out epochs 26-52 — beside ds and sara on the same held-out data.
The starvation guards are fixed, not tuned: explore = 0.05 and max_skip = 2 (a prompt skipped
twice in a row is probed at its next visit).
"""

import argparse
import itertools

import numpy as np

from sara_sim.sim.replay import load_history, replay

DATA = "deepscaler"  # the DeepScaleR histories shipped in the package (sara_sim/data)


def cost(frame, strategy, epochs, seeds, **kw):
    return float(
        np.mean(
            [replay(frame, strategy, epochs, s, **kw)["cost_per_effective_group"] for s in seeds]
        )
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    frame = load_history(DATA)
    pids = np.array(sorted(frame.prompt_id.unique()))
    fold_a = frame[frame.prompt_id.isin(pids[0::2])]
    fold_b = frame[frame.prompt_id.isin(pids[1::2])]
    tune, held = range(0, 26), range(26, 53)
    seeds = range(args.seeds)

    grid = []
    for rho, kappa in itertools.product([0.5, 0.8, 0.95, 1.0], [0.25, 0.5, 1.0, 2.0]):
        grid.append({"rho": rho, "kappa": kappa, "rule": "price"})
        for tau in (0.3, 0.5):
            grid.append({"rho": rho, "kappa": kappa, "rule": "tau", "tau_low": tau})
    print(f"tuning {len(grid)} configurations on fold A, epochs 0-25 ({len(seeds)} seeds each)")
    scored = []
    for cfg in grid:
        c = cost(fold_a, "sara-history", tune, seeds, **cfg)
        scored.append((c, cfg))
        print(f"  {c:7.3f}  {cfg}")
    scored.sort(key=lambda x: x[0])
    best_cost, best = scored[0]
    print(f"best on fold A: {best} ({best_cost:.3f} rollouts per effective group)")

    comps = {}
    for name in ("sara-mopps", "sara-dps"):
        trials = [(cost(fold_a, name, tune, seeds, ratio=r, **best), r) for r in (1.5, 2.0, 4.0)]
        for c, r in trials:
            print(f"  {c:7.3f}  {name} ratio={r}")
        comps[name] = min(trials)[1]
    print(f"selector ratios chosen on fold A: {comps}")

    print("held-out report: fold B, epochs 26-52")
    ds = cost(fold_b, "ds", held, seeds)
    rows = [("ds", ds), ("sara (tau 0.5)", cost(fold_b, "sara", held, seeds, tau_low=0.5))]
    rows.append(("sara-history (best)", cost(fold_b, "sara-history", held, seeds, **best)))
    for name, ratio in comps.items():
        rows.append(
            (f"{name} (ratio {ratio})", cost(fold_b, name, held, seeds, ratio=ratio, **best))
        )
    for name, c in rows:
        print(f"  {name:<22} {c:7.3f}   savings vs ds {1 - c / ds:6.1%}")


if __name__ == "__main__":
    main()
