"""The committed results of the training-claims run, loaded into one table.

Each claim file is a copy of `benchmarks/real_learning.py`'s OUT/learning.csv (NAME.csv) with its
OUT/learning.meta.json (NAME.meta.json) in benchmarks/results/claims/. The table holds every row
of every file found, with four columns added: `source` (the file's NAME), `estimator` and `task`
(from the meta file: the CSV has no such column) and `setting` (their label, e.g. "GRPO",
"RLOO", "GRPO, reasoning"). Files of one setting are pooled (k8 + k8_more: the same run, more
seeds), after checking that they were made with the same data settings and share no
(strategy, k, seed) — so the statistics of `claims_stats` run on a setting's rows as on one
benchmark's table.

A file that is absent, or a CSV without its meta file, is reported by name in `missing`, never an
exception: on a fresh clone only some claim files may exist, and every figure and table shows
what exists and says what does not."""

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sara_sim.core.errors import ParameterError

from ._common import REPO

CLAIMS = REPO / "benchmarks" / "results" / "claims"
# The claim run's files (benchmarks/investigations/claim_run/README.md): k8 and k8_more are GRPO at
# k 8 (seeds 0-5 with six strategies, 6-11 with three), k8_sara_mopps sara-mopps on seeds 0-11, k16
# and k16_more GRPO at k 16 (seeds 0-5, 6-11), rloo / reinforcepp the other estimators, reasoning
# and reasoning_long (+ _more: seeds 0-3, 4-7) claim 2 (the scratchpad model; the model whose
# failures run long within a prompt).
NAMES = ("k8", "k8_more", "k8_sara_mopps", "k16", "k16_more", "rloo", "reinforcepp", "reasoning")
NAMES += ("reasoning_long", "reasoning_long_more")
ESTIMATOR_LABELS = {"grpo": "GRPO", "dr-grpo": "Dr. GRPO", "rloo": "RLOO"}
ESTIMATOR_LABELS["reinforce++"] = "REINFORCE++"
# Settings that say how a benchmark ran or where, not what it computed: may differ between
# pooled files (the k and seed are the rows' own columns).
NOT_DATA = ("k", "seed", "out", "strategy", "progress", "resume", "overwrite", "force")
NOT_DATA += ("engine_url",)


@dataclass
class ClaimData:
    """What `load_claims` found: the pooled rows, the files behind each setting and what is
    missing (file name -> why)."""

    frame: pd.DataFrame
    sources: dict = field(default_factory=dict)  # setting -> [NAME, ...] pooled into it
    missing: dict = field(default_factory=dict)  # NAME -> reason

    def setting(self, label: str) -> pd.DataFrame:
        """The rows of one setting (empty if none of its files is here)."""
        return self.frame[self.frame["setting"] == label] if len(self.frame) else self.frame

    def files(self, label: str) -> str:
        """The files a setting's numbers come from, for a table or a caption."""
        return ", ".join(f"{n}.csv" for n in self.sources.get(label, [])) or "-"

    def missing_text(self) -> str:
        return "; ".join(f"{n}: {why}" for n, why in self.missing.items()) or "none"


def setting_label(estimator: str, task: str) -> str:
    """The label of an (estimator, task) setting.

    >>> setting_label("rloo", "arithmetic"), setting_label("grpo", "reasoning")
    ('RLOO', 'GRPO, reasoning')
    """
    label = ESTIMATOR_LABELS.get(estimator, estimator)
    return label if task == "arithmetic" else f"{label}, {task}"


def load_claims(folder=None, names=NAMES) -> ClaimData:
    """Every claim file of `names` found in `folder` (default benchmarks/results/claims), pooled
    by setting; absent files are listed in `.missing`. Pooling files whose data settings differ,
    or that repeat an (strategy, k, seed), is a ParameterError naming both files."""
    folder = Path(folder) if folder is not None else CLAIMS
    parts, metas, missing = [], {}, {}
    for name in names:
        csv, meta = folder / f"{name}.csv", folder / f"{name}.meta.json"
        if not csv.is_file():
            missing[name] = f"{csv.name} not found"
            continue
        if not meta.is_file():  # without it the estimator and task of the rows are unknown
            missing[name] = f"{meta.name} not found (its estimator and task are unknown)"
            continue
        metas[name] = json.loads(meta.read_text())
        part = pd.read_csv(csv)
        estimator, task = _args(metas[name], meta.name)
        setting = setting_label(estimator, task)
        parts.append(part.assign(source=name, estimator=estimator, task=task, setting=setting))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    sources = {}
    for part in parts:
        sources.setdefault(part["setting"].iloc[0], []).append(part["source"].iloc[0])
    for setting, pooled in sources.items():
        _check_pool(frame[frame["setting"] == setting], pooled, metas)
    return ClaimData(frame, sources, missing)


def _args(meta: dict, where: str) -> tuple[str, str]:
    args = meta.get("args", {})
    if "estimator" not in args or "task" not in args:
        raise ParameterError("--claims", f"{where} names no estimator or task in its args")
    return args["estimator"], args["task"]


def _flat(d: dict) -> dict:
    out = {}
    for key, v in d.items():
        out.update(_flat(v) if isinstance(v, dict) else {key: v})
    return out


def _check_pool(rows: pd.DataFrame, pooled: list, metas: dict) -> None:
    """The files pooled into one setting ran with the same data settings and on disjoint runs."""
    first = _flat(metas[pooled[0]]["config"])
    for name in pooled[1:]:
        other = _flat(metas[name]["config"])
        # A setting only one meta names was added to the code between the files (carry, schedule,
        # overprovision): the older file ran without it, i.e. as its default does.
        for key in sorted(set(first) & set(other)):
            if key not in NOT_DATA and first.get(key) != other.get(key):
                raise ParameterError(
                    "--claims",
                    f"{name}.csv and {pooled[0]}.csv cannot be pooled: {key} is "
                    f"{other.get(key)!r} there, {first.get(key)!r} here",
                )
    runs = rows[rows["step"] == 0][["strategy", "k", "seed", "source"]]
    twice = runs[runs.duplicated(["strategy", "k", "seed"], keep=False)]
    if len(twice):
        r = twice.iloc[0]
        files = " and ".join(f"{n}.csv" for n in dict.fromkeys(twice["source"]))
        raise ParameterError(
            "--claims", f"{files} both hold {r.strategy} k={r.k} seed={r.seed}: pool one of them"
        )
