"""Generated integer arithmetic, the embedded default task: "37+485=" -> "522".

Difficulty spreads from trivial to hard through the operation and the operand digits (1-digit
sums are learned first, 3-digit sums with carries and 2-digit products last), so a partly
trained model has per-prompt success rates all over [0, 1]. Problem `uid` is a pure function of
(seed, uid); held-out problems come from a separate seed and are excluded from training."""

import re

import numpy as np

from real.tasks.base import Problem, Task

# (op, digits of a, digits of b, weight): the mix of shapes; weights favour the middle.
SHAPES = [
    ("+", 1, 1, 1.0),
    ("+", 2, 1, 1.0),
    ("+", 2, 2, 1.5),
    ("+", 3, 2, 1.0),
    ("+", 3, 3, 1.5),
    ("*", 1, 1, 1.0),
    ("*", 2, 1, 1.5),
    ("*", 2, 2, 1.0),
]
_W = np.array([s[3] for s in SHAPES]) / sum(s[3] for s in SHAPES)
_INT = re.compile(r"-?\d+")
_BOXED = re.compile(r"\\boxed\{\s*(-?[\d,]+)\s*\}")


def _carries(a: int, b: int) -> int:
    n, c = 0, 0
    while a or b:
        c = 1 if a % 10 + b % 10 + c >= 10 else 0
        n += c
        a, b = a // 10, b // 10
    return n


def make_problem(rng: np.random.Generator) -> Problem:
    op, da, db, _ = SHAPES[rng.choice(len(SHAPES), p=_W)]
    a = int(rng.integers(10 ** (da - 1) if da > 1 else 0, 10**da))
    b = int(rng.integers(10 ** (db - 1) if db > 1 else 0, 10**db))
    if rng.random() < 0.5:  # both orders, so the model cannot rely on "longer operand first"
        a, b = b, a
    value = a + b if op == "+" else a * b
    meta = {"op": op, "digits": da + db, "carries": _carries(a, b) if op == "+" else None}
    return Problem(prompt=f"{a}{op}{b}=", answer=str(value), meta=meta)


def extract_integer(completion: str) -> str | None:
    """The answer a completion gives: the whole text if it is an integer, else a \\boxed{} value,
    else the last integer in it (lenient for large models, exact for the tiny one)."""
    text = completion.strip()
    if _INT.fullmatch(text):
        return str(int(text))
    boxed = _BOXED.findall(text)
    if boxed:
        return str(int(boxed[-1].replace(",", "")))
    found = _INT.findall(text.replace(",", ""))
    return str(int(found[-1])) if found else None


class ArithmeticTask(Task):
    name = "arithmetic"
    max_tokens = 8  # longest answer has 4 digits (99*99, 999+999) + EOS; slack for a sign

    def __init__(self, seed: int = 0, n_eval: int = 64, size: int | None = None):
        self.seed = seed
        self.n_eval = n_eval
        # size: a finite pool of training problems revisited epoch after epoch (ids cycle as
        # epoch * size + index) — what history-informed strategies learn from; None = unbounded
        self.size = None if not size else int(size)
        rng = np.random.default_rng([seed, 1_000_003])
        self._eval = []
        seen = set()
        while len(self._eval) < n_eval:
            p = make_problem(rng)
            if p.prompt not in seen:  # distinct held-out problems, so pass@1 is not reweighted
                seen.add(p.prompt)
                self._eval.append(p)
        self._eval_prompts = seen

    def problem(self, uid: int) -> Problem:
        if self.size:
            uid = int(uid) % self.size
        rng = np.random.default_rng([self.seed, 7, int(uid)])
        while True:  # re-draw (deterministically) when it collides with a held-out problem
            p = make_problem(rng)
            if p.prompt not in self._eval_prompts:
                return p

    def eval_problems(self) -> list[Problem]:
        return list(self._eval)

    def reward(self, completion: str, problem: Problem) -> int:
        return int(extract_integer(completion) == problem.answer)
