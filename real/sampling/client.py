"""Rollouts from running vLLM servers: the `VLLMEngine` interface over vLLM's OpenAI-compatible API.

`ServerEngine` is what `--engine-url URL[,URL...]` builds instead of the in-process `VLLMEngine`;
the collectors and the GRPO loop cannot tell them apart (same `generate` / `greedy` / `push_weights`
/ `check_fits`, `tokenizer`, `max_model_len`, `model`). One collector round = one `generate` call =
concurrent `POST /v1/completions` requests (token-id prompts, `n`, `seed`, `logprobs=0`,
`return_token_ids`) spread over the servers by outstanding rollouts: each request goes to the server
with the fewest rollouts in flight when it is sent, so a slower server simply gets less.

Seeds: vLLM seeds the i-th of the n children of a request with `seed + i`
(`vllm/v1/engine/parallel_sampling.py`). A run of consecutive per-rollout seeds s, s+1, ... is
therefore one request with n = run length and seed = s, and samples exactly what n single
requests would; other seeds go one request per rollout (the in-process engine does the same).

Faults: a request that times out, drops its connection or gets an HTTP 5xx is retried (at most
`retries` times, preferably on another server); its rollouts are recorded once, from the attempt
that answered, so nothing is counted twice. A 4xx is the caller's error and is not retried. When a
request still fails the round raises `ServerError` naming the server(s) and the cause; what the
other requests of that round returned is kept, keyed by (prompt, seed, settings), and a retried
round with the same seeds (a `--resume` replays the same seeds) reuses it instead of resampling.
Kept results are dropped when new weights are pushed.

Streams: `open_stream` gives the request-level interface of round-free collection
(``served_stream.ServerStreamEngine``): one SSE request per planned request of n rollouts (a
group), placed by the same rule and counters.

Weights: `push_weights` has every server reload a safetensors snapshot of the policy, undone on
every server if one fails (``push.WeightPush``)."""

import functools
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from real.sampling.engine import Completion, Engine, PromptResult
from real.sampling.push import WeightPush
from real.sampling.served import (  # parse_urls, ServerError: re-exported (callers import here)
    ServerError,
    attempt_failure,
    check_model,
    check_tokenizer,
    choice_tokens,
    completion_body,
    parse_urls,
    post_server,
    read_config,
    served_cards,
    server_message,
)
from real.sampling.served_stream import ServerStreamEngine


@dataclass
class _Wire:
    """One HTTP completion request: `n` rollouts of prompt `owner` from seed `seed` (or none)."""

    owner: int
    prompt_ids: list[int]
    n: int
    seed: int | None
    key: tuple


def _seed_runs(seeds: list[int]) -> list[tuple[int, int]]:
    """[(first seed, length)] of consecutive runs: each run is one request with n = length.

    >>> _seed_runs([7, 8, 9, 3, 5, 6])
    [(7, 3), (3, 1), (5, 2)]
    """
    runs = []
    for sd in seeds:
        if runs and sd == runs[-1][0] + runs[-1][1]:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((int(sd), 1))
    return runs


class ServerEngine(Engine):
    """An `Engine`: the client of one or more vLLM servers serving the same model."""

    def __init__(
        self,
        urls,
        *,
        model=None,
        timeout: float = 300.0,
        retries: int = 2,
        concurrency: int = 128,
        push_dir=None,
        connect_timeout: float = 10.0,
    ):
        import httpx

        self.urls = parse_urls(urls)
        self.timeout, self.retries = float(timeout), int(retries)
        self.concurrency, self.connect_timeout = int(concurrency), float(connect_timeout)
        self.http = httpx.Client(
            timeout=httpx.Timeout(self.timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=concurrency * len(self.urls)),
        )
        cards = served_cards(self.http, self.urls)  # one line for a dead or non-vLLM server
        self.served = cards[0]["id"]  # the name requests must carry
        self.served_root = str(cards[0].get("root") or self.served)  # what the servers loaded
        self.served_config = read_config(self.served_root)  # None: not readable here
        if model is not None:
            check_model(model, self.urls[0], self.served_root, self.served_config)
        root = Path(str(model or self.served_root)).expanduser()
        self.model = str(root)
        self.max_model_len = min(int(c.get("max_model_len") or 10**9) for c in cards)
        self.tokenizer = None
        if (root / "tokenizer_config.json").is_file() or (root / "tokenizer.json").is_file():
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(str(root))
            for url in self.urls:  # the client sends token ids: they must mean the same there
                tokenize = functools.partial(self._tokenize, url)
                check_tokenizer(self.tokenizer, tokenize, url, root, self.served_root)
        self._ids_cache: dict[str, list[int]] = {}
        workers = concurrency * len(self.urls)
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix="vllm-http")
        self.lock = threading.Lock()
        self.outstanding = dict.fromkeys(self.urls, 0)  # rollouts in flight per server
        self.requests = Counter()  # HTTP completion requests sent per server (retries included)
        self.rollouts = Counter()  # rollouts answered per server (each counted once)
        self.failures = Counter()  # failed attempts per server
        self.kept: dict[tuple, list[Completion]] = {}  # answers of a failed round, for its retry
        self.stream = None  # the latest open_stream (served_stream.ServerStreamEngine)
        self.pusher = WeightPush(
            self.http, self.urls, cards, self.served_root, self.served_config, push_dir
        )

    # ------------------------------------------------------------ HTTP helpers

    def _tokenize(self, url: str, text: str) -> list[int]:
        answer = post_server(self.http, url, "/tokenize", json={"prompt": text})
        return list(answer.json()["tokens"])

    def prompt_ids(self, prompt) -> list[int]:
        """The token ids sent for `prompt`. Text: the model's tokenizer when it is on this machine,
        else the first server's /tokenize (cached). Token ids — a list, or vLLM's TokensPrompt
        dict `{"prompt_token_ids": ids}` that the in-process engine takes (TRL's prompts) — are
        sent as they are: re-tokenising their decoded text need not give the same ids back."""
        if not isinstance(prompt, str):
            ids = prompt.get("prompt_token_ids") if isinstance(prompt, dict) else prompt
            if not isinstance(ids, (list, tuple)):
                raise TypeError(f"a prompt is text or token ids, not {type(prompt).__name__}")
            return [int(t) for t in ids]
        ids = self._ids_cache.get(prompt)
        if ids is None:
            if self.tokenizer is not None:
                ids = list(self.tokenizer(prompt)["input_ids"])
            else:
                ids = self._tokenize(self.urls[0], prompt)
            if len(self._ids_cache) > 100_000:  # fresh prompts without end: keep memory bounded
                self._ids_cache.clear()
            self._ids_cache[prompt] = ids
        return ids

    def pick(self, n: int, avoid: list[str]) -> str:
        """The server with the fewest rollouts in flight (avoiding ones that just failed)."""
        with self.lock:
            pool = [u for u in self.urls if u not in avoid] or self.urls
            url = min(pool, key=lambda u: (self.outstanding[u], self.rollouts[u]))
            self.outstanding[url] += n
            self.requests[url] += 1
        return url

    def _send(self, w: _Wire, body: dict) -> list[Completion]:
        import httpx

        tried, why = [], ""
        for attempt in range(self.retries + 1):
            url = self.pick(w.n, tried)
            try:
                r = self.http.post(f"{url}/v1/completions", json=body)
                if r.status_code == 200:
                    out = _parse(r.json(), w.n)
                    with self.lock:
                        self.rollouts[url] += w.n
                    return out
                if r.status_code < 500:  # our request is wrong: retrying cannot help
                    raise ServerError(
                        url, f"rejected a request: HTTP {r.status_code} {server_message(r)}"
                    )
                why = f"HTTP {r.status_code}: {server_message(r)}"
            except (httpx.TransportError, ValueError, KeyError, TypeError) as e:  # torn JSON too
                why = attempt_failure(e, self.timeout)
            finally:
                with self.lock:
                    self.outstanding[url] -= w.n
            with self.lock:
                self.failures[url] += 1
            tried.append(url)
            if attempt < self.retries:
                time.sleep(min(0.2 * 2**attempt, 2.0))
        raise ServerError(
            tried[-1],
            f"{why} (request failed {len(tried)} times; servers tried: {', '.join(tried)})",
        )

    # ------------------------------------------------------------ the VLLMEngine interface

    context = "server's context"

    def n_tokens(self, prompt) -> int:
        return len(self.prompt_ids(prompt))

    def _generate(self, prompts, n_per_prompt, settings, seeds) -> list[PromptResult]:
        """All requests of the round in flight at once over every server (see
        Engine.generate)."""
        results = [PromptResult(p, self.prompt_ids(p)) for p in prompts]
        wires = []
        for i, n in enumerate(n_per_prompt):
            if n <= 0:
                continue
            ids = results[i].prompt_token_ids
            if seeds is None:
                wires.append(_Wire(i, ids, int(n), None, ()))
                continue
            for sd, length in _seed_runs(seeds[i]):
                wires.append(_Wire(i, ids, length, sd, (tuple(ids), sd, length, settings)))
        answers = self._run(wires, settings)
        for w, comps in zip(wires, answers, strict=True):
            results[w.owner].completions.extend(comps)
        return results

    def _run(self, wires: list[_Wire], settings) -> list[list[Completion]]:
        max_tokens, temperature, top_p = settings
        answers: list = [None] * len(wires)
        futures = {}
        for j, w in enumerate(wires):
            if w.key and w.key in self.kept:  # answered in a round that failed: not resampled
                answers[j] = self.kept[w.key]
                continue
            settings = (max_tokens, temperature, top_p)
            body = completion_body(self.served, w.prompt_ids, w.n, settings, w.seed)
            futures[self.executor.submit(self._send, w, body)] = j
        wait(futures)
        errors = []
        for fut, j in futures.items():
            if fut.exception() is None:
                answers[j] = fut.result()
            else:
                errors.append(fut.exception())
        if errors:
            for w, a in zip(wires, answers):  # keep every answer for the round's retry
                if a is not None and w.key:
                    self.kept[w.key] = a
            err = errors[0]
            note = (
                f"; {len(errors)} of {len(wires)} requests failed, "
                f"{sum(a is not None for a in answers)} answered and kept"
            )
            raise ServerError(getattr(err, "url", "?"), str(err).split(": ", 1)[-1] + note) from err
        for w in wires:
            self.kept.pop(w.key, None)
        return answers

    def greedy(self, prompts: list[str], max_tokens: int) -> list[PromptResult]:
        res = self.generate(prompts, [1] * len(prompts), max_tokens=max_tokens, temperature=0.0)
        return res

    def open_stream(self, max_tokens: int, temperature: float = 1.0, top_p: float = 1.0):
        """A `StreamEngine` over these servers: one SSE request per group of rollouts
        (`add_group`; n choices), aborted by closing its connection
        (``served_stream.ServerStreamEngine``)."""
        self.stream = ServerStreamEngine(self, max_tokens, temperature, top_p)
        return self.stream

    def push_weights(self, model) -> None:
        """Have every server serve the torch policy's weights (``push.WeightPush``); answers kept
        from a failed round are dropped: they came from the old weights."""
        if self.stream is not None and self.stream.in_flight:  # rollouts would change policy
            raise RuntimeError("push_weights while a stream has rollouts in flight: close it first")
        self.pusher.push(model)
        self.kept.clear()

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.http.close()


def _parse(body: dict, n: int) -> list[Completion]:
    choices = sorted(body["choices"], key=lambda c: c["index"])
    if len(choices) != n:
        raise ValueError(f"{len(choices)} choices for n={n}")
    out = []
    for c in choices:
        c["token_ids"]  # noqa: B018  (a whole answer must carry its token ids: KeyError as before)
        toks, lps = choice_tokens(c)
        out.append(Completion(c["text"], toks, lps, c.get("finish_reason")))
    return out
