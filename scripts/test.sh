#!/usr/bin/env bash
# Set up from scratch (if needed), lint, then run both test tiers: the fast one (`pytest`: unit
# and small CLI tests) and the integration one (`pytest -m integration`: engines, servers, TRL,
# new-user clones); with no arguments, then verl's tests in verl's own environment (.venv-verl,
# built here; tests/verl, docs/verl.md). Arguments go to both pytest runs (e.g. a test path).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
status=0
collected=0
for tier in fast integration; do
  marker=()
  [ "$tier" = integration ] && marker=(-m integration)
  echo "== $tier tier"
  start=$(date +%s)
  set +e
  .venv/bin/python -m pytest "${marker[@]}" "$@"
  rc=$?
  set -e
  echo "== $tier tier: exit $rc, $(( $(date +%s) - start )) s"
  # exit 5 = no test collected: one tier may have none among the given paths, not both
  if [ $rc -eq 5 ]; then continue; fi
  collected=1
  if [ $rc -ne 0 ]; then status=$rc; fi
done
if [ $collected -eq 0 ]; then echo "pytest collected no tests"; exit 1; fi
if [ $# -eq 0 ]; then  # the whole suite: verl's tests too, both tiers, in verl's environment
  echo "== verl (its own environment)"
  start=$(date +%s)
  bash scripts/setup.sh --verl
  set +e
  .venv-verl/bin/python -m pytest -m "" tests/verl
  rc=$?
  set -e
  echo "== verl: exit $rc, $(( $(date +%s) - start )) s"
  if [ $rc -ne 0 ]; then status=$rc; fi
fi
exit $status
