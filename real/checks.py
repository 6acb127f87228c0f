"""Argument checks that run before anything heavy is imported, so a bad flag costs a second and
one line (sara_sim.errors.ParameterError names the parameter), never a traceback or an engine."""

from pathlib import Path

from real.tasks import TASKS
from sara_sim.errors import ParameterError, check_k, check_unit

ALLOCATORS = (
    "uniform",
    "ds",
    "sara",
    "sara-eb",
    "sara-auto",
    "sara-history",
    "sara-mopps",
    "sara-dps",
)
INFORMED = ("sara-history", "sara-mopps", "sara-dps")  # need a finite task: ids revisit prompts


def check_allocator(name: str, flag: str = "--allocator") -> str:
    if name not in ALLOCATORS:
        raise ParameterError(
            flag, f"unknown allocator {name!r}; choose from {', '.join(ALLOCATORS)}"
        )
    return name


def _positive_int(v, flag: str) -> int:
    if isinstance(v, bool) or int(v) != v or v < 1:
        raise ParameterError(flag, f"must be an integer >= 1, got {v!r}")
    return int(v)


def check_config(cfg) -> None:
    if cfg.task not in TASKS:
        raise ParameterError(
            "--task", f"unknown task {cfg.task!r}; choose one of {', '.join(TASKS)}"
        )
    check_allocator(cfg.allocator)
    if getattr(cfg, "trainer", "native") not in ("native", "trl"):
        raise ParameterError("--trainer", f"must be native or trl, got {cfg.trainer!r}")
    if getattr(cfg, "trainer", "native") == "trl":
        from real.trl_run import check_trl_config  # light: no torch / trl import

        check_trl_config(cfg)
    if cfg.allocator in INFORMED and cfg.task == "arithmetic" and not cfg.task_size:
        raise ParameterError(
            "--task-size", f"{cfg.allocator} learns from revisits: give a finite pool (>= 1)"
        )
    if cfg.task_size is not None and (int(cfg.task_size) != cfg.task_size or cfg.task_size < 0):
        raise ParameterError("--task-size", f"must be an integer >= 0, got {cfg.task_size!r}")
    check_k(cfg.k, "--k")
    for flag, v in (
        ("--groups", cfg.groups),
        ("--steps", cfg.steps),
        ("--eval-every", cfg.eval_every),
        ("--eval-samples", cfg.eval_samples),
        ("--ckpt-every", cfg.ckpt_every),
        ("--minibatches", cfg.minibatches),
        ("--epochs", cfg.epochs),
    ):
        _positive_int(v, flag)
    if cfg.max_tokens is not None:
        _positive_int(cfg.max_tokens, "--max-tokens")
    check_unit(cfg.tau_low, "--tau-low")
    from sara_sim.allocator import make_collector  # its own checks: prior, capacity, tau_high

    make_collector(
        cfg.allocator, k=cfg.k, groups=cfg.groups, tau_low=cfg.tau_low, tau_high=cfg.tau_high,
        prior=cfg.prior, capacity=cfg.capacity, gen_batch_size=cfg.gen_batch_size,
        max_num_gen_batches=cfg.max_num_gen_batches, seed=cfg.seed,
    )  # fmt: skip
    if not cfg.temperature > 0:
        raise ParameterError("--temperature", f"must be > 0, got {cfg.temperature!r}")
    if cfg.old_logprobs not in ("engine", "recompute"):
        raise ParameterError(
            "--old-logprobs", f"must be engine or recompute, got {cfg.old_logprobs!r}"
        )
    for flag, path in (("--task-path", cfg.task_path), ("--eval-path", cfg.eval_path)):
        if path and cfg.task != "math":
            raise ParameterError(flag, f"only the math task reads a file (task is {cfg.task})")
        if path and not Path(path).is_file():
            raise ParameterError(flag, f"no such file: {path}")
    if cfg.model is not None:
        resolve_model(cfg.model, build=False)
    out = Path(cfg.out)
    has_run = (out / "checkpoint.pt").exists() or (out / "metrics.jsonl").exists()
    if has_run and not (cfg.resume or cfg.overwrite):
        raise ParameterError(
            "--out",
            f"{out} already holds a run; pass --resume to continue it or --overwrite to start over",
        )


def resolve_model(model, progress: bool = False, build: bool = True):
    """A local HF directory, a hub id already in the local cache, or (None) the tiny default."""
    if model is None:
        if not build:
            return None
        from real.tiny import build_tiny

        return build_tiny(progress=progress)
    p = Path(model).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ParameterError(
                "--model", f"{model} is a directory without config.json (not an HF-format model)"
            )
        return p
    if p.exists():
        raise ParameterError("--model", f"{model} is a file, not a model directory")
    if _in_hub_cache(str(model)):
        return str(model)
    raise ParameterError(
        "--model",
        f"no model directory {model!r}, and no cached hub model of that name (downloads are off)",
    )


def _in_hub_cache(repo_id: str) -> bool:
    if repo_id.count("/") != 1 or repo_id.startswith((".", "/", "~")):
        return False
    from real import _env  # noqa: F401  (HF_HOME)

    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a malformed id is simply not cached
        return False
