"""Every theory / simulation figure of the SARA toolkit by one command.

    python -m paper_figs --out DIR [--only NAME[,NAME...]] [--seed S] [--history deepscaler|PATH]
                         [--learning PATH] [--claims DIR] [--overwrite]
    sara-sim figures --out DIR [--only NAME] [--seed S] [--overwrite]

Each figure is one small module ``figN_*.py`` with ``build(seed, history) -> Figure``; this file
is the registry.  Every figure is written as DIR/NAME.png (caption in the PNG metadata),
DIR/NAME.csv (the data behind it) and DIR/NAME.txt (the caption), plus DIR/NAME_T.csv / .md for
each table T it prints; files of the asked figures already in DIR are replaced only with
--overwrite (without it the command refuses, naming them, before drawing).  Same seed ->
identical CSVs.  fig10 draws committed real-run results
(benchmarks/results/real_learning.csv, or --learning PATH) and fig13 the training claims
(benchmarks/results/claims/, or --claims DIR); neither trains anything, and without its files
each is skipped with the reason printed.
"""

import importlib
import inspect
import os
import tempfile
import time
from pathlib import Path

from sara_sim.core.difficulty import load_history
from sara_sim.core.errors import ParameterError, check_seed
from sara_sim.core.files import check_input, path_problem

from ._common import HISTORY, NoData, history_path, learning_path, markdown, save, setup_style

FIGURES = (
    "fig1_p_eff",
    "fig2_abandon_reliability",
    "fig3_rollout_savings",
    "fig4_fixed_budget_yield",
    "fig5_gradient_link",
    "fig6_optimal_vs_tau",
    "fig7_rounds_vs_rollouts",
    "fig8_replay_strategies",
    "fig9_informed_priors",
    "fig10_real_learning",
    "fig11_wallclock",
    "fig12_selection_drift",
    "fig13_claims",
)
__all__ = ["FIGURES", "HISTORY", "check_out", "check_overwrite", "existing", "run", "select"]


def select(only=None):
    """Resolve --only: full names, 'figN' prefixes or bare numbers, comma-separated."""
    if not only:
        return list(FIGURES)
    items = [
        x.strip() for part in ([only] if isinstance(only, str) else only) for x in part.split(",")
    ]
    chosen = []
    for item in filter(None, items):
        key = f"fig{item}" if item.isdigit() else item
        match = [f for f in FIGURES if f == key or f.startswith(key + "_")]
        if len(match) != 1:
            raise ParameterError(
                "--only", f"unknown figure {item!r}; choose from {', '.join(FIGURES)}"
            )
        if match[0] not in chosen:
            chosen.append(match[0])
    return chosen


def check_out(out, param: str = "--out") -> Path:
    """The output folder exists (created if need be) and takes files — checked before any figure
    is drawn, so a bad --out is one line, not a traceback after minutes of work."""
    out = Path(out)
    if os.path.lexists(out) and not out.is_dir():  # a file, FIFO, device, dangling link
        raise ParameterError(param, path_problem(out, "folder", folder=True))
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ParameterError(
            param, f"cannot write into {out}: {exc.strerror or exc.__class__.__name__}"
        ) from None
    if not os.access(out, os.W_OK):
        raise ParameterError(param, f"cannot write into {out}: permission denied")
    return out


def existing(out, names) -> list[str]:
    """The files of figures `names` already in `out` (NAME.png / .csv / .txt, NAME_T.csv / .md)."""
    out = Path(out)
    if not out.is_dir():
        return []
    return sorted(
        p.name for p in out.iterdir() if any(p.name.startswith((f"{n}.", f"{n}_")) for n in names)
    )


def check_overwrite(out, names, overwrite: bool, param: str = "--out") -> None:
    """Nothing already in `out` is replaced without --overwrite: one line saying what is there."""
    there = [] if overwrite else existing(out, names)
    if there:
        more = ", ..." if len(there) > 3 else ""
        raise ParameterError(
            param,
            f"{out} already holds {len(there)} file(s) of these figures ({', '.join(there[:3])}"
            f"{more}); pass --overwrite to replace them, or choose another --out",
        )


def run(
    out, only=None, seed=0, history=None, learning=None, claims=None, verbose=True, overwrite=False
):
    """Build and save the selected figures into `out`; returns {name: seconds} of those drawn.
    Every input is checked first (the history file by the one history reader, its rules
    included), then the folder: a figure's files already there need `overwrite`."""
    names = select(only)
    check_seed(seed, "--seed")  # the range of every seed flag (sara_sim.core.errors)
    if history is not None:
        load_history(history_path(history), "--history")  # fail before any figure is drawn
    if learning is not None:
        learning_path(learning)
    if claims is not None:
        check_input(claims, "--claims", "claims folder", folder=True)
    check_overwrite(out, names, overwrite)
    out = check_out(out)
    setup_style()
    inputs = {"seed": seed, "history": history, "learning": learning, "claims": claims}
    timings, t_all = {}, time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        module = importlib.import_module(f"{__name__}.{name}")
        wants = inspect.signature(module.build).parameters  # results-file figures take theirs
        try:
            result = module.build(**{k: v for k, v in inputs.items() if k in wants})
        except NoData as exc:
            if verbose:
                print(f"{name:<28} skipped: {exc}", flush=True)
            continue
        save(result, out, name, seed)
        timings[name] = time.perf_counter() - t0
        if verbose:
            print(f"{name:<28} {timings[name]:6.2f} s  -> {out / name}.png", flush=True)
            for suffix, table in result.tables.items():
                print(f"\n{name}_{suffix}.md\n{markdown(table)}\n", flush=True)
    total = time.perf_counter() - t_all
    if verbose:
        print(f"{'total':<28} {total:6.2f} s  ({len(timings)} figures in {out})", flush=True)
    timings["total"] = total
    return timings
