"""The claim files' loader (paper_figs.claims_data) and the README claim table
(paper_figs.claims_table, benchmarks/claims.py) on toy claim files whose effects are known:
pooling, missing files, and each claim's verdict."""

import doctest
import subprocess
import sys
from pathlib import Path

import pytest
from claim_toys import ARITH, toy_meta, toy_rows, write

from paper_figs import claims_data, claims_table
from paper_figs.claims_data import load_claims
from paper_figs.claims_table import claim_table, markdown_lines
from sara_sim.core.errors import ParameterError

ROOT = Path(__file__).resolve().parents[2]


# the claim files the toy folder lacks, in the order the loader names them
ABSENT = (
    "k8_sara_mopps",
    "k16",
    "k16_more",
    "reinforcepp",
    "reasoning_long",
    "reasoning_long_more",
)


def test_doctests():
    assert doctest.testmod(claims_data).failed == 0


def test_load_pools_by_setting_and_names_what_is_missing(claim_files):
    data = load_claims(claim_files)
    assert data.missing == {n: f"{n}.csv not found" for n in ABSENT}
    assert data.sources == {
        "GRPO": ["k8", "k8_more"],
        "RLOO": ["rloo"],
        "GRPO, reasoning": ["reasoning"],
    }
    grpo = data.setting("GRPO")
    assert sorted(grpo[grpo.strategy == "sara"].seed.unique()) == list(range(12))
    assert sorted(grpo[grpo.strategy == "mopps"].seed.unique()) == list(range(6))
    assert set(data.setting("RLOO").estimator) == {"rloo"}
    assert set(data.setting("GRPO, reasoning").task) == {"reasoning"}
    assert data.files("GRPO") == "k8.csv, k8_more.csv" and data.files("REINFORCE++") == "-"


def test_a_csv_without_its_meta_is_missing_not_guessed(claim_files):
    (claim_files / "rloo.meta.json").unlink()
    data = load_claims(claim_files)
    assert "rloo.meta.json not found" in data.missing["rloo"]
    assert "RLOO" not in data.sources


def test_an_empty_folder_loads_nothing_and_says_so(tmp_path):
    data = load_claims(tmp_path)
    assert data.frame.empty and set(data.missing) == set(claims_data.NAMES)
    table = claim_table(data)
    assert (table["ours (90 % interval)"] == "-").all()
    assert table["verdict"].str.startswith("not measured: ").all()


def test_pooling_refuses_other_settings_or_a_run_twice(claim_files):
    write(claim_files, "k8_more", toy_rows({"ds": ARITH["ds"]}, [6]), toy_meta(lr=1e-3))
    with pytest.raises(ParameterError, match="k8_more.csv and k8.csv cannot be pooled: lr"):
        load_claims(claim_files)
    write(claim_files, "k8_more", toy_rows({"ds": ARITH["ds"]}, [5, 6]), toy_meta())
    with pytest.raises(ParameterError, match="both hold ds k=8 seed=5"):
        load_claims(claim_files)


def test_every_claims_verdict_on_the_toy_effects(claim_files):
    table = claim_table(load_claims(claim_files)).set_index("claim")
    v, seeds = table["verdict"], table["seeds"]
    one = "1. same accuracy as DS, ~22 % fewer rollouts (k 8)"
    assert v[one] == ("same accuracy: confirmed; fewer rollouts: confirmed; 22 % fewer: confirmed")
    assert seeds[one] == "12" and table.loc[one, "files"] == "k8.csv, k8_more.csv"
    assert "rollouts 0.780x [0.780, 0.780]" in table.loc[one, "ours (90 % interval)"]
    three = "3. SARA+DPS: best accuracy, ~67 % fewer rollouts"
    assert v[three] == "same accuracy: confirmed; fewer rollouts: confirmed; 67 % fewer: refuted"
    tok = v["2. token savings > rollout savings (GRPO)"]
    assert tok == "sara: refuted; sara-dps: refuted"  # tokens track rollouts exactly
    assert v["2. token savings > rollout savings (GRPO, reasoning)"] == "sara: confirmed"
    four = v["4. predict-then-select degrades; SARA keeps ~100 % effective"]
    assert "mopps falls: confirmed; mopps's edge over uniform shrinks: confirmed" in four
    assert "dps falls: confirmed; dps's edge over uniform shrinks: confirmed" in four
    assert "uniform falls: refuted" in four and "sara >= 95 % every step: confirmed" in four
    rloo = v["5. SARA helps other RL algorithms (RLOO)"]
    assert rloo.startswith("same accuracy: refuted")  # 4 points behind, tight interval
    assert v["5. SARA helps other RL algorithms (REINFORCE++)"] == (
        "not measured: reinforcepp.csv not found"
    )
    assert v["6. a fair baseline: uniform learns at the run's lr"] == "uniform learns: confirmed"


def test_markdown_has_one_line_per_claim(claim_files):
    table = claim_table(load_claims(claim_files))
    lines = markdown_lines(table)
    assert len(lines) == 2 + len(table) and all(x.startswith("| ") for x in lines[2:])
    assert all(x.count(" | ") == len(claims_table.COLUMNS) - 1 for x in lines[2:])


def test_the_command_prints_the_table_and_names_missing_files(claim_files):
    cmd = [sys.executable, str(ROOT / "benchmarks/claims.py"), "--claims", str(claim_files)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [f"claims_table: {n}: {n}.csv not found" for n in ABSENT]
    assert proc.stdout.splitlines()[0].startswith("| claim | paper |")
    bad = subprocess.run([*cmd, "--margin", "0"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--margin" in bad.stderr


def test_a_setting_added_after_a_file_was_written_does_not_block_pooling(claim_files):
    """k16's meta names `carry` (added to the config after k8 ran); k8's does not: they pool. A
    setting both name must still agree."""
    meta = toy_meta()
    meta["config"]["knobs"]["carry"] = True
    write(claim_files, "k16", toy_rows({"ds": ARITH["ds"], "sara": ARITH["sara"]}, [0], k=16), meta)
    data = load_claims(claim_files)
    assert data.sources["GRPO"] == ["k8", "k8_more", "k16"]
    meta["config"]["knobs"]["tau_low"] = 0.3
    write(claim_files, "k16", toy_rows({"ds": ARITH["ds"]}, [0], k=16), meta)
    with pytest.raises(ParameterError, match="k16.csv and k8.csv cannot be pooled: tau_low"):
        load_claims(claim_files)


def test_the_long_failure_reasoning_file_is_claim_2s_own_line(claim_files):
    """reasoning_long (task reasoning-long) is a setting of its own, beside reasoning: its claim-2
    line gives sara, sara-auto and sara-dps's token ratio over their rollout ratio."""
    spec = {a: ARITH[a] for a in ("ds", "sara", "sara-dps")} | {"sara-auto": ARITH["sara"]}

    def tokens(a, seed):  # sara-dps: 0.9x DS's tokens per rollout; sara, sara-auto: the same
        return 10.0 * (0.9 if a == "sara-dps" else 1.0) * (1 + 0.01 * (seed % 2))

    for name, seeds in (("reasoning_long", range(4)), ("reasoning_long_more", range(4, 8))):
        write(
            claim_files, name, toy_rows(spec, seeds, tokens=tokens), toy_meta(task="reasoning-long")
        )
    data = load_claims(claim_files)
    assert data.sources["GRPO, reasoning-long"] == ["reasoning_long", "reasoning_long_more"]
    assert data.sources["GRPO, reasoning"] == ["reasoning"]  # not pooled with the old model
    table = claim_table(data).set_index("claim")
    line = "2. token savings > rollout savings (GRPO, reasoning-long)"
    assert table.loc[line, "verdict"] == "sara: refuted; sara-auto: refuted; sara-dps: confirmed"
    ours = table.loc[line, "ours (90 % interval)"]
    assert "sara-dps: tokens " in ours and "sara-auto: tokens " in ours
    assert table.loc[line, "seeds"] == "8"
    assert table.loc[line, "files"] == "reasoning_long.csv, reasoning_long_more.csv"
    reasoning = table.loc["2. token savings > rollout savings (GRPO, reasoning)", "verdict"]
    assert reasoning == "sara: confirmed"
