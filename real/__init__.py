"""The real-model half of SARA: the same allocator driving a vLLM engine inside a GRPO loop.

tasks/ (verifiers) - tiny.py (offline default model) - engine.py (vLLM) - collect.py (rounds) -
grpo.py (loss, step) - train.py (loop, checkpoints, logs) - compare.py - cli.py + flags.py
(`sara-real`, flags from the config dataclasses).
Heavy imports (torch, vllm) happen inside functions, after real._env has set the environment."""
