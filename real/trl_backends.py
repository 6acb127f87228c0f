"""Generation for `real.trl_adapter.SaraRollout`: one batched call per allocator round.

Backends, first match wins: our in-process `real.engine.Engine` (vLLM; the adapter pushes the
trainer's weights into it before each rollout call), TRL's colocated vLLM (`use_vllm=True`,
`vllm_mode="colocate"`; TRL syncs its weights before each rollout call), else transformers
`generate` on the trainer's own model (slow, runs anywhere).  Both vLLM paths go through
`Engine.generate`, so every rollout carries its own sampling seed (a resumed run samples what an
uninterrupted one would have); `generate` is seeded once per round instead."""


def tokenize(trainer, prompt) -> list[int]:
    """Prompt token ids, as TRL itself would build them (chat template for message lists)."""
    tok = trainer.processing_class
    if isinstance(prompt, str):
        return tok(text=prompt)["input_ids"]
    kw = getattr(trainer, "chat_template_kwargs", None) or {}
    return tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, **kw)


def generate(trainer, engine, prompt_ids, ns, seeds):
    """ns[i] completions of prompt_ids[i]: [[(completion ids, logprobs or None)] * n]."""
    a = trainer.args
    if engine is None and getattr(trainer, "use_vllm", False):
        from real.engine import Engine

        # TRL's colocated LLM (GPU only; not runnable on the CPU machines this was written on)
        engine = Engine.from_llm(trainer.vllm_generation.llm)
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
