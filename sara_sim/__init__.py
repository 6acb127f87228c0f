"""SARA: sequential adaptive rollout allocation — exact core, collectors and simulator.

predictor (core.beta.p_eff) -> stopping rule (core.policy) -> round schedule (core.schedule)
-> collectors (collect) -> simulator (sim) | real loop (real/) | trainer integrations;
the layers are drawn in docs/design.md §6.

The public API is ``__all__`` (tests/core/test_public_api.py holds it); everything else is an
internal module. The exports validate their arguments (``ParameterError`` naming the parameter);
the jitted originals in ``core.policy`` / ``core.beta.p_eff_jit`` are for kernels and check
nothing. ``make_collector`` builds a round-synchronous collector for a strategy (``STRATEGIES``)
from one parameter object (``SaraParams``, ``DSParams``) or its fields by name; its
``collect_step(prompts, sample)`` hands ``sample`` a list of ``Request`` and returns a
``StepResult``. ``simulate`` is the simulator's front door; ``theory`` and ``optimal`` are the
exact per-prompt law and Bayes-optimal stopping (modules); a difficulty law is a ``BetaLaw`` or
``parse_law("mix:0.5*beta:1,5+0.5*beta:5,1")`` (also ``point:G``, ``history:PATH``).

>>> from sara_sim import make_collector, SaraParams
>>> make_collector("sara", k=8, groups=4, params=SaraParams(tau_low=0.3)).tau_low
0.3
>>> from sara_sim import BetaLaw, simulate, theory
>>> theory.sequential_law(BetaLaw(1, 1), 8, 0.2)["rollouts_per_prompt"]  # exact
7.75
>>> f = simulate("sara", BetaLaw(1, 1), k=8, groups=64, steps=50, replicates=2, seed=0).frame
>>> round(float(f.decided_rollouts.sum() / f.decided.sum()), 2)  # simulated, seed 0
7.74
"""

from .collect.collectors import STRATEGIES, Request, StepResult, make_collector
from .core.beta import p_eff
from .core.checked import decide, decide_plan, threshold_plan
from .core.errors import ParameterError
from .core.policy import ABANDON, COMMIT, CONTINUE, SATURATED
from .core.registry import DSParams, HistoryParams, SaraParams

# loaded on first use: `import sara_sim` stays fast for the CLIs' argument checks (the Numba
# simulator adds ~0.7 s of imports, the laws pandas)
_LAZY = {
    "simulate": ".sim.simulate",
    "BetaLaw": ".core.difficulty",
    "parse_law": ".core.difficulty",
}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    if name in ("theory", "optimal"):
        return importlib.import_module(f".core.{name}", __name__)
    raise AttributeError(f"module 'sara_sim' has no attribute {name!r}")


__all__ = [
    # the rule
    "p_eff",
    "decide",
    "decide_plan",
    "threshold_plan",
    "CONTINUE",
    "COMMIT",
    "ABANDON",
    "SATURATED",
    # collectors
    "make_collector",
    "STRATEGIES",
    "SaraParams",
    "DSParams",
    "HistoryParams",
    "Request",
    "StepResult",
    # the simulator, exact theory, difficulty laws
    "simulate",
    "theory",
    "optimal",
    "BetaLaw",
    "parse_law",
    "ParameterError",
]
