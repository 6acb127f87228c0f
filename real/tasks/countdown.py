"""Countdown: reach a target with the given numbers, each used exactly once, with + - * /.

The checker parses the answer with `ast` and walks the tree itself: only integer literals and
the four binary operators are accepted, arithmetic is exact (Fraction), so nothing the model
writes is ever executed and 7/2*2 is not rounded into a false success."""

import ast
import re
from collections import Counter
from fractions import Fraction

import numpy as np

from real.tasks.base import Problem, Task

_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,  # Fraction / 0 raises ZeroDivisionError -> reward 0
}
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
MAX_EXPR_CHARS = 200  # an expression over a handful of small numbers is short; refuse the rest


def _walk(node, used: list[int]) -> Fraction:
    if isinstance(node, ast.Expression):
        return _walk(node.body, used)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_walk(node.left, used), _walk(node.right, used))
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    raise ValueError(f"not allowed in a countdown expression: {type(node).__name__}")


def evaluate(expr: str) -> tuple[Fraction, list[int]]:
    """Exact value of an arithmetic expression and the numbers it uses; ValueError otherwise."""
    if len(expr) > MAX_EXPR_CHARS:
        raise ValueError("expression too long")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an expression: {expr!r}") from exc
    used: list[int] = []
    try:
        return _walk(tree, used), used
    except ZeroDivisionError as exc:
        raise ValueError("division by zero") from exc


def extract_expression(completion: str) -> str:
    """<answer>...</answer> if present, else the first line; a trailing '= N' is dropped."""
    m = _ANSWER.findall(completion)
    text = m[-1] if m else completion.strip().split("\n")[0]
    return text.split("=")[0].strip()


def check(expr: str, numbers: list[int], target: int) -> bool:
    value, used = evaluate(expr)
    return Counter(used) == Counter(numbers) and value == target


def make_problem(rng: np.random.Generator, n_numbers: int, max_number: int) -> Problem:
    # Build a random expression over the numbers; its value is the target, so a solution exists.
    while True:
        nums = [int(x) for x in rng.integers(1, max_number + 1, size=n_numbers)]
        terms = [str(x) for x in nums]
        while len(terms) > 1:
            i, j = rng.choice(len(terms), size=2, replace=False)
            op = "+-*"[int(rng.integers(3))]  # targets without division stay integers
            merged = f"({terms[i]}{op}{terms[j]})"
            terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [merged]
        value, _ = evaluate(terms[0])
        if value.denominator == 1 and 0 < value <= 1000:
            target = int(value)
            prompt = f"Use {' '.join(map(str, nums))} once each with + - * / to make {target}. "
            prompt += "Answer:"
            return Problem(prompt=prompt, answer=terms[0], meta={"numbers": nums, "target": target})


class CountdownTask(Task):
    name = "countdown"
    max_tokens = 32

    def __init__(
        self,
        seed: int = 0,
        n_eval: int = 64,
        n_numbers: int = 3,
        max_number: int = 20,
        size: int | None = None,
    ):
        self.seed, self.n_numbers, self.max_number = seed, n_numbers, max_number
        # size: a finite pool revisited epoch after epoch (as in arithmetic); None = unbounded
        self.size = None if not size else int(size)
        rng = np.random.default_rng([seed, 1_000_003])
        self._eval = [make_problem(rng, n_numbers, max_number) for _ in range(n_eval)]

    def problem(self, uid: int) -> Problem:
        if self.size:
            uid = int(uid) % self.size
        return make_problem(
            np.random.default_rng([self.seed, 7, int(uid)]), self.n_numbers, self.max_number
        )

    def eval_problems(self) -> list[Problem]:
        return list(self._eval)

    def reward(self, completion: str, problem: Problem) -> int:
        expr = extract_expression(completion)
        try:
            return int(check(expr, problem.meta["numbers"], problem.meta["target"]))
        except ValueError:  # malformed answers are ordinary failures, not verifier errors
            return 0
