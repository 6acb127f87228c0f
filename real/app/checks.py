"""Argument checks that run before anything heavy starts, so a bad flag costs a second and one
line (sara_sim.core.errors.ParameterError names the parameter, its value and the allowed range),
never a traceback after an engine has spent minutes starting.

`check_config` checks every field of a `real.base.config.Config` (the pure checks are
`real/base/validate.py`'s), builds the run's task and collector (once: the run uses them), then
checks what needs the machine: the device, servers, the model, memory and the run folder
(`real/app/resume.py`): a request whose memory would not fit this machine is refused unless
`--force`."""

import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from real.app.resume import check_run_folder
from real.base.config import build_collector, flag_of
from real.base.validate import (
    check_engine,
    check_grpo,
    check_knobs,
    check_run_fields,
    check_trl_config,
)
from real.models.resolve import resolve_model
from real.models.tiny_net import CHARS, SPECIALS
from real.sampling.served import check_servers
from real.tasks import TASKS, make_run_task
from sara_sim.core.errors import ParameterError, check_choice
from sara_sim.core.registry import row


class Checked(NamedTuple):
    """What check_config built on the way: the run's task and its collector (built once)."""

    task: object
    collector: object


# ---------------------------------------------------------------- the whole config


def check_config(cfg) -> Checked:
    """Every field of `cfg`, then model, task files, the collector, resources and the run
    folder; returns the task and collector the run then uses."""
    check_task_files(cfg.task, cfg.task_path, cfg.eval_path)
    check_run_fields(cfg)
    check_engine(cfg.engine)
    _check_device(cfg.grpo.device)
    if cfg.engine.engine_url is not None:  # the door (real/sampling/served.py): one call a server
        check_servers(cfg.engine.engine_url, cfg.model)
    check_grpo(cfg.grpo)
    if cfg.trainer == "trl":
        check_trl_config(cfg)
    check_knobs(cfg.knobs, cfg.k)
    checked = _build(cfg)
    if cfg.model is not None:
        resolve_model(cfg.model, build=False)
    check_memory(cfg, checked.task)
    check_run_folder(cfg)
    return checked


def _build(cfg) -> Checked:
    """The run's task and collector: what only they can judge (tau_high > tau_low, capacity >=
    k, the held-out set's size, ...) is checked by building them, once."""
    task = _task(cfg)
    try:
        collector = build_collector(
            cfg.strategy, cfg.knobs, k=cfg.k, groups=cfg.groups, seed=cfg.seed,
            epoch_size=task.size,
        )  # fmt: skip
    except ParameterError as e:
        flag = e.parameter if e.parameter.startswith("--") else flag_of(e.parameter)
        raise ParameterError(flag, str(e)[len(e.parameter) + 2 :]) from None
    n_eval = len(task.eval_problems())
    if cfg.eval_problems is not None and cfg.eval_problems > n_eval:
        raise ParameterError(
            "--eval-problems",
            f"must be in [1, {n_eval}] (the {cfg.task} task's held-out set), "
            f"got {cfg.eval_problems}",
        )
    return Checked(task, collector)


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
    tokens = cfg.engine.max_tokens or task.max_tokens
    batch = cfg.knobs.gen_batch_size or cfg.groups * row(cfg.strategy).gen_batch_factor  # 3N
    per_round = cfg.knobs.capacity or batch * cfg.k
    longest_prompt = max(len(p.prompt) for p in task.eval_problems())  # chars >= tokens
    pool = 2 * per_round * tokens * 200  # a step holds about two rounds' worth
    micro = cfg.grpo.micro_batch
    seqs = min(micro or cfg.groups * cfg.k, cfg.groups * cfg.k)
    train = 3 * seqs * (longest_prompt + tokens) * _vocab(cfg.model) * 4
    if cfg.grpo.device not in ("cpu", "auto") or _cuda_for_auto(cfg.grpo.device):
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
