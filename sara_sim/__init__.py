"""SARA: sequential adaptive rollout allocation — exact core, collectors and simulator.

predictor (core.beta.p_eff) -> stopping rule (core.policy) -> round schedule (core.schedule)
-> collectors (collect) -> simulator (sim) | real loop (real/) | trainer integrations;
the layers are drawn in sara_sim/README.md.

The exports validate their arguments (``ParameterError`` naming the parameter); the jitted
originals in ``core.policy`` / ``core.beta.p_eff_jit`` are for kernels and check nothing.
``make_collector`` builds a round-synchronous collector (``collect.collectors``) from a strategy
name of ``core.registry`` and one parameter object (``SaraParams``, ``DSParams``) or its fields by
name.  ``simulate`` is the simulator's front door (``sim.simulate.simulate``); ``theory`` and
``optimal`` are the exact per-prompt law and Bayes-optimal stopping (modules).

>>> from sara_sim import make_collector, SaraParams
>>> make_collector("sara", k=8, groups=4, params=SaraParams(tau_low=0.3)).tau_low
0.3
>>> from sara_sim import simulate, theory
>>> from sara_sim.core.difficulty import BetaLaw
>>> theory.sequential_law(BetaLaw(1, 1), 8, 0.2)["rollouts_per_prompt"]  # exact
7.75
>>> f = simulate("sara", BetaLaw(1, 1), k=8, groups=64, steps=50, replicates=2, seed=0).frame
>>> round(float(f.decided_rollouts.sum() / f.decided.sum()), 2)  # simulated, seed 0
7.74
"""

from .collect.collectors import make_collector
from .core.beta import p_eff
from .core.checked import decide, decide_plan, threshold_plan
from .core.errors import ParameterError
from .core.policy import ABANDON, COMMIT, CONTINUE, SATURATED
from .core.registry import DSParams, HistoryParams, SaraParams


def __getattr__(name):
    # the simulator and the exact theory load on first use: `import sara_sim` stays fast for the
    # CLIs' argument checks (the Numba simulator adds ~0.7 s of imports)
    if name == "simulate":
        from .sim.simulate import simulate

        return simulate
    if name in ("theory", "optimal"):
        import importlib

        return importlib.import_module(f".core.{name}", __name__)
    raise AttributeError(f"module 'sara_sim' has no attribute {name!r}")


__all__ = [
    "p_eff",
    "make_collector",
    "simulate",
    "theory",
    "optimal",
    "SaraParams",
    "DSParams",
    "HistoryParams",
    "ParameterError",
    "decide",
    "decide_plan",
    "threshold_plan",
    "CONTINUE",
    "COMMIT",
    "ABANDON",
    "SATURATED",
]
