"""`sara-real audit`: what would SARA save on *my* model and *my* data, before I change training?

    sara-real audit --engine-url http://127.0.0.1:8000 --task arithmetic --prompts 256 --k 8 \\
        --passes 2 --out runs/audit

Samples k rollouts for each of P prompts (E passes; optionally `--train-steps S` GRPO steps
between passes, off by default), writes `history.csv` in `sara-sim`'s `history:` format
(prompt_id, epoch, correct, samples) plus the completion tokens of passing and failing rollouts,
and prints (and writes to `audit.json`) what each strategy would cost on that model:

* the references: DS streamed (k / P(mixed): every group sampled is used) and DS by rounds
  (verl's dynamic sampling: generation batches of N prompts, and verl's recipes' 3N, the surplus
  thrown away; `--groups` N), exact (`sara_sim.core.theory.ds_rounds_law`);
* SARA at each tau_low: rollouts and tokens per effective group and their ratios to DS
  streamed, exact theory (`sara_sim.core.theory`) for the recorded law — the same numbers as
  `sara-sim theory --difficulty history:OUT/history.csv --k K --tau-low T`;
* the best tau_low (`theory.best_tau`) and the Bayes-optimal stopping policy
  (`sara_sim.core.optimal.bayes_optimal`) for that law, priced in rollouts and in tokens;
* with E >= 2, the history-informed strategies replayed on the recorded passes
  (`sara_sim.sim.replay`);
* percentile bootstrap intervals over prompts (each plan fixed, re-evaluated on resampled prompts);
* where the saving over DS by rounds comes from (streaming, the stopping rule, priors and plans,
  per-prompt history: `sara_sim.sim.baselines`), and the answer to "should I stream DS, or use
  SARA, and which variant?": the cheapest variant in tokens whose interval is below DS
  streamed's, else DS streamed.

The numbers come from `real/app/audit_theory.py`; this module checks the arguments, samples and
writes the files."""

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from real.app.audit_theory import (
    BOOTSTRAP_LIMIT,
    TAU_GRID,
    analyze,
    bootstrap_work,
    format_report,
    replay_visits,
)
from real.app.run import check_ints, check_task_files, train
from real.base.config import Config, check_seed
from real.io.enginelog import engine_log, user_stderr
from real.io.runfolder import check_writable
from real.models.resolve import resolve_model
from real.sampling import engine as _engine  # the module: a test may swap VLLMEngine in it
from real.sampling.client import ServerEngine
from real.sampling.served import parse_urls
from real.tasks import RewardGuard, make_task
from sara_sim.core.difficulty import TOKEN_COLUMNS, load_history
from sara_sim.core.errors import (
    ParameterError,
    ascii_float,
    check_budget,
    check_float,
    check_int,
    check_k,
    finite_or_none,
)
from sara_sim.core.files import append_bytes, atomic_write, dumps_json, writing

# ------------------------------------------------------------------ checks (before any engine)


def check_audit_args(a) -> None:
    check_task_files(a.task, a.task_path)
    check_k(a.k, "--k")
    check_ints(a, prompts=1, passes=1, train_steps=0, bootstrap=0, batch=1)
    if a.groups is not None:
        check_int(a.groups, "--groups", 1)
    check_seed(a.seed)
    if a.max_tokens is not None:
        check_int(a.max_tokens, "--max-tokens", 1)
    check_float(a.temperature, "--temperature", 0.0, lo_open=True)
    parse_taus(a.tau_grid)
    if a.engine_url:
        parse_urls(a.engine_url)
    if a.model is not None:
        resolve_model(a.model, build=False)
    out = Path(a.out)
    check_writable(out, "--out")
    # audit.json is written last and atomically: it is there only when an audit finished; the
    # history.csv of an audit that stopped before (a full disk, a kill) does not block a rerun
    if (out / "audit.json").exists() and not a.overwrite:
        raise ParameterError("--out", f"{out} already holds an audit; pass --overwrite to redo it")


def check_audit_size(a, max_tokens: int) -> None:
    """Every factor of the audit's work and memory, before the engine starts (unless --force):
    the bootstrap (resamples x recorded prompts), the replay of two or more passes (visits),
    and memory (a pass's records; one engine call's results: batch x k x max-tokens); past a
    bound, one line naming the biggest factor."""
    from real.app.run import check_ram
    from sara_sim.sim.replay import REPLAY_VISIT_LIMIT

    if a.force:
        return
    records = a.prompts * a.passes
    name = "--bootstrap" if a.bootstrap / 200 >= records / 256 else "--prompts"
    work = bootstrap_work(a.prompts, a.passes, a.k, a.bootstrap)
    check_budget(work, BOOTSTRAP_LIMIT, name, "bootstrap work (record-equivalents)", False)
    name = "--prompts" if a.prompts / 256 >= a.passes / 2 else "--passes"
    check_budget(
        replay_visits(a.prompts, a.passes),
        REPLAY_VISIT_LIMIT,
        name,
        "prompt visits to replay",
        False,
    )
    # ~1 KiB a record as Python rows and in the frame; ~200 B a generated token in results
    parts = {"--prompts": 1024.0 * records, "--batch": 200.0 * min(a.batch, a.prompts) * a.k}
    parts["--batch"] *= max_tokens
    detail = (
        f" (prompts {a.prompts} x passes {a.passes}, batch {a.batch} x k {a.k} x max-tokens "
        f"{max_tokens})"
    )
    check_ram(parts, "the audit", detail, "lower it or pass --force")


def parse_taus(text) -> list[float]:
    try:
        taus = [ascii_float(x.strip()) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ParameterError(
            "--tau-grid", f"must be comma-separated numbers, got {text!r}"
        ) from None
    if not taus or not all(0.0 <= t <= 1.0 for t in taus):
        raise ParameterError("--tau-grid", f"each tau_low must be in [0, 1], got {text!r}")
    return taus


# ------------------------------------------------------------------ sampling


def sample_pass(
    engine, task, guard, k, epoch, n_prompts, *, seed, max_tokens, temperature, batch, bar=None
) -> list[dict]:
    """k rollouts of prompts 0..P-1 -> one history row each (with token sums per outcome)."""
    bases = np.random.default_rng([seed, 0xA0D1, epoch]).integers(0, 2**31 - 1 - k, n_prompts)
    rows = []
    for lo in range(0, n_prompts, batch):
        ids = range(lo, min(lo + batch, n_prompts))
        probs = [task.problem(i) for i in ids]
        res = engine.generate(
            [p.prompt for p in probs],
            [k] * len(probs),
            max_tokens=max_tokens,
            temperature=temperature,
            seeds=[(bases[i] + np.arange(k)).tolist() for i in ids],  # one request per prompt
        )
        for i, p, r in zip(ids, probs, res, strict=True):
            rewards = [guard(c.text, p) for c in r.completions]
            toks = [c.n_tokens for c in r.completions]
            rows.append(
                {
                    "prompt_id": i,
                    "epoch": epoch,
                    "correct": int(sum(rewards)),
                    "samples": len(rewards),
                    "pass_tokens": int(sum(t for t, w in zip(toks, rewards) if w)),
                    "fail_tokens": int(sum(t for t, w in zip(toks, rewards) if not w)),
                }
            )
        if bar is not None:
            bar.update(len(probs))
    return rows


def append_rows(path: Path, rows: list[dict]) -> None:
    """Append a pass to history.csv and fsync: a crash keeps every finished pass (a failed write
    is cut back off: `sara_sim.core.files.append_bytes`)."""
    import pandas as pd

    new = not path.exists()
    append_bytes(path, pd.DataFrame(rows).to_csv(header=new, index=False).encode())


# ------------------------------------------------------------------ the command


def cmd_audit(a) -> int:
    return run_audit(a)


def run_audit(a, engine=None) -> int:
    """The audit of the module docstring; `engine` (tests) replaces the one `a` describes.
    Everything is checked before the engine starts; the engine's and libraries' noise goes to
    OUT/engine.log (`real.io.enginelog`), the report to the terminal."""
    check_audit_args(a)
    opts = {"path": a.task_path} if a.task_path else {}
    task = make_task(a.task, seed=a.seed, **opts)
    if task.size is not None and a.prompts > task.size:
        raise ParameterError("--prompts", f"the task has {task.size} prompts, asked {a.prompts}")
    max_tokens = a.max_tokens or task.max_tokens
    check_audit_size(a, max_tokens)
    out = Path(a.out)
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    hist = out / "history.csv"
    if hist.exists() and not (out / "audit.json").exists():
        print(f"note: {out} holds an unfinished audit (no audit.json): redone", file=sys.stderr)
    with engine_log(out):
        res = _audit(a, task, max_tokens, engine, out)
    print(format_report(res))
    print(f"wrote {hist} and {out / 'audit.json'}")
    return 0


def _audit(a, task, max_tokens: int, engine, out: Path) -> dict:
    """Start the engine, sample the passes into OUT/history.csv, analyse, write OUT/audit.json."""
    model_dir = None if a.engine_url and a.model is None else resolve_model(a.model, a.progress)
    if engine is not None:
        pass
    elif a.engine_url:
        engine = ServerEngine(a.engine_url, model=model_dir)
    else:
        engine = _engine.VLLMEngine(model_dir, seed=a.seed)
    engine.check_fits([task.problem(i).prompt for i in range(min(a.prompts, 256))], max_tokens)
    hist = out / "history.csv"
    for f in (out / "audit.json", hist):  # never an old audit.json beside a new history
        f.unlink(missing_ok=True)
    guard = RewardGuard(task.reward)
    bar = None
    if a.progress:
        from tqdm import tqdm

        bar = tqdm(total=a.prompts * a.passes, desc="audit", unit="prompt", file=user_stderr())
    try:
        for epoch in range(a.passes):
            if epoch and a.train_steps:
                train_between(a, engine, model_dir or engine.model, epoch)
            rows = sample_pass(
                engine,
                task,
                guard,
                a.k,
                epoch,
                a.prompts,
                seed=a.seed,
                max_tokens=max_tokens,
                temperature=a.temperature,
                batch=a.batch,
                bar=bar,
            )
            append_rows(hist, rows)
    finally:  # closed on a failure too: the error's one line is the terminal's last
        if bar:
            bar.close()
    frame = load_history(hist, "--out", TOKEN_COLUMNS)  # the one reader, its rules
    res = analyze(frame, a.k, parse_taus(a.tau_grid), a.bootstrap, a.seed, a.groups)
    res |= {"task": a.task, "reward_errors": guard.errors, "engine_url": a.engine_url}
    res = finite_or_none(res)
    atomic_write(out / "audit.json", dumps_json(res))
    return res


def train_between(a, engine, model_dir, epoch) -> None:
    """`--train-steps S`: S GRPO steps (sara) before pass `epoch`; the run lives in OUT/train."""
    cfg = Config.from_flat(
        dict(
            model=str(model_dir),
            task=a.task,
            task_path=a.task_path,
            k=a.k,
            groups=max(1, min(16, a.prompts // 4)),
            steps=epoch * a.train_steps,
            seed=a.seed,
            out=str(Path(a.out) / "train"),
            resume=epoch > 1,
            overwrite=epoch == 1,
            eval_every=10**6,
            eval_problems=16,
            eval_samples=2,
            max_tokens=a.max_tokens,
            temperature=a.temperature,
            progress=False,
            engine_url=a.engine_url,
        )
    )
    train(cfg, engine=engine)  # pushes the trained weights into the engine after every step


@dataclass
class AuditConfig:
    """`sara-real audit`: what each strategy would cost on a model (one flag per field)."""

    engine_url: str | None = None
    """running vLLM server(s) URL[,URL...]"""
    model: str | None = None
    """model dir (in-process engine without a URL)"""
    task: str = "arithmetic"
    """arithmetic | countdown | math | reasoning | reasoning-long"""
    task_path: str | None = None
    """JSONL file for --task math"""
    prompts: int = 256
    """prompts sampled per pass"""
    k: int = 8
    """rollouts per prompt (the group size)"""
    passes: int = 1
    """passes over the prompts (epochs)"""
    groups: int | None = None
    """effective groups per step (N) of the training it prices: DS by rounds' generation batch
    (N prompts; verl's 3N) and the replay's steps; none = min(32, prompts / 4)"""
    train_steps: int = 0
    """GRPO steps between passes (off)"""
    tau_grid: str = ",".join(f"{t:g}" for t in TAU_GRID)
    """tau_low list"""
    bootstrap: int = 200
    """bootstrap resamples over prompts"""
    batch: int = 64
    """prompts per engine call"""
    max_tokens: int | None = None
    """completion budget"""
    temperature: float = 1.0
    """sampling temperature"""
    seed: int = 0
    """seeds the prompts and every rollout's sampling"""
    out: str = "runs/audit"
    """folder for history.csv and audit.json"""
    overwrite: bool = False
    """redo an audit already in --out"""
    force: bool = False
    """run beyond this machine's bounds (bootstrap work, replayed visits, memory)"""
    progress: bool = True
    """progress bar"""
