"""SARA's settings in a verl run, checked before verl builds anything (docs/verl.md).

The section is verl's own ``trainer.v1.sampler.sampler_kwargs`` (handed to the custom replay
buffer, read by the manager from the same config), so one Hydra line picks the strategy:

    +trainer.v1.sampler.sampler_kwargs.strategy=sara     # or ds: verl's own DAPO filter

Every other key is optional: a ``real.base.config.StrategyConfig`` field (tau_low, prior, probe,
eb_window, rho, ...), ``threshold`` (a rollout passes iff its reward >= threshold; 1.0 fits 0/1
and DAPO's -1/+1 rewards), ``epoch_size`` (sara-history: the train set's size), ``seed``,
``fresh`` (resume without SARA's saved state, starting it afresh), ``state_name`` (the Ray
actor holding the state) and ``poll_interval`` (seconds between the replay buffer's looks at
TransferQueue, verl's 2.0 by default: each refill waits for one).  ``check_config`` refuses a
bad setting in one line naming it and the fix, as a ``ParameterError`` — the replay buffer calls
it in the trainer's constructor, before any model, worker or server exists."""

from dataclasses import dataclass, field, fields
from importlib import metadata

from real.base.config import StrategyConfig
from sara_sim.core.errors import ParameterError
from sara_sim.core.registry import names, row

VERL_PINNED = ("0.9.1",)  # the verl releases whose private contract tests/verl checks
SECTION = "trainer.v1.sampler.sampler_kwargs"
MANAGER = "real.verl.SaraAgentLoopManager"
BUFFER = ("pkg://real.verl.buffer", "SaraReplayBuffer")
CHECKPOINT = "real.verl.SaraCheckpoint"
STRATEGIES = names("verl")  # sara_sim.core.registry: ds is verl's own filter, the rest SARA's
SARA_STRATEGIES = tuple(n for n in STRATEGIES if row(n).family != "dynamic-sampling")
OWN = ("strategy", "threshold", "epoch_size", "seed", "fresh", "state_name", "poll_interval")
OPTIONS = tuple(f.name for f in fields(StrategyConfig) if f.name != "schedule")


@dataclass(frozen=True)
class SaraSettings:
    """One verl run's SARA settings: k = rollout.n, groups = data.train_batch_size."""

    strategy: str
    k: int
    groups: int
    threshold: float = 1.0
    epoch_size: int | None = None
    seed: int = 0
    fresh: bool = False
    state_name: str = "sara_state"
    poll_interval: float = 2.0  # seconds between the replay buffer's looks at TransferQueue
    options: dict = field(default_factory=dict)  # StrategyConfig fields given

    @property
    def is_sara(self) -> bool:
        return self.strategy != "ds"


def _get(cfg, path, default=None):
    node = cfg
    for part in path.split("."):
        if node is None or not hasattr(node, "get"):
            return default
        node = node.get(part, None)
    return default if node is None else node


def check_version(version=None) -> str:
    """verl's installed version, or a ParameterError when it is outside the pinned range."""
    version = version or metadata.version("verl")
    if version not in VERL_PINNED:
        raise ParameterError(
            "verl",
            f"version {version} is untested; install the pinned one: pip install "
            f"'sara-toolkit[verl]' (verl=={VERL_PINNED[-1]})",
        )
    return version


def _wiring(cfg, strategy):
    """The three plug-in settings SARA needs beside the strategy (one line each to fix)."""
    manager = _get(cfg, "actor_rollout_ref.rollout.agent.agent_loop_manager_class")
    if manager != MANAGER:
        raise ParameterError(
            "actor_rollout_ref.rollout.agent.agent_loop_manager_class",
            f"is {manager!r}; set +actor_rollout_ref.rollout.agent.agent_loop_manager_class="
            f"{MANAGER}",
        )
    sampler = _get(cfg, "trainer.v1.sampler.custom_sampler")
    got = (_get(sampler, "path"), _get(sampler, "name"))
    if got != BUFFER:
        raise ParameterError(
            "trainer.v1.sampler.custom_sampler",
            f"is {got}; set trainer.v1.sampler.custom_sampler.path={BUFFER[0]} and "
            f"trainer.v1.sampler.custom_sampler.name={BUFFER[1]}",
        )
    mode = _get(cfg, "trainer.v1.trainer_mode", "sync")
    if mode != "sync":
        raise ParameterError(
            "trainer.v1.trainer_mode", f"is {mode!r}; SARA runs in verl's sync mode: set it to sync"
        )
    if strategy != "ds" and _get(cfg, "trainer.save_freq", -1) > 0:
        callback = _get(cfg, "trainer.checkpoint_callback_class")
        if callback != CHECKPOINT:
            raise ParameterError(
                "trainer.checkpoint_callback_class",
                f"is {callback!r}: checkpoints would lose SARA's state; set "
                f"trainer.checkpoint_callback_class={CHECKPOINT}",
            )


def _gen_batch_size(cfg):
    """Exact refill: verl submits refills in whole data.gen_batch_size fetches, so one abandoned
    prompt is replaced by one fresh prompt only when that is 1 (verl forces 1 itself when
    algorithm.filter_groups.enable or sync_refill_failed_groups is set)."""
    forced = bool(_get(cfg, "algorithm.filter_groups.enable", False)) or bool(
        _get(cfg, "trainer.v1.sampler.sync_refill_failed_groups", False)
    )
    gbs = _get(cfg, "data.gen_batch_size")
    if forced and gbs in (None, 1):
        return
    if gbs != 1:
        raise ParameterError(
            "data.gen_batch_size",
            f"is {gbs}; abandoned prompts are refilled one for one, which needs "
            "data.gen_batch_size=1 (or algorithm.filter_groups.enable=true, which sets it)",
        )


def check_config(cfg, version=None) -> SaraSettings:
    """The run's SaraSettings from verl's whole config (a DictConfig or nested dicts), or a
    ParameterError naming the first bad setting and its fix."""
    check_version(version)
    kw = dict(_get(cfg, SECTION, {}) or {})
    strategy = kw.pop("strategy", None)
    if strategy not in STRATEGIES:
        raise ParameterError(
            f"{SECTION}.strategy",
            f"is {strategy!r}; choose one of {', '.join(STRATEGIES)} (+{SECTION}.strategy=sara)",
        )
    unknown = sorted(set(kw) - set(OWN) - set(OPTIONS))
    if unknown:
        raise ParameterError(
            f"{SECTION}.{unknown[0]}",
            f"is not a SARA setting; choose from {', '.join(OWN + OPTIONS)}",
        )
    _wiring(cfg, strategy)
    if strategy == "ds" and not _get(cfg, "algorithm.filter_groups.enable", False):
        raise ParameterError(
            "algorithm.filter_groups.enable",
            "is false; strategy ds is verl's own DAPO filter: "
            "set algorithm.filter_groups.enable=true",
        )
    k = _get(cfg, "actor_rollout_ref.rollout.n")
    if not isinstance(k, int) or isinstance(k, bool) or k < 2:
        raise ParameterError(
            "actor_rollout_ref.rollout.n", f"is {k!r}; a GRPO group needs n >= 2 rollouts"
        )
    groups = _get(cfg, "data.train_batch_size")
    _gen_batch_size(cfg)
    options = {name: kw.pop(name) for name in OPTIONS if name in kw}
    if "prior" in options:
        options["prior"] = tuple(options["prior"])
    threshold = float(kw.pop("threshold", 1.0))
    settings = SaraSettings(strategy, k, int(groups), threshold, options=options, **kw)
    if settings.is_sara:
        _check_collector(settings)
    return settings


def _check_collector(s: SaraSettings):
    """Build the collector once here so that a bad option (tau_low outside [0, 1], a prior <= 0,
    ...) is refused now, named as its sampler_kwargs key."""
    from real.verl.state import make_collector_for

    try:
        make_collector_for(s)
    except ParameterError as e:
        name = e.parameter.removeprefix("--").replace("-", "_")
        message = str(e)[len(e.parameter) + 2 :]
        raise ParameterError(f"{SECTION}.{name}", message) from None
