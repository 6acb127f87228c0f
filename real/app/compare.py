"""Several strategies, one start: same model, seed, task and effective groups per step.

Runs are sequential and share one engine (building a vLLM engine costs 5-25 s on CPU); each run
first pushes the start weights into it, so every strategy begins from the same policy and, with
per-rollout seeds, sees the same samples until their choices diverge."""

import json
import shutil
from dataclasses import asdict, replace
from pathlib import Path

from real.app.resume import check_run_folder
from real.app.run import check_config, check_spec, train
from real.base import env as _env  # noqa: F401
from real.base.config import split_spec
from real.io.enginelog import engine_log
from real.io.runfolder import RUN_FILES, has_checkpoint, holds_run
from real.io.runlog import SUMMARY_KEYS as COLUMNS  # one list: printed by validate, tabled here
from real.io.runlog import RunLock, atomic_write, read_metrics
from real.models.resolve import resolve_model
from real.rollout import collect as rollout  # the module: a test may swap make_engine
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import atomic_save, dumps_json


def check_compare(cfg, strategies: list[str]) -> dict:
    """All of a compare's arguments, before the first (long) run starts; returns each run's
    `real.app.run.check_config` result (its task and collector: built once, used by the run).

    The folder rule of `validate`, per strategy: a folder that holds a compare needs --resume
    (same strategy list; each run resumes from its checkpoint, a run that never wrote one starts
    fresh) or --overwrite (every run of the earlier compare, listed in compare_config.json, is
    started over or removed — never left stale beside the new table)."""
    if not strategies:
        raise ParameterError("--strategies", "give at least one strategy")
    for a in strategies:
        check_spec(a, "--strategies")  # a strategy, or NAME+no-carry
    if len(set(strategies)) != len(strategies):
        raise ParameterError("--strategies", f"lists a strategy twice: {','.join(strategies)}")
    out = Path(cfg.out)
    check_run_folder(replace(cfg, resume=False, overwrite=True))  # writable, not locked
    if cfg.resume and cfg.overwrite:
        raise ParameterError("--resume", "--resume and --overwrite exclude each other")
    before = _previous(out)
    if cfg.resume:
        if before is None:
            raise ParameterError("--resume", f"no compare in {out} to resume (drop --resume)")
        if before != list(strategies):
            raise ParameterError(
                "--strategies",
                f"the compare in {out} ran {','.join(before)}; resume it with the same list",
            )
    elif not cfg.overwrite:  # a compare whose runs never completed a step may start again
        used = [str(out)] if before is not None and any(holds_run(out / a) for a in before) else []
        used += [str(out / a) for a in strategies if holds_run(out / a)]
        if used:
            raise ParameterError(
                "--out", f"{used[0]} already holds a run; pass --resume or --overwrite"
            )
    checked = {}
    for a in strategies:
        resume = cfg.resume and has_checkpoint(out / a, cfg.trainer)
        checked[a] = check_config(_run_cfg(cfg, a, resume))
    return checked


def _run_cfg(cfg, spec: str, resume: bool):
    """The run of one entry of the list, in its own folder (NAME+no-carry: NAME, carry off)."""
    name, carry = split_spec(spec)
    knobs = replace(cfg.knobs, carry=cfg.knobs.carry and carry)
    out = Path(cfg.out) / spec
    return replace(
        cfg, strategy=name, knobs=knobs, out=str(out), resume=resume, overwrite=not resume
    )


def _previous(out: Path) -> list[str] | None:
    f = out / "compare_config.json"
    if not f.is_file():
        return None
    try:
        return list(json.loads(f.read_text())["strategies"])
    except (ValueError, KeyError, TypeError):
        raise ParameterError("--out", f"{f} is not a compare record; remove it") from None


def run_compare(cfg, strategies: list[str], engine=None):
    """Train one run per strategy under cfg.out/<strategy>; returns (table, curves) frames."""
    checked = check_compare(cfg, strategies)
    with RunLock(cfg.out), engine_log(cfg.out):  # every run's engine noise: OUT/engine.log
        return _run_compare(cfg, strategies, engine, checked)


def _run_compare(cfg, strategies, engine, checked):
    import pandas as pd

    out = Path(cfg.out)
    if cfg.overwrite:  # start over: the earlier compare's runs and products go
        for a in _previous(out) or []:
            for f in (*RUN_FILES, "config.json"):
                (out / a / f).unlink(missing_ok=True)
            shutil.rmtree(out / a / "trl", ignore_errors=True)  # a --trainer trl run's own
        for f in out.glob("compare*"):
            if f.is_file():
                f.unlink()
    record = {"strategies": list(strategies), "config": {**asdict(cfg), "strategy": None}}
    atomic_write(out / "compare_config.json", json.dumps(record, indent=1).encode())
    model_dir = resolve_model(cfg.model, progress=cfg.progress)
    if engine is None:
        engine = rollout.make_engine(cfg, model_dir)
    rows, curves = [], []
    for a in strategies:
        resume = cfg.resume and has_checkpoint(out / a, cfg.trainer)
        run_cfg = replace(_run_cfg(cfg, a, resume), model=str(model_dir))
        s = train(run_cfg, engine=engine, checked=checked[a])
        rows.append({c: s.get(c) for c in COLUMNS} | {"strategy": a})  # the entry's name
        # the curve in optimizer steps done: 0 = the start model, before any training
        curves.append(_point(a, 0, 0, 0, s["eval_initial"]))
        for r in read_metrics(out / a / "metrics.jsonl"):
            if "eval_accuracy" in r:
                curves.append(
                    _point(a, r["step"] + 1, r["cum_rollouts"], r["cum_tokens"], r["eval_accuracy"])
                )
    table = vs_ds(pd.DataFrame(rows, columns=COLUMNS), strategies)
    curves = pd.DataFrame(curves)
    atomic_write(out / "compare.csv", table.to_csv(index=False))  # undefined: an empty cell
    atomic_write(out / "compare_eval.csv", curves.to_csv(index=False))
    record = {"table": table.to_dict("records"), "eval": curves.to_dict("records")}
    atomic_write(out / "compare.json", dumps_json(record))  # undefined: null
    return table, curves


def vs_ds(table, strategies):
    """The method's headline: cost per effective group relative to DS; undefined (nan) where
    either run had no effective group (its cost per effective group is undefined)."""
    import numpy as np
    import pandas as pd

    if "ds" not in strategies:
        return table
    for c in ("rollouts_per_effective_group", "tokens_per_effective_group"):
        v = pd.to_numeric(table[c], errors="coerce").astype(float)  # None -> nan
        ref = float(v[table["strategy"] == "ds"].iloc[0])
        ratio = v / ref if np.isfinite(ref) and ref > 0 else v * np.nan
        table[c.replace("_per_effective_group", "") + "_vs_ds"] = ratio
    return table


def step_frame(out, strategies):
    import pandas as pd

    return pd.DataFrame(
        [r for a in strategies for r in read_metrics(Path(out) / a / "metrics.jsonl")]
    )


def plot_compare(out, table, curves, strategies) -> list[Path]:
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
        hue="strategy",
        hue_order=strategies,
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
    atomic_save(paths[-1], lambda tmp: fig.savefig(tmp, dpi=130))
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, col, label in (
        (axes[0], "rollouts_per_effective_group", "rollouts"),
        (axes[1], "tokens_per_effective_group", "tokens"),
    ):
        sns.barplot(data=table, x="strategy", y=col, order=strategies, ax=ax)
        ax.set(xlabel="", ylabel=f"{label} per effective group")
    fig.tight_layout()
    paths.append(out / "compare_cost.png")
    atomic_save(paths[-1], lambda tmp: fig.savefig(tmp, dpi=130))
    plt.close(fig)

    steps = step_frame(out, strategies)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sns.countplot(data=steps, x="rounds", hue="strategy", hue_order=strategies, ax=ax)
    ax.set(xlabel="rounds per step", ylabel="steps")
    fig.tight_layout()
    paths.append(out / "compare_rounds.png")
    atomic_save(paths[-1], lambda tmp: fig.savefig(tmp, dpi=130))
    plt.close(fig)
    return paths


def _point(strategy, steps_done, rollouts, tokens, accuracy) -> dict:
    return {
        "strategy": strategy,
        "steps_done": steps_done,
        "cum_rollouts": rollouts,
        "cum_tokens": tokens,
        "eval_accuracy": accuracy,
    }


# (column, header, width, format) of the printed table: fits 100 columns, fixed-point numbers
SHOWN = (
    ("rollouts_per_effective_group", "roll/eff", 8, ".2f"),
    ("rollouts_vs_ds", "vs ds", 6, ".3f"),
    ("tokens_per_effective_group", "tok/eff", 8, ".1f"),
    ("tokens_vs_ds", "vs ds", 6, ".3f"),
    ("rounds_median", "rounds", 6, ".1f"),
    ("effective_fraction", "eff.frac", 8, ".3f"),
    ("abandoned", "abandoned", 9, ".0f"),
    ("eval_initial", "eval0", 6, ".3f"),
    ("eval_final", "eval", 6, ".3f"),
    ("alloc_share", "alloc", 6, ".2%"),
    ("wall_s", "wall s", 7, ".1f"),
)


def format_table(table, curves) -> str:
    """The compare table and the evaluation curve, at most 100 characters wide."""
    cols = [c for c in SHOWN if c[0] in table.columns]

    def cell(v, width, spec):  # missing (e.g. no effective group): a dash, never "nan"
        return ("-" if v is None or v != v else format(v, spec)).rjust(width)

    lines = [
        "strategy comparison (same model start, seed and effective groups per step)",
        "roll/eff, tok/eff: rollouts, completion tokens per effective group; vs ds: ratio to ds",
        f"{'strategy':<12}" + "".join(" " + h.rjust(w) for _, h, w, _ in cols),
    ]
    for _, r in table.iterrows():
        cells = "".join(" " + cell(r[c], w, f) for c, _, w, f in cols)
        lines.append(f"{r['strategy']:<12}{cells}")
    lines += ["", "held-out pass@1 (cumulative rollouts) after N optimizer steps; 0 = start model"]
    names = list(curves["strategy"].unique())
    lines.append(f"{'steps done':<12}" + "".join(f" {a[:16]:>16}" for a in names))
    for n in sorted(curves["steps_done"].unique()):
        row = f"{int(n):<12d}"
        for a in names:
            p = curves[(curves.strategy == a) & (curves.steps_done == n)]
            acc, roll = (p.eval_accuracy.iloc[0], int(p.cum_rollouts.iloc[0])) if len(p) else (0, 0)
            row += f" {acc:>6.3f} ({roll:>7d})" if len(p) else f" {'-':>16}"
        lines.append(row)
    return "\n".join(lines)
