#!/usr/bin/env bash
# Set up from scratch (if needed), lint, then run the whole test suite: the main environment's,
# then verl's tests in verl's own environment (.venv-verl; tests/verl, docs/verl.md).
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
if [ $# -eq 0 ] && [ $rc -eq 0 ]; then  # the whole suite: verl's tests too
  bash scripts/setup.sh --verl
  set +e
  .venv-verl/bin/python -m pytest tests/verl
  rc=$?
  set -e
fi
exit $rc
