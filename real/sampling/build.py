"""The rollout engine of a run: an in-process vLLM engine, or running vLLM servers
(`--engine-url`). Tests and compare swap it here (`real.sampling.build.make_engine`), the one
place every trainer asks for one."""

from real.base.config import Config
from real.sampling import engine as _engine  # the module, so a test may swap VLLMEngine in it
from real.sampling.client import ServerEngine


def make_engine(cfg: Config, model_dir):
    """The rollout engine for a run (compare builds one and shares it between runs)."""
    if cfg.engine.engine_url:  # running vLLM servers instead of an in-process engine
        return ServerEngine(cfg.engine.engine_url, model=model_dir)
    kw = {}
    if cfg.engine.gpu_memory_utilization:
        kw["gpu_memory_utilization"] = cfg.engine.gpu_memory_utilization
    return _engine.VLLMEngine(
        model_dir,
        seed=cfg.seed,
        dtype=cfg.engine.dtype,
        max_model_len=cfg.engine.max_model_len,
        # engine logprobs are the old policy's only if they include the temperature
        logprobs_mode="raw_logprobs" if cfg.engine.temperature == 1.0 else "processed_logprobs",
        **kw,
    )
