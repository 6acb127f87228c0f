"""The real-model half of SARA: the same strategy driving a vLLM engine inside a GRPO loop.

Layered subpackages; each imports only its own layer and the ones below it
(`tests/core/test_layers.py` reads every import, lazy ones included; real/README.md, "Layout"):

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
environment, so every argument is checked before they load."""
