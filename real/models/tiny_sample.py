"""Sampling a tiny model during its build (`real.models.tiny`): successes per problem at
temperature 1, the spread they make, and the completion lengths per outcome (the reasoning
model's length laws). Plain torch, no engine: a build runs before any vLLM engine exists."""

from real.io.runlog import pass_at_1


def encode(text: str, v: dict[str, int]) -> list[int]:
    """Character ids under the tiny tokenizer's vocabulary `v` (real.models.tiny_net.vocab)."""
    return [v.get(c, v["<unk>"]) for c in text]


def sample_success(model, problems, k, max_new, seed, reward, v, lengths=None) -> list[int]:
    """Successes out of k per problem, sampling at temperature 1 (batched per prompt length);
    `v` is the vocabulary; `lengths` (a list) receives (completion tokens, success) per sample."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    wins = [0] * len(problems)
    by_len: dict[int, list[int]] = {}
    for i, p in enumerate(problems):
        by_len.setdefault(len(p.prompt), []).append(i)
    model.eval()
    with torch.no_grad():
        for idx in by_len.values():  # equal lengths need no padding and no attention mask
            x = torch.tensor([encode(problems[i].prompt, v) for i in idx]).repeat_interleave(k, 0)
            start = x.shape[1]
            for _ in range(max_new):
                logits = model(input_ids=x, use_cache=False).logits[:, -1].float()
                nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)
                x = torch.cat([x, nxt], 1)
            inv = {i: t for t, i in v.items()}
            for row, seq in enumerate(x[:, start:].tolist()):
                text = "".join(inv[t] for t in seq[: seq.index(1)] if t > 2) if 1 in seq else None
                ok = text is not None and reward(text, problems[idx[row // k]])
                wins[idx[row // k]] += int(ok)
                if lengths is not None:  # with its <eos>, as the engine counts; a cut trace: all
                    lengths.append((seq.index(1) + 1 if 1 in seq else len(seq), bool(ok)))
    model.train()
    return wins


def spread(wins: list[int], k: int) -> dict:
    n = len(wins)
    return {
        "problems": n,
        "k": k,
        "mean_success": pass_at_1(wins, k),
        "mixed_fraction": sum(0 < w < k for w in wins) / n,
        "all_fail_fraction": sum(w == 0 for w in wins) / n,
        "all_pass_fraction": sum(w == k for w in wins) / n,
        "histogram": [sum(w == j for w in wins) for j in range(k + 1)],
    }


def length_laws(lengths, cap: int) -> dict:
    """Completion tokens per outcome (pass / fail): count, mean, median, p90, share at the cap.

    >>> length_laws([(4, True), (6, True), (10, False), (40, False)], 40)["fail"]["mean"]
    25.0
    """
    import numpy as np

    out = {}
    for name, ok in (("pass", True), ("fail", False)):
        n = np.array([t for t, o in lengths if o == ok], float)
        out[name] = {"n": len(n)} | (
            {
                "mean": float(n.mean()),
                "median": float(np.median(n)),
                "p90": float(np.quantile(n, 0.9)),
                "at_cap": float((n >= cap).mean()),
            }
            if len(n)
            else {"mean": None, "median": None, "p90": None, "at_cap": None}
        )
    return out
