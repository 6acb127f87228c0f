"""Verifiable tasks: prompts, reference answers and a 0/1 reward per task, looked up by name."""

from real.tasks.base import Problem, PromptStream, RewardGuard, Task
from sara_sim.core.errors import ParameterError

TASKS = ("arithmetic", "countdown", "math", "reasoning")


def make_task(name: str, seed: int = 0, **options) -> Task:
    """Task by name; options go to its constructor (e.g. path= for math)."""
    if name == "arithmetic":
        from real.tasks.arithmetic import ArithmeticTask

        return ArithmeticTask(seed=seed, **options)
    if name == "countdown":
        from real.tasks.countdown import CountdownTask

        return CountdownTask(seed=seed, **options)
    if name == "reasoning":
        from real.tasks.reasoning import ReasoningTask

        return ReasoningTask(seed=seed, **options)
    if name == "math":
        from real.tasks.math import MathTask

        return MathTask(seed=seed, **options)
    raise ParameterError("--task", f"unknown task {name!r}; choose one of {', '.join(TASKS)}")


__all__ = ["TASKS", "Problem", "PromptStream", "RewardGuard", "Task", "make_task"]
