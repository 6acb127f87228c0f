"""Tasks and verifiers: deterministic problems, a spread of difficulty, safe checkers, isolation
of a raising reward function, and the prompt source's resumable, collision-free ids."""

import logging

import pytest

from real.tasks import PromptSource, RewardGuard, make_task
from real.tasks.arithmetic import extract_integer
from real.tasks.countdown import check, evaluate, extract_expression
from sara_sim.core.errors import ParameterError


def test_arithmetic_is_deterministic_and_seeded():
    a, b, c = (
        make_task("arithmetic", seed=0),
        make_task("arithmetic", seed=0),
        make_task("arithmetic", seed=1),
    )
    assert [a.problem(i) for i in range(50)] == [b.problem(i) for i in range(50)]
    assert [a.problem(i) for i in range(50)] != [c.problem(i) for i in range(50)]
    assert a.eval_problems() == b.eval_problems()


def test_arithmetic_answers_are_right_and_difficulty_spreads():
    t = make_task("arithmetic")
    probs = [t.problem(i) for i in range(2000)]
    for p in probs:
        x, op, y = (
            p.prompt.rstrip("=").partition("+")
            if "+" in p.prompt
            else p.prompt.rstrip("=").partition("*")
        )
        assert int(p.answer) == (int(x) + int(y) if op == "+" else int(x) * int(y))
    digits = {p.meta["digits"] for p in probs}
    carries = {p.meta["carries"] for p in probs if p.meta["op"] == "+"}
    assert min(digits) == 2 and max(digits) == 6  # 1+1 digits up to 3+3 digits
    assert {"+", "*"} == {p.meta["op"] for p in probs}
    assert 0 in carries and max(carries) >= 2
    held_out = {p.prompt for p in t.eval_problems()}
    assert len(held_out) == len(t.eval_problems())  # distinct held-out problems
    assert not held_out & {p.prompt for p in probs}  # never trained on


def test_arithmetic_reward_and_answer_extraction():
    t = make_task("arithmetic")
    p = t.problem(3)
    assert t.reward(p.answer, p) == 1
    assert t.reward(f" {p.answer}\n", p) == 1
    assert t.reward(f"so the answer is \\boxed{{{p.answer}}}", p) == 1
    assert t.reward(str(int(p.answer) + 1), p) == 0
    assert t.reward("", p) == 0 and t.reward("abc", p) == 0
    assert extract_integer("12+3 = 15") == "15"
    assert extract_integer("007") == "7"


def test_countdown_problems_are_solvable_and_checked_exactly():
    t = make_task("countdown")
    for i in range(100):
        p = t.problem(i)
        assert t.reward(p.answer, p) == 1, p
        assert t.reward(f"<answer>{p.answer}</answer>", p) == 1
        assert t.reward(f"{p.answer} = {p.meta['target']}", p) == 1
    assert check("7/2*2", [7, 2, 2], 7)  # exact fractions: no rounding to a false verdict
    assert not check("7/2", [7, 2], 3)
    assert not check("3+3", [3], 6)  # a number used twice
    assert not check("3", [3, 4], 3)  # a number left out


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os').system('true')",
        "(1).__class__",
        "x+1",
        "2**10",
        "abs(-3)",
        "[1][0]",
        "1 if 1 else 2",
        "1+" * 300 + "1",
        "1/0",
        "-1+2",
        "1.5+1.5",
    ],
)
def test_countdown_checker_refuses_anything_but_arithmetic(expr):
    with pytest.raises(ValueError):
        evaluate(expr)
    t = make_task("countdown")
    p = t.problem(0)
    assert t.reward(expr, p) == 0  # a refused answer is a plain failure, never an exception


def test_countdown_extraction():
    assert extract_expression("<answer> 3*4 </answer> trailing") == "3*4"
    assert extract_expression("3*4 = 12\nmore text") == "3*4"


def test_math_sample_with_math_verify():
    t = make_task("math")
    assert t.size >= 20 and len(t.eval_problems()) >= 5
    train = {p.prompt for p in (t.problem(i) for i in range(t.size))}
    assert not train & {p.prompt for p in t.eval_problems()}
    frac = next(
        p
        for p in t.eval_problems() + [t.problem(i) for i in range(t.size)]
        if p.answer == "\\frac{3}{4}"
    )
    assert t.reward("The fraction is \\boxed{\\frac{3}{4}}", frac) == 1
    assert t.reward("The fraction is \\boxed{0.75}", frac) == 1  # equivalent form
    assert t.reward("The fraction is \\boxed{\\frac{4}{3}}", frac) == 0
    assert t.reward("I do not know", frac) == 0


def test_math_task_reads_a_jsonl_file(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"problem": "1+1?", "answer": "2"}\n{"problem": "2+2?", "answer": "4"}\n')
    t = make_task("math", path=f, eval_every=2)
    assert t.size == 1 and len(t.eval_problems()) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no answer"}\n')
    with pytest.raises(ValueError, match="answer"):
        make_task("math", path=bad)


def test_raising_reward_is_isolated_counted_and_logged(caplog):
    calls = []

    def flaky(completion, problem):
        calls.append(completion)
        if completion == "boom":
            raise RuntimeError("verifier crashed")
        return completion == problem.answer

    guard = RewardGuard(flaky)
    p = make_task("arithmetic").problem(0)
    with caplog.at_level(logging.WARNING, logger="real.tasks"):
        out = [guard(c, p) for c in ("boom", p.answer, "boom", "nope")]
    assert out == [0, 1, 0, 0]
    assert guard.errors == 2 and len(calls) == 4
    assert "verifier crashed" in caplog.text


def test_unknown_task_names_the_parameter():
    with pytest.raises(ParameterError, match="--task"):
        make_task("chess")


def test_prompt_stream_ids_are_unique_and_resumable():
    t = make_task("math")
    s = PromptSource(t, seed=3)
    ids = [next(s) for _ in range(3 * t.size)]
    assert len(set(ids)) == len(ids)  # epochs never reuse an id, so open visits never collide
    assert sorted(i % t.size for i in ids[: t.size]) == list(range(t.size))  # a permutation
    s2 = PromptSource(t, seed=3)
    s2.load_state_dict({"pos": 40})
    assert [next(s2) for _ in range(10)] == ids[40:50]
    g = PromptSource(make_task("arithmetic"))
    assert [next(g) for _ in range(5)] == [0, 1, 2, 3, 4]
