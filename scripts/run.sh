#!/usr/bin/env bash
# Set up from scratch (if needed), then run the main job: regenerate every theory/simulation
# figure (PNG + CSV + caption) into ./figures (or the folder given as the first argument).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=${1:-figures}
.venv/bin/python -m paper_figs --out "$out" --overwrite  # the job regenerates them
echo "figures written to $out/"
