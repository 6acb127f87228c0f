"""Argument checks that run before anything heavy starts, so a bad flag costs a second and one
line (sara_sim.core.errors.ParameterError names the parameter, its value and the allowed range),
never
a traceback after an engine has spent minutes starting.

`check_config` checks every field of a `real.train.Config` (its GRPO and allocator sections
included), builds the run's task and collector (once: the run uses them), then checks resources
and the run folder (`real/runfolder.py`): a request whose memory would not fit this machine is
refused unless `--force`."""

import os
import re
from pathlib import Path
from typing import NamedTuple

from real.config import INFORMED, SEED_MAX, build_collector, check_seed, flag_of  # noqa: F401
from real.runfolder import check_run_folder, check_writable  # noqa: F401  (re-exported)
from real.tasks import TASKS
from sara_sim.core.errors import (
    ParameterError,
    check_choice,
    check_float,
    check_int,
    check_k,
    check_schedule,
)
from sara_sim.core.registry import names, row

ALLOCATORS = names("real")  # sara_sim.core.registry: the one list of strategies
FINITE_OPTION = ("arithmetic", "countdown", "reasoning")  # generated: take --task-size
DTYPES = ("float32", "bfloat16", "float16", "auto")


def check_allocator(name: str, flag: str = "--allocator") -> str:
    return row(name, "real", flag).name


class Checked(NamedTuple):
    """What check_config built on the way: the run's task and its collector (built once)."""

    task: object
    collector: object


# ---------------------------------------------------------------- the whole config


def check_config(cfg) -> Checked:
    """Every field of `cfg`, then model, task files, the collector, resources and the run
    folder; returns the task and collector the run then uses."""
    check_task_files(cfg.task, cfg.task_path, cfg.eval_path)
    check_allocator(cfg.allocator)
    check_choice(cfg.trainer, "--trainer", ("native", "trl"))
    if cfg.task_size is not None:
        check_int(cfg.task_size, "--task-size", 1)
        if cfg.task not in FINITE_OPTION:
            raise ParameterError(
                "--task-size",
                f"only {' and '.join(FINITE_OPTION)} take a pool size (task {cfg.task})",
            )
    if cfg.allocator in INFORMED and cfg.task in FINITE_OPTION and not cfg.task_size:
        raise ParameterError(
            "--task-size", f"{cfg.allocator} learns from revisits: give a finite pool (>= 1)"
        )
    if cfg.eval_size is not None:
        check_int(cfg.eval_size, "--eval-size", 1)
        if cfg.task not in FINITE_OPTION:
            raise ParameterError(
                "--eval-size", f"only {' and '.join(FINITE_OPTION)} generate a held-out set"
            )
    if cfg.task_seed is not None:
        check_seed(cfg.task_seed, "--task-seed")
    check_k(cfg.k, "--k")
    check_ints(cfg, groups=1, steps=1, eval_every=1, eval_samples=1, ckpt_every=1)
    check_ints(cfg, audit_abandoned=0)
    check_seed(cfg.seed)
    for flag, v in (
        ("--max-tokens", cfg.max_tokens),
        ("--eval-problems", cfg.eval_problems),
        ("--max-model-len", cfg.max_model_len),
    ):
        if v is not None:
            check_int(v, flag, 1)
    check_float(cfg.temperature, "--temperature", 0.0, lo_open=True)
    if cfg.gpu_memory_utilization is not None:
        check_float(cfg.gpu_memory_utilization, "--gpu-memory-utilization", 0.0, 1.0, lo_open=True)
    check_choice(cfg.dtype, "--dtype", DTYPES)
    _check_device(cfg.device)
    if cfg.engine_url is not None:  # the door (real/served.py): one HTTP call per server
        from real.served import check_servers

        check_servers(cfg.engine_url, cfg.model)
    check_grpo(cfg.grpo)
    if cfg.trainer == "trl":
        from real.trl_run import check_trl_config  # light: no torch / trl import

        check_trl_config(cfg)
    check_alloc(cfg.alloc, cfg.k)
    task = _task(cfg)
    try:  # what only the whole collector can judge: tau_high > tau_low, capacity >= k, ...
        collector = build_collector(
            cfg.allocator, cfg.alloc, k=cfg.k, groups=cfg.groups, seed=cfg.seed,
            epoch_size=task.size,
        )  # fmt: skip
    except ParameterError as e:
        raise ParameterError(flag_of(e.parameter), str(e)[len(e.parameter) + 2 :]) from None
    n_eval = len(task.eval_problems())
    if cfg.eval_problems is not None and cfg.eval_problems > n_eval:
        raise ParameterError(
            "--eval-problems",
            f"must be in [1, {n_eval}] (the {cfg.task} task's held-out set), "
            f"got {cfg.eval_problems}",
        )
    if cfg.model is not None:
        resolve_model(cfg.model, build=False)
    check_memory(cfg, task)
    check_run_folder(cfg)
    return Checked(task, collector)


def check_grpo(g) -> None:
    """The GRPO section (real.config.GRPOConfig)."""
    check_float(g.lr, "--lr", 0.0, 1.0, lo_open=True)
    _check_pair(g.betas, "--betas", "two numbers B1,B2 in [0, 1)", 0.0, 1.0, hi_open=True)
    check_float(g.weight_decay, "--weight-decay", 0.0)
    check_float(g.eps_low, "--eps-low", 0.0, 1.0, hi_open=True)  # ratio floor 1 - eps_low > 0
    check_float(g.eps_high, "--eps-high", 0.0)
    check_float(g.kl_coef, "--kl-coef", 0.0)
    check_float(g.max_grad_norm, "--max-grad-norm", 0.0, lo_open=True)
    check_choice(g.old_logprobs, "--old-logprobs", ("engine", "recompute"))
    check_ints(g, epochs=1, minibatches=1, micro_batch=0)


def check_alloc(a, k: int) -> None:
    """The allocator section (real.config.AllocatorConfig), every field whichever allocator
    runs (a compare runs several on one config); cross-field rules are the collector's."""
    from sara_sim.core.informed import RULES

    check_float(a.tau_low, "--tau-low", 0.0, 1.0)
    if a.tau_high is not None:
        check_float(a.tau_high, "--tau-high", 0.0, 1.0)
    _check_pair(a.prior, "--prior", "two numbers A0,B0 > 0", 0.0, None, lo_open=True)
    for flag, v in (("--capacity", a.capacity), ("--gen-batch-size", a.gen_batch_size)):
        if v is not None:
            check_int(v, flag, 1)
    check_schedule(a.probe, a.increment, k)  # --probe / --increment in [0, k]
    check_ints(a, max_rounds=1, eb_window=1, max_num_gen_batches=0, max_skip=0)
    check_choice(a.rule, "--rule", RULES)
    check_float(a.rho, "--rho", 0.0, 1.0, lo_open=True)  # 0 would forget everything
    check_float(a.kappa, "--kappa", 0.0, lo_open=True)
    check_float(a.explore, "--explore", 0.0, 1.0)
    check_float(a.selector_ratio, "--selector-ratio", 1.0)
    check_float(a.selector_target, "--selector-target", 0.0, 1.0)


def check_ints(obj, **lowest) -> None:
    """`obj.<name>` is an integer >= lowest[name] for each name (the error names its flag)."""
    for name, lo in lowest.items():
        check_int(getattr(obj, name), flag_of(name), lo)


def _check_pair(v, flag: str, what: str, lo, hi, lo_open=False, hi_open=False) -> None:
    if not isinstance(v, tuple | list) or len(v) != 2:
        raise ParameterError(flag, f"must be {what}, got {v!r}")
    for x in v:
        check_float(x, flag, lo, hi, lo_open=lo_open, hi_open=hi_open)


def check_task_files(task: str, task_path=None, eval_path=None) -> None:
    """A known task; data files only for the math task, and files, not folders."""
    check_choice(task, "--task", TASKS)
    for flag, path in (("--task-path", task_path), ("--eval-path", eval_path)):
        if path and task != "math":
            raise ParameterError(flag, f"only the math task reads a file (task is {task})")
        if path and Path(path).is_dir():
            raise ParameterError(flag, f"{path} is a directory, not a JSONL file")
        if path and not Path(path).is_file():
            raise ParameterError(flag, f"no such file: {path}")


def _task(cfg):
    from real.train import make_run_task

    try:
        return make_run_task(cfg)
    except (OSError, ValueError, KeyError) as e:  # a malformed JSONL file
        if isinstance(e, ParameterError):
            raise
        raise ParameterError("--task-path", f"cannot read the {cfg.task} data: {e}") from None


def _check_device(device: str) -> None:
    if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise ParameterError("--device", f"must be auto, cpu, cuda or cuda:N, got {device!r}")
    if device.startswith("cuda"):
        import torch

        n = torch.cuda.device_count()
        idx = int(device.split(":")[1]) if ":" in device else 0
        if idx >= n:
            raise ParameterError("--device", f"{device} requested but this machine has {n} GPUs")


# ---------------------------------------------------------------- resources


def check_memory(cfg, task) -> None:
    """Refuse a step whose host memory cannot fit (unless --force): the engine's results for one
    round (~200 B per generated token in Python objects) plus the training forward's fp32 logits,
    their log-softmax and gradient (3 x sequences x length x vocab x 4 B), against 70 % of RAM.
    On a CUDA device the logits live on the GPU, so only the rollout pool is counted."""
    if cfg.force:
        return
    tokens = cfg.max_tokens or task.max_tokens
    per_round = cfg.alloc.capacity or (cfg.alloc.gen_batch_size or cfg.groups) * cfg.k
    longest_prompt = max(len(p.prompt) for p in task.eval_problems())  # chars >= tokens
    pool = 2 * per_round * tokens * 200  # a step holds about two rounds' worth
    micro = cfg.grpo.micro_batch
    seqs = min(micro or cfg.groups * cfg.k, cfg.groups * cfg.k)
    train = 3 * seqs * (longest_prompt + tokens) * _vocab(cfg.model) * 4
    if cfg.device not in ("cpu", "auto") or _cuda_for_auto(cfg.device):
        train = 0
    need, have = pool + train, 0.7 * _ram_bytes()
    if need > have:
        raise ParameterError(
            "--k",
            f"k={cfg.k} x groups={cfg.groups} (max-tokens {tokens}, micro-batch "
            f"{micro or 'all'}) needs ~{need / 2**30:.1f} GiB, over 70 % of this "
            f"machine's {_ram_bytes() / 2**30:.0f} GiB; lower them, set --micro-batch, or --force",
        )


def _cuda_for_auto(device: str) -> bool:
    if device != "auto":
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _vocab(model) -> int:
    import json

    from real.tiny import CHARS, SPECIALS

    if model is None:
        return len(SPECIALS) + len(CHARS)
    p = Path(resolve_model(model, build=False))
    cfg_file = p / "config.json" if p.is_dir() else None
    if cfg_file is None:  # a cached hub id
        from huggingface_hub import try_to_load_from_cache

        cfg_file = Path(try_to_load_from_cache(str(model), "config.json"))
    try:
        return int(json.loads(cfg_file.read_text()).get("vocab_size", 0)) or 32000
    except (OSError, ValueError):
        raise ParameterError("--model", f"{cfg_file} is not a readable model config") from None


# ---------------------------------------------------------------- the model


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
