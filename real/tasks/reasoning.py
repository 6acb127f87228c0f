"""Arithmetic that reasons before it answers: the tiny model's setting for the token claim.

The paper's token argument (claim 2) needs completions whose length depends on the
outcome, and a dependence that RL cannot remove in a few steps. Here the length comes from the
problem itself: a completion works through the problem column by column (a scratchpad), then
`#`, then the answer, so a hard problem — more digits, more carries, a product — has a long trace
whatever the policy does, and the hard problems are the ones a small model fails:

    "3+4="     ->  "3+4=7#7"
    "37+485="  ->  "7+5=12,3+8+1=12,0+4+1=5#522"           one step per column, carries shown
    "37*8="    ->  "7*8=56,3*8+5=29#296"                   one step per digit, carries added
    "37*48="   ->  "37*8=296,37*40=1480,296+1480=1776#1776"   partial products, then their sum

The reward is exactly 0/1 by the task's own exact check of the answer: one `#`, and what follows
it is the integer answer (a trace cut by the length budget has no `#`: 0); the scratchpad is the
model's own business. The SFT traces that teach the tiny model this format are built here too
(`work`), so the format lives in one place.

`reasoning-long` is the same task with a longer budget, for a model whose *failures* run long
within a prompt (claim 2): its SFT traces sometimes "lose the thread" (`lost_trace`) —
one step comes out one too high, the model re-checks it (`?` and the same wrong step again) until
its trace is long, often past the budget, and then answers wrong:

    "37+485="  ->  "7+5=12,3+8+1=12,0+4+1=6?0+4+1=6?0+4+1=6#622"

with a probability that grows with the problem's steps and carries (`lose_p`)."""

import re

from real.tasks.arithmetic import ArithmeticTask
from real.tasks.base import Problem

ANSWER, STEP = "#", ","
_INT = re.compile(r"\d+")
_PROMPT = re.compile(r"(\d+)([+*])(\d+)=")


def _digits(n: int) -> list[int]:
    """Digits from the last (the order columns are worked in)."""
    return [int(c) for c in reversed(str(n))]


def _add_steps(a: int, b: int) -> list[str]:
    da, db = _digits(a), _digits(b)
    width = max(len(da), len(db))
    da, db = da + [0] * (width - len(da)), db + [0] * (width - len(db))
    steps, carry = [], 0
    for x, y in zip(da, db, strict=True):
        s = x + y + carry
        steps.append(f"{x}+{y}" + ("+1" if carry else "") + f"={s}")
        carry = s // 10
    return steps


def _mul_digit_steps(big: int, d: int) -> list[str]:
    steps, carry = [], 0
    for x in _digits(big):
        v = x * d + carry
        steps.append(f"{x}*{d}" + (f"+{carry}" if carry else "") + f"={v}")
        carry = v // 10
    return steps


def _mul_steps(a: int, b: int) -> list[str]:
    big, small = (a, b) if len(str(a)) >= len(str(b)) else (b, a)
    if small < 10:  # one digit: multiply digit by digit (a 1x1 product is one step)
        return _mul_digit_steps(big, small)
    parts = [big * d * 10**i for i, d in enumerate(_digits(small))]
    steps = [f"{big}*{d * 10**i}={v}" for i, (d, v) in enumerate(zip(_digits(small), parts))]
    return steps + ["+".join(map(str, parts)) + f"={sum(parts)}"]


def work(p: Problem) -> str:
    """The right scratchpad of an arithmetic problem, without the answer (see the module doc).

    >>> work(Problem("37+485=", "522")), work(Problem("3*4=", "12"))
    ('7+5=12,3+8+1=12,0+4+1=5', '3*4=12')
    >>> work(Problem("8*37=", "296")), work(Problem("37*48=", "1776"))
    ('7*8=56,3*8+5=29', '37*8=296,37*40=1480,296+1480=1776')
    """
    m = _PROMPT.fullmatch(p.prompt)
    if m is None:
        raise ValueError(f"not an arithmetic prompt: {p.prompt!r}")
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    return STEP.join(_add_steps(a, b) if op == "+" else _mul_steps(a, b))


def trace(p: Problem) -> str:
    """The SFT target: the scratchpad, `#`, the answer (right by construction).

    >>> trace(Problem("37+485=", "522"))
    '7+5=12,3+8+1=12,0+4+1=5#522'
    """
    return work(p) + ANSWER + p.answer


def final_answer(completion: str) -> str | None:
    """The answer a trace commits to: the digits after its only `#`, as written; None if
    malformed. Not normalised: "00" is a wrong answer, not "0".

    >>> final_answer("3+4=7#7"), final_answer("7+5=1"), final_answer("1#2#3"), final_answer("0#00")
    ('7', None, None, '00')
    """
    head, mark, tail = completion.strip().partition(ANSWER)
    if not mark or ANSWER in tail or not _INT.fullmatch(tail):
        return None
    return tail


def lose_p(p: Problem) -> float:
    """P(a `reasoning-long` SFT trace of `p` loses the thread): more steps and carries, more often.

    >>> lose_p(Problem("3+4=", "7", {"op": "+", "digits": 2, "carries": 0}))
    0.08
    >>> lose_p(Problem("37*48=", "1776", {"op": "*", "digits": 4, "carries": None}))
    0.45
    """
    n = len(work(p).split(STEP))
    if p.meta["op"] == "*":
        return round(0.15 + 0.15 * (n - 1), 4)
    return round(min(0.7, 0.08 + 0.12 * (n - 1) + 0.08 * p.meta["carries"]), 4)


def lost_trace(p: Problem, rng) -> str:
    """A trace that loses the thread: the right steps before step j, step j one too high, then
    `?` and the same wrong step again while the trace is shorter than a length drawn in [32, 80)
    (half the time past `reasoning-long`'s 64-token budget; no re-check when a long trace slips
    late), then `#` and a wrong answer (the right one plus 10**j, the column the slip was in):
    long, and always a failure.

    >>> import numpy as np
    >>> t = lost_trace(Problem("37+485=", "522"), np.random.default_rng(3)); t
    '7+5=12,3+8+1=12,0+4+1=6?0+4+1=6?0+4+1=6#622'
    >>> final_answer(t) != "522"
    True
    """
    steps = work(p).split(STEP)
    j = int(rng.integers(len(steps)))
    head, _, value = steps[j].rpartition("=")
    slip = f"{head}={int(value) + 1}"
    target = int(rng.integers(32, 80))
    text = STEP.join(steps[:j] + [slip])
    while len(text) < target:
        text += "?" + slip
    wrong = int(p.answer) + 10 ** min(j, len(p.answer) - 1)
    return text + ANSWER + str(wrong)


class ReasoningTask(ArithmeticTask):
    """`arithmetic`'s problems with a scratchpad before the answer (see the module doc)."""

    name = "reasoning"
    # the longest right trace (99*99) is 38 tokens with its <eos>: the budget leaves room for a
    # wrong trace to wander on, and cuts it where a reasoning model's budget would
    max_tokens = 48

    def reward(self, completion: str, problem: Problem) -> int:
        return int(final_answer(completion) == problem.answer)


class ReasoningLongTask(ReasoningTask):
    """`reasoning` with room for a failure to run long (the `reasoning-long` start model's task):
    a right trace is at most 38 tokens; the budget is where a lost one is cut."""

    name = "reasoning-long"
    max_tokens = 64
