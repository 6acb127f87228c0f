"""SARA: sequential adaptive rollout allocation — exact core and simulator.

predictor (beta.p_eff) -> stopping rule (policy) -> allocator -> (simulator | real loop).

The exports validate their arguments (``errors.ParameterError`` naming the parameter); the
jitted originals in ``policy`` / ``beta.p_eff_jit`` are for kernels and check nothing."""

from .beta import p_eff
from .checked import decide, decide_plan, threshold_plan
from .errors import ParameterError
from .policy import ABANDON, COMMIT, CONTINUE, SATURATED

__all__ = [
    "p_eff",
    "ParameterError",
    "decide",
    "decide_plan",
    "threshold_plan",
    "CONTINUE",
    "COMMIT",
    "ABANDON",
    "SATURATED",
]
