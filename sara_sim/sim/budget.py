"""Resource bounds of the simulator: estimate the rollouts, prior fits and memory of a request
before running it, and refuse (one line naming the biggest factor) what would not finish in a few
minutes on this machine — unless the caller passes ``force=True`` (the CLIs' ``--force``).
Every factor that scales work or memory is counted: k, groups (or budget), steps, replicates, the
round capacity, and the prompt pool (``--pool`` of a static law, a drift law's POOL).

>>> from sara_sim.core.difficulty import BetaLaw
>>> rollouts, fits, nbytes = estimate("sara", BetaLaw(1, 1), k=8, groups=64, budget=None,
...     steps=100, replicates=4)
>>> round(rollouts), nbytes < 8 * 2**20    # 64 x 8 / P(mixed) x 100 steps x 4 replicates; < 8 MiB
(263314, True)
"""

import math

from ..core.errors import check_budget
from .laws import DriftLaw
from .metrics import N_METRICS
from .strategies import ADAPTIVE, info

# What "a few minutes on this machine" means for the simulator (2 cores, 24 GiB, shared): the
# kernels generate ~25-90 M rollouts/s (`sara-sim bench`), the adaptive strategies pay ~1 ms of
# Python per replicate-step for their prior fit, and the open-prompt table must fit in memory.
ROLLOUT_LIMIT = 1e10
ADAPTIVE_STEP_LIMIT = 2e5
MEMORY_LIMIT = 8 * 2**30
_DEFAULTS = {"--groups": 64, "--steps": 100, "--replicates": 4, "--k": 8}
# bytes per pool prompt and replicate: its order, rate and training count (3 x 8), a batch
# strategy's history (4 x 8 + 2 x 8) and a SARA history strategy's evidence (4 x 8)
POOL_BYTES = 104


def pool_size(law, pool=0) -> int:
    """Prompts in a run's revisited pool: a drift law's POOL, else `pool` (0: fresh prompts)."""
    return int(law.pool) if isinstance(law, DriftLaw) else int(pool or 0)


def pool_flag(law) -> str:
    """The flag that sets the pool: --difficulty (drift:A,B,RATE,BOOST,POOL) or --pool."""
    return "--difficulty" if isinstance(law, DriftLaw) else "--pool"


def estimate(
    strategy, law, *, k, groups, budget, steps, replicates, capacity=None, params=None, pool=0
):
    """(expected rollouts, replicate-steps, bytes) of a ``simulate`` call, before running it.

    Rollouts per step: fixed-budget = budget; fixed-yield = N x k / P(mixed) under the law's
    step-0 moments (1 / P(mixed) prompts per effective group), capped by the strategy's own round
    or batch cap.  Bytes: the open-prompt table (~4 probes per round slot, 8 N_FIELDS + 24 B
    each), the per-step metric frame and the prompt pool (POOL_BYTES per prompt and replicate)."""
    params = params or {}
    cap = (groups * k if budget is None else budget) if capacity is None else capacity
    if budget is not None:
        per_step = float(budget)
    else:
        try:
            p_mixed = 1.0 - math.exp(law.log_moment(0, k)) - math.exp(law.log_moment(k, 0))
        except (AttributeError, ValueError, OverflowError):
            p_mixed = 1.0
        per_step = groups * k / max(p_mixed, 1e-12)
        limit = cap * float(params.get("max_rounds", 100))  # SARA family: round cap
        if "max_num_gen_batches" in params and params["max_num_gen_batches"]:
            gbs = params.get("gen_batch_size") or groups
            limit = float(params["max_num_gen_batches"]) * gbs * k
        per_step = min(per_step, limit)
    rollouts = per_step * steps * replicates
    size = {"k": k, "groups": groups, "budget": budget, "steps": steps, "replicates": replicates}
    nbytes = sum(memory_parts(law, **size, capacity=capacity, pool=pool).values())
    return rollouts, float(steps) * replicates, nbytes


def memory_parts(law, *, k, groups, budget, steps, replicates, capacity=None, pool=0) -> dict:
    """{the flag that sets it: bytes} of a run's memory: the open-prompt table (~4 probes per
    round slot, 8 N_FIELDS + 24 B each: --capacity when it was raised, else the flag furthest
    above its default), the per-step metric frame (--steps or --replicates) and the prompt pool
    (POOL_BYTES per prompt and replicate: --pool, or --difficulty for a drift POOL)."""
    from .kernels import N_FIELDS

    default = groups * k if budget is None else budget
    cap = default if capacity is None else capacity
    parts = {}

    def add(flag, nbytes):
        parts[flag] = parts.get(flag, 0.0) + nbytes

    table = "--capacity" if cap > default else largest_factor(k, groups, budget, steps, replicates)
    add(table, replicates * (4.0 * cap + 64.0) * (8 * N_FIELDS + 24))
    add(
        "--steps" if steps / 100 >= replicates / 4 else "--replicates",
        3.0 * replicates * steps * N_METRICS * 8,
    )
    add(pool_flag(law), float(replicates) * pool_size(law, pool) * POOL_BYTES)
    return parts


def largest_factor(k, groups, budget, steps, replicates):
    """The flag furthest above its default: the one a too-big request names."""
    given = {"--groups": groups if budget is None else budget / k, "--steps": steps}
    given.update({"--replicates": replicates, "--k": k})
    worst = max(given, key=lambda key: given[key] / _DEFAULTS[key])
    return "--budget" if budget is not None and worst == "--groups" else worst


def check_memory(law, *, k, groups, budget, steps, replicates, capacity=None, pool=0, force=False):
    """Refuse memory above MEMORY_LIMIT, naming the flag of its biggest part (`memory_parts`):
    a drift POOL of 1e9 prompts names --difficulty, a raised --capacity names itself."""
    size = {"k": k, "groups": groups, "budget": budget, "steps": steps, "replicates": replicates}
    parts = memory_parts(law, **size, capacity=capacity, pool=pool)
    name = max(parts, key=parts.get)
    what = "memory (GiB)"
    if name == pool_flag(law) and pool_size(law, pool):
        what = f"memory (GiB; a pool of {pool_size(law, pool):.3g} prompts)"
    check_budget(sum(parts.values()) / 2**30, MEMORY_LIMIT / 2**30, name, what, force)


def check_resources(
    strategy, law, *, k, groups, budget, steps, replicates, capacity, params, force, pool=0
):
    """Refuse (ParameterError naming the biggest factor) what would not finish in a few minutes
    or would not fit in memory; ``force=True`` skips the check."""
    if force:
        return
    size = {"k": k, "groups": groups, "budget": budget, "steps": steps, "replicates": replicates}
    rollouts, rep_steps, _ = estimate(
        strategy, law, **size, capacity=capacity, params=params, pool=pool
    )
    check_memory(law, **size, capacity=capacity, pool=pool, force=force)
    worst = largest_factor(k, groups, budget, steps, replicates)
    check_budget(rollouts, ROLLOUT_LIMIT, worst, "simulated rollouts", force)
    if info(strategy).name in ADAPTIVE:
        name = "--steps" if steps >= replicates else "--replicates"
        check_budget(rep_steps, ADAPTIVE_STEP_LIMIT, name, "prior fits (steps x replicates)", force)
