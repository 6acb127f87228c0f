"""Request-level sampling for round-free collection (``schedule="stream"``, issue 20).

A round calls `Sampler.generate` once and waits for its longest rollout (a barrier). A stream
instead adds one rollout at a time, advances the engine to the next completion and aborts what
is no longer wanted, so a freed slot goes at once to another rollout:

* in-process: vLLM's ``LLMEngine`` — ``add_request`` / ``step`` / ``abort_request``;
* served: one HTTP request per rollout; aborting closes its connection, which the server turns
  into an abort of the request (seen in its ``vllm:generation_tokens_total``, not in its abort
  counter: docs/vllm_cpu.md).

Both implement `StreamSampler`; `Sampler.open_stream(...)` returns one. A prompt is text (the
engine tokenises it) or its token ids (already tokenised and templated, as TRL hands them over):
vLLM's in-process engine takes ids as a ``TokensPrompt``, the served path sends them as the
``/v1/completions`` prompt it always sends (text is tokenised here first). A seeded rollout samples
what `Sampler.generate` samples with the same seed (one single-sample request each), so a stream
and a round with the same seeds see the same completions. Tokens an aborted rollout generated
before it stopped are real cost: `tokens` counts them once, beside the finished rollouts'.
"""

import abc
import numbers
from collections.abc import Sequence
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

    def add(self, prompt: str | Sequence[int], seed: int | None = None) -> int:
        """Queue one rollout of `prompt` — text, or the prompt's token ids — (seeded if `seed` is
        given); returns its id."""
        return self._add(prompt_form(prompt), None if seed is None else int(seed))

    @abc.abstractmethod
    def _add(self, prompt: str | list[int], seed: int | None) -> int:
        """`add` with the prompt checked: a str, or a non-empty list of token ids."""

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


def prompt_form(prompt) -> str | list[int]:
    """A stream's prompt as the samplers take it: text as is, token ids as a list of ints (a
    TypeError / ValueError for anything else: an id list that is empty or holds non-integers
    would be sent to the engine as garbage)."""
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, Sequence) or isinstance(prompt, bytes | bytearray):
        raise TypeError(f"a prompt is text or a sequence of token ids, not {type(prompt).__name__}")
    ids = list(prompt)
    bad = [t for t in ids if isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0]
    if not ids or bad:
        raise ValueError(f"token-id prompt must be non-empty ints >= 0, got {bad[:3] or 'none'}")
    return [int(t) for t in ids]
