"""The README's claim table from the committed claim results: one markdown line per
claim of the paper — the paper's number, ours with its 90 % interval, the verdict, the seeds and
the files (`paper_figs/claims_table.py` says how each is computed).

    .venv/bin/python benchmarks/claims.py [--claims benchmarks/results/claims] [--margin M]
    .venv/bin/python benchmarks/claims.py --budget    # rollouts to target, equal budget

--budget prints instead one line per setting, k and strategy against DS: the rollouts it needs to
reach figure 10's target (90 % of DS's mean gain) as a ratio to DS's, the seeds that reached it,
and the accuracy at an equal rollout budget minus DS's (`paper_figs/claims_budget.py`).

Absent claim files are named in their claim's line and on stderr; bad arguments exit 2 with one
line."""

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    from paper_figs.claims_budget import budget_table
    from paper_figs.claims_data import CLAIMS, load_claims
    from paper_figs.claims_stats import MARGIN
    from paper_figs.claims_table import claim_table, markdown_lines
    from sara_sim.core.errors import ParameterError, check_float

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", default=str(CLAIMS), help="folder of NAME.csv + NAME.meta.json")
    ap.add_argument("--margin", type=float, default=MARGIN, help="TOST margin (accuracy)")
    ap.add_argument("--budget", action="store_true", help="rollouts to target, equal budget")
    a = ap.parse_args(argv)
    try:
        check_float(a.margin, "--margin", 0.0, 1.0, lo_open=True)
        if not Path(a.claims).is_dir():
            raise ParameterError("--claims", f"{a.claims} is not a folder")
        data = load_claims(a.claims)
    except ParameterError as e:
        print(f"claims_table: error: {e}", file=sys.stderr)
        return 2
    for name, why in data.missing.items():
        print(f"claims_table: {name}: {why}", file=sys.stderr)
    table = budget_table(data) if a.budget else claim_table(data, a.margin)
    print("\n".join(markdown_lines(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
