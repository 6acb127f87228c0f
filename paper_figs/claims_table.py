"""The README's claim table: one line per claim of the paper (and setting), with the paper's
number, ours with its 90 % interval, the verdict, the seeds and the files it rests on.

    python benchmarks/claims.py [--claims benchmarks/results/claims] [--margin 0.02]

Input: the committed claim files (`claims_data.load_claims`). The numbers and verdict words are
`claims_stats`' (paired t-intervals over seeds; TOST at the margin on the late accuracy;
"confirmed", "refuted", "no effect larger than X", "undecided"). A claim whose files are absent
is a line that says which file is missing, not a gap. The paper's numbers: SARA matches DS with
22 % fewer rollouts (0.78x), SARA+DPS with 67 % fewer (0.33x); sizes are judged within +-0.05 of
the ratio (`claims_stats.verdict_size`)."""

import pandas as pd

from . import claims_stats as cs
from .claims_data import ClaimData, setting_label

K = 8  # the claim run's group size
REF = "ds"
GRPO = setting_label("grpo", "arithmetic")
REASONING = setting_label("grpo", "reasoning")
REASONING_LONG = setting_label("grpo", "reasoning-long")  # failures long within a prompt
ESTIMATORS = tuple(setting_label(e, "arithmetic") for e in ("rloo", "reinforce++", "dr-grpo"))
# the files each setting is expected from (the claim run: benchmarks/investigations/claim_run)
EXPECTED = {GRPO: ("k8", "k8_more", "k8_sara_mopps", "k16", "k16_more")}
EXPECTED |= {REASONING: ("reasoning",), REASONING_LONG: ("reasoning_long", "reasoning_long_more")}
EXPECTED |= {setting_label("rloo", "arithmetic"): ("rloo",)}
EXPECTED |= {setting_label("reinforce++", "arithmetic"): ("reinforcepp",)}
COLUMNS = ("claim", "paper", "ours (90 % interval)", "verdict", "seeds", "files")


def _signed(x) -> str:
    return "-" if x is None or x != x else f"{x:+.3f}"


def _ci(m, lo, hi, signed=False, unit="") -> str:
    f = _signed if signed else cs.fmt
    return f"{f(m)}{unit} [{f(lo)}, {f(hi)}]"


def _has(df, strategy, k=K) -> bool:
    return bool(len(df)) and ((df["strategy"] == strategy) & (df["k"] == k)).any()


def _absent(data: ClaimData, setting: str, strategies) -> str:
    files = EXPECTED.get(setting, ())
    why = [data.missing[n] for n in files if n in data.missing]
    if why:
        return "not measured: " + "; ".join(why)
    return f"not measured: no {' / '.join(strategies)} rows in the {setting} files"


def _row(claim, paper, ours, verdict, seeds, files) -> dict:
    seeds = "/".join(str(n) for n in dict.fromkeys(seeds)) if seeds else "-"
    return dict(zip(COLUMNS, (claim, paper, ours, verdict, seeds, files)))


def _vs_ref(df, a, margin, size=None, k=K):
    """ours, verdict and seeds of `a` vs DS at group size k: late accuracy (TOST), rollouts (and
    tokens, wall)."""
    diff = cs.late_diff(df, a, k, REF).tolist()
    m, lo, hi, n = cs.paired_ci(diff)
    p = cs.tost(diff, margin)["p"]
    r = cs.cost_ratio(df, a, k, "rollouts", REF)
    costs = "; ".join(
        f"{what} {_ci(*cs.cost_ratio(df, a, k, what, REF)[:3], unit='x')}"
        for what in ("rollouts", "tokens", "wall")
    )
    ours = (
        f"late accuracy {_ci(m, lo, hi, signed=True)} (TOST +-{margin:g}: p {cs.fmt(p)}); {costs}"
    )
    verdict = (
        f"same accuracy: {cs.verdict_equal(m, lo, hi, margin)}; "
        f"fewer rollouts: {cs.verdict_less(*r[:3])}"
    )
    if size is not None:
        verdict += f"; {round(100 * (1 - size))} % fewer: {cs.verdict_size(*r[:3], size)}"
    return ours, verdict, [n, r[3]]


def claim_accuracy(data, number, claim, paper, setting, strategies, margin, size=None, k=K):
    """Claims 1, 3 and 5: each strategy vs DS in one setting, at group size k."""
    df = data.setting(setting)
    there = [a for a in strategies if _has(df, a, k) and _has(df, REF, k)]
    if not there:
        return _row(f"{number}. {claim}", paper, "-", _absent(data, setting, strategies), [], "-")
    parts = [(a, *_vs_ref(df, a, margin, size, k)) for a in there]
    one = len(parts) == 1
    ours = "<br>".join(o if one else f"{a}: {o}" for a, o, _, _ in parts)
    verdict = "<br>".join(v if one else f"{a}: {v}" for a, _, v, _ in parts)
    seeds = [n for *_, ns in parts for n in ns]
    return _row(f"{number}. {claim}", paper, ours, verdict, seeds, data.files(setting))


def claim_tokens(data, setting, margin) -> dict:
    """Claim 2: tokens saved beyond rollouts (token ratio / rollout ratio, paired by seed)."""
    df, names = data.setting(setting), ("sara", "sara-auto", "sara-dps")
    there = [a for a in names if _has(df, a) and _has(df, REF)]
    claim, paper = f"2. token savings > rollout savings ({setting})", "tokens saved beyond rollouts"
    if not there:
        return _row(claim, paper, "-", _absent(data, setting, names), [], "-")
    ours, verdict, seeds = [], [], []
    for a in there:
        t, r = cs.cost_ratio(df, a, K, "tokens"), cs.cost_ratio(df, a, K, "rollouts")
        g, lo, hi, n = cs.log_ratio_gap(df, a, K, REF)
        ours.append(f"{a}: tokens {cs.fmt(t[0])}x / rollouts {cs.fmt(r[0])}x = {_ci(g, lo, hi)}")
        verdict.append(f"{a}: {cs.verdict_less(g, lo, hi)}")
        seeds.append(n)
    return _row(claim, paper, "; ".join(ours), "; ".join(verdict), seeds, data.files(setting))


def claim_fraction(data) -> dict:
    """Claim 4: the selectors' effective fraction falls over training; SARA's stays ~1."""
    df = data.setting(GRPO)
    claim = "4. predict-then-select degrades; SARA keeps ~100 % effective"
    paper = "selectors degrade as the policy shifts; SARA ~100 %"
    ours, verdict, seeds = [], [], []
    base = cs.fraction_change(df, "uniform", K) if _has(df, "uniform") else None
    for a in ("uniform", "mopps", "dps"):
        if _has(df, a):
            change = cs.fraction_change(df, a, K)
            m, lo, hi, n = cs.paired_ci(change.tolist())
            ours.append(f"{a}: late - early {_ci(m, lo, hi, signed=True)}")
            verdict.append(f"{a} falls: {cs.verdict_drop(m, lo, hi)}")
            seeds.append(n)
            if a != "uniform" and base is not None:  # the pool gets easier for everyone:
                edge = (change - base).dropna()  # does the selector's edge over uniform shrink?
                m, lo, hi, n = cs.paired_ci(edge.tolist())
                ours.append(f"{a} - uniform: {_ci(m, lo, hi, signed=True)}")
                verdict.append(f"{a}'s edge over uniform shrinks: {cs.verdict_drop(m, lo, hi)}")
    for a in ("sara", "sara-dps"):
        if _has(df, a):
            r = df[(df["strategy"] == a) & (df["k"] == K) & (df["step"] > 0)]
            frac = r["effective_fraction"].dropna()
            ours.append(f"{a}: mean {cs.fmt(frac.mean())} (lowest step {cs.fmt(frac.min())})")
            near = "confirmed" if len(frac) and frac.min() >= 0.95 else "refuted"
            verdict.append(f"{a} >= 95 % every step: {near}")
            seeds.append(r["seed"].nunique())
    if not ours:
        return _row(claim, paper, "-", _absent(data, GRPO, ("mopps", "dps")), [], "-")
    return _row(claim, paper, "; ".join(ours), "; ".join(verdict), seeds, data.files(GRPO))


def claim_baseline(data, margin) -> dict:
    """Claim 6: uniform learns at the run's learning rate (a fair baseline)."""
    df, claim = data.setting(GRPO), "6. a fair baseline: uniform learns at the run's lr"
    if not _has(df, "uniform"):
        return _row(claim, "-", "-", _absent(data, GRPO, ("uniform",)), [], "-")
    m, lo, hi, n = cs.paired_ci(cs.gain(df, "uniform", K).tolist())
    ours = f"uniform gain start -> end {_ci(m, lo, hi, signed=True)}"
    verdict = f"uniform learns: {cs.verdict_drop(-m, -hi, -lo)}"  # a gain is a fall of -gain
    seeds = [n]
    if _has(df, REF):
        d = cs.paired_ci(cs.late_diff(df, "uniform", K, REF).tolist())
        ours += f"; late accuracy vs DS {_ci(*d[:3], signed=True)}"
        seeds.append(d[3])
    return _row(claim, "-", ours, verdict, seeds, data.files(GRPO))


def claim_table(data: ClaimData, margin: float = cs.MARGIN) -> pd.DataFrame:
    """One row per claim (and setting) of the paper that the claim files speak to."""
    rows = [
        claim_accuracy(data, 1, "same accuracy as DS, ~22 % fewer rollouts (k 8)",
                       "same accuracy; 0.78x rollouts", GRPO, ("sara",), margin, size=0.78),
        claim_accuracy(data, 1, "the same at k 16", "same accuracy; fewer rollouts", GRPO,
                       ("sara", "sara-dps"), margin, k=16),
        claim_tokens(data, GRPO, margin),
        claim_tokens(data, REASONING, margin),
        claim_tokens(data, REASONING_LONG, margin),
        claim_accuracy(data, 3, "SARA+DPS: best accuracy, ~67 % fewer rollouts",
                       "best accuracy; 0.33x rollouts", GRPO, ("sara-dps", "sara-mopps"), margin,
                       size=0.33),
        claim_fraction(data),
    ]  # fmt: skip
    for setting in ESTIMATORS:
        if setting in EXPECTED or setting in data.sources:  # Dr. GRPO: only if it was run
            rows.append(
                claim_accuracy(
                    data,
                    5,
                    f"SARA helps other RL algorithms ({setting})",
                    "helps RLOO, REINFORCE++ (and PPO, GRPO)",
                    setting,
                    ("sara",),
                    margin,
                )
            )
    rows.append(claim_baseline(data, margin))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def markdown_lines(table: pd.DataFrame) -> list[str]:
    """The table as markdown, one line per claim ('|' inside a cell escaped)."""
    cells = [[str(v).replace("|", "\\|") for v in row] for row in table.itertuples(index=False)]
    head = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    return head + ["| " + " | ".join(c) + " |" for c in cells]
