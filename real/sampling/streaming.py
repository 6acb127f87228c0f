"""Request-level sampling for round-free collection (``schedule="stream"``, issue 20).

A round calls `Sampler.generate` once and waits for its longest rollout (a barrier). A stream
instead adds one rollout at a time, advances the engine to the next completion and aborts what
is no longer wanted, so a freed slot goes at once to another rollout:

* in-process: vLLM's ``LLMEngine`` — ``add_request`` / ``step`` / ``abort_request``;
* served: one HTTP request per rollout; aborting closes its connection, which the server turns
  into an abort of the request (seen in its ``vllm:generation_tokens_total``, not in its abort
  counter: docs/vllm_cpu.md).

Both implement `StreamSampler`; `Sampler.open_stream(...)` returns one. A seeded rollout samples
what `Sampler.generate` samples with the same seed (one single-sample request each), so a stream
and a round with the same seeds see the same completions. Tokens an aborted rollout generated
before it stopped are real cost: `tokens` counts them once, beside the finished rollouts'.
"""

import abc
from dataclasses import dataclass

from real.sampling.results import Completion


@dataclass(frozen=True)
class Finished:
    """One finished rollout of a stream."""

    rid: int  # the id `StreamSampler.add` returned
    prompt_token_ids: list[int]  # the prompt as the engine tokenised it
    completion: Completion  # its tokens, their logprobs, the finish reason


class StreamSampler(abc.ABC):
    """One open stream with fixed sampling settings (max_tokens, temperature, top_p).

    Ids are 0, 1, 2, ... in the order rollouts are added. Every added rollout ends exactly once:
    returned by `poll` (finished) or stopped by `abort` (or `close`)."""

    def __init__(self, max_tokens: int, temperature: float = 1.0, top_p: float = 1.0):
        self.max_tokens, self.temperature, self.top_p = int(max_tokens), temperature, top_p
        self.tokens = 0  # completion tokens generated: finished rollouts' and aborted partials
        self.aborted = 0  # rollouts aborted (by `abort` or `close`)
        self.finished = 0  # rollouts returned by `poll`

    @abc.abstractmethod
    def add(self, prompt: str, seed: int | None = None) -> int:
        """Queue one rollout of `prompt` (seeded if `seed` is given); returns its id."""

    @abc.abstractmethod
    def poll(self) -> list[Finished]:
        """Advance until at least one rollout in flight has finished; return every rollout that
        finished since the last call. Returns [] only when nothing is in flight."""

    @abc.abstractmethod
    def abort(self, rids) -> int:
        """Stop these rollouts (each must be in flight: an id that finished or was aborted is a
        ValueError); return the completion tokens they had generated (added to `tokens`)."""

    @property
    @abc.abstractmethod
    def in_flight(self) -> int:
        """Rollouts added and not yet finished or aborted."""

    @abc.abstractmethod
    def close(self) -> int:
        """Abort everything in flight; return the tokens those rollouts had generated."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
