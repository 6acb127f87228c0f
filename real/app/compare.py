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
from real.base.config import Spec, split_spec
from real.io.enginelog import engine_log
from real.io.runfolder import RUN_FILES, has_checkpoint, holds_run
from real.io.runlog import SUMMARY_KEYS as COLUMNS  # one list: printed by validate, tabled here
from real.io.runlog import RunLock, atomic_write, read_metrics
from real.models.resolve import resolve_model
from real.rollout import collect as rollout  # the module: a test may swap make_engine
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import atomic_save, dumps_json
from sara_sim.sim.baselines import (
    CHAIN,
    DS_3N,
    DS_ROUNDS,
    DS_STREAM,
    decomposition,
    decomposition_text,
    ratio,
)


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
        try:
            checked[a] = check_config(_run_cfg(cfg, a, resume))
        except ParameterError as e:  # a setting the entry's own suffix made: name the entry
            entry = split_spec(a)
            if {"--schedule": entry.schedule, "--priced-in": entry.priced_in}.get(e.parameter):
                raise ParameterError("--strategies", f"{a}: {_message(e)}") from None
            raise
    return checked


def _message(e: ParameterError) -> str:
    return str(e)[len(e.parameter) + 2 :]


def _run_cfg(cfg, spec: str, resume: bool):
    """The run of one entry of the list, in its own folder (real.base.config.split_spec:
    NAME+no-carry: carry off; +stream / +rounds: its schedule; +tokens: priced in tokens)."""
    entry = _role(spec, cfg.knobs)
    knobs = replace(
        cfg.knobs, carry=entry.carry, schedule=entry.schedule, priced_in=entry.priced_in
    )
    out = Path(cfg.out) / spec
    return replace(
        cfg, strategy=entry.name, knobs=knobs, out=str(out), resume=resume, overwrite=not resume
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
    table = against_references(table, strategies, cfg.knobs)
    curves = pd.DataFrame(curves)
    atomic_write(out / "compare.csv", table.to_csv(index=False))  # undefined: an empty cell
    atomic_write(out / "compare_eval.csv", curves.to_csv(index=False))
    record = {"table": table.to_dict("records"), "eval": curves.to_dict("records")}
    record |= {k: table.attrs[k] for k in ("references", "chain", "decomposition")}
    atomic_write(out / "compare.json", dumps_json(record))  # undefined: null
    return table, curves


def vs_ds(table, strategies):
    """Cost per effective group relative to the entry named "ds" (DS by rounds unless the compare
    streams); undefined (nan) where either run had no effective group (its cost per effective
    group is undefined).  The references a saving is told against: ``against_references``."""
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


REF_TAGS = ((DS_STREAM, "ds_stream"), (DS_ROUNDS, "ds_rounds"), (DS_3N, "ds_verl3n"))
UNITS = ("rollouts", "tokens")


def _role(spec: str, knobs) -> Spec:
    """An entry as it runs: its strategy, carry, schedule and pricing (its suffixes, else the
    compare's flags) — what its run's config (``_run_cfg``) and the references read."""
    e = split_spec(spec)
    return Spec(
        e.name,
        e.carry and knobs.carry,
        e.schedule or knobs.schedule,
        e.priced_in or knobs.priced_in,
    )


def against_references(table, strategies, knobs):
    """Each entry against DS streamed (the entry ds run with schedule stream: every group it
    samples is used) and DS by rounds (ds by rounds; verl's 3N: ds-verl3n), as the simulator
    tells them (``sara_sim.sim.baselines``): columns ROLL/TOK_vs_ds_stream, _vs_ds_rounds,
    _vs_ds_verl3n where that entry ran; `table.attrs`: the references (entry names), the entries
    the chain DS by rounds -> DS streamed -> sara -> sara-auto -> sara-history took (SARA's
    streamed ones first, since they follow DS streamed; in tokens the ones priced in tokens
    first) and the decomposition of the saving along it, per unit."""
    roles = {a: _role(a, knobs) for a in strategies}
    refs = {}
    for a, r in roles.items():
        if r.name == "ds":
            refs.setdefault(DS_STREAM if r.schedule == "stream" else DS_ROUNDS, a)
        elif r.name == "ds-verl3n" and r.schedule == "rounds":
            refs.setdefault(DS_3N, a)
    cost = {}
    for unit in UNITS:
        col = f"{unit}_per_effective_group"
        values = _floats(table[col])
        cost[unit] = dict(zip(table["strategy"], values, strict=True))
        for ref, tag in REF_TAGS:
            if ref in refs:
                base = cost[unit][refs[ref]]
                table[f"{unit}_vs_{tag}"] = [ratio(v, base) for v in values]
    chain, parts = {}, {}
    for unit in UNITS:
        picked = {ref: refs[ref] for ref in (DS_ROUNDS, DS_STREAM) if ref in refs}
        for name in CHAIN[2:]:
            mine = [a for a, r in roles.items() if r.name == name and r.carry]
            if mine:  # streamed first; then priced in this unit
                want = "tokens" if unit == "tokens" else "rollouts"
                picked[name] = min(
                    mine, key=lambda a: (roles[a].schedule != "stream", roles[a].priced_in != want)
                )
        chain[unit] = picked
        parts[unit] = decomposition({n: cost[unit][a] for n, a in picked.items()})
    table.attrs.update(references=refs, chain=chain, decomposition=parts)
    return table


def _floats(column) -> list:
    """A column's values as floats, None where undefined."""
    import math

    out = []
    for v in column:
        v = None if v is None else float(v)
        out.append(None if v is None or not math.isfinite(v) else v)
    return out


def reference_text(table) -> str:
    """The block under the compare table: each entry against DS streamed and DS by rounds, and
    where the saving over DS by rounds comes from; without a DS streamed run, a line saying how
    to get the reference."""
    refs = table.attrs.get("references") or {}
    if not refs:
        return ""
    lines = [""]
    if DS_STREAM not in refs:
        lines.append(
            "(no DS streamed run: add ds+stream to --strategies for the reference a "
            "saving is told against)"
        )
    heads = {DS_STREAM: "DSs", DS_ROUNDS: "DSr", DS_3N: "DS3N"}
    cols = [(tag, heads[ref]) for ref, tag in REF_TAGS if ref in refs]
    named = ", ".join(f"{heads[r]} = {refs[r]}" for r, _ in REF_TAGS if r in refs)
    lines.append(
        f"against DS streamed and DS by rounds ({named}): ratios of rollouts | tokens "
        "per effective group"
    )
    width = max(12, *(len(str(a)) for a in table["strategy"]))
    lines.append(
        f"{'strategy':<{width}}" + "".join(f"{'roll/' + h:>10}{'tok/' + h:>10}" for _, h in cols)
    )
    for _, r in table.iterrows():
        cells = [(r[f"rollouts_vs_{t}"], r[f"tokens_vs_{t}"]) for t, _ in cols]
        lines.append(
            f"{r['strategy']:<{width}}"
            + "".join(f"{_cell(a, 10, '.3f')}{_cell(b, 10, '.3f')}" for a, b in cells)
        )
    for unit in UNITS:
        parts = table.attrs["decomposition"][unit]
        if parts:
            used = ", ".join(
                f"{n} = {a}" for n, a in table.attrs["chain"][unit].items() if n in CHAIN[2:]
            )
            lines.append(
                f"where the saving over DS by rounds comes from (share of its {unit}; {used}):"
            )
            lines += decomposition_text(parts)
    return "\n".join(lines)


def _cell(v, width, spec):  # missing (e.g. no effective group): a dash, never "nan"
    return ("-" if v is None or v != v else format(v, spec)).rjust(width)


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
    """The compare table and the evaluation curve, at most 100 characters wide with names of up
    to 12 characters (longer entry names, e.g. sara-auto+stream+tokens, widen their column: a
    name is never cut)."""
    cols = [c for c in SHOWN if c[0] in table.columns]
    width = max(12, *(len(str(a)) for a in table["strategy"]))
    lines = [
        "strategy comparison (same model start, seed and effective groups per step)",
        "roll/eff, tok/eff: rollouts, completion tokens per effective group; vs ds: ratio to the "
        "ds entry",
        f"{'strategy':<{width}}" + "".join(" " + h.rjust(w) for _, h, w, _ in cols),
    ]
    for _, r in table.iterrows():
        cells = "".join(" " + _cell(r[c], w, f) for c, _, w, f in cols)
        lines.append(f"{r['strategy']:<{width}}{cells}")
    if reference_text(table):
        lines.append(reference_text(table))
    lines += ["", "held-out pass@1 (cumulative rollouts) after N optimizer steps; 0 = start model"]
    names = list(curves["strategy"].unique())
    cell = {a: max(16, len(a)) for a in names}
    lines.append(f"{'steps done':<12}" + "".join(f" {a:>{cell[a]}}" for a in names))
    for n in sorted(curves["steps_done"].unique()):
        row = f"{int(n):<12d}"
        for a in names:
            p = curves[(curves.strategy == a) & (curves.steps_done == n)]
            acc, roll = (p.eval_accuracy.iloc[0], int(p.cum_rollouts.iloc[0])) if len(p) else (0, 0)
            text = f"{acc:>6.3f} ({roll:>7d})" if len(p) else "-"
            row += f" {text:>{cell[a]}}"
        lines.append(row)
    return "\n".join(lines)
