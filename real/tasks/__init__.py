"""Verifiable tasks: prompts, reference answers and a 0/1 reward per task, looked up by name."""

from real.tasks.base import Problem, PromptSource, RewardGuard, Task
from sara_sim.core.errors import ParameterError

TASKS = ("arithmetic", "countdown", "math", "reasoning", "reasoning-long")


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
    if name == "reasoning-long":
        from real.tasks.reasoning import ReasoningLongTask

        return ReasoningLongTask(seed=seed, **options)
    if name == "math":
        from real.tasks.math import MathTask

        return MathTask(seed=seed, **options)
    raise ParameterError("--task", f"unknown task {name!r}; choose one of {', '.join(TASKS)}")


def task_options(cfg) -> dict:
    opts = {"path": cfg.task_path, "eval_path": cfg.eval_path, "size": cfg.task_size}
    opts["n_eval"] = cfg.eval_size
    return {k: v for k, v in opts.items() if v}


def make_run_task(cfg):
    """The run's task: problems seeded by --task-seed (default --seed), options from cfg."""
    seed = cfg.seed if cfg.task_seed is None else cfg.task_seed
    return make_task(cfg.task, seed=seed, **task_options(cfg))


__all__ = [
    "TASKS",
    "Problem",
    "PromptSource",
    "RewardGuard",
    "Task",
    "make_run_task",
    "make_task",
]
