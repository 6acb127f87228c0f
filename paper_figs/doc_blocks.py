"""The numbers the docs print, generated: from the shipped histories through the exact theory and
the simulator, and from the committed claim results.

A block of a markdown file is the text between a line ``<!-- NAME: how it is made -->`` and the
line ``<!-- /NAME -->``, NAME one of `BLOCKS`; its generator returns the block's lines. The prose
around a block is free text; a block is rewritten, never edited by hand:

    .venv/bin/python -m paper_figs.doc_blocks           # rewrite every block of the docs
    .venv/bin/python -m paper_figs.doc_blocks --check   # exit 1 naming each stale block

tests/figs/test_doc_blocks.py holds that every block is what its generator gives now."""

import argparse
import contextlib
import difflib
import io
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the markdown files that may hold blocks
DOCS = ("README.md", "docs/*.md", "benchmarks/**/*.md", "real/**/*.md", "sara_sim/**/*.md")
K = 8  # the DeepScaleR numbers' group size


def theory_deepscaler() -> list[str]:
    """Exact theory on the DeepScaleR histories' epoch 0: DS, SARA at its best tau_low, the
    Bayes-optimal stopping rule for the recorded law."""
    from sara_sim.core.difficulty import parse_law
    from sara_sim.core.optimal import bayes_optimal
    from sara_sim.core.theory import best_tau, sequential_law

    law = parse_law("history:deepscaler", epochs="0")
    ds = sequential_law(law, K, 0.0)["cost_per_effective_group"]  # tau 0: never abandons
    tau, sara, _ = best_tau(law, K)
    opt = bayes_optimal(law, K)
    sides = [
        f"abandon after {n} {what}" if n is not None else f"never on {what}"
        for n, what in ((opt["abandon_after_fail"], "fails"), (opt["abandon_after_pass"], "passes"))
    ]
    return [
        f"- DeepScaleR histories, epoch 0: DS {ds:.2f} rollouts per effective group; "
        f"paper-faithful SARA with the best tau_low ({tau:.2g}) {sara:.2f} "
        f"(-{100 * (1 - sara / ds):.0f} %); Bayes-optimal stopping for the recorded law "
        f"{opt['cost_per_effective_group']:.2f} (-{100 * opt['savings_vs_ds']:.0f} %, "
        f"{', '.join(sides)})."
    ]


COMPARE = (("ds", {}), ("ds-verl3n", {}), ("sara", {}), ("sara --no-carry", {"carry": False}))


def compare_deepscaler_results() -> dict:
    """Rollouts per effective group as `sara-sim compare --difficulty history:deepscaler --k 8`
    simulates them (N 64, 100 steps x 4 seeds), epochs 0 and 0-52: DS as we run it and as verl's
    scripts do, SARA carrying and not; beside exact theory's k / P(mixed), DS's idealised bound."""
    from sara_sim.core.difficulty import parse_law
    from sara_sim.core.theory import sequential_law
    from sara_sim.sim.laws import parse_sim_law
    from sara_sim.sim.simulate import simulate, summarize

    kw = dict(k=K, groups=64, steps=100, replicates=4, seed=0)
    out = {"settings": kw, "epochs": {}}
    for epochs in ("0", "0-52"):
        law = parse_sim_law("history:deepscaler", epochs=epochs)
        got = {
            label: summarize(simulate(label.split()[0], law, **kw, **extra))
            for label, extra in COMPARE
        }
        row = {label: g["cost_per_effective_group"] for label, g in got.items()}
        bound = sequential_law(parse_law("history:deepscaler", epochs=epochs), K, 0.0)
        out["epochs"][epochs] = {**row, "theory": bound["cost_per_effective_group"]}
    return out


def compare_deepscaler() -> list[str]:
    """The table of `compare_deepscaler_results`: the rule's saving over our DS, and carrying's."""
    lines = [
        "| epochs | ds (a generation batch of N) | ds-verl3n (3N) | sara | sara --no-carry "
        "| the rule saves | carrying saves | theory k / P(mixed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for epochs, row in _results("compare-deepscaler")["epochs"].items():
        got = [row[label] for label, _ in COMPARE]
        rule, carry = 1 - got[3] / got[0], (got[3] - got[2]) / got[0]
        cells = [f"{x:.2f}" for x in got]
        cells += [f"{100 * rule:.1f} %", f"{100 * carry:.1f} points", f"{row['theory']:.2f}"]
        lines.append(f"| {epochs} | " + " | ".join(cells) + " |")
    return lines


def replay_held_out_results() -> dict:
    """benchmarks/fit_informed.py's held-out report (fold B, epochs 26-52, seeds 0 and 1) with
    the defaults it chose: rollouts per effective group of each strategy in the replay."""
    import numpy as np

    from sara_sim.sim.replay import INFORMED_DEFAULTS, SELECTOR_RATIO, load_history, replay

    frame = load_history("deepscaler")
    pids = np.array(sorted(frame.prompt_id.unique()))
    fold_b = frame[frame.prompt_id.isin(pids[1::2])]
    best = {x: INFORMED_DEFAULTS[x] for x in ("rho", "kappa", "rule")}

    def cost(name, **kw):
        runs = [replay(fold_b, name, range(26, 53), s, **kw) for s in (0, 1)]
        return float(np.mean([r["cost_per_effective_group"] for r in runs]))

    return {
        "ds": cost("ds"),
        "sara": cost("sara", tau_low=0.5),
        "sara-history": cost("sara-history", **best),
        "sara-dps": cost("sara-dps", ratio=SELECTOR_RATIO, **best),
        "sara-mopps": cost("sara-mopps", ratio=SELECTOR_RATIO, **best),
    }


def replay_held_out() -> list[str]:
    got = _results("replay-held-out")
    lines = ["| strategy | rollouts per effective group | vs ds |", "|---|---|---|"]
    for name, x in got.items():
        lines.append(f"| {name} | {x:.2f} | {100 * (x / got['ds'] - 1):+.1f} % |")
    return lines


WALLCLOCK = "wallclock --difficulty history:deepscaler --epoch 0-52 --k 8 --groups 128 --steps 1000"
WALLCLOCK_COLUMNS = (  # (JSON key, header, digits)
    ("wall_ratio_vs_ds", "wall / DS", 2),
    ("token_ratio_vs_ds", "tokens / DS", 2),
    ("rollouts_per_effective_group", "rollouts / eff. group", 1),
    ("rounds_per_step", "rounds / step", 2),
    ("utilisation", "utilisation", 2),
)


def sara_sim_json(command: str) -> dict:
    """What `sara-sim COMMAND --json` prints, run in this process."""
    from sara_sim.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if main([*command.split(), "--json"]) != 0:
            raise RuntimeError(f"sara-sim {command} failed")
    return json.loads(printed.getvalue())


def wallclock_deepscaler_results() -> dict:
    """`sara-sim WALLCLOCK --json` for seeds 0 and 1: {seed: its rows}."""
    return {seed: sara_sim_json(f"{WALLCLOCK} --seed {seed}")["rows"] for seed in ("0", "1")}


def wallclock_deepscaler() -> list[str]:
    """The wall-clock command and its table: each strategy's means over seeds 0 and 1."""
    rows = {}
    for seed_rows in _results("wallclock-deepscaler").values():
        for r in seed_rows:
            rows.setdefault(r["strategy"], []).append(r)
    lines = ["```bash", f".venv/bin/sara-sim {WALLCLOCK}   # ~1 min", "```", ""]
    lines.append("| strategy | " + " | ".join(h for _, h, _ in WALLCLOCK_COLUMNS) + " |")
    lines.append("|---" * (len(WALLCLOCK_COLUMNS) + 1) + "|")
    for name, got in rows.items():
        means = [sum(g[key] for g in got) / len(got) for key, _, _ in WALLCLOCK_COLUMNS]
        cells = [f"{m:.{d}f}" for m, (_, _, d) in zip(means, WALLCLOCK_COLUMNS, strict=True)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def claims_table() -> list[str]:
    """The training claims' table from the committed claim files (benchmarks/claims.py)."""
    from .claims_table import claim_table, markdown_lines

    return markdown_lines(claim_table(_claims()))


def claims_verdicts() -> list[str]:
    """The claims' table cut to the claim, the paper's number, the verdict and the seeds."""
    from .claims_table import claim_table, markdown_lines

    return markdown_lines(claim_table(_claims())[["claim", "paper", "verdict", "seeds"]])


# The saving against the strongest baseline, DS streamed, split by its source: the paper-like
# setting of benchmarks/wallclock.py (the engine model's gpu preset with 256 slots: saturated)
SAVING = (
    "wallclock --difficulty history:deepscaler --epoch 0-52 --k 8 --groups 64 --steps 40 "
    "--schedule stream --max-num-seqs 256 --strategies ds,sara,sara-auto,sara-history"
)
# each row adds one source of the saving to the row above it (sara_sim.sim.baselines.CHAIN)
SAVING_ROWS = (
    ("ds rounds", "DS by rounds (a generation batch of N)", "-"),
    ("ds stream", "DS streamed", "streaming: no round barrier, no surplus"),
    ("sara", "sara", "the stopping rule (the paper's uniform prior)"),
    ("sara-auto", "sara-auto", "fitted priors and Bayes-optimal plans"),
    ("sara-history", "sara-history", "per-prompt history across epochs"),
)
COSTS = (  # (JSON key of a cost per effective group, header)
    ("wall_per_effective_group_s", "wall time"),
    ("tokens_per_effective_group", "tokens"),
    ("rollouts_per_effective_group", "rollouts"),
)


def saving_sources_results() -> dict:
    """`sara-sim SAVING --json`: every row, the references and the decomposition."""
    return sara_sim_json(SAVING)


def _saving_costs() -> tuple[dict, dict]:
    """({name in SAVING_ROWS: its costs per effective group}, the run's settings)."""
    got = _results("saving-sources")
    costs = {name: ref for name, ref in got["references"].items()}
    costs |= {r["strategy"]: r for r in got["rows"] if r["strategy"] != "ds"}
    return costs, got


def saving_sources() -> list[str]:
    """The command and, per source of the saving, the strategy that adds it with its costs per
    effective group over DS streamed's; last, the floor: k rollouts in every effective group."""
    costs, got = _saving_costs()
    ref = costs["ds stream"]
    lines = ["```bash", f".venv/bin/sara-sim {SAVING}   # ~10 s", "```", ""]
    lines.append("| strategy | adds | " + " | ".join(f"{h} / DS streamed" for _, h in COSTS) + " |")
    lines.append("|---|---|" + "---|" * len(COSTS))
    for name, label, adds in SAVING_ROWS:
        cells = [f"{costs[name][key] / ref[key]:.2f}" for key, _ in COSTS]
        lines.append(f"| {label} | {adds} | " + " | ".join(cells) + " |")
    floor = got["k"] / ref["rollouts_per_effective_group"]
    lines.append(f"| the floor | k rollouts in every effective group | - | - | {floor:.2f} |")
    return lines


def saving_shares() -> list[str]:
    """The same run's saving over DS by rounds, split along the chain: each source's share of
    DS by rounds' wall time, tokens and rollouts (sara_sim.sim.baselines.decomposition)."""
    parts = _results("saving-sources")["decomposition"]
    kinds = {"wall time": "wall", "tokens": "tokens", "rollouts": "rollouts"}
    lines = ["| source | from -> to | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * 3]
    for i, p in enumerate(parts["wall"]):
        shares = [f"{100 * parts[kind][i]['share']:.1f} %" for kind in kinds.values()]
        lines.append(f"| {p['source']} | {p['from']} -> {p['to']} | " + " | ".join(shares) + " |")
    totals = [f"{100 * sum(x['share'] for x in parts[kind]):.1f} %" for kind in kinds.values()]
    return lines + ["| total | ds rounds -> sara-history | " + " | ".join(totals) + " |"]


# The real loop's saving against DS streamed: benchmarks/stream_real.py's token-goal runs
# (reasoning-long, collection only: fixed weights), one per k, committed under STREAM_REAL
STREAM_REAL = REPO / "benchmarks" / "results" / "stream_real"
REAL_TOKENS = ("reasoning_long_tokens.json", "reasoning_long_tokens_k16.json")
LONG_MODEL = ".venv/bin/sara-real make-tiny --preset reasoning-long"


def real_tokens() -> list[str]:
    """The commands and, per k and strategy, rollouts and tokens per effective group, the
    effective fraction, the epochs its prompt source covered, and its ratios to DS streamed
    paired by step with their intervals (``sara_sim.sim.paired``), with the token goal's verdict."""
    from sara_sim.sim.paired import LEVEL, TOKEN_GOAL, fmt, goal_met

    runs = {name: json.loads((STREAM_REAL / name).read_text()) for name in REAL_TOKENS}
    # inline, not a bash block: the docs' bash blocks all run in the tests, and these take minutes
    lines = [
        f"The model (built once, cached): `{LONG_MODEL}` (its JSON line's `model` is the folder,"
        " MODEL below); then, per row group below:",
        "",
    ]
    for name, d in runs.items():
        m = d["meta"]
        minutes = sum(t["wall"] for t in d["rows"].values()) / 60
        lines.append(
            f'- `.venv/bin/python benchmarks/stream_real.py --model "$MODEL" --task {m["task"]} '
            f"--task-size {m['task_size']} --k {m['k']} --groups {m['groups']} "
            f"--steps {m['steps']} --warmup {m['warmup']} --seed {m['seed']} "
            f"--strategies {m['strategies']} --out benchmarks/results/stream_real/{name}` "
            f"(~{minutes:.0f} min of collection here)"
        )
    lines += [
        "",
        f"| k | groups x steps | strategy | rollouts / eff. group | tokens / eff. group "
        f"| eff. fraction | epochs | rollouts / DS streamed | tokens / DS streamed "
        f"| tokens <= {TOKEN_GOAL:.2f}x |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in runs.values():
        m, got = d["meta"], d["against_ds_stream"]
        for label, t in d["rows"].items():
            g, eff = got[label], t["eff"]
            cells = [
                str(m["k"]),
                f"{m['groups']} x {m['steps']}",
                label,
                f"{t['rollouts'] / eff:.2f}" if eff else "-",
                f"{t['tokens'] / eff:.1f}" if eff else "-",
                "-" if g["eff_frac"] is None else f"{g['eff_frac']:.2f}",
                f"{t['prompts_drawn'] / m['task_size']:.1f}",
                fmt(g["rollouts"]),
                fmt(g["tokens"]),
                "-" if label == "ds stream" else goal_met(g),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        ds = d["rows"]["ds stream"]
        floor = f"{m['k'] / (ds['rollouts'] / ds['eff']):.2f}" if ds["eff"] else "-"
        lines.append(
            f"| {m['k']} | {m['groups']} x {m['steps']} | the floor: k rollouts in every "
            f"effective group | {m['k']:.2f} | - | - | - | {floor} | - | - |"
        )
    return lines + ["", f"(intervals: {LEVEL:.0%} paired bootstrap over the steps)"]


K_BOUND_LENGTHS = "--len-pass 2000 --len-fail 3500"


def k_bound() -> list[str]:
    """Exact theory's bound on stopping inside a group at k 8, 16 and 32 (`sara-sim optimal`):
    the Bayes-optimal plan's rollouts and the token-priced plan's tokens over DS's."""
    from sara_sim.core.difficulty import fit_beta_binomial, load_history

    frame = load_history("deepscaler")
    a, b = fit_beta_binomial(frame["correct"], frame["samples"])
    fit = f"beta:{a:.6f},{b:.6f}"
    cases = [("history:deepscaler --epoch 0-52", "DeepScaleR, recorded", 8)]
    cases += [(fit, "DeepScaleR, beta-binomial fit", k) for k in (8, 16, 32)]
    cases += [("beta:0.3,0.3", "U-shaped Beta(0.3, 0.3)", k) for k in (8, 16, 32)]
    lines = [
        "| law | k | DS: rollouts / eff. group | optimal plan: rollouts / DS "
        "| token-priced plan: tokens / DS |",
        "|---|---|---|---|---|",
    ]
    for law, label, k in cases:
        got = sara_sim_json(f"optimal --difficulty {law} --k {k} {K_BOUND_LENGTHS}")
        rolls = 1 - got["savings_vs_ds"]
        toks = 1 - got["token_priced_token_savings_vs_ds"]
        lines.append(
            f"| {label} (`{law}`) | {k} | {got['ds_cost_per_effective_group']:.2f} "
            f"| {rolls:.3f} | {toks:.3f} |"
        )
    return lines


def claims_budget() -> list[str]:
    """Rollouts to target and accuracy at an equal budget (benchmarks/claims.py --budget)."""
    from .claims_budget import budget_table
    from .claims_table import markdown_lines

    return markdown_lines(budget_table(_claims()))


def claims_reasoning_long() -> list[str]:
    """Claim 2 on the long-failure model: each strategy's rollouts and tokens against DS and
    tokens saved beyond rollouts, pooled over the committed reasoning-long files."""
    from . import claims_stats as cs
    from .claims_table import REASONING_LONG, _ci
    from .claims_table import K as CLAIM_K

    df = _claims().setting(REASONING_LONG)
    lines = [
        "| strategy | rollouts vs DS | tokens vs DS | tokens / rollouts | verdict |",
        "|-----------|----------------|--------------|-------------------|---------|",
    ]
    for a in ("sara", "sara-auto", "sara-dps"):
        r, t = (cs.cost_ratio(df, a, CLAIM_K, what)[:3] for what in ("rollouts", "tokens"))
        g = cs.log_ratio_gap(df, a, CLAIM_K)[:3]
        cells = [_ci(*r, unit="x"), _ci(*t, unit="x"), _ci(*g)]
        lines.append(f"| {a} | " + " | ".join(cells) + f" | {cs.verdict_less(*g)} |")
    return lines


def _claims():
    from .claims_data import load_claims

    data = load_claims()
    if data.missing:
        raise FileNotFoundError(f"claim files missing: {data.missing}")
    return data


BLOCKS = {  # name: its generator (the block's lines)
    "theory-deepscaler": theory_deepscaler,
    "compare-deepscaler": compare_deepscaler,
    "replay-held-out": replay_held_out,
    "wallclock-deepscaler": wallclock_deepscaler,
    "claims-table": claims_table,
    "claims-verdicts": claims_verdicts,
    "saving-sources": saving_sources,
    "saving-shares": saving_shares,
    "k-bound": k_bound,
    "real-tokens": real_tokens,
    "claims-budget": claims_budget,
    "claims-reasoning-long": claims_reasoning_long,
}
# the blocks drawn from a simulation that takes a minute or more: its output is committed
# (RESULTS/NAME.json) and the block generated from it; --recompute runs the simulation again
SIMULATED = {
    "compare-deepscaler": compare_deepscaler_results,
    "replay-held-out": replay_held_out_results,
    "wallclock-deepscaler": wallclock_deepscaler_results,
    "saving-sources": saving_sources_results,
}
RESULTS = REPO / "benchmarks" / "results" / "docs"


def _results(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def recompute(names) -> None:
    """Run the simulations of `names` (SIMULATED keys) again and write their results files."""
    from sara_sim.core.files import dumps_json

    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in names:
        print(f"recomputing {name}", file=sys.stderr)
        (RESULTS / f"{name}.json").write_text(dumps_json(SIMULATED[name]()))


def docs() -> list[Path]:
    return sorted({p for pattern in DOCS for p in REPO.glob(pattern)})


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, body) of each block of a markdown text, in order; a block of an unknown name, or
    one opened twice or never closed, is a ValueError."""
    found = []
    for m in re.finditer(r"^<!-- ([a-z0-9-]+): .*-->\n", text, re.M):
        name = m.group(1)
        if name not in BLOCKS:
            raise ValueError(f"unknown block {name!r} (known: {', '.join(BLOCKS)})")
        close = text.find(f"<!-- /{name} -->", m.end())
        if close < 0 or (close and text[close - 1] != "\n"):
            raise ValueError(f"block {name!r} is not closed by a line <!-- /{name} -->")
        found.append((name, text[m.end() : close]))
    names = [n for n, _ in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"blocks opened more than once: {', '.join(twice)}")
    return found


def render(text: str, made: dict) -> str:
    """`text` with each block's body replaced by `made[name]` (its lines)."""
    for name, _ in blocks(text):
        head = re.search(rf"^<!-- {name}: .*-->\n", text, re.M).end()
        close = text.index(f"<!-- /{name} -->", head)
        text = text[:head] + "".join(line + "\n" for line in made[name]) + text[close:]
    return text


def stale(write: bool = False) -> list[str]:
    """A unified diff for each file whose blocks are not what their generators give (rewritten
    when `write`); each generator runs once, whatever the number of files."""
    made, out = {}, []
    for path in docs():
        text = path.read_text()
        for name, _ in blocks(text):
            if name not in made:
                made[name] = BLOCKS[name]()
        new = render(text, made)
        if new == text:
            continue
        rel = str(path.relative_to(REPO))
        diff = difflib.unified_diff(
            text.splitlines(), new.splitlines(), rel, "generated", n=1, lineterm=""
        )
        out.append("\n".join(diff))
        if write:
            path.write_text(new)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a block is stale"
    )
    ap.add_argument(
        "--recompute",
        nargs="*",
        metavar="NAME",
        help=f"run these simulations again first (none named: all of {', '.join(SIMULATED)})",
    )
    args = ap.parse_args(argv)
    if args.recompute is not None:
        unknown = sorted(set(args.recompute) - set(SIMULATED))
        if unknown:
            print(f"doc_blocks: error: --recompute: unknown {', '.join(unknown)}", file=sys.stderr)
            return 2
        recompute(args.recompute or list(SIMULATED))
    diffs = stale(write=not args.check)
    for d in diffs:
        print(d)
    if args.check and diffs:
        print(
            f"{len(diffs)} file(s) with stale blocks: python -m paper_figs.doc_blocks",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
