"""Per-token logprobs of a causal LM (teacher-forced, in torch): what GRPO's ratio needs and what
`real.sampling.engine.parity_check` compares the engine's sampling logprobs with."""

import torch


def pad_batch(prompts: list[list[int]], completions: list[list[int]], pad_id: int = 0):
    """Right-padded ids and a mask over completion tokens; positions of completion token j of
    row i are start[i] + j. Right padding keeps causal attention and positions exact."""
    seqs = [p + c for p, c in zip(prompts, completions, strict=True)]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.bool)
    for i, (p, s) in enumerate(zip(prompts, seqs, strict=True)):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, len(p) : len(s)] = True
    return ids, mask


def logprobs_of(model, ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """logp[i, t] = log P(ids[i, t] | ids[i, :t]) for t >= 1; column 0 is 0 (no prediction)."""
    ids = ids.to(next(model.parameters()).device)
    logits = model(input_ids=ids, use_cache=False).logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    tgt = ids[:, 1:].unsqueeze(-1)
    lp = torch.gather(logits, -1, tgt).squeeze(-1) - torch.logsumexp(logits, -1)
    return torch.cat([torch.zeros_like(lp[:, :1]), lp], 1)


@torch.no_grad()
def token_logprobs(
    model,
    prompts: list[list[int]],
    completions: list[list[int]],
    temperature: float = 1.0,
    chunk: int = 0,
) -> list[list[float]]:
    """Logprob of every completion token under `model` (teacher-forced), as Python lists."""
    out = []
    step = chunk or len(prompts)
    for i in range(0, len(prompts), step):  # chunks bound the logits' memory on long sequences
        ids, mask = pad_batch(prompts[i : i + step], completions[i : i + step])
        lp = logprobs_of(model, ids, temperature).cpu()
        out.extend(lp[j][mask[j]].tolist() for j in range(len(ids)))
    return out
