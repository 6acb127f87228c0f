"""The learning pipeline through TRL, end to end at a tiny size:
benchmarks/investigations/trl_learning/trl_learning.py (TRL's GRPOTrainer on the test model, ds and
sara, two seeds, two steps) writes the learning CSV, and paper_figs figure 10 draws it with its
tables. Checks the schema and the files, not the scientific result (that is the committed CSV's
business)."""

import json
import os
import shlex
from pathlib import Path

import pytest
from PIL import Image

pytestmark = pytest.mark.integration

trl = pytest.importorskip("trl", reason="the trl extra is not installed")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ROOT = Path(__file__).resolve().parents[2]


def test_trl_learning_csv_draws_figure_10(
    tiny_dir, engine, hf_model, tmp_path, monkeypatch, capsys, script
):
    import pandas as pd

    import paper_figs
    import real.rollout.collect
    from paper_figs import learning_stats as ls

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    out = tmp_path / "bench"
    argv = ["--k", "4", "--steps", "2", "--groups", "4", "--eval-every", "1",
            "--eval-problems", "16", "--task-size", "32", "--model", str(tiny_dir),
            "--no-progress", "--out", str(out)]  # fmt: skip
    try:
        bench = script("benchmarks/investigations/trl_learning/trl_learning.py")
        assert bench.main(argv) == 0, capsys.readouterr().err
    finally:
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    printed = capsys.readouterr().out
    t = ls.check(pd.read_csv(out / "learning.csv"))
    assert set(t.strategy) == {"ds", "sara"} and set(t.seed) == {0, 1} and set(t.k) == {4}
    for _, g in t.groupby(["strategy", "seed"]):
        assert list(g.step) == [0, 1, 2] and g.eval_accuracy.notna().all()  # eval every step
        assert g.cum_rollouts.is_monotonic_increasing and g.cum_rollouts.iloc[-1] > 0
    assert t[t.step > 0].effective_fraction.between(0, 1).all()  # ds may hit its batch cap
    meta = json.loads((out / "learning.meta.json").read_text())
    label = meta["args"]["model"]
    assert label.startswith("tiny test settings, cache key ")  # never a path of this machine
    shown = [{str(out): "OUT", str(tiny_dir): label}.get(w, w) for w in argv]
    script = "benchmarks/investigations/trl_learning/trl_learning.py"
    assert meta["command"] == shlex.join(["python", script, *shown])
    assert str(tmp_path) not in json.dumps(meta)
    assert meta["config"]["trainer"] == "trl" and meta["config"]["audit_abandoned"] == 0
    assert "ratio to DS" in (out / "learning_tables.md").read_text() and "ratio" in printed

    figs = tmp_path / "figs"
    timings = paper_figs.run(figs, only="10", learning=out / "learning.csv")
    name = "fig10_real_learning"
    assert name in timings
    img = Image.open(figs / f"{name}.png")
    assert img.text["Title"] == name
    assert "learning.csv (4 runs)" in img.text["Description"]
    band = pd.read_csv(figs / f"{name}.csv")
    assert set(band.measure) == {"rollouts", "tokens"} and set(band.strategy) == {"ds", "sara"}
    assert (band.seeds == 2).all() and (band.ci_low <= band["mean"] + 1e-12).all()
    target = pd.read_csv(figs / f"{name}_target.csv")
    assert list(target.strategy) == ["ds", "ds", "sara", "sara"]
    assert {"ratio", "ci_low", "ci_high", "reached", "not_reached", "note"} <= set(target.columns)
    budget = pd.read_csv(figs / f"{name}_budget.csv")
    assert list(budget.strategy) == ["ds", "sara"] and (budget.seeds == 2).all()
    assert (figs / f"{name}_target.md").read_text().startswith("|")
