"""The real-model half of SARA: the same strategy driving a vLLM engine inside a GRPO loop.

Layered subpackages; each imports only its own layer and the ones below it
(`tests/core/test_layers.py` reads every import, lazy ones included; docs/design.md §6):

    base      env (process environment before torch / vllm), config (Config, its sections, the
              collector built from them)
    io        runlog (metrics.jsonl, summary, lock), runfolder (the folder's files,
              checkpoint-N naming, check_writable)
    tasks     verifiable tasks (arithmetic, countdown, math) and the run's task
    models    tiny (the offline default model), resolve (model resolution), logprobs (torch)
    sampling  engine (Engine, in-process vLLM), serve / served / client / push (vLLM servers),
              streaming / inprocess_stream / served_stream (the round-free StreamEngines)
    rollout   collect (the run's engine; RolloutDriver: collector rounds -> committed groups),
              streamed (the same, round-free), evaluation (held-out pass@1)
    train     grpo (loss, step), loop (the native GRPO loop)               } siblings: neither
    trl       adapter, rewards, backends (SARA in TRL's GRPOTrainer), run  } imports the other
    app       run (one run: its checks, then its training), resume (the run folder's checks),
              compare, audit, audit_theory, cli (`sara-real`: flags from the config dataclasses)

real/ may import sara_sim (its strategies); sara_sim never imports real. Heavy third-party
imports (torch, vllm, transformers) happen inside functions, after real.base.env has set the
environment, so every argument is checked before they load.

The public API is ``__all__`` (tests/core/test_public_api.py holds it); the subpackages are
internal. Each name loads on first use, after real.base.env has set the process environment
(offline hub, the project's cache folders), so import them before transformers or torch:

    from real import SaraRollout                     # SARA as TRL GRPOTrainer's rollout_func
    from real import Engine, VLLMEngine, ServerEngine  # engines (SaraRollout's engine=)
    from real import StrategyConfig                  # SaraRollout's options: its fields
    from real import build_tiny, TinySettings        # the offline tiny default model
    from real import make_task, extract_integer      # its verifiable tasks, the answer parser
"""

# name -> the internal module that defines it
_PUBLIC = {
    "SaraRollout": "real.trl.adapter",
    "Engine": "real.sampling.engine",
    "VLLMEngine": "real.sampling.engine",
    "ServerEngine": "real.sampling.client",
    "StrategyConfig": "real.base.config",
    "build_tiny": "real.models.tiny",
    "TinySettings": "real.models.tiny",
    "make_task": "real.tasks",
    "extract_integer": "real.tasks.arithmetic",
}


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'real' has no attribute {name!r}")
    import importlib

    importlib.import_module("real.base.env")  # the environment before torch / vLLM load
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = list(_PUBLIC)
