"""What an engine returns: each completion with its tokens and logprobs, grouped by prompt
(`Engine.generate`) or one at a time (`StreamEngine.poll`)."""

from dataclasses import dataclass, field


@dataclass
class Completion:
    text: str
    token_ids: list[int]
    logprobs: list[float]  # logprob of each sampled token under the sampling policy
    finish_reason: str | None = None

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)


@dataclass
class PromptResult:
    prompt: str
    prompt_token_ids: list[int]
    completions: list[Completion] = field(default_factory=list)


def sampled_logprobs(token_ids, logprobs) -> list[float]:
    """The logprob of each sampled token from vLLM's per-position {token: Logprob} dicts
    (logprobs=0: the sampled token only); one for each token, or a RuntimeError."""
    lps = [float(d[t].logprob) for t, d in zip(token_ids, logprobs or [], strict=False)]
    if len(lps) != len(token_ids):
        raise RuntimeError("engine returned no logprob for some sampled tokens (logprobs=0?)")
    return lps
