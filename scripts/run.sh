#!/usr/bin/env bash
# Set up from scratch (if needed), then run the main job on its embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/sara-sim theory --difficulty beta:1,1 --k 8 --tau-low 0.2 "$@"
