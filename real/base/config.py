"""One run's settings: `Config` (the run) with its GRPO, strategy and engine sections, and the one
place `real/` builds a collector from them.

Each leaf field is a `sara-real validate` flag (dashes for underscores; `real/app/cli.py` derives
the flags, their help and defaults from these fields and their docstrings), so a default is written
once, here; `--help` shows one group per section. Leaf names are unique across the sections: `--lr`
is `Config.grpo.lr`, `--tau-low` is `Config.knobs.tau_low`, `--dtype` is `Config.engine.dtype`. A
run's `config.json` / checkpoint holds `asdict(Config)` (nested), read back by `Config.from_dict`;
`Config.from_flat` builds one from leaf names (the CLI's arguments).

Light on purpose (no torch, no vllm): the CLI imports it before any argument is checked.

>>> cfg = Config.from_flat({"strategy": "sara", "lr": 5e-4, "tau_low": 0.3})
>>> cfg.grpo.lr, cfg.knobs.tau_low, cfg.grpo.eps_high
(0.0005, 0.3, 0.28)
>>> from dataclasses import asdict
>>> Config.from_dict(asdict(cfg)) == cfg  # as a run folder holds it
True
"""

import sys
from dataclasses import dataclass, field, fields
from typing import NamedTuple

# every seed flag's range (validate, compare, audit, serve, make-tiny): the same as sara-sim's
from sara_sim.core.errors import SEED_MAX, check_seed  # noqa: F401  (re-exported)
from sara_sim.core.registry import HISTORY, SARA, DSParams, names, row

STRATEGIES = names("real")  # sara_sim.core.registry: the one list of strategies
DTYPES = ("float32", "bfloat16", "float16", "auto")  # the engine's dtype choices
_DS = DSParams()
# real/train/grpo.py's advantage estimators (grpo: the default; docs/real-loop.md)
ESTIMATORS = ("grpo", "dr-grpo", "rloo", "reinforce++")
# the estimators TRL's GRPOTrainer computes itself (scale_rewards "group" / "none"): its "batch"
# still subtracts the group mean, so neither RLOO nor REINFORCE++ can be asked of it
TRL_ESTIMATORS = ("grpo", "dr-grpo")


@dataclass
class GRPOConfig:
    """The optimisation in torch (real/train/grpo.py; mapped onto TRL's GRPOConfig by
    real/trl/run.py)."""

    lr: float = 1e-4
    """AdamW learning rate (tiny model: 1e-3 collapses it, 1e-4 improves it)"""
    betas: tuple[float, float] = (0.9, 0.99)
    """AdamW betas B1,B2"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    eps_low: float = 0.2
    """PPO clip below"""
    eps_high: float = 0.28
    """PPO clip above (clip-higher; = eps_low for symmetric)"""
    kl_coef: float = 0.0
    """KL to the initial policy (off)"""
    std_norm: bool = True
    """grpo: group advantages divided by std (off = dr-grpo)"""
    estimator: str = "grpo"
    """advantage: grpo | dr-grpo | rloo | reinforce++ (real/train/grpo.py; docs/real-loop.md)"""
    max_grad_norm: float = 1.0
    """gradient clipping"""
    old_logprobs: str = "engine"
    """engine | recompute (see grpo.py)"""
    epochs: int = 1
    """passes over each step's batch"""
    minibatches: int = 2
    """optimizer updates per pass"""
    micro_batch: int = 0
    """sequences per forward/backward (gradient accumulation); 0 = all"""
    bf16_autocast: bool = False
    """bf16 autocast in torch forward passes (GPU)"""
    device: str = "auto"
    """torch device for training: auto = cuda if available, else cpu"""
    grad_checkpointing: bool = False
    """recompute activations in backward (long GPU sequences)"""

    def __post_init__(self):
        # here, not in real/app/run.py: every Config (CLI, benchmark, a resumed run's file)
        # meets it
        from sara_sim.core.errors import ParameterError

        if self.estimator not in ESTIMATORS:
            raise ParameterError(
                "--estimator", f"must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}"
            )
        if not self.std_norm and self.estimator != "grpo":
            raise ParameterError(
                "--no-std", f"applies to --estimator grpo only, not {self.estimator}"
            )


@dataclass
class StrategyConfig:
    """The strategy's own settings (sara_sim.collect.collectors.make_collector and the history /
    selector objects it runs with; defaults from sara_sim.core.registry); a setting the chosen
    strategy does not use is ignored."""

    tau_low: float = SARA.tau_low
    """SARA abandonment threshold on p_eff"""
    tau_high: float | None = SARA.tau_high
    """optional early-commit threshold (off)"""
    prior: tuple[float, float] = SARA.prior
    """SARA Beta prior (sara-eb/auto fit theirs)"""
    capacity: int | None = SARA.capacity
    """rollouts per round (default groups * k)"""
    probe: int = SARA.probe
    """sara: rollouts of a fresh prompt's first round, in [0, k] (0 = the plan's own)"""
    increment: int = SARA.increment
    """sara: rollouts per later round of a prompt, in [0, k] (0 = the plan's own)"""
    max_rounds: int = SARA.max_rounds
    """sara: rounds per step before the step ends short (reported as capped)"""
    eb_window: int = SARA.eb_window
    """sara-eb/auto/history: steps of decided prompts the empirical-Bayes prior is fitted on"""
    carry: bool = SARA.carry
    """SARA family: carry surplus groups and still-open prompts into the next step (one policy
    step stale); --no-carry drops them at the step's end, spent, as DS drops its surplus (in a
    compare: NAME+no-carry)"""
    gen_batch_size: int | None = _DS.gen_batch_size
    """DS prompts per generation batch (default groups)"""
    max_num_gen_batches: int = _DS.max_num_gen_batches
    """DS cap on generation batches per step"""
    rule: str = HISTORY.rule
    """history strategies: price (Bayes-optimal at the running cost) | tau (tau_low rule)"""
    rho: float = HISTORY.rho
    """history strategies: evidence kept per epoch of age, in (0, 1]"""
    kappa: float = HISTORY.kappa
    """history strategies: pull toward the population prior, > 0"""
    explore: float = HISTORY.explore
    """history strategies: chance a skip is overridden, in [0, 1]"""
    max_skip: int = HISTORY.max_skip
    """history strategies: skips in a row before a prompt must be probed"""
    selector_ratio: float = HISTORY.ratio
    """sara-mopps/dps: candidates pulled per prompt probed, >= 1"""
    selector_target: float = 0.5
    """sara-mopps: the success rate candidates are ranked toward, in [0, 1]"""
    schedule: str = "rounds"
    """rounds (a barrier per round) | stream (round-free: ds and the sara strategies, the
    history and selector ones included)"""
    max_inflight: int = SARA.max_inflight
    """sara: rollouts a prompt has in flight at once, in [0, k] (0 = its plan's own requests)"""
    overprovision: float = SARA.overprovision
    """sara: >= 1; rounds probe this many times the prompts they need (fewer rounds); a stream
    probes for up to this many times the missing groups, tapering as the step fills (fuller)"""
    request_cost: float = SARA.request_cost
    """sara-auto: a request's price in rollouts, >= 0; its plan minimises rollouts + this x
    requests per effective group (0 = rollouts only; ~2 on the served toy: docs/results.md)"""
    priced_in: str = SARA.priced_in
    """sara-auto, and the price rule of sara-history/-mopps/-dps: what a plan minimises per
    effective group: rollouts | tokens (a rollout priced by its outcome's mean length, learned
    from the run's own rollouts); refused for a strategy without a price (in a compare:
    NAME+tokens)"""


@dataclass
class EngineConfig:
    """Where and how rollouts are sampled: an in-process vLLM engine or running vLLM servers
    (real/sampling; `make_engine`)."""

    engine_url: str | None = None
    """running vLLM server(s) URL[,URL...] to sample from instead of an in-process engine"""
    dtype: str = "float32"
    """engine dtype (torch keeps float32 master weights)"""
    max_model_len: int | None = None
    """engine context (default: the model's)"""
    gpu_memory_utilization: float | None = None
    """engine's GPU share (colocated training: ~0.3)"""
    max_tokens: int | None = None
    """completion budget (default: the task's)"""
    temperature: float = 1.0
    """sampling temperature (training and evaluation)"""


SECTIONS = {"grpo": GRPOConfig, "knobs": StrategyConfig, "engine": EngineConfig}


def deprecated(old: str, new: str) -> None:
    """The one line a renamed flag or keyword that still works prints (`old` -> `new`)."""
    print(f"{old} is deprecated; use {new}", file=sys.stderr)


# A field whose flag is not --<name> (kept from earlier releases); booleans that default to True
# are switched off by --no-<name>.
FLAG_NAMES = {"std_norm": "--no-std"}


def flag_of(name: str, default=None) -> str:
    """The `sara-real` flag of a Config field (real/app/cli.py declares them so).

    >>> flag_of("tau_low"), flag_of("std_norm", True), flag_of("progress", True)
    ('--tau-low', '--no-std', '--no-progress')
    """
    if name in FLAG_NAMES:
        return FLAG_NAMES[name]
    return ("--no-" if default is True else "--") + name.replace("_", "-")


@dataclass
class Config:
    """One run; each leaf field is a `sara-real validate` flag (dashes for underscores)."""

    model: str | None = None
    """HF-format model dir or cached hub id; None = the tiny default"""
    task: str = "arithmetic"
    """arithmetic | countdown | math | reasoning | reasoning-long"""
    task_path: str | None = None
    """JSONL file for the math task (default: the shipped sample)"""
    eval_path: str | None = None
    """JSONL held-out set for the math task (default: every 5th row of task_path)"""
    strategy: str = "sara"
    """one of real.base.config.STRATEGIES"""
    task_size: int | None = None
    """arithmetic, countdown: a finite pool of N training problems (history strategies need one)"""
    k: int = 8
    """rollouts per group"""
    groups: int = 16
    """effective groups per step (fixed yield; uniform: groups per step)"""
    steps: int = 20
    """optimizer steps"""
    seed: int = 0
    """seeds the prompt source, every rollout's sampling and minibatch order"""
    out: str = "runs/validate"
    """run directory: metrics.jsonl, summary.json, checkpoint.pt"""
    resume: bool = False
    """continue from out/checkpoint.pt"""
    overwrite: bool = False
    """start over in an out dir that already holds a run"""
    eval_every: int = 5
    """held-out evaluation every E steps (and after the last)"""
    eval_samples: int = 4
    """samples per held-out problem (pass@1 = mean success)"""
    eval_problems: int | None = 64
    """held-out problems used (none = all of the task's held-out set)"""
    ckpt_every: int = 1
    """checkpoint every C steps (and after the last)"""
    progress: bool = True
    """progress bar"""
    force: bool = False
    """run a request beyond this machine's memory bound (real.app.run.check_memory)"""
    trainer: str = "native"
    """native (real/train/grpo.py) | trl (TRL's GRPOTrainer via real/trl/adapter.py; .[trl])"""
    task_seed: int | None = None
    """seeds the task's problems and held-out set (default: --seed; fix it: one dataset)"""
    eval_size: int | None = None
    """held-out problems the arithmetic/countdown task generates (default: the task's 64)"""
    audit_abandoned: int = 0
    """abandoned prompts per step completed off-budget to count false abandons (0 = off)"""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO (the optimisation in torch)"""
    knobs: StrategyConfig = field(default_factory=StrategyConfig)
    """strategy (its settings are checked whichever strategy runs)"""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """engine (where and how rollouts are sampled)"""

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        """A Config from `asdict(config)`, as a run folder holds it (each section's settings
        under its name); missing settings take their defaults, JSON lists become tuples, an
        unknown name (a section's setting outside its section too) is a ValueError."""
        d = dict(d)
        parts = {name: dict(d.pop(name, None) or {}) for name in SECTIONS}
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        for name, cls_ in SECTIONS.items():
            unknown += sorted(set(parts[name]) - {f.name for f in fields(cls_)})
        if unknown:
            raise ValueError(f"unknown settings {', '.join(unknown)}")
        parts = {name: cls_(**_tuples(cls_, parts[name])) for name, cls_ in SECTIONS.items()}
        return cls(**_tuples(cls, d), **parts)

    @classmethod
    def from_flat(cls, d: dict) -> "Config":
        """A Config from {leaf name: value} (leaf names are unique across the sections), as the
        CLI's arguments give them: `from_dict` of the same settings put in their sections."""
        d, nested = dict(d), {}
        for name, cls_ in SECTIONS.items():
            nested[name] = {f.name: d.pop(f.name) for f in fields(cls_) if f.name in d}
        return cls.from_dict({**d, **nested})

    def flat(self) -> dict:
        """{leaf name: value} over the top level and every section (names are unique)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out.update(flat_fields(v) if f.name in SECTIONS else {f.name: v})
        return out


def flat_fields(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _tuples(cls, d: dict) -> dict:
    """JSON has no tuples: a list for a tuple-typed field (prior, betas) becomes one again."""
    kinds = {f.name: f.type for f in fields(cls)}
    return {
        k: tuple(v) if isinstance(v, list) and "tuple" in str(kinds.get(k)) else v
        for k, v in d.items()
    }


# ---------------------------------------------------------------- the run's collector

# The strategies whose collector carries surplus and open groups from step to step (SARA's
# round state machine); in a compare's list, NAME+no-carry runs NAME with carry off.
CARRIERS = tuple(
    n for n in names("real") if row(n).family in ("sara", "sara-history", "sara-select")
)
NO_CARRY = "+no-carry"
# a compare entry's suffixes: +no-carry (carry off), +stream / +rounds (its schedule, whatever
# --schedule says), +tokens (its plan priced in tokens, whatever --priced-in says)
SUFFIXES = ("no-carry", "stream", "rounds", "tokens")


class Spec(NamedTuple):
    """A compare's entry: the strategy and what its suffixes set (None: the compare's flag)."""

    name: str
    carry: bool = True
    schedule: str | None = None
    priced_in: str | None = None


def split_spec(spec: str) -> Spec:
    """A compare's strategy entry, NAME[+SUFFIX...] -> its Spec; a ParameterError naming
    --strategies for an unknown or clashing suffix (the name is checked by the caller).

    >>> split_spec("sara+no-carry"), split_spec("ds")
    (Spec(name='sara', carry=False, schedule=None, priced_in=None), Spec(name='ds', carry=True, \
schedule=None, priced_in=None))
    >>> split_spec("sara-auto+stream+tokens")
    Spec(name='sara-auto', carry=True, schedule='stream', priced_in='tokens')
    """
    from sara_sim.core.errors import ParameterError

    name, *words = str(spec).split("+")
    bad = [w for w in words if w not in SUFFIXES]
    if bad or len(set(words)) != len(words) or {"stream", "rounds"} <= set(words):
        allowed = ", ".join("+" + w for w in SUFFIXES)
        raise ParameterError(
            "--strategies", f"{spec}: suffixes are {allowed}, each once (+stream or +rounds)"
        )
    schedule = next((w for w in words if w in ("stream", "rounds")), None)
    return Spec(name, "no-carry" not in words, schedule, "tokens" if "tokens" in words else None)


# The history strategies learn from revisits: their prompt ids are epoch * size + index.
INFORMED = names("real", needs_history=True)
# Where a history / selector object names a setting differently from StrategyConfig.
_RENAMED = {"ratio": "selector_ratio", "target": "selector_target"}


def build_collector(
    name: str,
    knobs: StrategyConfig,
    *,
    k: int,
    groups: int,
    seed: int,
    epoch_size: int | None = None,
):
    """The collector of one run: the one place `real/` calls `make_collector`. History
    strategies need `epoch_size` (the finite task's size). A bad setting is a ParameterError
    naming the StrategyConfig field (check_config turns it into its flag).

    >>> col = build_collector("sara", StrategyConfig(probe=2), k=8, groups=4, seed=0)
    >>> col.probe, col.tau_low
    (2, 0.2)
    """
    from sara_sim.collect.collectors import make_collector
    from sara_sim.core.errors import ParameterError, check_int
    from sara_sim.core.optimal import check_priced_in

    # tokens: refused where the strategy's plan has no price (DS, uniform, the tau rule, the
    # peers), never run priced in rollouts in silence
    check_priced_in(name, knobs.priced_in, knobs.rule if name in INFORMED else "tau")
    opts = {f.name: getattr(knobs, f.name) for f in fields(knobs)}
    history = {n: opts.pop(n) for n in ("rho", "kappa", "explore", "max_skip")}
    ratio, target, rule = opts.pop("selector_ratio"), opts.pop("selector_target"), opts.pop("rule")
    opts["schedule"] = opts.pop("schedule")  # make_collector's own argument, not a knob
    try:
        if row(name).family == "peer-select":  # the peer recipe's posterior and ratio
            opts["epoch_size"] = check_int(epoch_size, "epoch_size", 1)
        elif name in INFORMED:  # the history (and selector) make_collector would build, ours set
            from sara_sim.collect.selectors import Selector
            from sara_sim.core.informed import PromptHistory

            size = check_int(epoch_size, "epoch_size", 1)
            opts |= {"epoch_size": size, "rule": rule}
            opts["history"] = PromptHistory.for_integer_ids(size, seed, **history)
            kind = row(name).selector  # the registry's Selector kind (None: sara-history)
            if kind is not None:
                opts["selector"] = Selector(kind, ratio=ratio, target=target, seed=seed)
        return make_collector(name, k=k, groups=groups, seed=seed, **opts)
    except ParameterError as e:  # name the StrategyConfig field, whoever checked it
        message = str(e)[len(e.parameter) + 2 :]
        raise ParameterError(_RENAMED.get(e.parameter, e.parameter), message) from None
