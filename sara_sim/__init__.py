"""SARA: sequential adaptive rollout allocation — exact core and simulator.

predictor (beta.p_eff) -> stopping rule (policy) -> allocator -> (simulator | real loop)."""

from .beta import p_eff
from .errors import ParameterError
from .policy import ABANDON, COMMIT, CONTINUE, SATURATED, decide, decide_plan, threshold_plan

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
