"""Argument checks that run before anything heavy starts, so a bad flag costs a second and one
line (sara_sim.errors.ParameterError names the parameter, its value and the allowed range), never
a traceback after an engine has spent minutes starting.

`check_config` checks every field of a `real.train.Config`, then the run folder:
* a used `--out` (metrics, checkpoint or summary present) needs `--resume` or `--overwrite`;
* `--resume` needs a readable checkpoint written with the same experiment: only the settings in
  `RESUMABLE` (steps, evaluation / checkpoint cadence, progress) may differ;
* a folder another live run is writing (its `.lock` is held) is refused;
* a request whose memory would not fit this machine is refused unless `--force`."""

import os
import re
from pathlib import Path

from real.tasks import TASKS
from sara_sim.errors import ParameterError, check_choice, check_float, check_int, check_k
from sara_sim.registry import names, row

ALLOCATORS = names("real")  # sara_sim.registry: the one list of strategies
INFORMED = names("real", needs_history=True)  # need a finite task: ids revisit prompts
FINITE_OPTION = ("arithmetic", "countdown")  # generated tasks that take --task-size
DTYPES = ("float32", "bfloat16", "float16", "auto")
# Settings a --resume may change: they change how a run is watched, not what it computes.
# A server address is where the weights are pushed, not part of the experiment.
RESUMABLE = (
    "steps", "eval_every", "ckpt_every", "progress",
    "resume", "overwrite", "force", "out", "engine_url",
)  # fmt: skip
RUN_FILES = ("metrics.jsonl", "checkpoint.pt", "summary.json")
SEED_MAX = 2**63 - 1


def check_allocator(name: str, flag: str = "--allocator") -> str:
    return row(name, "real", flag).name


# ---------------------------------------------------------------- the whole config


def check_config(cfg) -> None:
    """Every field of `cfg`, then model, task files, resources and the run folder."""
    check_task_files(cfg.task, cfg.task_path, cfg.eval_path)
    check_allocator(cfg.allocator)
    check_choice(cfg.trainer, "--trainer", ("native", "trl"))
    if cfg.trainer == "trl":
        from real.trl_run import check_trl_config  # light: no torch / trl import

        check_trl_config(cfg)
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
        check_int(cfg.task_seed, "--task-seed", 0, SEED_MAX)
    check_k(cfg.k, "--k")
    for flag, v, lo in (
        ("--groups", cfg.groups, 1),
        ("--steps", cfg.steps, 1),
        ("--eval-every", cfg.eval_every, 1),
        ("--eval-samples", cfg.eval_samples, 1),
        ("--ckpt-every", cfg.ckpt_every, 1),
        ("--minibatches", cfg.minibatches, 1),
        ("--epochs", cfg.epochs, 1),
        ("--micro-batch", cfg.micro_batch, 0),
        ("--max-num-gen-batches", cfg.max_num_gen_batches, 0),
        ("--audit-abandoned", cfg.audit_abandoned, 0),
    ):
        check_int(v, flag, lo)
    check_int(cfg.seed, "--seed", 0, SEED_MAX)
    for flag, v in (
        ("--max-tokens", cfg.max_tokens),
        ("--eval-problems", cfg.eval_problems),
        ("--capacity", cfg.capacity),
        ("--gen-batch-size", cfg.gen_batch_size),
        ("--max-model-len", cfg.max_model_len),
    ):
        if v is not None:
            check_int(v, flag, 1)
    check_float(cfg.tau_low, "--tau-low", 0.0, 1.0)
    if not isinstance(cfg.prior, tuple | list) or len(cfg.prior) != 2:
        raise ParameterError("--prior", f"must be two numbers A0,B0 > 0, got {cfg.prior!r}")
    for v in cfg.prior:
        check_float(v, "--prior", 0.0, lo_open=True)
    if cfg.tau_high is not None:
        check_float(cfg.tau_high, "--tau-high", 0.0, 1.0)
    check_float(cfg.temperature, "--temperature", 0.0, lo_open=True)
    check_float(cfg.lr, "--lr", 0.0, 1.0, lo_open=True)
    check_float(cfg.eps_low, "--eps-low", 0.0, 1.0, hi_open=True)  # ratio floor 1 - eps_low > 0
    check_float(cfg.eps_high, "--eps-high", 0.0)
    check_float(cfg.kl_coef, "--kl-coef", 0.0)
    check_float(cfg.max_grad_norm, "--max-grad-norm", 0.0, lo_open=True)
    if cfg.gpu_memory_utilization is not None:
        check_float(cfg.gpu_memory_utilization, "--gpu-memory-utilization", 0.0, 1.0, lo_open=True)
    check_choice(cfg.old_logprobs, "--old-logprobs", ("engine", "recompute"))
    check_choice(cfg.dtype, "--dtype", DTYPES)
    _check_device(cfg.device)
    if cfg.engine_url is not None:
        from real.client import parse_urls  # the servers' health is checked when connecting

        parse_urls(cfg.engine_url)
    task = _task(cfg)
    from sara_sim.allocator import make_collector  # its own checks: prior, capacity, tau_high

    make_collector(
        cfg.allocator, k=cfg.k, groups=cfg.groups, seed=cfg.seed,
        epoch_size=task.size if cfg.allocator in INFORMED else None, **allocator_options(cfg),
    )  # fmt: skip
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


def allocator_options(cfg) -> dict:
    """The allocator's own settings in a Config, as make_collector (and SaraRollout) take them."""
    names = ("tau_low", "tau_high", "prior", "capacity", "gen_batch_size", "max_num_gen_batches")
    return {n: getattr(cfg, n) for n in names}


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
    per_round = cfg.capacity or (cfg.gen_batch_size or cfg.groups) * cfg.k
    longest_prompt = max(len(p.prompt) for p in task.eval_problems())  # chars >= tokens
    pool = 2 * per_round * tokens * 200  # a step holds about two rounds' worth
    seqs = min(cfg.micro_batch or cfg.groups * cfg.k, cfg.groups * cfg.k)
    train = 3 * seqs * (longest_prompt + tokens) * _vocab(cfg.model) * 4
    if cfg.device not in ("cpu", "auto") or _cuda_for_auto(cfg.device):
        train = 0
    need, have = pool + train, 0.7 * _ram_bytes()
    if need > have:
        raise ParameterError(
            "--k",
            f"k={cfg.k} x groups={cfg.groups} (max-tokens {tokens}, micro-batch "
            f"{cfg.micro_batch or 'all'}) needs ~{need / 2**30:.1f} GiB, over 70 % of this "
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


# ---------------------------------------------------------------- the run folder


def check_writable(path: Path, flag: str) -> None:
    """`path` (a folder, existing or not) can be created and written, without creating it."""
    import tempfile

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ParameterError(flag, f"{path} is a file, not a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ParameterError(flag, f"cannot create {path}: {probe} is a file")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise ParameterError(flag, f"cannot write in {probe} ({e.strerror})") from None


def has_checkpoint(folder: Path, trainer: str = "native") -> bool:
    """A run in `folder` that --resume can continue (TRL keeps its own checkpoint-N folders)."""
    if trainer == "trl":
        return any(Path(folder, "trl").glob("checkpoint-*"))
    return Path(folder, "checkpoint.pt").is_file()


def holds_run(folder: Path) -> bool:
    return any((Path(folder) / f).exists() for f in RUN_FILES)


def check_run_folder(cfg, flag: str = "--out") -> None:
    """The used-folder rule, resume compatibility and the lock (see the module docstring)."""
    out = Path(cfg.out)
    check_writable(out, flag)
    if cfg.resume and cfg.overwrite:
        raise ParameterError("--resume", "--resume and --overwrite exclude each other")
    from real.runlog import lock_holder

    pid = lock_holder(out)
    if pid is not None:
        raise ParameterError(flag, f"{out} is being written by another run (pid {pid})")
    if not cfg.resume:
        if holds_run(out) and not cfg.overwrite:
            raise ParameterError(
                flag, f"{out} already holds a run; pass --resume to continue it or --overwrite"
            )
        return
    if cfg.trainer == "trl":
        return _check_trl_resume(cfg, out)
    if (out / "trl").is_dir():
        raise ParameterError("--resume", f"{out} holds a --trainer trl run; resume it with that")
    ckpt = out / "checkpoint.pt"
    if not ckpt.is_file():
        raise ParameterError(
            "--resume", f"no checkpoint in {out} to resume (start the run without --resume)"
        )
    saved = read_checkpoint_config(ckpt)
    check_same_run(saved["config"], cfg)
    if cfg.steps < saved["step"] + 1:
        raise ParameterError(
            "--steps", f"the run in {out} has done {saved['step'] + 1} steps; give at least that"
        )


def _check_trl_resume(cfg, out: Path) -> None:
    """A TRL run resumes from TRL's own OUT/trl/checkpoint-N; its settings are in config.json."""
    import json

    if not list((out / "trl").glob("checkpoint-*")):
        if (out / "checkpoint.pt").is_file():
            raise ParameterError("--resume", f"{out} holds a --trainer native run; resume it so")
        raise ParameterError(
            "--resume", f"no TRL checkpoint in {out}/trl to resume (start without --resume)"
        )
    saved = out / "config.json"
    try:
        check_same_run(json.loads(saved.read_text()), cfg)
    except (OSError, ValueError) as e:
        if isinstance(e, ParameterError):
            raise
        raise ParameterError("--resume", f"{saved} is missing or unreadable ({e})") from None


def read_checkpoint_config(ckpt: Path) -> dict:
    """{"step", "config"} of a checkpoint, or a one-line error naming the file when it is torn
    or corrupted (every zip record's CRC is checked; tensors are memory-mapped, not read)."""
    import zipfile

    bad = None
    try:
        with zipfile.ZipFile(ckpt) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError) as e:
        bad = str(e)
    if bad is None:
        import torch

        try:
            ck = torch.load(ckpt, map_location="cpu", weights_only=False, mmap=True)
            return {"step": int(ck["step"]), "config": dict(ck["config"])}
        except Exception as e:  # unpickling a damaged file can raise almost anything
            bad = f"{type(e).__name__}: {e}"
    raise ParameterError(
        "--resume", f"{ckpt} is corrupted or truncated ({bad}); use --overwrite to start over"
    )


def check_same_run(saved: dict, cfg) -> None:
    """Resuming with another allocator, k, lr, temperature... would silently splice two runs."""
    from dataclasses import fields

    changed = []
    for f in fields(cfg):
        if f.name in RESUMABLE:
            continue
        now, then = getattr(cfg, f.name), saved.get(f.name, f.default)
        if f.name == "model":
            now, then = _model_key(now), _model_key(then)
        if isinstance(now, tuple | list):
            now, then = list(now), list(then) if isinstance(then, tuple | list) else then
        if now != then:
            changed.append(f"{f.name}={then!r} (now {now!r})")
    if changed:
        raise ParameterError(
            "--resume",
            f"the checkpoint in {cfg.out} was written with {', '.join(changed)}; only "
            f"{', '.join(RESUMABLE[:4])} may change on resume",
        )


def _model_key(model) -> str | None:
    if model is None:
        from real.tiny import default_dir

        return str(default_dir().resolve())
    p = Path(model).expanduser()
    return str(p.resolve()) if p.exists() else str(model)


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
