#!/usr/bin/env bash
# Set up from scratch (if needed), lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
# pytest exit code 5 = no tests collected; treat as failure only if tests were expected.
if [ $rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi
exit $rc
