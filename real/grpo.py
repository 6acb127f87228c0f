"""GRPO on committed groups, in plain torch.

Advantages are normalised within each group of k rollouts (r - mean) / std (Dr.GRPO's variant
without the std is an option). The loss is the clipped token-level surrogate, averaged over all
completion tokens of the batch (DAPO's token-mean), with clip-higher (eps_high > eps_low) optional
and a k3 KL penalty to a frozen reference optional (off by default, as in DAPO; docs/design.md §7).

Old logprobs — the denominator of the importance ratio — come by default from the engine: vLLM
returns the logprob of every sampled token under the very weights that sampled it, so no extra
forward pass is needed, and on CPU float32 they match torch to ~1e-5 (docs/vllm_cpu.md). With
`old_logprobs="recompute"` torch recomputes them before the first update instead: one more forward
pass, but the ratio is then exactly 1 at the first minibatch under the trainer's own numerics —
the right choice on a GPU with bf16, where vLLM's and torch's kernels differ by ~1e-2 per token and
that mismatch would otherwise be clipped as if it were policy change."""

import torch

from real.config import GRPOConfig  # the settings, documented there (one place)


def group_advantages(
    rewards: list[list[float]], std_norm: bool = True, eps: float = 1e-6
) -> list[list[float]]:
    """Per-group (r - mean) [/ (std + eps)]; a saturated group gets all zeros."""
    out = []
    for g in rewards:
        r = torch.tensor(g, dtype=torch.float64)
        a = r - r.mean()
        if std_norm:
            a = a / (r.std(unbiased=False) + eps)  # population std, as in most GRPO code
        out.append(a.tolist())
    return out


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


def grpo_loss(
    logp, old_logp, adv, mask, eps_low=0.2, eps_high=0.2, ref_logp=None, kl_coef=0.0, denom=None
):
    """Clipped token-level surrogate, token-mean over mask; returns (loss, stats).

    `denom` (the token count of the whole minibatch) lets micro-batches add up to exactly the
    token-mean of the minibatch."""
    m = mask.float()
    n = m.sum().clamp_min(1.0) if denom is None else denom
    ratio = torch.exp((logp - old_logp) * m)  # masked positions: ratio 1, contribute 0 below
    surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv)
    loss = -(surr * m).sum() / n
    r = ratio.detach()
    stats = {
        "clip_frac": ((((r < 1 - eps_low) | (r > 1 + eps_high)) & mask).sum() / n).item(),
        "ratio_max": (r * m).max().item(),
    }
    if ref_logp is not None and kl_coef > 0:
        d = (ref_logp - logp) * m
        kl = (torch.exp(d) - d - 1) * m  # k3 estimator: unbiased, always >= 0
        loss = loss + kl_coef * kl.sum() / n
        stats["kl"] = (kl.detach().sum() / n).item()
    return loss, stats


class GRPO:
    """Owns the optimizer (and the reference model when kl_coef > 0)."""

    def __init__(self, model, cfg: GRPOConfig, pad_id: int = 0, temperature: float = 1.0):
        # temperature: the sampling one (logits are divided by it here too); a run setting
        self.model, self.cfg, self.pad_id, self.temperature = model, cfg, pad_id, temperature
        self.opt = torch.optim.AdamW(
            model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay
        )
        self.ref = None
        if cfg.kl_coef > 0:
            import copy

            self.ref = copy.deepcopy(model).eval().requires_grad_(False)

    def step(self, groups, seed: int = 0) -> dict:
        """groups: list of k-lists of (prompt_ids, completion_ids, old_logprobs, reward)."""
        cfg = self.cfg
        advs = group_advantages([[r for *_, r in g] for g in groups], cfg.std_norm)
        rows = [
            (p, c, lp, a)
            for g, ga in zip(groups, advs, strict=True)
            for (p, c, lp, _), a in zip(g, ga, strict=True)
        ]
        rows = [r for r in rows if r[1]]  # an empty completion has no token to score
        if not rows:
            return {"loss": 0.0, "grad_norm": 0.0, "tokens_trained": 0}
        if cfg.old_logprobs == "recompute":
            self.model.eval()
            fresh = token_logprobs(
                self.model,
                [r[0] for r in rows],
                [r[1] for r in rows],
                self.temperature,
                chunk=cfg.micro_batch,
            )
            rows = [(p, c, lp, a) for (p, c, _, a), lp in zip(rows, fresh, strict=True)]
        elif cfg.old_logprobs != "engine":
            raise ValueError(
                f"old_logprobs must be 'engine' or 'recompute', got {cfg.old_logprobs}"
            )
        self.model.train()
        gen = torch.Generator().manual_seed(seed)
        stats = {"loss": 0.0, "grad_norm": 0.0, "clip_frac": 0.0, "updates": 0}
        for _ in range(cfg.epochs):
            order = torch.randperm(len(rows), generator=gen).tolist()
            for chunk in torch.tensor_split(torch.tensor(order), max(1, cfg.minibatches)):
                part = [rows[i] for i in chunk.tolist()]
                if part:
                    s = self._update(part)
                    for key in ("loss", "grad_norm", "clip_frac"):
                        stats[key] += s[key]
                    stats["updates"] += 1
        for key in ("loss", "grad_norm", "clip_frac"):
            stats[key] /= max(1, stats["updates"])
        stats["tokens_trained"] = sum(len(r[1]) for r in rows)
        return stats

    def _update(self, part) -> dict:
        """One optimizer update on `part`, accumulated over micro-batches (token-mean exact)."""
        cfg = self.cfg
        dev = next(self.model.parameters()).device
        denom = float(sum(len(r[1]) for r in part))
        step = cfg.micro_batch or len(part)
        self.opt.zero_grad(set_to_none=True)
        loss_sum, clip, rmax = 0.0, 0.0, 0.0
        for i in range(0, len(part), step):
            mb = part[i : i + step]
            ids, mask = pad_batch([r[0] for r in mb], [r[1] for r in mb], self.pad_id)
            old, adv = torch.zeros(ids.shape), torch.zeros(ids.shape)
            for j, (p, c, lp, a) in enumerate(mb):
                old[j, len(p) : len(p) + len(c)] = torch.tensor(lp)
                adv[j, len(p) : len(p) + len(c)] = a
            ids, mask, old, adv = ids.to(dev), mask.to(dev), old.to(dev), adv.to(dev)
            with torch.autocast(dev.type, torch.bfloat16, enabled=cfg.bf16_autocast):
                logp = logprobs_of(self.model, ids, self.temperature)
                ref = None
                if self.ref is not None:
                    with torch.no_grad():
                        ref = logprobs_of(self.ref, ids, self.temperature)
            loss, s = grpo_loss(
                logp, old, adv, mask, cfg.eps_low, cfg.eps_high, ref, cfg.kl_coef, denom=denom
            )
            loss.backward()
            loss_sum += loss.item()
            clip += s["clip_frac"]
            rmax = max(rmax, s["ratio_max"])
        gn = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
        self.opt.step()
        return {"loss": loss_sum, "grad_norm": gn.item(), "clip_frac": clip, "ratio_max": rmax}

    def state_dict(self) -> dict:
        return {
            "opt": self.opt.state_dict(),
            "ref": None if self.ref is None else self.ref.state_dict(),
        }

    def load_state_dict(self, d: dict) -> None:
        self.opt.load_state_dict(d["opt"])
        if self.ref is not None and d.get("ref") is not None:
            self.ref.load_state_dict(d["ref"])
