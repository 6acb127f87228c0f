"""Pure field checks of a run's config (no file, model or machine is looked at): each raises
sara_sim.core.errors.ParameterError naming the flag, its value and the allowed range.
`real.app.checks.check_config` runs them first, then the checks that need the machine."""

import importlib.util

from real.base.config import (
    CARRIERS,
    INFORMED,
    NO_CARRY,
    TRL_ESTIMATORS,
    check_seed,
    flag_of,
    split_spec,
)
from sara_sim.core.errors import (
    ParameterError,
    check_choice,
    check_float,
    check_int,
    check_k,
    check_schedule,
)
from sara_sim.core.registry import names, row

STRATEGIES = names("real")  # sara_sim.core.registry: the one list of strategies
# generated tasks: they take --task-size
FINITE_OPTION = ("arithmetic", "countdown", "reasoning", "reasoning-long")
DTYPES = ("float32", "bfloat16", "float16", "auto")


def check_strategy(name: str, flag: str = "--strategy") -> str:
    return row(name, "real", flag).name


def check_spec(spec: str, flag: str = "--strategies") -> tuple[str, bool]:
    """A compare's entry: a strategy, or a carrying one with +no-carry -> (name, carry)."""
    name, carry = split_spec(spec)
    check_strategy(name, flag)
    if not carry and name not in CARRIERS:
        raise ParameterError(
            flag, f"{spec}: {name} carries nothing; {NO_CARRY} takes one of {', '.join(CARRIERS)}"
        )
    return name, carry


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
