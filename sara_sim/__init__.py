"""SARA: sequential adaptive rollout allocation — exact core and simulator.

predictor (beta.p_eff) -> stopping rule (policy) -> allocator -> (simulator | real loop).

The exports validate their arguments (``errors.ParameterError`` naming the parameter); the
jitted originals in ``policy`` / ``beta.p_eff_jit`` are for kernels and check nothing.
``make_collector`` builds a round-synchronous collector (``allocator.py``) from a strategy name of
``registry.py`` and one parameter object (``SaraParams``, ``DSParams``) or its fields by name.
The simulator and the exact theory are modules: ``from sara_sim import simulate, theory``, then
``simulate.simulate(...)``, ``theory.sequential_law(...)``.

>>> from sara_sim import make_collector, SaraParams
>>> make_collector("sara", k=8, groups=4, params=SaraParams(tau_low=0.3)).tau_low
0.3
"""

from .allocator import make_collector
from .beta import p_eff
from .checked import decide, decide_plan, threshold_plan
from .errors import ParameterError
from .policy import ABANDON, COMMIT, CONTINUE, SATURATED
from .registry import DSParams, HistoryParams, SaraParams

__all__ = [
    "p_eff",
    "make_collector",
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
