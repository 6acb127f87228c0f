"""The SFT targets of the tiny models' curricula (`real.models.tiny.TinySettings.curriculum`).

"exact": the right answer. "graded": right with probability `graded_q(problem)`, else a near miss,
so the model learns the answer *and* a hedge that GRPO can sharpen within minutes. "scratchpad":
the right worked trace of `real.tasks.reasoning` (a step per column or digit, then the answer),
whose length is set by the problem — the failing-is-longer regime of the paper's token claim comes
from the model failing the long ones. "lost-thread": the right worked trace, or with probability
`lose_p(problem)` a trace that loses the thread and runs long to a wrong answer
(`real.tasks.reasoning.lost_trace`), so failures are long *within* a prompt. Every target is a
pure function of (seed, uid), so a build stays deterministic."""

import numpy as np

CURRICULA = ("exact", "graded", "scratchpad", "lost-thread")
# the task a curriculum's build trains and checks on (the rest: arithmetic)
CURRICULUM_TASK = {"scratchpad": "reasoning", "lost-thread": "reasoning-long"}


def graded_q(p) -> float:
    """P(the graded SFT target is right): 0.9 for 1-digit sums, lower with digits and carries.

    >>> from real.tasks.base import Problem
    >>> graded_q(Problem("3+4=", "7", {"op": "+", "digits": 2, "carries": 0}))
    0.95
    >>> round(graded_q(Problem("99+1=", "100", {"op": "+", "digits": 3, "carries": 2})), 2)
    0.5
    """
    m = p.meta
    if m["op"] == "+":
        q = 0.95 - 0.15 * (m["digits"] - 2) - 0.15 * m["carries"]
    else:
        q = 0.6 - 0.2 * (m["digits"] - 2)
    return max(0.1, q)


def near_miss(answer: str) -> str:
    """The right answer with its last digit said twice: every digit right, then no stop.

    The whole difference is one token — <eos> or one more digit after the last one — so the hedge
    lives in one decision that GRPO can move for every problem at once, and the digits' own
    training is untouched by the wrong targets.

    >>> near_miss("522"), near_miss("7")
    ('5222', '77')
    """
    return answer + answer[-1]


def sft_target(p, s, uid: int) -> str:
    """The SFT target of problem `p` (training id `uid`) under settings `s`."""
    if s.curriculum == "exact":
        return p.answer
    if s.curriculum == "scratchpad":  # the right worked trace: hard problems are long ones
        from real.tasks.reasoning import trace

        return trace(p)
    if s.curriculum == "lost-thread":  # its own stream, apart from the graded coin's
        from real.tasks.reasoning import lose_p, lost_trace, trace

        rng = np.random.default_rng([s.seed, 0x1057, int(uid)])
        return lost_trace(p, rng) if rng.random() < lose_p(p) else trace(p)
    if s.curriculum != "graded":  # e.g. the retired "reasoning": never train on another recipe
        raise ValueError(f"unknown curriculum {s.curriculum!r}; one of {', '.join(CURRICULA)}")
    rng = np.random.default_rng([s.seed, 0x9AD, int(uid)])
    return p.answer if rng.random() < graded_q(p) else near_miss(p.answer)
