"""What a sampler returns: each completion with its tokens and logprobs, grouped by prompt
(`Sampler.generate`) or one at a time (`StreamSampler.poll`)."""

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
