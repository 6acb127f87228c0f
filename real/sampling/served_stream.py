"""Round-free sampling on running vLLM servers: `ServedStream`, the served `StreamSampler`.

`ServerEngine.open_stream(...)` opens one. Each rollout is its own streamed
`POST /v1/completions` (the token-id prompt the round path sends — a text prompt tokenised
here, token ids as given — n=1, its seed, logprobs=0,
return_token_ids, stream=True) sent to the server with the fewest rollouts in flight — the round
path's rule and counters (`ServerEngine.pick`). The requests are asyncio tasks on an event loop
in a thread of its own; the caller's thread adds, polls and aborts.

Why streamed: aborting a rollout cancels its task, which closes its connection, and vLLM turns
a client disconnect into an abort of the request — its `vllm:generation_tokens_total` stops
growing and `vllm:num_requests_running` drops (measured, tests/real/test_served_stream.py; the
abort is not counted in `request_success_total{finished_reason="abort"}`). Each streamed chunk
carries the new tokens, so what an aborted rollout had generated is known to the token *as
received*. That is exact for a finished rollout and a lower bound for an aborted one: the server
may have decoded a few tokens more — on the wire, or decoded before it noticed the disconnect —
that never reached us (the test bounds the gap against the server's own counter).

Seeds: a rollout with seed s is a request with n=1 and seed=s. vLLM seeds child i of a request
with seed + i, so this samples what the round path's request carrying s samples (tested).

Faults, as the round path: a timeout, a dropped connection, a 5xx or an error chunk is retried
(at most `retries` times, on another server when there is one), a 4xx is not; the tokens a
failed attempt had streamed were generated, so they are counted when the rollout ends. A rollout
that still fails makes `poll` raise the round path's one-line `ServerError` naming the server."""

import asyncio
import json
import threading
from dataclasses import dataclass, field

from real.sampling.results import Completion
from real.sampling.served import (
    ServerError,
    attempt_failure,
    choice_tokens,
    completion_body,
    server_message,
)
from real.sampling.streaming import Finished, StreamSampler


class _Failed(Exception):
    """An attempt the server answered with a fault (5xx, an error chunk, a torn stream)."""


@dataclass
class _Rollout:
    """One rollout in flight; written only by the loop thread while its task runs."""

    prompt_ids: list[int]
    seed: int | None
    task: asyncio.Task | None = None
    token_ids: list[int] = field(default_factory=list)  # streamed so far (this attempt)
    logprobs: list[float] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    finish: str | None = None
    lost: int = 0  # tokens streamed by attempts that failed (generated, so counted)

    def restart(self) -> None:
        self.lost += len(self.token_ids)
        self.token_ids, self.logprobs, self.text, self.finish = [], [], [], None

    def completion(self) -> Completion:
        text = "".join(self.text)
        return Completion(text, list(self.token_ids), list(self.logprobs), self.finish)


class ServedStream(StreamSampler):
    """Streamed rollouts over a `ServerEngine`'s servers. `ignore_eos`: every rollout runs to
    max_tokens (for measuring an engine, not for training)."""

    def __init__(self, engine, max_tokens, temperature=1.0, top_p=1.0, *, ignore_eos=False):
        import httpx

        super().__init__(max_tokens, temperature, top_p)
        self.engine, self.ignore_eos = engine, bool(ignore_eos)
        self.live: dict[int, _Rollout] = {}  # added, not yet returned by poll nor aborted
        self.done: dict[int, Finished] = {}  # finished on the server, not yet polled
        self.error: ServerError | None = None
        self.cv = threading.Condition()  # guards live, done, error
        self.next_id, self.closed = 0, False
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def client():  # built on the loop that uses it
            # pool=None: a rollout beyond the connection limit waits for one to finish (each
            # has its own read timeout), instead of failing as if a server had not answered
            timeout = httpx.Timeout(engine.timeout, connect=engine.connect_timeout, pool=None)
            return httpx.AsyncClient(
                timeout=timeout,
                limits=httpx.Limits(max_connections=engine.concurrency * len(engine.urls)),
            )

        self.http = self._call(client())

    def _call(self, coro):
        """Run `coro` on the stream's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    # ------------------------------------------------------------ the StreamSampler interface

    def _add(self, prompt, seed) -> int:
        if self.closed:
            raise ValueError("the stream is closed")
        ids = self.engine.prompt_ids(prompt)  # text tokenised, token ids as given
        ro = _Rollout(ids, seed)
        rid, self.next_id = self.next_id, self.next_id + 1
        with self.cv:
            self.live[rid] = ro
        self.loop.call_soon_threadsafe(self._start, rid, ro)
        return rid

    def poll(self) -> list[Finished]:
        with self.cv:
            while not self.done:
                if self.error is not None:
                    raise self.error
                if not self.live:
                    return []
                self.cv.wait(timeout=1.0)  # a timeout: Ctrl-C reaches a waiting caller
            out = list(self.done.values())  # in the order they finished
            self.done.clear()
            lost = sum(self.live.pop(f.rid).lost for f in out)
        self.finished += len(out)
        self.tokens += sum(f.completion.n_tokens for f in out) + lost
        return out

    def abort(self, rids) -> int:
        rids = [int(r) for r in rids]
        with self.cv:
            gone = [r for r in rids if r not in self.live]
        if gone or len(set(rids)) != len(rids):
            raise ValueError(f"abort: not in flight (ended, or repeated): {gone or rids}")
        got = self._call(self._abort(rids)) if rids else 0
        self.tokens += got
        self.aborted += len(rids)
        return got

    @property
    def in_flight(self) -> int:
        with self.cv:
            return len(self.live)

    def close(self) -> int:
        if self.closed:
            return 0
        with self.cv:
            rids = list(self.live)
        got = self.abort(rids)
        self._call(self.http.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
        self.closed = True
        return got

    # ------------------------------------------------------------ on the loop thread

    def _start(self, rid: int, ro: _Rollout) -> None:
        ro.task = self.loop.create_task(self._rollout(rid, ro))

    async def _abort(self, rids: list[int]) -> int:
        """Cancel the tasks (closing their connections) and count what each had streamed. A
        rollout that finished but was not polled yet is aborted all the same (it ends once)."""
        with self.cv:
            ros = [self.live[r] for r in rids]
        tasks = [ro.task for ro in ros if ro.task is not None and not ro.task.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with self.cv:
            for r in rids:
                del self.live[r]
                self.done.pop(r, None)
        return sum(len(ro.token_ids) + ro.lost for ro in ros)

    async def _rollout(self, rid: int, ro: _Rollout) -> None:
        try:
            await self._attempts(ro)
        except ServerError as e:
            with self.cv:
                self.error = self.error or e
                self.cv.notify_all()
            return
        with self.cv:
            self.done[rid] = Finished(rid, ro.prompt_ids, ro.completion())
            self.cv.notify_all()

    async def _attempts(self, ro: _Rollout) -> None:
        """The round path's retry rule (`ServerEngine._send`) for one streamed rollout."""
        import httpx

        eng, tried, why = self.engine, [], ""
        for attempt in range(eng.retries + 1):
            url = eng.pick(1, tried)
            try:
                await self._attempt(url, ro)
                with eng.lock:
                    eng.rollouts[url] += 1
                return
            except _Failed as e:
                why = str(e)
            except (httpx.TransportError, ValueError, KeyError, TypeError) as e:
                why = attempt_failure(e, eng.timeout)
            finally:
                with eng.lock:
                    eng.outstanding[url] -= 1
            with eng.lock:
                eng.failures[url] += 1
            tried.append(url)
            ro.restart()
            if attempt < eng.retries:
                await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
        raise ServerError(
            tried[-1],
            f"{why} (request failed {len(tried)} times; servers tried: {', '.join(tried)})",
        )

    async def _attempt(self, url: str, ro: _Rollout) -> None:
        settings = (self.max_tokens, self.temperature, self.top_p)
        body = completion_body(self.engine.served, ro.prompt_ids, 1, settings, ro.seed, stream=True)
        if self.ignore_eos:
            body["ignore_eos"] = True
        async with self.http.stream("POST", f"{url}/v1/completions", json=body) as r:
            if r.status_code != 200:
                await r.aread()
                if r.status_code < 500:  # our request is wrong: retrying cannot help
                    raise ServerError(
                        url, f"rejected a request: HTTP {r.status_code} {server_message(r)}"
                    )
                raise _Failed(f"HTTP {r.status_code}: {server_message(r)}")
            async for line in r.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    _take(json.loads(line[6:]), ro)
        if ro.finish is None:
            raise _Failed("the stream ended before the rollout finished")


def _take(chunk: dict, ro: _Rollout) -> None:
    """Append one server-sent chunk's tokens, logprobs and text to the rollout."""
    if "error" in chunk:  # vLLM reports a failure inside an open stream as an error chunk
        err = chunk["error"]
        raise _Failed(str(err.get("message", err) if isinstance(err, dict) else err))
    for c in chunk["choices"]:  # n=1: one choice per chunk
        toks, lps = choice_tokens(c)
        ro.token_ids += toks
        ro.logprobs += lps
        ro.text.append(c.get("text") or "")
        ro.finish = c.get("finish_reason") or ro.finish
