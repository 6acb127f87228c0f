"""MATH-style problems from a local JSONL file ({"problem": ..., "answer": ...} per line),
verified with math-verify. The default file is a small hand-written sample shipped with the
package; point `path` at a real MATH split (e.g. MATH-500 converted to this format) on a GPU box.
Held-out problems are every `eval_every`-th row unless a separate `eval_path` is given (a file
of fewer than `eval_every` problems then holds none: a run needs `eval_path`)."""

import json
from pathlib import Path

from real.tasks.base import Problem, Task

SAMPLE = Path(__file__).with_name("data") / "math_sample.jsonl"
TEMPLATE = "{problem}\nPlease reason step by step, and put your final answer within \\boxed{{}}."


def load_jsonl(path) -> list[Problem]:
    """The problems of a JSONL file (see `parse_jsonl`)."""
    with open(path, encoding="utf-8") as f:
        return parse_jsonl(f.read(), path)


def parse_jsonl(text: str, name) -> list[Problem]:
    """One problem per non-blank line, a JSON object with "problem" and "answer"; a ValueError
    naming `name` and the line otherwise (not JSON, not an object, a key missing, no problem)."""
    rows = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{name} line {line_no} is not JSON ({e.msg})") from None
        if not isinstance(d, dict) or "problem" not in d or "answer" not in d:
            raise ValueError(
                f"{name} line {line_no}: needs a JSON object with 'problem' and 'answer' keys"
            )
        rows.append(
            Problem(
                prompt=TEMPLATE.format(problem=d["problem"]),
                answer=str(d["answer"]),
                meta={"level": d.get("level")},
            )
        )
    if not rows:
        raise ValueError(f"{name}: no problems")
    return rows


class MathTask(Task):
    name = "math"
    max_tokens = 1024

    def __init__(
        self,
        seed: int = 0,
        path=None,
        eval_path=None,
        eval_every: int = 5,
        max_tokens: int | None = None,
    ):
        from math_verify import parse  # imported here: sympy is slow to load for other tasks

        self._parse = parse
        self.eval_every = eval_every
        rows = load_jsonl(path or SAMPLE)
        if eval_path:
            self._train, self._eval = rows, load_jsonl(eval_path)
        else:
            self._train = [p for i, p in enumerate(rows) if i % eval_every != eval_every - 1]
            self._eval = [p for i, p in enumerate(rows) if i % eval_every == eval_every - 1]
        self.size = len(self._train)
        if max_tokens:
            self.max_tokens = max_tokens
        self._gold = {}

    def problem(self, uid: int) -> Problem:
        return self._train[int(uid) % self.size]

    def eval_problems(self) -> list[Problem]:
        return list(self._eval)

    def reward(self, completion: str, problem: Problem) -> int:
        from math_verify import verify

        gold = self._gold.get(problem.answer)
        if gold is None:  # parse each reference once
            gold = self._gold[problem.answer] = self._parse(f"${problem.answer}$")
        pred = self._parse(completion)
        return int(bool(pred) and verify(gold, pred))
