"""Several allocators, one start: same model, seed, task and effective groups per step.

Runs are sequential and share one engine (building a vLLM engine costs 5-25 s on CPU); each run
first pushes the start weights into it, so every allocator begins from the same policy and, with
per-rollout seeds, sees the same samples until their choices diverge."""

import json
from dataclasses import replace
from pathlib import Path

from real import _env  # noqa: F401

COLUMNS = [
    "allocator",
    "steps",
    "rollouts",
    "tokens",
    "effective_groups",
    "rollouts_per_effective_group",
    "tokens_per_effective_group",
    "rounds_median",
    "effective_fraction",
    "abandoned",
    "eval_initial",
    "eval_final",
    "alloc_share",
    "wall_s",
]


def run_compare(cfg, allocators: list[str], engine=None):
    """Train one run per allocator under cfg.out/<allocator>; returns (table, curves) frames."""
    import pandas as pd

    from real.checks import check_config, resolve_model
    from real.train import read_metrics, train

    out = Path(cfg.out)
    for a in allocators:  # all arguments checked before the first (long) run starts
        check_config(replace(cfg, allocator=a, out=str(out / a), overwrite=True))
    model_dir = resolve_model(cfg.model, progress=cfg.progress)
    if engine is None:
        from real.train import make_engine

        engine = make_engine(cfg, model_dir)
    rows, curves = [], []
    for a in allocators:
        run_cfg = replace(
            cfg, allocator=a, out=str(out / a), model=str(model_dir), overwrite=not cfg.resume
        )
        s = train(run_cfg, engine=engine)
        rows.append({c: s.get(c) for c in COLUMNS})
        curves.append(
            {
                "allocator": a,
                "cum_rollouts": 0,
                "cum_tokens": 0,
                "step": -1,
                "eval_accuracy": s["eval_initial"],
            }
        )
        for r in read_metrics(out / a / "metrics.jsonl"):
            if "eval_accuracy" in r:
                curves.append(
                    {
                        "allocator": a,
                        "cum_rollouts": r["cum_rollouts"],
                        "cum_tokens": r["cum_tokens"],
                        "step": r["step"],
                        "eval_accuracy": r["eval_accuracy"],
                    }
                )
    table = pd.DataFrame(rows, columns=COLUMNS)
    if "ds" in allocators:  # the method's headline: cost per effective group relative to DS
        ref = table.set_index("allocator").loc["ds"]
        for c in ("rollouts_per_effective_group", "tokens_per_effective_group"):
            table[c.replace("_per_effective_group", "") + "_vs_ds"] = table[c] / ref[c]
    curves = pd.DataFrame(curves)
    table.to_csv(out / "compare.csv", index=False)
    curves.to_csv(out / "compare_eval.csv", index=False)
    (out / "compare.json").write_text(
        json.dumps({"table": table.to_dict("records"), "eval": curves.to_dict("records")}, indent=1)
    )
    return table, curves


def step_frame(out, allocators):
    import pandas as pd

    from real.train import read_metrics

    return pd.DataFrame(
        [r for a in allocators for r in read_metrics(Path(out) / a / "metrics.jsonl")]
    )


def plot_compare(out, table, curves, allocators) -> list[Path]:
    """Seaborn figures next to the runs: eval vs rollouts, cost per effective group, rounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    out = Path(out)
    sns.set_theme(style="whitegrid", context="paper")
    paths = []
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    sns.lineplot(
        data=curves,
        x="cum_rollouts",
        y="eval_accuracy",
        hue="allocator",
        hue_order=allocators,
        marker="o",
        ax=ax,
    )
    ax.set(
        xlabel="cumulative rollouts",
        ylabel="held-out pass@1",
        title="evaluation accuracy vs rollouts spent",
    )
    paths.append(out / "compare_eval_vs_rollouts.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=130)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, col, label in (
        (axes[0], "rollouts_per_effective_group", "rollouts"),
        (axes[1], "tokens_per_effective_group", "tokens"),
    ):
        sns.barplot(data=table, x="allocator", y=col, order=allocators, ax=ax)
        ax.set(xlabel="", ylabel=f"{label} per effective group")
    fig.tight_layout()
    paths.append(out / "compare_cost.png")
    fig.savefig(paths[-1], dpi=130)
    plt.close(fig)

    steps = step_frame(out, allocators)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sns.countplot(data=steps, x="rounds", hue="allocator", hue_order=allocators, ax=ax)
    ax.set(xlabel="rounds per step", ylabel="steps")
    fig.tight_layout()
    paths.append(out / "compare_rounds.png")
    fig.savefig(paths[-1], dpi=130)
    plt.close(fig)
    return paths


def format_table(table, curves) -> str:
    import pandas as pd

    show = table.copy()
    lines = [
        "allocator comparison (same model start, seed and effective groups per step)",
        show.to_string(index=False, float_format=lambda x: f"{x:.3g}"),
        "",
        "held-out pass@1 vs cumulative rollouts",
    ]
    wide = curves.pivot_table(index="step", columns="allocator", values="eval_accuracy")
    roll = curves.pivot_table(index="step", columns="allocator", values="cum_rollouts")
    joined = pd.concat({"acc": wide, "rollouts": roll}, axis=1)
    lines.append(joined.to_string(float_format=lambda x: f"{x:.3g}"))
    return "\n".join(lines)
