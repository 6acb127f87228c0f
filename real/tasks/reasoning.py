"""Arithmetic that reasons before it answers: the tiny model's setting for the token claim.

The paper's token argument (issue 19, claim 2) needs completions whose length depends on the
outcome: a reasoning model that is unsure keeps going, retries or runs out of budget, so its
failed attempts are the long ones. Plain `arithmetic` completions are a handful of tokens either
way. Here the problems are the same (`ArithmeticTask`, same seeds, same held-out set), but a
completion is a scratchpad, then `#`, then the answer:

    "37+485="  ->  "225#522"              the answer's digits right to left, then the answer
               ->  "225?225?225#5222"     unsure: it rechecks (`?`) and ends on a near miss

The reward is exactly 0/1 by the task's own exact check: one `#`, and what follows it is the
integer answer (a trace cut by the length budget has no `#`: 0). The SFT traces that teach the
tiny model this behaviour are built here too (`sft_trace`), so the format lives in one place."""

import re

import numpy as np

from real.tasks.arithmetic import ArithmeticTask
from real.tasks.base import Problem

RETRY, ANSWER = "?", "#"
RETRIES = (2, 3, 4, 5)  # rechecks of an unsure trace (uniform): its length is (retries + 1) x
_INT = re.compile(r"\d+")


def scratch(answer: str) -> str:
    """The work shown before the answer: its digits from the last (the order addition carries).

    >>> scratch("522"), scratch("7")
    ('225', '7')
    """
    return answer[::-1]


def final_answer(completion: str) -> str | None:
    """The answer a trace commits to: the digits after its only `#`, as written; None if
    malformed. Not normalised: "00" is the near miss of "0", not the answer.

    >>> final_answer("225#522"), final_answer("225?22"), final_answer("1#2#3"), final_answer("0#00")
    ('522', None, None, '00')
    """
    head, mark, tail = completion.strip().partition(ANSWER)
    if not mark or ANSWER in tail or not _INT.fullmatch(tail):
        return None
    return tail


def sft_trace(p: Problem, q: float, rng: np.random.Generator) -> str:
    """One SFT target: with probability q the confident trace (scratch, `#`, the answer), else an
    unsure one — the scratch said 1 + r times (r from RETRIES), then the near miss (the answer's
    last digit twice, as in the graded model), so its failures are (r + 1) times longer.

    >>> p = Problem("37+485=", "522")
    >>> sft_trace(p, 1.0, np.random.default_rng(0))
    '225#522'
    >>> sft_trace(p, 0.0, np.random.default_rng(0)).count(RETRY) in RETRIES
    True
    """
    if rng.random() < q:
        return scratch(p.answer) + ANSWER + p.answer
    r = RETRIES[int(rng.integers(len(RETRIES)))]
    return RETRY.join([scratch(p.answer)] * (r + 1)) + ANSWER + p.answer + p.answer[-1]


class ReasoningTask(ArithmeticTask):
    """`arithmetic`'s problems with a scratchpad before the answer (see the module doc)."""

    name = "reasoning"
    # a 4-digit answer with 5 rechecks needs 35 tokens with its <eos>: the cap cuts the most
    # unsure traces of long answers, as a reasoning model's budget cuts its longest attempts
    max_tokens = 32

    def reward(self, completion: str, problem: Problem) -> int:
        return int(final_answer(completion) == problem.answer)
