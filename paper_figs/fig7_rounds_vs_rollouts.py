"""Figure 7 — rounds vs rollouts: the probe size trades synchronisation rounds against rollouts."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sara_sim.core.difficulty import parse_law
from sara_sim.core.policy import threshold_plan
from sara_sim.core.theory import best_tau, plan_law

from ._common import Figure
from ._sim import Z95, Cells

LAW, K, PRIOR = "beta:0.3,0.3", 16, (0.3, 0.3)
PROBES = (1, 2, 3, 4, 6, 8, 12, 16)
SCHEDULES = (  # (label, increment)
    ("continue to the abandonment point (increment auto)", 0),
    ("one more rollout per round (increment 1)", 1),
)
GROUPS, STEPS, REPS = 64, 50, 4
COLORS = ("#0173b2", "#de8f05")
PANELS = (  # first two panels: (exact, dashed), (simulated, dots), its 95 % half-width, marker
    ("exact_cost_per_effective_group", "sim_cost_per_effective_group", "sim_cost_ci95", "o"),
    ("exact_rounds_per_prompt", "sim_rounds_per_step", "sim_rounds_ci95", "o-"),
)
SIM = Cells(figure=7, k=K, groups=GROUPS, steps=STEPS, replicates=REPS)


def data(seed):
    law = parse_law(LAW)
    tau, _, _ = best_tau(law, K, PRIOR)
    plan = threshold_plan(K, tau, np.inf, *PRIOR)
    rows = []
    for i, (label, inc) in enumerate(SCHEDULES):
        for j, probe in enumerate(PROBES):
            ex = plan_law(law, K, plan, probe, inc)
            _, sim = SIM.run(
                "sara", law, seed, (i, j), tau_low=tau, prior=PRIOR, probe=probe, increment=inc
            )
            cm, ch = sim["cost_per_effective_group"], Z95 * sim["cost_per_effective_group_se"]
            rm, rh = sim["rounds_per_step"], Z95 * sim["rounds_per_step_se"]
            rows.append(
                {
                    "schedule": label,
                    "increment": inc,
                    "probe": probe,
                    "tau_low": tau,
                    "plan": " ".join(map(str, plan)),
                    "exact_rounds_per_prompt": ex["rounds_per_prompt"],
                    "exact_rollouts_per_prompt": ex["rollouts_per_prompt"],
                    "exact_cost_per_effective_group": ex["cost_per_effective_group"],
                    "sim_rounds_per_step": rm,
                    "sim_rounds_ci95": rh,
                    "sim_cost_per_effective_group": cm,
                    "sim_cost_ci95": ch,
                }
            )
    return pd.DataFrame(rows).assign(groups_per_step=GROUPS, steps=STEPS, replicates=REPS)


def build(seed=0, history=None):
    df = data(seed)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    for (label, _), color in zip(SCHEDULES, COLORS):
        s = df[df["schedule"] == label]
        for ax, (exact, sim, ci, fmt) in zip(axes, PANELS):
            ax.plot(s["probe"], s[exact], color=color, lw=1.5, ls="--")
            ax.errorbar(
                s["probe"], s[sim], yerr=s[ci], fmt=fmt, color=color, capsize=3, label=label
            )
        ax = axes[2]
        ax.plot(
            s["exact_rounds_per_prompt"],
            s["exact_cost_per_effective_group"],
            "o-",
            color=color,
            label=label,
        )
        for r in s.itertuples():
            ax.annotate(
                f"p={r.probe}",
                (r.exact_rounds_per_prompt, r.exact_cost_per_effective_group),
                textcoords="offset points",
                xytext=(5, 3),
                fontsize=8,
                color=color,
            )
    for ax in axes[:2]:
        ax.set_xscale("log", base=2)
        ax.set_xticks(PROBES, [str(p) for p in PROBES])
        ax.set_xlabel("probe size: first-round rollouts per fresh prompt [rollouts]")
    axes[0].set_ylabel("rollouts per effective group [rollouts]")
    axes[0].set_title("cost (dashed: exact; dots: simulated)")
    axes[1].set_ylabel("rounds [rounds]")
    axes[1].set_title("rounds per step (dots) / per prompt (dashed, exact)")
    axes[2].set_xlabel("expected rounds per prompt (exact) [rounds]")
    axes[2].set_ylabel("rollouts per effective group [rollouts]")
    axes[2].set_title("the trade-off (exact), p = probe size")
    axes[0].legend(loc="upper left", fontsize=8)
    plan = df["plan"].iloc[0]
    fig.suptitle(f"Probe size: rounds vs rollouts (law {LAW}, k = {K}, prior = law, plan {plan})")
    fig.tight_layout()
    caption = (
        f"The threshold rule with prior = law {LAW} at its exact best tau_low "
        f"({df['tau_low'].iloc[0]:.3f}, plan [d0, commit/abandon fail, commit/abandon pass] = "
        f"[{plan}]), k = {K}, with a probe of p rollouts for every fresh prompt and later rounds "
        "that either go straight to the abandonment point or add one rollout. A probe larger "
        "than the abandonment point overshoots (more rollouts per effective group); a smaller "
        "one needs more synchronisation rounds (right: the exact trade-off). Dots: Numba "
        f"simulator, fixed-yield steps of {GROUPS} effective groups ({REPS} replicates x "
        f"{STEPS} steps; 95 % CI over blocks of steps); dashed: exact per-prompt cost and "
        "expected rounds per prompt."
    )
    return Figure(fig, df, caption)
