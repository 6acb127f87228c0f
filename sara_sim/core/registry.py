"""The strategies, one row each (docs/design.md §3): the only place their names and defaults are
written.

Every list of strategy names in the toolkit is a view of ``ROWS``: the simulator's
(``sara-sim simulate / compare``: rows with a kernel), the collectors' (``make_collector``,
``sara-sim replay``, ``sara-real --strategy``, the TRL adapter), the ones that learn from
revisits (``needs_history``: a finite task, an epoch size).  The Python collectors' knobs are
frozen parameter objects with their defaults written once here: ``SaraParams`` (the SARA
collectors), ``DSParams`` (dynamic sampling), ``HistoryParams`` (the informed priors and the
selectors, cross-validated by ``benchmarks/fit_informed.py``).

Two families select prompts with MoPPS / DPS and score them differently, hence two names each:

* ``peer-select`` (``mopps``, ``dps``: the peers' recipes; kernel and collector,
  ``collect/peer_select.py``, no replay) — the peer's own
  posterior (MoPPS: Beta(1, 1) pseudo-counts with the recipe's decay; DPS: the last visit's
  state) ranks ``ratio`` = 4 candidates per slot and each chosen prompt gets a whole group of k;
* ``sara-select`` (``sara-mopps``, ``sara-dps``: collectors) — the selector
  (``selectors.py``) ranks ``ratio`` = 1.5 candidates per probe on sara-history's informed prior
  (MoPPS) or on the pooled visit-to-visit transitions (DPS), then SARA decides each chosen prompt
  round by round with that informed prior.

>>> row("sara").family, row("sara").defaults_of("collector")["tau_low"]
('sara', 0.2)
>>> [r.name for r in ROWS if r.needs_history]
['sara-history', 'sara-mopps', 'sara-dps', 'mopps', 'dps']
>>> names("collector") == names("real")
True
"""

from dataclasses import asdict, dataclass, field, fields, replace

from .errors import ParameterError

IMPLEMENTATIONS = ("kernel", "collector", "replay", "real", "verl")
PRICED_IN = ("rollouts", "tokens")  # what a priced plan minimises per effective group


@dataclass(frozen=True)
class SaraParams:
    """The SARA collectors' knobs (docs/design.md §1-§2), passed whole to ``SaraCollector``."""

    tau_low: float = 0.2  # abandon when p_eff < tau_low (paper's rule; 0.2: our default)
    tau_high: float | None = None  # commit side of the rule: off (docs/design.md §1)
    prior: tuple = (1.0, 1.0)  # Beta(1, 1): the paper's uniform prior (docs/design.md §1)
    # rollouts per round; None: groups x k (or the budget), docs/design.md §2
    capacity: int | None = None
    probe: int = 0  # first-round rollouts; 0: up to the abandonment point (docs/design.md §2)
    increment: int = 0  # later rounds; 0: auto (docs/design.md §2)
    eb_window: int = 4  # sara-eb / -auto / -history: steps of outcomes the prior fits (ours)
    max_rounds: int = 100  # rounds per step before the step is reported capped (ours)
    rule: str = "tau"  # sara-history: "tau" (the paper's rule) or "price" (``informed.py``)
    # carry surplus committed and still-open groups into the next step (one policy step stale);
    # False: drop them at the step's end, spent, as DS drops its surplus (ours: the ablation)
    carry: bool = True
    # fewer rounds: each round probes this many times the fresh prompts the running commit rate
    # calls for (>= 1; 1: today's schedule); the surplus is carried (ours, not the paper's)
    overprovision: float = 1.0
    # rollouts a prompt has in flight at once (a round's or a stream's, collect/stream.py);
    # 0: its plan's own requests (ours, not the paper's)
    max_inflight: int = 0
    # sara-auto: a request's price in rollouts; its plan minimises (rollouts + request_cost x
    # requests) per effective group (optimal.py; 0: rollouts only, the paper's price; ours)
    request_cost: float = 0.0
    # sara-auto (and sara-history's price rule): "tokens" prices a rollout by its outcome's mean
    # length, learned from the run's own rollouts of the last eb_window steps (optimal.py:
    # fewest tokens per effective group); "rollouts": every rollout alike (the paper's; ours)
    priced_in: str = "rollouts"


@dataclass(frozen=True)
class DSParams:
    """DAPO dynamic sampling with verl semantics (docs/design.md §3; the DAPO recipe's values)."""

    gen_batch_size: int | None = None  # prompts per generation batch; None: groups
    max_num_gen_batches: int = 10  # 0: no cap


@dataclass(frozen=True)
class HistoryParams:
    """The informed priors (``informed.py``) and the selectors in front of them: chosen by
    ``benchmarks/fit_informed.py`` on fold A, epochs 0-25 (held out: fold B, epochs 26-52)."""

    rho: float = 0.8  # forgetting per epoch
    kappa: float = 0.25  # shrinkage toward the fitted population prior
    explore: float = 0.05  # probability that a skip is overridden
    max_skip: int = 2  # a prompt skipped this many visits in a row is probed
    rule: str = "price"  # the Bayes-optimal plan at the run's price
    ratio: float = 1.5  # sara-mopps / sara-dps: candidates per probed prompt


SARA = SaraParams()
HISTORY = HistoryParams()
_EB = {"eb_window": SARA.eb_window, "exact_core_fit": False}
_INFORMED = {f.name: getattr(HISTORY, f.name) for f in fields(HistoryParams) if f.name != "ratio"}
_DS = {"gen_batch_size": None, "max_num_gen_batches": DSParams().max_num_gen_batches}


@dataclass(frozen=True)
class Row:
    """One strategy.  `kernel`: "sara" (``kernels.sara_steps``), "batch" (``peers.batch_steps``,
    strategy code ``peers.<peer_code>``) or None; `implements`: which of IMPLEMENTATIONS exist;
    `sim_defaults`: its ``simulate(..., key=value)`` / ``--param`` parameters (None: resolved
    from k / groups by ``strategies.default_params``); `fixed_budget`: the implementations that
    take a rollout budget instead of a yield target."""

    name: str
    family: str
    summary: str
    implements: tuple
    kernel: str | None = None
    peer_code: str | None = None
    needs_history: bool = False
    fixed_budget: tuple = ()
    sim_defaults: dict = field(default_factory=dict)
    sources: str = ""
    selector: str | None = None  # sara-select: the ``selectors.Selector`` kind
    # dynamic sampling: prompts per generation batch when gen_batch_size is unset, in groups (N)
    gen_batch_factor: int = 1
    # the source of saving this strategy adds over the one before it on the chain from DS
    # streamed (sim/baselines.py: the decomposition of a saving, docs/design.md §5); "": none
    saving: str = ""

    def defaults_of(self, implementation):
        """The defaults an implementation starts from (kernel: its parameters; collector: the
        fields of its parameter object)."""
        if implementation == "kernel" or self.family == "peer-select":  # one set of knobs
            return dict(self.sim_defaults)
        params = PARAMS.get(self.family)
        out = asdict(params()) if params else {}
        if self.needs_history:
            out.update(asdict(HISTORY))
        return out


_ALL = ("kernel", "collector", "replay", "real")
_COLLECT = ("collector", "replay", "real")
_PEER = ("kernel", "collector", "real")  # no replay: the audits replay SARA's history rows only
_VERL = (*_ALL, "verl")  # also real/verl's plug-in (ds there: verl's own DAPO filter)
ROWS = (
    Row("uniform", "uniform", "N prompts x k rollouts", _ALL, "batch", "UNIFORM",
        fixed_budget=("kernel", "collector"), sources="docs/design.md §3"),
    Row("ds", "dynamic-sampling", "dynamic sampling (verl)", _VERL, "batch", "DS",
        sim_defaults=dict(_DS),
        sources="docs/design.md §3; verl DAPO recipe (max_num_gen_batches 10)"),
    Row("ds-verl3n", "dynamic-sampling", "dynamic sampling, verl's 3N generation batch",
        _ALL, "batch", "DS", sim_defaults=dict(_DS), gen_batch_factor=3,
        sources="verl DAPO recipe run scripts: gen batch = 3 x train batch"),
    Row("sara", "sara", "tau rule, uniform prior", _VERL, "sara",
        fixed_budget=("kernel", "collector"), sim_defaults={"plan": None},
        sources="paper; docs/design.md §1-§2 (prior 1,1)", saving="the stopping rule"),
    Row("sara-eb", "sara", "tau rule, empirical-Bayes prior", _VERL, "sara",
        fixed_budget=("kernel", "collector"), sim_defaults=dict(_EB),
        sources="docs/design.md §3; eb_window 4 (ours)"),
    Row("sara-auto", "sara", "Bayes-optimal plan, EB prior", _VERL, "sara",
        fixed_budget=("kernel", "collector"),
        sim_defaults={**_EB, "request_cost": 0.0, "priced_in": "rollouts"},
        sources="docs/design.md §3 (optimal.bayes_optimal)", saving="priors and plans"),
    Row("sara-history", "sara-history", "per-prompt informed prior (informed.py)", _VERL, "sara",
        needs_history=True, fixed_budget=("collector",),
        sim_defaults={**_EB, **_INFORMED, "priced_in": "rollouts"},
        sources="informed.py; benchmarks/fit_informed.py (cross-validated)",
        saving="per-prompt history"),
    Row("sara-mopps", "sara-select", "MoPPS-ranked prompts, then SARA on informed priors",
        _COLLECT, needs_history=True, fixed_budget=("collector",), selector="mopps",
        sources="selectors.py; benchmarks/fit_informed.py (ratio 1.5)"),
    Row("sara-dps", "sara-select", "DPS-ranked prompts, then SARA on informed priors", _COLLECT,
        needs_history=True, fixed_budget=("collector",), selector="dps",
        sources="selectors.py; benchmarks/fit_informed.py (ratio 1.5)"),
    Row("speed", "sara", "SPEED-RL screen-then-continue", ("kernel",), "sara",
        fixed_budget=("kernel",), sim_defaults={"n_init": 4}, sources="SPEED-RL (n_init 4)"),
    Row("greso", "dynamic-sampling", "GRESO skip + dynamic sampling", ("kernel",), "batch",
        "GRESO", sim_defaults={**_DS, "p_init": 0.5, "dp": 0.01, "alpha_easy": 1 / 12,
                               "alpha_hard": 1 / 6, "p_min": 0.05},
        sources="GRESO paper (dp, targets); p_init, p_min and the split: ours"),
    Row("mopps", "peer-select", "MoPPS Thompson selection (whole groups)", _PEER, "batch",
        "MOPPS", needs_history=True, sim_defaults={"ratio": 4.0, "target": 0.5, "decay": 1.0,
                               "mopps_prior": (1.0, 1.0)},
        sources="MoPPS recipe (bandit_decay_ratio 1, target 0.5); ratio 4: ours (recipe 16)"),
    Row("dps", "peer-select", "DPS Markov selection (whole groups)", _PEER, "batch", "DPS",
        needs_history=True, sim_defaults={"ratio": 4.0},
        sources="DPS paper (our reading of its HMM); ratio 4: ours"),
    Row("reinforce-ada", "peer-alloc", "Reinforce-Ada adaptive rounds", ("kernel",), "batch",
        "RADA", sim_defaults={"round_size": None, "ada_max_rounds": 4, "exit": "balanced"},
        sources="Reinforce-Ada run script (exit balanced); max_rounds 4: ours"),
    Row("knapsack", "peer-alloc", "Knapsack-RL budget-neutral allocation", ("kernel",), "batch",
        "KNAPSACK", sim_defaults={"n_min": 2, "n_max": None, "weight": "info"},
        sources="Knapsack-RL paper (n_min 2, n_max ~12 k); the 'info' value: our reading"),
)  # fmt: skip
# the Python parameter object of each collector family (uniform has no knobs)
PARAMS = {"sara": SaraParams, "sara-history": SaraParams, "sara-select": SaraParams}
PARAMS["dynamic-sampling"] = DSParams
_BY_NAME = {r.name: r for r in ROWS}


def names(implementation=None, *, needs_history=None, fixed_budget=None):
    """Strategy names (registry order) that have `implementation`, optionally filtered.

    >>> names("kernel", fixed_budget="kernel")
    ('uniform', 'sara', 'sara-eb', 'sara-auto', 'speed')
    """
    if implementation is not None and implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}")
    out = []
    for r in ROWS:
        if implementation is not None and implementation not in r.implements:
            continue
        if needs_history is not None and r.needs_history != needs_history:
            continue
        if fixed_budget is not None and fixed_budget not in r.fixed_budget:
            continue
        out.append(r.name)
    return tuple(out)


def row(name, implementation=None, flag="--strategy"):
    """The row of `name`; a ParameterError naming `flag` lists the choices when the name is
    unknown or lacks `implementation`."""
    choices = names(implementation)
    r = _BY_NAME.get(name) if isinstance(name, str) else None
    if r is None or r.name not in choices:
        raise ParameterError(flag, f"unknown strategy {name!r}; choose from {', '.join(choices)}")
    return r


def collector_params(name, params=None, **knobs):
    """The parameter object of `name`'s collector family: `params` (or the defaults) with
    `knobs` replaced.  Knobs of another family are ignored (the real loop passes one options
    dict for every collector); a name that is no knob of any family is refused.

    >>> collector_params("sara", tau_low=0.3, gen_batch_size=8)
    SaraParams(tau_low=0.3, tau_high=None, prior=(1.0, 1.0), capacity=None, probe=0, \
increment=0, eb_window=4, max_rounds=100, rule='tau', carry=True, overprovision=1.0, \
max_inflight=0, request_cost=0.0, priced_in='rollouts')
    """
    known = {f.name for cls in set(PARAMS.values()) for f in fields(cls)}
    for key in knobs:
        if key not in known:
            raise ParameterError(key, f"not a collector parameter ({', '.join(sorted(known))})")
    cls = PARAMS.get(row(name, "collector", "strategy").family)
    if cls is None:
        return None
    if params is not None and not isinstance(params, cls):
        raise ParameterError("params", f"{name} takes a {cls.__name__}, got {params!r}")
    mine = {f.name for f in fields(cls)}
    base = params if params is not None else cls()
    return replace(base, **{key: v for key, v in knobs.items() if key in mine})


__all__ = ["ROWS", "Row", "SaraParams", "DSParams", "HistoryParams", "SARA", "HISTORY"]
__all__ += ["names", "row", "collector_params", "PARAMS", "IMPLEMENTATIONS"]
