"""In-process vLLM engine vs one vLLM server vs two: rollouts per second of SARA collection and the
strategy's share of step time, on the tiny model, measured in one run (ratios to in-process).

    python benchmarks/investigations/served/server_bench.py [--steps 8] [--groups 16] [--k 8] \\
        [--urls URL,URL]

Without --urls it starts two servers (`real.sampling.serve`, 127.0.0.1, free ports) and stops them
at the end. Every configuration collects the same steps from the same weights and seeds, so they
sample identical rollouts (checked) and do identical work; steps are interleaved (one step of each
configuration in turn) so that load from other processes on a shared machine hits all alike.
Collection only (no GRPO update): the weights stay fixed, and what differs is the engine.
alloc share = time outside the engine and the verifiers / collection time."""

import argparse
import sys
import time
from pathlib import Path

from real.base import env as _env  # noqa: F401  (env before torch / vllm)


def _collector(engine, task, k, groups, seed):
    from real.rollout.collect import RolloutDriver
    from real.tasks import PromptSource
    from sara_sim.collect.collectors import make_collector

    col = make_collector("sara", k=k, groups=groups, tau_low=0.3, seed=seed)
    return RolloutDriver(engine, task, col, k, seed=seed), PromptSource(task, seed=seed)


def run(engines: dict, steps: int, k: int, groups: int, seed: int = 0) -> list[dict]:
    """One warm-up step, then `steps` interleaved steps per engine; one result row per engine."""
    from real.tasks import make_task

    task = make_task("arithmetic", seed=seed)
    setups = {name: _collector(eng, task, k, groups, seed) for name, eng in engines.items()}
    acc = {
        name: {"rollouts": 0, "collect_s": 0.0, "gen_s": 0.0, "alloc_s": 0.0} for name in engines
    }
    rewards = {name: [] for name in engines}
    for step in range(steps + 1):
        for name, (rc, prompts) in setups.items():
            b = rc.collect(prompts)
            rewards[name].append(list(b.rewards))
            if step == 0:
                continue  # warm-up: first-call costs (connections, caches) are not throughput
            a = acc[name]
            a["rollouts"] += b.result.rollouts
            a["collect_s"] += b.collect_s
            a["gen_s"] += b.gen_s
            a["alloc_s"] += b.alloc_s
    first = next(iter(rewards.values()))
    rows = []
    for name, a in acc.items():
        rows.append(
            {
                "engine": name,
                "rollouts": a["rollouts"],
                "rollouts_per_s": a["rollouts"] / a["collect_s"],
                "alloc_share": a["alloc_s"] / a["collect_s"],
                "same_rollouts_as_first": rewards[name] == first,
            }
        )
    ref = rows[0]["rollouts_per_s"]
    for r in rows:
        r["speed_vs_in_process"] = r["rollouts_per_s"] / ref
    return rows


def report(rows, steps, k, groups) -> str:
    lines = [
        f"SARA collection on the tiny model: {steps} steps x {groups} effective groups, k={k}",
        f"{'engine':<14}{'rollouts':>9}{'rollouts/s':>12}{'vs in-proc':>11}{'alloc share':>13}"
        f"{'same rollouts':>15}",
    ]
    for r in rows:
        lines.append(
            f"{r['engine']:<14}{r['rollouts']:>9}{r['rollouts_per_s']:>12.0f}"
            f"{r['speed_vs_in_process']:>11.2f}{r['alloc_share']:>13.1%}"
            f"{str(r['same_rollouts_as_first']):>15}"
        )
    return "\n".join(lines)


def main(argv=None, in_process=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--urls", default=None, help="two running servers (default: start two)")
    ap.add_argument("--model", default=None, help="model dir (default: test-size tiny model)")
    a = ap.parse_args(argv)

    from real.models.tiny import TinySettings, build_tiny
    from real.sampling.client import ServerEngine, parse_urls
    from real.sampling.serve import free_port, start_server, stop_server, wait_ready

    model = Path(a.model) if a.model else build_tiny(_env.CACHE / "tiny-bench", TinySettings.test())
    procs, urls = [], parse_urls(a.urls) if a.urls else []
    try:
        if not urls:
            ports = [free_port(), free_port()]
            procs = [start_server(model, p) for p in ports]
            urls = [f"http://127.0.0.1:{p}" for p in ports]
            t0 = time.monotonic()
            for u, p in zip(urls, procs):
                wait_ready(u, p)
            print(f"two servers ready in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        if in_process is None:
            from real.sampling.engine import VLLMEngine

            in_process = VLLMEngine(model, seed=0)
        from transformers import AutoModelForCausalLM

        weights = AutoModelForCausalLM.from_pretrained(model, dtype="float32")
        engines = {
            "in-process": in_process,
            "1 server": ServerEngine(urls[:1], model=model),
            "2 servers": ServerEngine(urls[:2], model=model),
        }
        for eng in engines.values():
            eng.push_weights(weights)  # the same weights everywhere
        rows = run(engines, a.steps, a.k, a.groups)
        print(report(rows, a.steps, a.k, a.groups))
        return rows
    finally:
        for p in procs:
            stop_server(p)


if __name__ == "__main__":
    main()
