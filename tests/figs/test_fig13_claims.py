"""Figure 13 (the training claims) from toy claim files: every panel's numbers are the claims
statistics of the files found, a missing file is named, undefined values stay empty, and with no
claim file at all the figure is skipped with the reason (never drawn from made-up data)."""

import math

import pandas as pd
import pytest
from PIL import Image

from paper_figs import claims_stats as cs
from paper_figs import fig13_claims, run
from paper_figs.claims_data import load_claims


@pytest.fixture
def drawn(claim_files, tmp_path):
    out = tmp_path / "figs"
    timings = run(out, only="13", claims=claim_files, verbose=False)
    assert "fig13_claims" in timings
    return out


def test_every_panel_from_the_claim_statistics(drawn, claim_files):
    df = load_claims(claim_files).setting("GRPO")
    data = pd.read_csv(drawn / "fig13_claims.csv")
    assert set(data["panel"]) == {"accuracy", "diff_vs_ds", "effective_fraction"}
    diff = data[(data["panel"] == "diff_vs_ds") & (data["strategy"] == "sara")]
    want = cs.step_diff(df, "sara", 8)
    assert diff["value"].tolist() == pytest.approx(want["diff"].tolist())
    assert diff["ci_low"].tolist() == pytest.approx(want["ci_low"].tolist())
    assert (diff["seeds"] == 12).all()
    frac = data[data["panel"] == "effective_fraction"]
    assert set(frac["strategy"]) == {"uniform", "mopps", "dps", "sara", "sara-dps"}
    mopps = frac[frac["strategy"] == "mopps"].set_index("step")["value"]
    assert mopps[1] == pytest.approx(0.9) and mopps[6] == pytest.approx(0.4)
    ratios = pd.read_csv(drawn / "fig13_claims_ratios.csv").set_index(["setting", "strategy"])
    assert ratios.loc[("GRPO", "sara"), "rollouts"] == pytest.approx(0.78)
    assert (
        ratios.loc[("GRPO, reasoning", "sara"), "tokens"]
        < ratios.loc[("GRPO, reasoning", "sara"), "rollouts"]
    )
    assert ratios.loc[("RLOO", "sara"), "files"] == "rloo.csv"
    caption = Image.open(drawn / "fig13_claims.png").text["Description"]
    assert "reinforcepp: reinforcepp.csv not found" in caption and "missing: " in caption


def test_one_seed_leaves_the_interval_empty(claim_files, tmp_path):
    """A setting with one seed has ratios but no interval: empty cells, not stand-ins."""
    rloo = pd.read_csv(claim_files / "rloo.csv")
    rloo[rloo["seed"] == 0].to_csv(claim_files / "rloo.csv", index=False)
    table = fig13_claims.ratios(load_claims(claim_files)).set_index(["setting", "strategy"])
    row = table.loc[("RLOO", "sara")]
    assert row["rollouts"] == pytest.approx(0.78) and row["seeds"] == 1
    assert math.isnan(row["rollouts_low"]) and math.isnan(row["tokens_high"])
    out = tmp_path / "one"
    run(out, only="13", claims=claim_files, verbose=False)
    saved = pd.read_csv(out / "fig13_claims_ratios.csv").set_index(["setting", "strategy"])
    assert pd.isna(saved.loc[("RLOO", "sara"), "rollouts_low"])


def test_only_some_files_draws_what_exists(claim_files, tmp_path):
    for name in ("k8", "k8_more"):
        (claim_files / f"{name}.csv").unlink()
    out = tmp_path / "part"
    run(out, only="13", claims=claim_files, verbose=False)
    assert pd.read_csv(out / "fig13_claims.csv").empty  # no GRPO file: no curve
    ratios = pd.read_csv(out / "fig13_claims_ratios.csv")
    assert set(ratios["setting"]) == {"RLOO", "GRPO, reasoning"}
    text = (out / "fig13_claims.txt").read_text()
    assert "k8: k8.csv not found" in " ".join(text.split())


def test_no_claim_file_skips_the_figure_with_the_reason(tmp_path, capsys):
    timings = run(tmp_path / "figs", only="13", claims=tmp_path)
    assert "fig13_claims" not in timings
    assert "fig13_claims                 skipped: no claim file found" in capsys.readouterr().out
    assert not list((tmp_path / "figs").glob("fig13*"))


def test_a_claims_folder_that_is_not_there_is_refused_before_any_figure(tmp_path):
    from sara_sim.core.errors import ParameterError

    with pytest.raises(ParameterError, match="--claims: no such claims folder"):
        run(tmp_path / "figs", only="1,13", claims=tmp_path / "nope", verbose=False)
    assert not (tmp_path / "figs").exists()
