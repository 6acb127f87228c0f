"""SARA vs DS through verl's real classes, beside the project's own loop, on the same tiny model,
prompts and vLLM server: rollouts and tokens per effective group, each as a ratio to its own DS.

Run it in verl's environment (`bash scripts/setup.sh --verl`):

    .venv-verl/bin/python benchmarks/verl_compare.py [--steps 20] [--groups 8] [--out FILE]

What runs, in one go (nothing is trained: verl's actor needs a GPU; both loops sample the same
fixed model):
* the default tiny model (`sara-real make-tiny`, cached) served by one real vLLM server of the
  main environment on 127.0.0.1;
* a pool of `--pool` arithmetic problems (task seed 0) as verl's parquet, and as the main loop's
  `--task-size` pool: the same problems;
* verl: `real.verl.toy.CollectTrainer` (verl's trainer constructor, replay buffer, reward workers,
  TransferQueue, the agent-loop manager from the config key) for `--steps` steps of
  `--groups` groups of k = 8, strategy ds (verl's DAPO filter) then sara (the one switch); the
  numbers are the sara/ metrics verl logs;
* our loop: `sara-real validate --engine-url URL --schedule stream --lr 1e-12` (the stream
  driver, the same collectors; a learning rate too small to move fp32 weights) for ds and sara
  with the same k, groups and steps.

Printed and written to `--out` (default benchmarks/verl_compare.out.txt, refused when it exists
without --overwrite): per loop and strategy the totals, rollouts and tokens per effective group,
SARA's ratio to DS in each loop, and the gap between the two ratios (goal: within 0.03)."""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
K = 8


def verl_side(strategy, model, data, url, steps, groups):
    from real.verl import toy

    lines = [*toy.sara_lines(strategy), *toy.TOY_LINES, f"data.train_batch_size={groups}"]
    lines += ["algorithm.filter_groups.enable=true", f"actor_rollout_ref.rollout.n={K}"]
    cfg = toy.verl_config(model, data, lines)
    toy.start_ray()
    tot = {"rollouts": 0, "tokens": 0, "effective_groups": 0, "abandoned": 0, "prompts": 0}
    tot |= {"saturated": 0, "lost": 0}
    try:
        tr = toy.CollectTrainer(cfg, url, model)
        t0 = time.perf_counter()
        for _ in range(steps):
            m, groups_got = tr.step()
            for key in tot:
                tot[key] += m[f"sara/{key}"]
            assert len(groups_got) == groups and all(len(r) == K for r in groups_got.values())
        tot["wall_s"] = time.perf_counter() - t0
    finally:
        toy.stop_ray()
    return tot


def own_side(strategy, url, steps, groups, pool, out_dir):
    from real.verl import toy

    folder = out_dir / f"own-{strategy}"
    args = ["validate", "--engine-url", url, "--strategy", strategy, "--schedule", "stream"]
    # lr 1e-12: the loop must take a GRPO step, but the weights (fp32) do not move, as on verl's
    # side, which cannot train here; held-out evaluation once, at the end
    args += ["--k", str(K), "--groups", str(groups), "--steps", str(steps), "--lr", "1e-12"]
    args += ["--task-size", str(pool), "--task-seed", "0", "--seed", "0"]
    args += ["--eval-every", str(steps)]
    args += ["--out", str(folder), "--overwrite"]
    t0 = time.perf_counter()
    toy.main_cli(*args)
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "rollouts" in r]
    keys = ("rollouts", "tokens", "effective_groups", "abandoned", "waste", "cancelled", "carried")
    out = {key: sum(r.get(key) or 0 for r in rows) for key in keys}
    out["wall_s"] = time.perf_counter() - t0
    return out


def per_group(t):
    eff = t["effective_groups"]
    return (t["rollouts"] / eff, t["tokens"] / eff) if eff else (None, None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--pool", type=int, default=256)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "verl_compare.out.txt"))
    ap.add_argument("--overwrite", action="store_true")
    a = ap.parse_args(argv)
    for name in ("steps", "groups", "pool"):
        if getattr(a, name) < 1:
            sys.exit(f"verl_compare: --{name} must be >= 1, got {getattr(a, name)}")
    out = Path(a.out)
    if out.exists() and not a.overwrite:
        sys.exit(f"verl_compare: --out {out} exists; pass --overwrite to replace it")

    from real.sampling.serve import free_port, stop_server, wait_ready
    from real.verl import toy

    model = str(toy.main_tiny())
    work = ROOT / ".tmp" / "verl_compare"
    work.mkdir(parents=True, exist_ok=True)
    data = toy.write_dataset(work / "train.parquet", a.pool)
    port = free_port()
    log = work / "server.log"
    proc = toy.main_server(model, port, log)
    url = f"http://127.0.0.1:{port}"
    results = {}
    try:
        wait_ready(url, proc, log=log)
        for strategy in ("ds", "sara"):
            results[("verl", strategy)] = verl_side(strategy, model, data, url, a.steps, a.groups)
            print("verl", strategy, results[("verl", strategy)], flush=True)
        for strategy in ("ds", "sara"):
            results[("own", strategy)] = own_side(strategy, url, a.steps, a.groups, a.pool, work)
            print("own", strategy, results[("own", strategy)], flush=True)
    finally:
        stop_server(proc)
    report = render(results, a, model)
    print(report)
    out.write_text(report)
    out.with_suffix(".json").write_text(
        json.dumps({f"{loop}/{s}": v for (loop, s), v in results.items()}, indent=1) + "\n"
    )


def render(results, a, model):
    lines = [
        f"# verl_compare: k {K}, {a.groups} groups/step, {a.steps} steps, pool {a.pool}, "
        f"tiny model {Path(model).name}, one vLLM server (main env), no training",
        "",
        "| loop | strategy | rollouts | tokens | eff. groups | rollouts/eff | tokens/eff "
        "| ratio to DS (rollouts) | ratio to DS (tokens) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = {}
    for loop in ("verl", "own"):
        ds_r, ds_t = per_group(results[(loop, "ds")])
        for strategy in ("ds", "sara"):
            t = results[(loop, strategy)]
            r, tk = per_group(t)
            rr = r / ds_r if r and ds_r else None
            rt = tk / ds_t if tk and ds_t else None
            ratios[(loop, strategy)] = (rr, rt)
            cells = [loop, strategy, t["rollouts"], t["tokens"], t["effective_groups"]]
            cells += [fmt(r), fmt(tk), fmt(rr, 3), fmt(rt, 3)]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    (vr, vt), (orr, ot) = ratios[("verl", "sara")], ratios[("own", "sara")]
    gap_r = None if vr is None or orr is None else vr - orr
    gap_t = None if vt is None or ot is None else vt - ot
    met = "met" if gap_r is not None and abs(gap_r) <= 0.03 else "missed"
    lines += [
        "",
        f"gap (verl - own) in SARA's ratio to DS: rollouts {fmt(gap_r, 3)}, tokens {fmt(gap_t, 3)}"
        f" (goal: |gap| <= 0.03 in rollouts: {met})",
        "",
        "Where the rollouts went (the schedules differ; the per-prompt rule is the same):",
    ]
    for loop in ("verl", "own"):
        for strategy in ("ds", "sara"):
            t = results[(loop, strategy)]
            lines.append(
                f"- {loop} {strategy}: "
                + ", ".join(f"{k} {v}" for k, v in t.items() if k != "wall_s")
            )
    v, o = results[("verl", "sara")], results[("own", "sara")]
    decided_own = o["rollouts"] - o["waste"] - o["cancelled"]
    commits_v = v["effective_groups"]
    commits_o = o["effective_groups"] + o["carried"]
    rate_v = commits_v / (commits_v + v["abandoned"] + v["saturated"])
    rate_o = commits_o / (commits_o + o["abandoned"])
    lines += [
        f"- SARA's commit rate per decided prompt: verl {rate_v:.3f}, own {rate_o:.3f}",
        f"- own SARA without the rollouts its step ends drop or cancel ('fresh' boundary): "
        f"{fmt(decided_own / o['effective_groups'])} per effective group (verl's flow drops none: "
        f"{fmt(v['rollouts'] / v['effective_groups'])})",
    ]
    return "\n".join(lines) + "\n"


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


if __name__ == "__main__":
    main()
