"""Benchmark: the learning comparison of benchmarks/real_learning.py through TRL's GRPOTrainer.

    .venv/bin/python benchmarks/investigations/trl_learning/trl_learning.py \\
        [any real_learning.py flag] [--out DIR]

Every run is real_learning.py's run (same start model, task pool, held-out set, lr, effective
groups per step, evaluation, seeds; one `compare` per seed) with `trainer="trl"`: TRL's
GRPOTrainer optimises, our vLLM engine samples and real.trl.adapter allocates
(real/trl/run.py).  Defaults that differ from real_learning.py's: --strategies ds,sara --k 8
--seeds 0,1 (the issue's TRL comparison), --audit 0 (the TRL path has no off-budget audit) and
--out runs/trl_learning.  Writes what real_learning.py writes (DIR/learning.csv, the same
schema; DIR/learning.meta.json, with this script's command) plus DIR/learning_tables.md: the
tables of paper_figs.learning_stats (rollouts and tokens to 90 % of DS's gain as a ratio to DS,
95 % CI over seeds; accuracy at equal rollouts), also printed.  The committed
trl_learning.{csv,meta.json,md} beside this script are copies of those three files; draw them:

    .venv/bin/python -m paper_figs --only 10 \\
        --learning benchmarks/investigations/trl_learning/trl_learning.csv --out FIGS
"""

import argparse
import importlib.util
import json
import sys
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2]

DEFAULTS = ["--strategies", "ds,sara", "--k", "8", "--seeds", "0,1", "--audit", "0"]
DEFAULTS += ["--out", "runs/trl_learning"]


def load_bench():
    """benchmarks/real_learning.py as a module (benchmarks/ is a folder of scripts)."""
    spec = importlib.util.spec_from_file_location("real_learning", BENCHMARKS / "real_learning.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def tables(csv: Path) -> str:
    import pandas as pd

    from paper_figs import learning_stats as ls
    from paper_figs._common import markdown

    df = ls.check(pd.read_csv(csv), str(csv))
    return "\n".join(
        [
            "rollouts / tokens to 90 % of DS's gain, ratio to DS (95 % t-CI, paired seeds):",
            markdown(ls.target_table(df)),
            "",
            "accuracy at equal rollouts (95 % t-CI over seeds; difference paired by seed):",
            markdown(ls.budget_table(df)),
        ]
    )


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    bench = load_bench()
    base = bench.base_config
    bench.base_config = lambda a, k, seed: replace(base(a, k, seed), trainer="trl")
    rc = bench.main([*DEFAULTS, *argv])  # argparse: a flag given again wins
    from sara_sim.core.files import atomic_write, dumps_json

    if rc != 0:
        return rc
    paths = _paths([*DEFAULTS, *argv])
    out = Path(paths.out)
    meta_path = out / "learning.meta.json"
    meta = json.loads(meta_path.read_text())
    script = "benchmarks/investigations/trl_learning/trl_learning.py"
    meta["command"] = bench.command(script, argv, paths.out, paths.model)
    meta["packages"].update({p: version(p) for p in ("trl", "accelerate", "datasets")})
    atomic_write(meta_path, dumps_json(meta))  # a crash keeps the old file or the new one
    text = tables(out / "learning.csv")
    atomic_write(out / "learning_tables.md", text + "\n")
    print(text)
    return 0


def _paths(argv):
    """--out and --model as the benchmark parsed them (a flag given again wins)."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--out")
    ap.add_argument("--model")
    return ap.parse_known_args(argv)[0]


if __name__ == "__main__":
    sys.exit(main())
