"""Shared plumbing for the figure modules: style, paths, seeds, saving PNG + CSV + caption."""

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sara_sim.core.difficulty import builtin_history, history_file
from sara_sim.core.files import check_input

REPO = Path(__file__).resolve().parents[1]
HISTORY = builtin_history("deepscaler")  # the DeepScaleR histories shipped in sara_sim/data
LEARNING = REPO / "benchmarks" / "results" / "real_learning.csv"  # benchmarks/real_learning.py
DPI = 130

# Colours and labels used across figures, so one law / strategy looks the same everywhere.
LAW_LABELS = {
    "beta:1,1": "uniform  Beta(1,1)",
    "beta:0.3,0.3": "polarised  Beta(0.3,0.3)",
    "beta:0.2,0.8": "hard-skewed  Beta(0.2,0.8)",
    "history": "DeepScaleR replay",
}
LAW_COLORS = {  # colorblind palette: blue, orange, green, purple
    LAW_LABELS["beta:1,1"]: "#0173b2",
    LAW_LABELS["beta:0.3,0.3"]: "#de8f05",
    LAW_LABELS["beta:0.2,0.8"]: "#029e73",
    LAW_LABELS["history"]: "#cc78bc",
}


@dataclass
class Figure:
    """What a figure module returns: the matplotlib figure, its data (tidy) and a caption."""

    fig: object
    data: pd.DataFrame
    caption: str
    notes: dict = field(default_factory=dict)  # extra key: value lines for the sidecar
    tables: dict = field(default_factory=dict)  # {suffix: DataFrame} -> NAME_suffix.csv / .md


class NoData(Exception):
    """A figure drawn from committed results whose file is absent: skipped, with this reason."""


def history_path(path=None) -> Path:
    """The outcome histories' file: the packaged DeepScaleR histories by default, else a
    built-in name (``deepscaler``) or a path, as ``history:`` specs take them."""
    return history_file("deepscaler" if path is None else path, "--history")


def learning_path(path=None) -> Path:
    """The learning-curve CSV; an explicit --learning must be a readable file, the default may
    be absent."""
    if path is None:
        return LEARNING
    return check_input(path, "--learning", "learning CSV")


def history_spec(path=None) -> str:
    return f"history:{history_path(path)}"


def setup_style():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind", font_scale=0.95)
    matplotlib.rcParams.update(
        {
            "figure.dpi": DPI,
            "savefig.dpi": DPI,
            "axes.titlesize": 11,
            "axes.labelsize": 10,
            "legend.fontsize": 8.5,
            "legend.title_fontsize": 9,
        }
    )


def wilson(successes, trials, z=1.96):
    """Wilson 95 % interval (lo, hi) for a binomial proportion."""
    s, n = np.asarray(successes, float), np.asarray(trials, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        den = 1 + z**2 / n
        mid = (p + z**2 / (2 * n)) / den
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / den
    return mid - half, mid + half


def save(result: Figure, out: Path, name: str, seed: int) -> list[Path]:
    """Write NAME.png (caption in its metadata), NAME.csv and NAME.txt (the caption), each
    atomically: a full disk leaves the old file or the new one, and is one line naming it."""
    import matplotlib.pyplot as plt

    from sara_sim.core.files import atomic_save, atomic_write, writing

    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    caption = " ".join(result.caption.split())
    png, csv, txt = (out / f"{name}.{ext}" for ext in ("png", "csv", "txt"))
    meta = {"Title": name, "Description": caption, "Source": f"python -m paper_figs --seed {seed}"}
    try:
        atomic_save(png, lambda tmp: result.fig.savefig(tmp, bbox_inches="tight", metadata=meta))
    finally:
        plt.close(result.fig)
    atomic_write(csv, result.data.to_csv(index=False, float_format="%.10g"))
    lines = [
        name,
        "",
        textwrap.fill(caption, 100, break_on_hyphens=False, break_long_words=False),
        "",
        f"seed: {seed}",
        f"data: {csv.name}",
    ]
    lines += [f"{key}: {val}" for key, val in result.notes.items()]
    atomic_write(txt, "\n".join(lines) + "\n")
    written = [png, csv, txt]
    for suffix, table in result.tables.items():
        path = out / f"{name}_{suffix}"
        atomic_write(path.with_suffix(".csv"), table.to_csv(index=False, float_format="%.10g"))
        atomic_write(path.with_suffix(".md"), markdown(table) + "\n")
        written += [path.with_suffix(".csv"), path.with_suffix(".md")]
    return written


def markdown(table: pd.DataFrame) -> str:
    return table.to_markdown(index=False, floatfmt=".4g")


def lines(ax, data, x, y, hue, **kwargs):
    """One seaborn line per `hue` value, a dot on every data point."""
    import seaborn as sns

    return sns.lineplot(data=data, x=x, y=y, hue=hue, marker="o", ax=ax, **kwargs)
