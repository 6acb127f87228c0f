"""`sara-real`: make the tiny model, validate one allocator in a GRPO run, compare several.

Every argument is checked before torch or vLLM is imported: a bad one exits with status 2 and
one line naming the parameter."""

import argparse
import sys

from real import _env  # noqa: F401  (first: env vars before any torch/vllm import)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common(p):
    p.add_argument(
        "--model",
        default=None,
        help="HF-format model dir or cached hub id (default: the tiny model)",
    )
    p.add_argument("--task", default="arithmetic", help="arithmetic | countdown | math")
    p.add_argument("--task-path", default=None, help="JSONL file for --task math")
    p.add_argument("--eval-path", default=None, help="JSONL held-out set for --task math")
    p.add_argument(
        "--task-size", type=int, default=None, help="arithmetic: finite pool (history allocators)"
    )
    p.add_argument("--k", type=int, default=8, help="rollouts per group")
    p.add_argument("--groups", type=int, default=16, help="effective groups per step")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tau-low", type=float, default=0.2, help="SARA abandonment threshold")
    p.add_argument("--tau-high", type=float, default=None, help="SARA early-commit threshold")
    p.add_argument("--prior", default="1,1", help="SARA Beta prior A0,B0")
    p.add_argument("--capacity", type=int, default=None, help="rollouts per round")
    p.add_argument("--gen-batch-size", type=int, default=None, help="DS prompts per batch")
    p.add_argument("--max-num-gen-batches", type=int, default=10, help="DS batches per step")
    p.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate")
    p.add_argument("--eps-low", type=float, default=0.2, help="lower PPO clip")
    p.add_argument("--eps-high", type=float, default=0.28, help="upper PPO clip (clip-higher)")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping")
    p.add_argument("--epochs", type=int, default=1, help="passes over each step's batch")
    p.add_argument("--minibatches", type=int, default=2, help="optimizer updates per pass")
    p.add_argument("--kl-coef", type=float, default=0.0, help="KL to the initial policy")
    p.add_argument("--no-std", action="store_true", help="advantages without the group std")
    p.add_argument("--old-logprobs", default="engine", help="engine | recompute")
    p.add_argument("--max-tokens", type=int, default=None, help="completion budget")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=5, help="held-out eval every E steps")
    p.add_argument("--eval-samples", type=int, default=4, help="samples per held-out problem")
    p.add_argument("--eval-problems", type=int, default=64, help="held-out problems used")
    p.add_argument("--ckpt-every", type=int, default=1, help="checkpoint every C steps")
    p.add_argument("--dtype", default="float32", help="engine dtype (bfloat16 on GPU)")
    p.add_argument("--max-model-len", type=int, default=None, help="engine context length")
    p.add_argument("--gpu-memory-utilization", type=float, default=None, help="engine GPU share")
    p.add_argument("--device", default="auto", help="torch training device (auto|cpu|cuda)")
    p.add_argument("--micro-batch", type=int, default=0, help="sequences per forward (0 = all)")
    p.add_argument("--grad-checkpointing", action="store_true")
    p.add_argument("--bf16-autocast", action="store_true", help="bf16 autocast in torch (GPU)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--overwrite", action="store_true", help="start over in a used --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--trainer", default="native", help="native | trl (TRL's GRPOTrainer)")


def build_parser():
    ap = _Parser(prog="sara-real", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    p = sub.add_parser("make-tiny", help="train the tiny default model (cached)")
    p.add_argument("--out", default=None, help="model dir (default: the project cache)")
    p.add_argument("--test-size", action="store_true", help="the quick settings used by tests")
    p.add_argument("--time-cap", type=float, default=None, help="training time cap, seconds")
    p.add_argument("--seed", type=int, default=None)
    p = sub.add_parser("validate", help="one GRPO run with one allocator")
    _common(p)
    p.add_argument("--allocator", default="sara", help="uniform|ds|sara|sara-eb|sara-auto")
    p.add_argument("--out", default="runs/validate", help="run directory")
    p = sub.add_parser("compare", help="several allocators from the same start")
    _common(p)
    p.add_argument("--allocators", default="uniform,ds,sara,sara-eb,sara-auto")
    p.add_argument("--out", default="runs/compare", help="directory for runs, table, plots")
    return ap


def _config(a, allocator):
    from dataclasses import fields

    from real.train import Config

    kw = {f.name: getattr(a, f.name) for f in fields(Config) if hasattr(a, f.name)}
    kw.update(allocator=allocator, std_norm=not a.no_std, progress=not a.no_progress)
    kw["prior"] = _prior(a.prior)
    return Config(**kw)


def _prior(text):
    from sara_sim.errors import ParameterError

    try:
        a0, b0 = (float(x) for x in text.split(","))
    except ValueError:
        raise ParameterError("--prior", f"must be A0,B0 (two numbers), got {text!r}") from None
    return (a0, b0)


def cmd_make_tiny(a) -> int:
    import json

    from real.tiny import TinySettings, build_tiny, read_spread, with_overrides

    s = TinySettings.test() if a.test_size else TinySettings()
    s = with_overrides(s, time_cap_s=a.time_cap, seed=a.seed)
    out = build_tiny(a.out, s, progress=True)
    r = read_spread(out)
    print(
        json.dumps(
            {
                "model": str(out),
                "steps": r["steps"],
                "train_s": r["train_s"],
                "criterion_met": r["criterion_met"],
                **r["final"],
            }
        )
    )
    return 0


def cmd_validate(a) -> int:
    import json

    from real.checks import check_config
    from real.train import train

    cfg = _config(a, a.allocator)
    check_config(cfg)
    s = train(cfg)
    keys = (
        "allocator",
        "steps",
        "rollouts",
        "tokens",
        "effective_groups",
        "rollouts_per_effective_group",
        "tokens_per_effective_group",
        "rounds_median",
        "effective_fraction",
        "abandoned",
        "reward_errors",
        "eval_initial",
        "eval_final",
        "alloc_share",
        "wall_s",
    )
    print(json.dumps({k: s[k] for k in keys}))
    return 0


def cmd_compare(a) -> int:
    from real.checks import check_allocator, check_config
    from real.compare import format_table, plot_compare, run_compare

    allocators = [x.strip() for x in a.allocators.split(",") if x.strip()]
    if not allocators:
        from sara_sim.errors import ParameterError

        raise ParameterError("--allocators", "give at least one allocator")
    for x in allocators:
        check_allocator(x, "--allocators")
    cfg = _config(a, allocators[0])
    check_config(cfg if a.resume else _with_overwrite(cfg))
    table, curves = run_compare(cfg, allocators)
    print(format_table(table, curves))
    for p in plot_compare(a.out, table, curves, allocators):
        print(f"saved {p}")
    return 0


def _with_overwrite(cfg):
    from dataclasses import replace

    return replace(cfg, overwrite=True)


def main(argv=None) -> int:
    from sara_sim.errors import ParameterError

    args = build_parser().parse_args(argv)
    try:
        return {"make-tiny": cmd_make_tiny, "validate": cmd_validate, "compare": cmd_compare}[
            args.cmd
        ](args)
    except ParameterError as e:
        print(f"sara-real: error: {e}", file=sys.stderr)
        return 2
    except FileExistsError as e:
        print(f"sara-real: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sara-real: interrupted (resume with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
