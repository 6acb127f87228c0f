"""Round-free sampling on running vLLM servers: `ServerStreamEngine`, the served `StreamEngine`.

`ServerEngine.open_stream(...)` opens one. Each group (`add_group`; a single `add` is a group of
one) is one SSE `POST /v1/completions` (the token-id prompt the round path sends — a text prompt
tokenised here, token ids as given — n, its seed, logprobs=0, return_token_ids, stream=True) sent to
the server with the fewest rollouts in flight — the round path's rule and counters
(`ServerEngine.pick`). The n choices' chunks arrive interleaved, told apart by `index`; a rollout
finishes when its choice's finish_reason arrives, and is returned by `poll` then, while the group's
other choices go on. One request per group, not per rollout: the client's cost (an HTTP request and
an SSE stream each) was most of a served stream's wall time (benchmarks/stream_real_served.out.txt).
The requests are asyncio tasks on an event loop in a thread of its own, made with aiohttp (the
client vLLM's own serving benchmarks use); the caller's thread adds, polls and aborts. Not httpx,
which the round path uses: its connection pool (httpcore 1.0.9) walks every pooled connection, and
for each idle one counts the pool again and polls its socket, at every request's start and end —
quadratic in the connections, and a stream holds hundreds. Profiled (py-spy, GIL samples) on the
reasoning benchmark, that bookkeeping was ~60 % of this thread's CPU; with aiohttp sara-auto's
client CPU per effective group fell from 0.053 s to ~0.016 s
(benchmarks/investigations/stream_real).

Why SSE: aborting a group (whole: `StreamEngine._whole_groups`) cancels its task, which
closes its connection, and vLLM turns a client disconnect into an abort of the request — its
`vllm:generation_tokens_total` stops growing and `vllm:num_requests_running` drops (measured,
tests/real/test_served_stream.py; the abort is not counted in
`request_success_total{finished_reason="abort"}`). Each SSE chunk carries the new tokens, so what an
aborted rollout had generated is known to the token *as received*. That is exact for a finished
rollout and a lower bound for an aborted one: the server may have decoded tokens more — held back
for the next chunk, on the wire, or decoded before it noticed the disconnect — that never reached us
(the test bounds the gap against the server's own counter).

A chunk every `STREAM_INTERVAL` tokens (and at a choice's first token and its end: the request's
``stream_interval``), not every token: the client's Python per chunk was a served stream's main
cost; the price is a looser lower bound for an aborted rollout (up to `STREAM_INTERVAL` - 1
tokens held back by the server, besides the in-transit ones).

Seeds: a group with seed s is a request with n and seed=s. vLLM seeds child i of a request with
seed + i, so its rollout i samples what the round path's request carrying s + i samples (tested).

Faults, as the round path: a timeout, a dropped connection, a 5xx or an error chunk is retried
(at most `retries` times, on another server when there is one), a 4xx is not. A retry resends
the whole group: its finished choices stay as they were (the server re-streams them: counted,
as is everything a failed attempt had streamed — it was generated). A rollout
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
    error_message,
)
from real.sampling.streaming import Finished, StreamEngine

STREAM_INTERVAL = 8  # tokens per streamed chunk (see the module docstring)


class _Failed(Exception):
    """An attempt the server answered with a fault (5xx, an error chunk, a torn stream)."""


@dataclass
class _Choice:
    """One rollout of a group: what its choice has streamed (this attempt)."""

    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    finish: str | None = None
    lost: int = 0  # tokens streamed by attempts that failed (generated, so counted)

    def completion(self) -> Completion:
        text = "".join(self.text)
        return Completion(text, list(self.token_ids), list(self.logprobs), self.finish)


@dataclass
class _Group:
    """One request in flight: n rollouts with ids first..first+n-1; written only by the loop
    thread while its task runs."""

    first: int
    prompt_ids: list[int]
    seed: int | None
    choices: list[_Choice]
    task: asyncio.Task | None = None
    ended: set = field(default_factory=set)  # choice indexes that finished (any attempt)
    redone: int = 0  # tokens re-streamed for choices that had finished (a retry resends all)
    last: int | None = None  # the choice that finished last (set when all have)

    def restart(self) -> None:
        """A failed attempt: the unfinished choices start over; finished ones stay finished."""
        for i, c in enumerate(self.choices):
            if i not in self.ended:
                c.lost += len(c.token_ids)
                c.token_ids, c.logprobs, c.text, c.finish = [], [], [], None


class ServerStreamEngine(StreamEngine):
    """Streamed rollouts over a `ServerEngine`'s servers. `ignore_eos`: every rollout runs to
    max_tokens (for measuring an engine, not for training); `stop`: a rollout also ends at these
    strings (with ignore_eos: rollouts of one group that end at different lengths, for testing an
    abort of a group that has finished in part)."""

    def __init__(
        self, engine, max_tokens, temperature=1.0, top_p=1.0, *, ignore_eos=False, stop=()
    ):
        import aiohttp

        super().__init__(max_tokens, temperature, top_p)
        self.engine, self.ignore_eos = engine, bool(ignore_eos)
        self.stop = [str(x) for x in stop]
        self.live: dict[int, _Group] = {}  # added, not yet returned by poll nor aborted
        self.done: dict[int, Finished] = {}  # finished on the server, not yet polled
        self.error: ServerError | None = None
        self.cv = threading.Condition()  # guards live, done, error and the group books
        self.closed = False
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def client():  # built on the loop that uses it
            # aiohttp, not httpx: httpcore's pool (1.0.9) rescans every pooled connection — and
            # polls each idle socket — at every request start and end, O(connections^2) with
            # hundreds in flight; it was most of this thread's CPU (profiled, the module
            # docstring). connect=None: a rollout beyond the connection limit waits for one to
            # finish (each has its own read timeout) instead of failing as if a server had not
            # answered; read_bufsize: a chunk's line may exceed aiohttp's 64 KiB default
            timeout = aiohttp.ClientTimeout(
                total=None,
                connect=None,
                sock_connect=engine.connect_timeout,
                sock_read=engine.timeout,
            )
            limit = engine.concurrency * len(engine.urls)
            return aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit),
                timeout=timeout,
                read_bufsize=2**20,
            )

        self.http = self._call(client())

    def _call(self, coro):
        """Run `coro` on the stream's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    # ------------------------------------------------------------ the StreamEngine interface

    def _add_group(self, prompt, seed, n) -> list[int]:
        if self.closed:
            raise ValueError("the stream is closed")
        ids = self.engine.prompt_ids(prompt)  # text tokenised, token ids as given
        with self.cv:
            rids = self._open_group(n)
            g = _Group(rids[0], ids, seed, [_Choice() for _ in range(n)])
            self.live.update(dict.fromkeys(rids, g))
        self.loop.call_soon_threadsafe(self._start, g)
        return rids

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
            extra = sum(self._end(f.rid) for f in out)
        self.finished += len(out)
        self.tokens += sum(f.completion.n_tokens for f in out) + extra
        return out

    def abort(self, rids) -> int:
        with self.cv:
            groups = self._whole_groups(rids)
        got = self._call(self._abort(groups)) if groups else 0
        self.tokens += got
        self.aborted += sum(len(rs) for rs in groups.values())
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
        self._call(self.http.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
        self.closed = True
        return got

    def _end(self, rid: int) -> int:
        """Forget an ended rollout (under `cv`); returns the tokens it cost beyond its
        completion: its failed attempts', and once its group has ended, the group's re-streamed
        ones."""
        g = self.live.pop(rid)
        _, last = self._close(rid)
        return g.choices[rid - g.first].lost + (g.redone if last else 0)

    # ------------------------------------------------------------ on the loop thread

    def _start(self, g: _Group) -> None:
        g.task = self.loop.create_task(self._group(g))

    async def _abort(self, groups: dict) -> int:
        """Cancel the groups' tasks (closing their connections) and count what each rollout had
        streamed. A rollout that finished but was not polled yet is aborted all the same (it
        ends once)."""
        with self.cv:
            gs = [self.live[rs[0]] for rs in groups.values()]
        tasks = [g.task for g in gs if g.task is not None and not g.task.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        made = 0
        with self.cv:
            for rs in groups.values():
                for r in rs:
                    g = self.live[r]
                    made += len(g.choices[r - g.first].token_ids) + self._end(r)
                    self.done.pop(r, None)
        return made

    async def _group(self, g: _Group) -> None:
        try:
            await self._attempts(g)
        except ServerError as e:
            with self.cv:
                self.error = self.error or e
                self.cv.notify_all()
            return
        # the last choice is handed over only now, after the engine's books: a caller that has
        # every rollout back sees the servers' counters settled
        self._finished(g, g.last)

    async def _attempts(self, g: _Group) -> None:
        """The round path's retry rule (`ServerEngine._send`) for one streamed group."""
        import aiohttp

        eng, tried, why, n = self.engine, [], "", len(g.choices)
        for attempt in range(eng.retries + 1):
            url = eng.pick(n, tried)
            try:
                await self._attempt(url, g)
            except _Failed as e:
                why = str(e)
            except (
                aiohttp.ClientError,
                TimeoutError,
                ValueError,
                KeyError,
                TypeError,
                IndexError,
            ) as e:
                why = attempt_failure(e, eng.timeout)
            finally:
                with eng.lock:
                    eng.outstanding[url] -= n
            if g.last is not None:  # every choice finished (a fault after that changes nothing)
                with eng.lock:
                    eng.rollouts[url] += n
                return
            with eng.lock:
                eng.failures[url] += 1
            tried.append(url)
            g.restart()
            if attempt < eng.retries:
                await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
        raise ServerError(
            tried[-1],
            f"{why} (request failed {len(tried)} times; servers tried: {', '.join(tried)})",
        )

    async def _attempt(self, url: str, g: _Group) -> None:
        settings = (self.max_tokens, self.temperature, self.top_p)
        n = len(g.choices)
        body = completion_body(self.engine.served, g.prompt_ids, n, settings, g.seed, stream=True)
        body["stream_interval"] = STREAM_INTERVAL
        if self.ignore_eos:
            body["ignore_eos"] = True
        if self.stop:
            body["stop"] = self.stop
        async with self.http.post(f"{url}/v1/completions", json=body) as r:
            if r.status != 200:
                text = await r.text()
                why = error_message(text, r.headers.get("content-type", ""))
                if r.status < 500:  # our request is wrong: retrying cannot help
                    raise ServerError(url, f"rejected a request: HTTP {r.status} {why}")
                raise _Failed(f"HTTP {r.status}: {why}")
            try:
                async for raw in r.content:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("data: ") and line != "data: [DONE]":
                        ended = self._take(json.loads(line[6:]), g)
                        if ended and len(g.ended) == n:  # `_group` hands it once booked
                            ended, g.last = ended[:-1], ended[-1]
                        for i in ended:
                            self._finished(g, i)
            except BaseException:
                r.close()  # not back to the pool: the server sees the disconnect and aborts
                raise
        if g.last is None:
            raise _Failed("the stream ended before the rollout finished")

    def _take(self, chunk: dict, g: _Group) -> list[int]:
        """Append one server-sent chunk's tokens, logprobs and text to its choices (told apart
        by `index`: a group's choices arrive interleaved); returns the choices it finished."""
        if "error" in chunk:  # vLLM reports a failure inside an open stream as an error chunk
            err = chunk["error"]
            raise _Failed(str(err.get("message", err) if isinstance(err, dict) else err))
        ended = []
        for c in chunk["choices"]:
            i = int(c.get("index", 0))
            toks, lps = choice_tokens(c)
            if i in g.ended:  # a retry re-streams a finished choice: generated, so counted
                g.redone += len(toks)
                continue
            ch = g.choices[i]
            ch.token_ids += toks
            ch.logprobs += lps
            ch.text.append(c.get("text") or "")
            ch.finish = c.get("finish_reason") or ch.finish
            if ch.finish is not None:
                g.ended.add(i)
                ended.append(i)
        return ended

    def _finished(self, g: _Group, i: int) -> None:
        """Choice i of `g` finished: hand it to `poll`."""
        rid = g.first + i
        with self.cv:
            self.done[rid] = Finished(rid, g.prompt_ids, g.choices[i].completion())
            self.cv.notify_all()
