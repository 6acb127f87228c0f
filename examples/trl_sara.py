"""Use SARA in TRL: Hugging Face TRL's GRPOTrainer with `SaraRollout` as its `rollout_func`.

Offline, on CPU, with the project's tiny arithmetic model (built and cached on first use):

    python examples/trl_sara.py                          # SARA, 5 steps
    python examples/trl_sara.py --strategy ds           # DAPO dynamic sampling instead
    accelerate launch --num_processes 2 --cpu examples/trl_sara.py   # two processes

Prints one JSON line per step and process (the adapter's metrics; TRL logs the same under sara/).
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is "experimental" in TRL
# first: importing from real sets the offline environment (hub off, cache folders) before torch
from real import SaraRollout, build_tiny, extract_integer, make_task  # noqa: E402

# isort: split
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from real.app.cli import deprecated_flag  # noqa: E402  (the command line's old spellings)


def correct(completions, answer, **kwargs):
    """The user's reward function: 1.0 for the right integer.  `answer` is a dataset column;
    SaraRollout passes the right one for replacement prompts too."""
    return [1.0 if extract_integer(c) == a else 0.0 for c, a in zip(completions, answer)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="HF model dir (default: the tiny model)")
    ap.add_argument("--strategy", default="sara", help="uniform | ds | sara | sara-eb | ...")
    deprecated_flag(ap, "--allocator", "--strategy")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", default="runs/trl-sara")
    ap.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    a = ap.parse_args(argv)

    model_dir = a.model or build_tiny()
    task = make_task("arithmetic", seed=0)
    rows = [{"prompt": p.prompt, "answer": p.answer} for p in map(task.problem, range(1024))]
    dataset = Dataset.from_list(rows)

    config = GRPOConfig(
        output_dir=a.out,
        num_generations=8,  # k: rollouts per group
        per_device_train_batch_size=32,  # 4 groups of 8 per process and step
        max_completion_length=8,
        max_steps=a.steps,
        learning_rate=1e-4,
        logging_steps=1,
        save_steps=2,
        report_to="none",
        use_cpu=True,
        seed=0,
    )
    # SARA decides on `correct` (pass = reward >= threshold 1.0) and hands TRL the same numbers
    sara = SaraRollout(config, dataset, [correct], strategy=a.strategy, tau_low=0.2)
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=sara.reward_funcs,  # pass-through: no second scoring
        args=config,
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        rollout_func=sara,
        callbacks=[sara.callback],  # adapter state in every checkpoint (resume)
    )
    trainer.train(resume_from_checkpoint=True if a.resume else None)

    keys = ("rollouts", "tokens", "effective_groups", "groups", "abandoned", "rounds", "waste")
    first = trainer.state.global_step - len(sara.step_log)  # > 0 after --resume
    lines = [
        json.dumps({"rank": sara.rank, "step": first + i, **{k: h[k] for k in keys}}) + "\n"
        for i, h in enumerate(sara.step_log)
    ]
    sys.stdout.flush()
    sys.stdout.write("".join(lines))  # one block per process: ranks do not interleave lines
    sys.stdout.flush()


if __name__ == "__main__":
    main()
