"""TRL's side of `real.trl.adapter.SaraRollout`: its arguments checked, generation (one batched
call per collector round), and the adapter's state file inside TRL's checkpoints.

Backends, first match wins: our `real.sampling.engine.VLLMEngine` (vLLM in-process) or
`ServerEngine` (vLLM servers; token-id prompts sent as they are), the adapter pushing the trainer's
weights into it before each rollout call, TRL's colocated vLLM (`use_vllm=True`,
`vllm_mode="colocate"`; TRL syncs its weights before each rollout call), else transformers
`generate` on the trainer's own model (slow, runs anywhere).  All vLLM paths go through
`Engine.generate`, so every rollout carries its own sampling seed (a resumed run samples what an
uninterrupted one would have); `generate` is seeded once per round instead.  A streamed step
(`open_stream`) samples on the same vLLM engine, one request per planned request of n rollouts."""

import os
from pathlib import Path

from real.io.runfolder import checkpoint_dir
from real.sampling.engine import VLLMEngine
from sara_sim.core.errors import ParameterError, check_k

STATE_FILE = "sara_rollout_rank{rank}.pt"  # one per process, inside TRL's checkpoint-N folder


def cpu_grpo_config(output_dir, *, k: int, groups: int, steps: int, seed: int = 0, **overrides):
    """TRL's GRPOConfig for a short offline CPU run with transformers `generate` (the TRL tests,
    benchmarks/trl_compare.py): `groups` groups of k rows per step, 8 new tokens, constant lr 1e-4,
    a log entry per step, no checkpoints, no reporting; `overrides` are GRPOConfig fields."""
    from trl import GRPOConfig

    base = dict(
        output_dir=str(output_dir),
        num_generations=k,
        per_device_train_batch_size=k * groups,
        max_completion_length=8,
        max_steps=steps,
        learning_rate=1e-4,
        lr_scheduler_type="constant",
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=seed,
        disable_tqdm=True,
    )
    return GRPOConfig(**{**base, **overrides})


def check_trl_args(args, reward_funcs):
    """(k, groups, reward functions, weights) from a GRPOConfig — k is TRL's num_generations,
    groups the groups per process and call — or a ParameterError naming the field.  Each process
    collects whole groups, so its rows (per_device_train_batch_size x steps_per_generation) must
    be a multiple of k (TRL only checks the global batch)."""
    k = check_k(args.num_generations, "num_generations")
    rows = args.per_device_train_batch_size * args.steps_per_generation
    if rows % k:
        raise ParameterError(
            "per_device_train_batch_size",
            f"x steps_per_generation = {rows} rows per process must be a multiple of "
            f"num_generations={k}: each process collects whole groups",
        )
    funcs = list(reward_funcs) if isinstance(reward_funcs, list | tuple) else [reward_funcs]
    if not funcs or not all(callable(f) and not hasattr(f, "forward") for f in funcs):
        raise ParameterError(
            "reward_funcs", "give one or more Python callables (reward models are not supported)"
        )
    w = args.reward_weights or [1.0] * len(funcs)
    if len(w) != len(funcs):
        raise ParameterError("reward_weights", f"{len(w)} weights for {len(funcs)} functions")
    for name in ("top_k", "min_p", "repetition_penalty"):  # the vLLM paths do not apply them
        if getattr(args, name, None) not in (None, 0, 1.0, -1):
            raise ParameterError(name, "is not supported by SaraRollout; leave the default")
    if args.use_vllm and args.vllm_mode != "colocate":
        raise ParameterError("vllm_mode", "SaraRollout drives vLLM in colocate mode only")
    if args.use_vllm and args.vllm_enable_sleep_mode:
        raise ParameterError("vllm_enable_sleep_mode", "is not supported by SaraRollout")
    return k, rows // k, funcs, [float(x) for x in w]


def check_reward_values(f, vals, n) -> list:
    """A reward function's answer for n rollouts: a list of n numbers or None (as floats)."""
    name = getattr(f, "__name__", repr(f))
    vals = list(vals) if isinstance(vals, list | tuple) else vals
    if not isinstance(vals, list) or len(vals) != n:
        raise ParameterError("reward_funcs", f"{name} must return a list of {n} rewards")
    for v in vals:
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise ParameterError("reward_funcs", f"{name} must return numbers (or None), got {v!r}")
    return [None if v is None else float(v) for v in vals]


def tokenize(trainer, prompt) -> list[int]:
    """Prompt token ids, as TRL itself would build them (chat template for message lists)."""
    tok = trainer.processing_class
    if isinstance(prompt, str):
        return tok(text=prompt)["input_ids"]
    kw = getattr(trainer, "chat_template_kwargs", None) or {}
    return tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, **kw)


def _vllm(trainer, engine):
    """The vLLM engine that samples: ours as given, else TRL's colocated LLM (GPU only; not
    runnable on the CPU machines this was written on), else None (HF generate)."""
    if engine is None and getattr(trainer, "use_vllm", False):
        return VLLMEngine.from_llm(trainer.vllm_generation.llm)
    return engine


def open_stream(trainer, engine):
    """A `StreamEngine` on the vLLM engine that samples, with TRL's sampling settings."""
    a = trainer.args
    return _vllm(trainer, engine).open_stream(a.max_completion_length, a.temperature, a.top_p)


def generate(trainer, engine, prompt_ids, ns, seeds):
    """ns[i] completions of prompt_ids[i]: [[(completion ids, logprobs or None)] * n]."""
    a = trainer.args
    engine = _vllm(trainer, engine)
    if engine is not None:
        res = engine.generate(
            [{"prompt_token_ids": ids} for ids in prompt_ids],
            ns,
            max_tokens=a.max_completion_length,
            temperature=a.temperature,
            top_p=a.top_p,
            seeds=seeds,
        )
        return [[(c.token_ids, c.logprobs) for c in r.completions] for r in res]
    return hf_generate(trainer, prompt_ids, ns, seeds)


def hf_generate(trainer, prompt_ids, ns, seeds):
    """transformers `generate` on the trainer's model: left-padded batch of all rollouts."""
    import torch

    a = trainer.args
    model = trainer.accelerator.unwrap_model(trainer.model)
    tok = trainer.processing_class
    eos = tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos
    rows = [ids for ids, n in zip(prompt_ids, ns) for _ in range(n)]
    width = max(len(r) for r in rows)
    dev = next(model.parameters()).device
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=dev)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=dev)
    was_training = model.training
    model.eval()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(seeds[0][0]))  # one seed per round (the round's first rollout's)
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            temperature=a.temperature,
            top_p=a.top_p,
            top_k=0,
            max_new_tokens=a.max_completion_length,
            pad_token_id=pad,
            eos_token_id=eos,
        )
    model.train(was_training)
    comps = []
    for seq in out[:, width:].tolist():
        cut = seq.index(eos) + 1 if eos in seq else len(seq)  # keep the EOS, as vLLM does
        comps.append(seq[:cut])
    it = iter(comps)
    return [[(next(it), None) for _ in range(n)] for n in ns]


# ---------------------------------------------------------------- checkpoint files


def save_state(sara, ckpt_dir) -> Path:
    import torch

    path = Path(ckpt_dir) / STATE_FILE.format(rank=sara.rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(sara.state_dict(), path.with_suffix(".tmp"))
    os.replace(path.with_suffix(".tmp"), path)  # never a half-written state file
    return path


def load_state(sara, ckpt_dir) -> None:
    import torch

    path = Path(ckpt_dir) / STATE_FILE.format(rank=sara.rank)
    if not path.is_file():
        raise ParameterError(
            "resume_from_checkpoint",
            f"{ckpt_dir} has no {path.name}: it was not written with SaraRollout's callback "
            "(callbacks=[sara.callback]); resuming without it would repeat prompts",
        )
    sara.load_state_dict(torch.load(path, map_location="cpu", weights_only=False))


def trainer_callback():
    """transformers' TrainerCallback, the base of our callbacks (here and in real/trl/run.py):
    imported when a callback class is defined, not before."""
    from transformers import TrainerCallback

    return TrainerCallback


class SaveCallback(trainer_callback()):
    """Writes the adapter state into each checkpoint folder TRL has just saved (on_save runs
    after the folder is complete, on every process)."""

    def __init__(self, sara):
        self.sara = sara

    def on_save(self, args, state, control, **kwargs):
        save_state(self.sara, checkpoint_dir(args.output_dir, state.global_step))
