"""The reasoning start models' length laws (claim 2): completion tokens per outcome and
per prompt class at k — the data that decide whether abandoning saves more tokens than rollouts.

    .venv/bin/python benchmarks/investigations/claim_run/reasoning_lengths.py [--task reasoning]
        [--problems 512] [--k 8] [--seed 0]

--task reasoning: `TinySettings.reasoning()`; reasoning-long: `TinySettings.reasoning_long()`
(failures that run long within a prompt). Builds the model if it is not cached (deterministic,
one thread), prints its build report (pass@1, mixed fraction at k, and the length law per
outcome on 512 held-out problems x 8 samples), then samples --problems held-out problems x --k
at temperature 1 (torch, one thread, --seed) and prints, per prompt class — all-fail, mixed,
all-pass at k — the prompts, their share and their mean completion tokens (with <eos>, as the
engine counts). A strategy that abandons saturated prompts saves more tokens than rollouts
only if the classes it abandons are longer than the mixed prompts it keeps. Bad arguments exit 2
with one line."""

import argparse
import json
import sys

import real.base.env  # noqa: F401  (env vars before torch)

CLASSES = ("all-fail", "mixed", "all-pass")
MODELS = {"reasoning": "reasoning", "reasoning-long": "reasoning_long"}  # task: its settings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="reasoning", help="reasoning | reasoning-long")
    ap.add_argument("--problems", type=int, default=512, help="held-out problems (1-512)")
    ap.add_argument("--k", type=int, default=8, help="samples per problem (2-64)")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    a = ap.parse_args(argv)
    from sara_sim.core.errors import ParameterError, check_choice, check_int

    try:
        check_choice(a.task, "--task", tuple(MODELS))
        check_int(a.problems, "--problems", 1, 512)
        check_int(a.k, "--k", 2, 64)
        check_int(a.seed, "--seed", 0, 2**31 - 1)
    except ParameterError as e:
        print(f"reasoning_lengths: error: {e}", file=sys.stderr)
        return 2
    report, classes = measure(a.task, a.problems, a.k, a.seed)
    print(json.dumps({"build": report}, indent=1))
    print(f"\nprompt classes at k={a.k} ({a.problems} held-out problems, seed {a.seed}):")
    print(f"{'class':<9} {'prompts':>7} {'share':>6} {'tokens/rollout':>15}")
    for name in CLASSES:
        n, mean = classes[name]
        share = n / a.problems
        print(f"{name:<9} {n:>7} {share:>6.3f} {'-' if mean is None else f'{mean:.1f}':>15}")
    return 0


def measure(task_name: str, n: int, k: int, seed: int):
    """The build report's spread and length laws, and {class: (prompts, mean tokens)}."""
    import numpy as np
    from transformers import AutoModelForCausalLM

    from real.models import tiny
    from real.models.tiny_net import vocab
    from real.models.tiny_sample import sample_success
    from real.tasks import make_task

    s = getattr(tiny.TinySettings, MODELS[task_name])()
    folder = tiny.build_tiny(None, s)
    r = tiny.read_spread(folder)
    report = {
        "cache_key": s.digest(),
        "steps": r["steps"],
        "final": r["final"],
        "length_laws": r["length_laws"],
    }
    task = make_task(task_name, seed=s.seed, n_eval=tiny.GRADED_HELD_OUT)
    # sorted by prompt length: sample_success batches by that length, so its lengths then come
    # k by k in this order
    probs = sorted(task.eval_problems()[:n], key=lambda p: len(p.prompt))
    lengths: list = []
    with tiny.fixed_threads():
        model = AutoModelForCausalLM.from_pretrained(folder)
        wins = sample_success(model, probs, k, task.max_tokens, seed, task.reward, vocab(), lengths)
    tokens = np.array([t for t, _ in lengths], float).reshape(len(probs), k).mean(1)
    label = ["all-fail" if w == 0 else "all-pass" if w == k else "mixed" for w in wins]
    classes = {}
    for name in CLASSES:
        sel = [t for t, c in zip(tokens, label, strict=True) if c == name]
        classes[name] = (len(sel), float(np.mean(sel)) if sel else None)
    return report, classes


if __name__ == "__main__":
    sys.exit(main())
