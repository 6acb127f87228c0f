"""GRPO on committed groups, in plain torch.

Advantages come from one of four estimators (`GRPOConfig.estimator`; `ESTIMATORS` below): GRPO's
(r - group mean) / group std, the default; Dr. GRPO's r - group mean; RLOO's leave-one-out
baseline; REINFORCE++'s batch-normalised rewards. Only the advantage differs between them: the
loss is the same for all four. The loss is the clipped token-level surrogate, averaged over all
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

from real.base.config import ESTIMATORS, GRPOConfig  # the settings, documented there (one place)
from real.models.logprobs import logprobs_of, pad_batch, token_logprobs


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


def rloo_advantages(rewards: list[list[float]]) -> list[list[float]]:
    """RLOO: r_i minus the mean reward of the other k - 1 rollouts of its group (Ahmadian et al.
    2024, "Back to Basics", eq. 5: the advantage unscaled — no std — which is k/(k-1) times
    (r_i - group mean)). A saturated group gets all zeros; a group of one rollout has no other
    to form its baseline and gets zero (no gradient, as under GRPO).

    >>> rloo_advantages([[1, 0, 0, 0], [1, 1], [0.5]])
    [[1.0, -0.3333333333333333, -0.3333333333333333, -0.3333333333333333], [0.0, 0.0], [0.0]]
    """
    out = []
    for g in rewards:
        r = torch.tensor(g, dtype=torch.float64)
        k = len(g)
        a = r - (r.sum() - r) / (k - 1) if k > 1 else torch.zeros_like(r)
        out.append(a.tolist())
    return out


def batch_advantages(rewards: list[list[float]], eps: float = 1e-6) -> list[list[float]]:
    """REINFORCE++: (r - batch mean) / (batch std + eps) over every rollout of the step, no group
    baseline (Hu 2025, "REINFORCE++", the outcome-reward case with no KL in the reward). So a
    saturated group still carries signal — all-pass groups are pushed up, all-fail ones down —
    unless the whole batch is saturated alike (std 0: all zeros). Shape kept (one list per group).

    >>> a = batch_advantages([[1, 1], [1, 0], [0, 0]])  # mean 0.5, population std 0.5
    >>> [[round(x, 5) for x in g] for g in a]  # 0.5 / (0.5 + 1e-6) = 0.999998
    [[1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]]
    """
    flat = torch.tensor([x for g in rewards for x in g], dtype=torch.float64)
    if not len(flat):
        return [[] for _ in rewards]
    a = ((flat - flat.mean()) / (flat.std(unbiased=False) + eps)).tolist()
    out, i = [], 0
    for g in rewards:
        out.append(a[i : i + len(g)])
        i += len(g)
    return out


def advantages(
    rewards: list[list[float]], estimator: str = "grpo", std_norm: bool = True
) -> list[list[float]]:
    """The advantages of each group's rollouts under `estimator` (one of ESTIMATORS).

    Effective: a group contributes a gradient iff one of its advantages is non-zero. Under grpo,
    dr-grpo and rloo a saturated group's are all zero, so only mixed groups count; under
    reinforce++ a saturated group's are not (docs/real-loop.md, advantage estimators).

    >>> advantages([[1, 0], [1, 1]], "dr-grpo"), advantages([[1, 0], [1, 1]], "rloo")
    ([[0.5, -0.5], [0.0, 0.0]], [[1.0, -1.0], [0.0, 0.0]])
    """
    if estimator == "grpo":
        return group_advantages(rewards, std_norm)
    if estimator == "dr-grpo":
        return group_advantages(rewards, std_norm=False)
    if estimator == "rloo":
        return rloo_advantages(rewards)
    if estimator == "reinforce++":
        return batch_advantages(rewards)
    raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")


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
        advs = advantages([[r for *_, r in g] for g in groups], cfg.estimator, cfg.std_norm)
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
