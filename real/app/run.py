"""One `sara-real` run: every check of its config, then its training (`train`: the one place
our GRPO loop and TRL's GRPOTrainer meet), the engine's noise sent to OUT/engine.log
(`real.io.enginelog`).

Checks run before anything heavy starts, so a bad flag costs a second and one line
(sara_sim.core.errors.ParameterError names the parameter, its value and the allowed range), never a
traceback after an engine has spent minutes starting. `check_config` checks every field of a
`real.base.config.Config` (the pure field checks below look at no file, model or machine), builds
the run's task and collector (once: the run uses them), then checks what needs the machine: the
device, servers, the model, memory and the run folder (`real/app/resume.py`): a request whose
memory would not fit this machine is refused unless `--force`."""

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from real.app.resume import check_run_folder
from real.base.config import (
    CARRIERS,
    DTYPES,
    INFORMED,
    NO_CARRY,
    TRL_ESTIMATORS,
    Config,
    build_collector,
    check_seed,
    flag_of,
    split_spec,
)
from real.io.enginelog import engine_log
from real.io.runlog import RunLock
from real.models.resolve import resolve_model
from real.models.tiny_net import CHARS, SPECIALS
from real.sampling.served import check_servers
from real.tasks import TASKS, make_run_task
from real.train.loop import train_native
from sara_sim.core.errors import (
    ParameterError,
    check_choice,
    check_float,
    check_int,
    check_k,
    check_schedule,
)
from sara_sim.core.files import read_input
from sara_sim.core.registry import PRICED_IN, row

# generated tasks: they take --task-size
FINITE_OPTION = ("arithmetic", "countdown", "reasoning", "reasoning-long")


class Checked(NamedTuple):
    """What check_config built on the way: the run's task and its collector (built once)."""

    task: object
    collector: object


# ---------------------------------------------------------------- the run: check, then train


def check_config(cfg) -> Checked:
    """Task files, every field of `cfg`, the device, the model folder, the servers, the
    collector, resources and the run folder; returns the task and collector the run then
    uses."""
    check_task_files(cfg.task, cfg.task_path, cfg.eval_path)
    check_run_fields(cfg)
    check_engine(cfg.engine)
    _check_device(cfg.grpo.device)
    if cfg.model is not None:  # config, tokenizer, complete weights: before any server is asked
        resolve_model(cfg.model, build=False)
    if cfg.engine.engine_url is not None:  # the door (real/sampling/served.py): one call a server
        check_servers(cfg.engine.engine_url, cfg.model)
    check_grpo(cfg.grpo)
    if cfg.trainer == "trl":
        check_trl_config(cfg)
    check_knobs(cfg.knobs, cfg.k)
    checked = _build(cfg)
    check_memory(cfg, checked.task)
    check_run_folder(cfg)
    return checked


def _build(cfg) -> Checked:
    """The run's task and collector: what only they can judge (tau_high > tau_low, capacity >=
    k, the held-out set's size, ...) is checked by building them, once."""
    task = _task(cfg)
    try:
        collector = build_collector(
            cfg.strategy,
            cfg.knobs,
            k=cfg.k,
            groups=cfg.groups,
            seed=cfg.seed,
            epoch_size=task.size,
        )
    except ParameterError as e:
        flag = e.parameter if e.parameter.startswith("--") else flag_of(e.parameter)
        raise ParameterError(flag, str(e)[len(e.parameter) + 2 :]) from None
    n_eval = len(task.eval_problems())
    if n_eval == 0:  # a math file of fewer problems than its held-out stride (every 5th)
        raise ParameterError(
            "--task-path",
            f"the {cfg.task} task's held-out set is empty: {cfg.task_path or 'its file'} holds "
            f"{task.size} problem(s) and every {getattr(task, 'eval_every', '?')}th is held "
            "out; pass --eval-path FILE (held-out problems) or a larger --task-path",
        )
    if cfg.eval_problems is not None and cfg.eval_problems > n_eval:
        raise ParameterError(
            "--eval-problems",
            f"must be in [1, {n_eval}] (the {cfg.task} task's held-out set), "
            f"got {cfg.eval_problems}",
        )
    return Checked(task, collector)


def train(cfg: Config, engine=None, checked=None) -> dict:
    """Run (or resume) one training run; returns the summary dict (also in out/summary.json).
    `checked`: what `check_config(cfg)` returned, when the caller has checked `cfg`
    already (compare checks every run before the first); its collector is the run's."""
    checked = checked or check_config(cfg)
    out = Path(cfg.out)
    # one writer per run folder (the OS releases the lock if we are killed); engine and library
    # noise into OUT/engine.log, not the terminal
    with RunLock(out), engine_log(out):
        if cfg.trainer == "trl":  # the same experiment through TRL's GRPOTrainer
            # imported here: real.trl imports transformers and torch, the native loop does not
            from real.trl.run import train_trl

            return train_trl(cfg, checked, engine=engine)
        return train_native(cfg, checked, out, engine)


# ---------------------------------------------------------------- pure field checks


def check_strategy(name: str, flag: str = "--strategy") -> str:
    return row(name, "real", flag).name


def check_spec(spec: str, flag: str = "--strategies"):
    """A compare's entry: a strategy, with the suffixes of `split_spec` (+no-carry: a carrying
    one) -> its Spec."""
    entry = split_spec(spec)
    name = entry.name
    check_strategy(name, flag)
    if not entry.carry and name not in CARRIERS:
        raise ParameterError(
            flag, f"{spec}: {name} carries nothing; {NO_CARRY} takes one of {', '.join(CARRIERS)}"
        )
    return entry


def check_run_fields(cfg) -> None:
    """The top-level fields of a Config (its sections: check_grpo, check_knobs, check_engine)."""
    check_strategy(cfg.strategy)
    if not cfg.knobs.carry and cfg.strategy not in CARRIERS:
        raise ParameterError(
            "--no-carry",
            f"{cfg.strategy} carries nothing to drop; only {', '.join(CARRIERS)} carry (in a "
            f"compare, name the runs without carrying NAME{NO_CARRY})",
        )
    check_choice(cfg.trainer, "--trainer", ("native", "trl"))
    if cfg.task_size is not None:
        check_int(cfg.task_size, "--task-size", 1)
        if cfg.task not in FINITE_OPTION:
            raise ParameterError(
                "--task-size",
                f"only {' and '.join(FINITE_OPTION)} take a pool size (task {cfg.task})",
            )
    if cfg.strategy in INFORMED and cfg.task in FINITE_OPTION and not cfg.task_size:
        raise ParameterError(
            "--task-size", f"{cfg.strategy} learns from revisits: give a finite pool (>= 1)"
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
    if cfg.eval_problems is not None:
        check_int(cfg.eval_problems, "--eval-problems", 1)


def check_engine(e) -> None:
    """The engine section (real.base.config.EngineConfig); the servers themselves are checked
    at the door (real/sampling/served.py)."""
    for flag, v in (("--max-tokens", e.max_tokens), ("--max-model-len", e.max_model_len)):
        if v is not None:
            check_int(v, flag, 1)
    check_float(e.temperature, "--temperature", 0.0, lo_open=True)
    if e.gpu_memory_utilization is not None:
        check_float(e.gpu_memory_utilization, "--gpu-memory-utilization", 0.0, 1.0, lo_open=True)
    check_choice(e.dtype, "--dtype", DTYPES)


def check_grpo(g) -> None:
    """The GRPO section (real.base.config.GRPOConfig)."""
    check_float(g.lr, "--lr", 0.0, 1.0, lo_open=True)
    _check_pair(g.betas, "--betas", "two numbers B1,B2 in [0, 1)", 0.0, 1.0, hi_open=True)
    check_float(g.weight_decay, "--weight-decay", 0.0)
    check_float(g.eps_low, "--eps-low", 0.0, 1.0, hi_open=True)  # ratio floor 1 - eps_low > 0
    check_float(g.eps_high, "--eps-high", 0.0)
    check_float(g.kl_coef, "--kl-coef", 0.0)
    check_float(g.max_grad_norm, "--max-grad-norm", 0.0, lo_open=True)
    check_choice(g.old_logprobs, "--old-logprobs", ("engine", "recompute"))
    check_ints(g, epochs=1, minibatches=1, micro_batch=0)


def check_knobs(a, k: int) -> None:
    """The strategy section (real.base.config.StrategyConfig), every field whichever strategy
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
    check_choice(a.schedule, "--schedule", ("rounds", "stream"))
    check_int(a.max_inflight, "--max-inflight", 0, k)
    check_float(a.overprovision, "--overprovision", 1.0)
    check_float(a.request_cost, "--request-cost", 0.0)  # sara-auto's only: build_collector
    check_choice(a.priced_in, "--priced-in", PRICED_IN)  # which strategies: build_collector


def check_ints(obj, **lowest) -> None:
    """`obj.<name>` is an integer >= lowest[name] for each name (the error names its flag)."""
    for name, lo in lowest.items():
        check_int(getattr(obj, name), flag_of(name), lo)


def _check_pair(v, flag: str, what: str, lo, hi, lo_open=False, hi_open=False) -> None:
    if not isinstance(v, tuple | list) or len(v) != 2:
        raise ParameterError(flag, f"must be {what}, got {v!r}")
    for x in v:
        check_float(x, flag, lo, hi, lo_open=lo_open, hi_open=hi_open)


def check_trl_config(cfg) -> None:
    """What only the TRL path needs; cheap (no torch import)."""
    if importlib.util.find_spec("trl") is None:
        raise ParameterError("--trainer", "trl is not installed: pip install '.[trl]'")
    if cfg.audit_abandoned:  # the off-budget completion lives in real/rollout/collect.py only
        raise ParameterError("--audit-abandoned", "only --trainer native audits abandoned prompts")
    if cfg.grpo.estimator not in TRL_ESTIMATORS:  # TRL computes its own advantages
        raise ParameterError(
            "--estimator",
            f"--trainer trl offers {' and '.join(TRL_ESTIMATORS)} only, not {cfg.grpo.estimator}",
        )
    rows = cfg.k * cfg.groups
    if rows % cfg.grpo.minibatches:
        raise ParameterError("--minibatches", f"must divide groups x k = {rows} for --trainer trl")


# ---------------------------------------------------------------- files, the machine, the model


def check_task_files(task: str, task_path=None, eval_path=None) -> None:
    """A known task; data files only for the math task, each a readable regular file of valid
    problems — one line naming the flag the user typed and the true reason (missing, a
    directory, a FIFO or device, unreadable, not UTF-8, a line that is not a problem, empty).
    The one check of task files: validate, compare and audit call it."""
    from real.tasks.math import parse_jsonl

    check_choice(task, "--task", TASKS)
    for flag, path in (("--task-path", task_path), ("--eval-path", eval_path)):
        if not path:
            continue
        if task != "math":
            raise ParameterError(flag, f"only the math task reads a file (task is {task})")
        data = read_input(path, flag, "JSONL file")
        try:
            parse_jsonl(data.decode("utf-8"), path)
        except UnicodeDecodeError as e:
            raise ParameterError(flag, f"{path} is not UTF-8 text (byte {e.start})") from None
        except ValueError as e:
            raise ParameterError(flag, f"malformed task file: {e}") from None


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
    round (~200 B per generated token in Python objects) and for one held-out evaluation
    (problems x samples), plus the training forward's fp32 logits, their log-softmax and
    gradient (3 x sequences x length x vocab x 4 B), against 70 % of RAM; the error names the
    flag of the biggest part. On a CUDA device the logits live on the GPU, so only the engine's
    results are counted."""
    if cfg.force:
        return
    tokens = cfg.engine.max_tokens or task.max_tokens
    batch = cfg.knobs.gen_batch_size or cfg.groups * row(cfg.strategy).gen_batch_factor  # 3N
    per_round = cfg.knobs.capacity or batch * cfg.k
    held_out = task.eval_problems()
    longest_prompt = max(len(p.prompt) for p in held_out)  # chars >= tokens
    n_eval = min(cfg.eval_problems or len(held_out), len(held_out))
    micro = cfg.grpo.micro_batch
    seqs = min(micro or cfg.groups * cfg.k, cfg.groups * cfg.k)
    train = 3 * seqs * (longest_prompt + tokens) * _vocab(cfg.model) * 4
    if cfg.grpo.device not in ("cpu", "auto") or _cuda_for_auto(cfg.grpo.device):
        train = 0
    rounds = "--k" if cfg.k / 8 >= cfg.groups / 16 else "--groups"
    parts = {  # flag of the part -> bytes
        rounds: 2 * per_round * tokens * 200,  # a step holds about two rounds' worth
        "--eval-samples": n_eval * cfg.eval_samples * tokens * 200,
    }
    parts["--micro-batch" if micro else rounds] += train
    what = (
        f"k={cfg.k} x groups={cfg.groups}, eval {n_eval} x {cfg.eval_samples} samples "
        f"(max-tokens {tokens}, micro-batch {micro or 'all'})"
    )
    check_ram(parts, what, "", "lower them, set --micro-batch, or --force")


def _cuda_for_auto(device: str) -> bool:
    if device != "auto":
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_ram(parts: dict, what: str, detail: str, advice: str) -> None:
    """Refuse host memory past 70 % of this machine's RAM: `parts` maps the flag of each part to
    its bytes; the one line names the flag of the biggest part, `what` needs, `detail`, `advice`."""
    need, ram = sum(parts.values()), ram_bytes()
    if need > 0.7 * ram:
        raise ParameterError(
            max(parts, key=parts.get),
            f"{what} needs ~{need / 2**30:.1f} GiB{detail}, over 70 % of this machine's "
            f"{ram / 2**30:.0f} GiB; {advice}",
        )


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
