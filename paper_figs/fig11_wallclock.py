"""Figure 11 — wall time per effective group on the continuous-batching engine model, round by
round and streamed (no barrier), and the engine's occupancy over one step (round barriers leave
slots idle; streaming keeps them busy)."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sara_sim.core.difficulty import parse_law
from sara_sim.sim.wallclock import PRESETS, lognormal_lengths
from sara_sim.sim.wallclock_run import Setup, ratios_to_ds, run_strategy

from ._common import Figure, history_spec

KS = (4, 6, 8)  # the histories record 8 outcomes per visit: k <= 8
STRATEGIES = ("uniform", "ds", "sara", "sara-auto", "sara-history")
GROUPS, STEPS, PRESET = 32, 12, "gpu"
# the preset's costs with 256 slots: 32 groups x k = 8 fill the engine at a round's start (the
# preset's 1024 would need 4x the rollouts, and 4x this figure's time)
SLOTS = 256
LEN_PASS, LEN_FAIL, LEN_CV = 2000.0, 3500.0, 0.5
TRACED = ("ds", "sara")  # occupancy over one step, at k = 8
STREAMED = ("ds", "sara", "sara-auto", "sara-history")  # schedule="stream" (sim/stream.py)


def data(seed, history=None):
    law = parse_law(history_spec(history))
    engine = PRESETS[PRESET].engine._replace(max_num_seqs=SLOTS)
    setup = Setup(engine, lognormal_lengths(LEN_PASS, LEN_FAIL, LEN_CV))
    rows, traces = [], []
    for schedule, names in (("rounds", STRATEGIES), ("stream", STREAMED)):
        for k in KS:
            kw = {"k": k, "groups": GROUPS, "steps": STEPS, "seed": seed, "schedule": schedule}
            res = ratios_to_ds([run_strategy(law, s, setup, **kw) for s in names])
            for r in res:
                rows.append({"k": k, **{key: v for key, v in r.items() if np.isscalar(v)}})
                if k == 8 and r["strategy"] in TRACED:
                    traces.append(_trace(r))
    return pd.DataFrame(rows), pd.concat(traces, ignore_index=True)


def _trace(r):
    seg = r["trace"]
    return pd.DataFrame(
        {
            "strategy": f"{r['strategy']} ({r['schedule']})",
            "t0_s": seg[:, 0],
            "t1_s": seg[:, 1],
            "running": seg[:, 2],
            "step": r["trace_step"],
        }
    )


def build(seed=0, history=None):
    df, trace = data(seed, history)
    cap = SLOTS
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(13, 4.4))
    for schedule, style in (("rounds", "-"), ("stream", "--")):
        for j, name in enumerate(STRATEGIES):
            part = df[(df["strategy"] == name) & (df["schedule"] == schedule)]
            if len(part):
                ax0.plot(
                    part["k"],
                    part["wall_per_effective_group_s"],
                    style,
                    marker="o",
                    color=f"C{j}",
                    label=f"{name} ({schedule})",
                )
    ax0.set_xscale("log", base=2)
    ax0.set_xticks(KS, [str(k) for k in KS])
    ax0.set_xlabel("group size k")
    ax0.set_ylabel("wall time per effective group [s]")
    ax0.set_title("rounds (solid) vs streamed (dashed) on the engine model")
    ax0.legend(fontsize=7, ncol=2)
    for name in trace["strategy"].unique():
        seg = trace[trace["strategy"] == name]
        xs = np.r_[seg["t0_s"].to_numpy(), seg["t1_s"].to_numpy()[-1:]]
        run = seg["running"].to_numpy()
        # rounds: the engine idles after the step's last round; streamed: it runs on
        ys = np.r_[run, run[-1] if name.endswith("(stream)") else 0.0] / cap
        ax1.step(xs, ys, where="post", label=name)
    ax1.set_xlabel("time since the step's start [s]")
    ax1.set_ylabel(f"occupancy: running / max_num_seqs ({cap}) [fraction]")
    ax1.set_title(f"one step at k = 8 (step {int(trace['step'].iloc[0])})")
    ax1.set_ylim(0, 1.05)
    ax1.legend(fontsize=8)
    fig.tight_layout()
    e = PRESETS[PRESET].engine
    caption = (
        "The strategies' collectors (make_collector, default knobs) drive the continuous-batching "
        "engine model of sara_sim.sim.wallclock, round by round: a round's rollouts are submitted "
        "together once the previous round's last rollout has finished (decision time 0). Engine: "
        f"the '{PRESET}' preset (iteration {e.a * 1e3:.2f} ms + {e.b * 1e6:.1f} us per running "
        f"sequence + {e.c * 1e3:.2f} ms per admitted prompt, a roofline "
        "estimate from public H100 and model-card figures, documented in wallclock.py) with "
        f"{SLOTS} slots, which a round of {GROUPS} prompts x 8 rollouts fills. Outcomes "
        "replay the DeepScaleR histories from epoch 0; lengths are lognormal with means "
        f"{LEN_PASS:g} (pass) and {LEN_FAIL:g} (fail) tokens, cv {LEN_CV:g}. {GROUPS} effective "
        f"groups per step, the first {STEPS} steps, one seed: sara-history has seen few prompts "
        "twice this early. Streamed (sara_sim.sim.stream, dashed): no round barrier — each "
        "prompt runs its own schedule as its rollouts return, fresh prompts fill every free slot "
        "and what is in flight at a step's end runs on into the next step; DS streamed keeps "
        "admitting prompts the same way. Left: wall time per effective group vs k. Right: the "
        "engine's occupancy over one step at k = 8; the drops are round barriers (slots wait "
        "for the round's longest rollout)."
    )
    return Figure(fig, df, caption, tables={"ratios": _ratios(df)})


def _ratios(df):
    cols = ["k", "schedule", "strategy", "wall_ratio_vs_ds", "token_ratio_vs_ds", "rounds_per_step"]
    return df[cols].round(4)
