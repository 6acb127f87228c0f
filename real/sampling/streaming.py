"""Request-level sampling for round-free collection (``schedule="stream"``).

A round calls `Engine.generate` once and waits for its longest rollout (a barrier). A stream
instead adds requests as the plan makes them (a rollout, or a group of n), advances the engine
to the next completion and aborts what is no longer wanted, so a freed slot goes at once to
another rollout:

* in-process: vLLM's ``LLMEngine`` — ``add_request`` / ``step`` / ``abort_request``;
* served: one SSE HTTP request per group; aborting closes its connection, which the server
  turns into an abort of the request (seen in its ``vllm:generation_tokens_total``, not in its
  abort counter: docs/vllm_cpu.md).

Both implement `StreamEngine`; `Engine.open_stream(...)` returns one. A prompt is text (the
engine tokenises it) or its token ids (already tokenised and templated, as TRL hands them over):
vLLM's in-process engine takes ids as a ``TokensPrompt``, the served path sends them as the
``/v1/completions`` prompt it always sends (text is tokenised here first). A seeded rollout samples
what `Engine.generate` samples with the same seed (one single-sample request each), so a stream
and a round with the same seeds see the same completions. Tokens an aborted rollout generated
before it stopped are real cost: `tokens` counts them once, beside the finished rollouts'.

Groups: `add_group(prompt, seed, n)` queues n rollouts of one prompt seeded seed..seed+n-1 — the
engines send them as ONE engine request with n choices (vLLM seeds child i with seed + i, so
each samples what a single add with that seed samples). Each rollout of a group still ends on
its own (`poll` returns it when its choice finishes). `abort` takes whole groups: with the ids of
a group it must name every one of that group's rollouts still in flight (one request is stopped
as a whole — a served group by closing its connection), else ValueError. That is what the
stream driver does: `cancel(visit)` aborts all of a visit's rollouts in flight, which span whole
group requests (a visit's later request is a group of its own).
"""

import abc
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from real.sampling.results import Completion


@dataclass(frozen=True)
class Finished:
    """One finished rollout of a stream."""

    rid: int  # the id `StreamEngine.add` returned
    prompt_token_ids: list[int]  # the prompt as the engine tokenised it
    completion: Completion  # its tokens, their logprobs, the finish reason


class StreamEngine(abc.ABC):
    """One open stream with fixed sampling settings (max_tokens, temperature, top_p).

    Ids are 0, 1, 2, ... in the order rollouts are added. Every added rollout ends exactly once:
    returned by `poll` (finished) or stopped by `abort` (or `close`)."""

    def __init__(self, max_tokens: int, temperature: float = 1.0, top_p: float = 1.0):
        self.max_tokens, self.temperature, self.top_p = int(max_tokens), temperature, top_p
        self.tokens = 0  # completion tokens generated: finished rollouts' and aborted partials
        self.aborted = 0  # rollouts aborted (by `abort` or `close`)
        self.finished = 0  # rollouts returned by `poll`
        self.next_id = 0  # the next rollout's id
        # the group books of the engines that send a group as one request (`_open_group`)
        self.group_of: dict[int, int] = {}  # rollout in flight -> its group's first id
        self.left: dict[int, int] = {}  # group's first id -> its rollouts in flight

    def add(self, prompt: str | Sequence[int], seed: int | None = None) -> int:
        """Queue one rollout of `prompt` — text, or the prompt's token ids — (seeded if `seed` is
        given); returns its id."""
        return self._add(prompt_form(prompt), None if seed is None else int(seed))

    def add_group(self, prompt: str | Sequence[int], seed: int | None, n: int) -> list[int]:
        """Queue n rollouts of `prompt` seeded seed, seed+1, ..., seed+n-1 (all unseeded if
        `seed` is None) as one group (see the module docstring); returns their ids, in seed
        order."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"add_group: n must be an int >= 1, got {n!r}")
        return self._add_group(prompt_form(prompt), None if seed is None else int(seed), int(n))

    def _add(self, prompt: str | list[int], seed: int | None) -> int:
        """`add` with the prompt checked: a str, or a non-empty list of token ids."""
        return self._add_group(prompt, seed, 1)[0]

    def _add_group(self, prompt: str | list[int], seed: int | None, n: int) -> list[int]:
        """`add_group` with its arguments checked. Default: n single adds (each its own group)."""
        return [self._add(prompt, None if seed is None else seed + i) for i in range(n)]

    def _open_group(self, n: int) -> list[int]:
        """Ids for a group of n rollouts sent as one request, booked as in flight."""
        first = self.next_id
        self.next_id += n
        rids = list(range(first, first + n))
        self.group_of.update(dict.fromkeys(rids, first))
        self.left[first] = n
        return rids

    def _close(self, rid: int) -> tuple[int, bool]:
        """An in-flight rollout ended: (its group's first id, whether that ended the group)."""
        first = self.group_of.pop(rid)
        self.left[first] -= 1
        if self.left[first]:
            return first, False
        del self.left[first]
        return first, True

    def _whole_groups(self, rids) -> dict:
        """The groups an `abort` of `rids` stops: group -> its ids in `rids`. A ValueError for an
        id not in flight, a repeated id, or a group named in part (its other rollouts in flight
        could not go on: the group is one engine request)."""
        rids = [int(r) for r in rids]
        gone = [r for r in rids if r not in self.group_of]
        if gone or len(set(rids)) != len(rids):
            raise ValueError(f"abort: not in flight (ended, or repeated): {gone or rids}")
        groups: dict = {}
        for r in rids:
            groups.setdefault(self.group_of[r], []).append(r)
        for g, named in groups.items():
            if len(named) != self.left[g]:
                raise ValueError(
                    f"abort: rollouts {named} are part of a group with {self.left[g] - len(named)} "
                    "more in flight: abort a group's rollouts in flight together"
                )
        return groups

    @abc.abstractmethod
    def poll(self) -> list[Finished]:
        """Advance until at least one rollout in flight has finished; return every rollout that
        finished since the last call. Returns [] only when nothing is in flight."""

    @abc.abstractmethod
    def abort(self, rids) -> int:
        """Stop these rollouts (each must be in flight: an id that finished or was aborted is a
        ValueError, and so is part of a group's rollouts in flight: `_whole_groups`); return the
        completion tokens they had generated (added to `tokens`)."""

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
    """A stream's prompt as the engines take it: text as is, token ids as a list of ints (a
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
