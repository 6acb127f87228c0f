"""`python -m paper_figs` / `sara-sim figures`: every figure with its data and caption, `--only`,
determinism under a seed, and figures whose data show what their captions claim."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import paper_figs._common
from paper_figs import FIGURES, run, select
from paper_figs._common import LEARNING
from paper_figs.claims_data import CLAIMS
from sara_sim.cli.app import main as sara_sim_main
from sara_sim.core.errors import ParameterError


def run_figs(out, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "paper_figs", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc


@pytest.fixture(scope="module")
def main_job(tmp_path_factory, history_path):
    """The main job (`python -m paper_figs`, scripts/run.sh's) run once: (folder, output)."""
    out = tmp_path_factory.mktemp("figs")
    proc = run_figs(out, "--seed", "0")
    assert proc.returncode == 0, proc.stderr
    print(proc.stdout)
    return out, proc.stdout


def csv(out, name):
    return pd.read_csv(out / f"{name}.csv")


@pytest.mark.integration
def test_every_figure_png_csv_caption(main_job):
    out, stdout = main_job
    assert "total" in stdout
    for name in FIGURES:
        assert name in stdout, f"no timing line for {name}"
        if name == "fig10_real_learning" and not LEARNING.is_file():  # no committed results
            assert f"{name:<28} skipped: {LEARNING} not found" in stdout
            assert not list(out.glob(f"{name}*"))
            continue
        if name == "fig13_claims" and not list(CLAIMS.glob("*.csv")):  # the claim run's files
            assert f"{name:<28} skipped: no claim file found" in stdout
            assert not list(out.glob(f"{name}*"))
            continue
        png, data, txt = (out / f"{name}.{ext}" for ext in ("png", "csv", "txt"))
        assert png.is_file() and data.is_file() and txt.is_file(), name
        img = Image.open(png)
        assert img.width >= 800 and img.height >= 300, (name, img.size)
        caption = img.text.get("Description", "")
        assert len(caption) > 100, f"{name}: caption missing from the PNG metadata"
        assert img.text.get("Title") == name
        sidecar = " ".join(txt.read_text().split())
        assert caption in sidecar, f"{name}: sidecar and PNG captions differ"
        frame = pd.read_csv(data)
        assert len(frame) > 0 and len(frame.columns) > 2, name


@pytest.mark.integration
def test_only_selects_and_is_deterministic(main_job, tmp_path):
    out, _ = main_job
    proc = run_figs(tmp_path, "--seed", "0", "--only", "fig2,7,9")
    assert proc.returncode == 0, proc.stderr
    chosen = {"fig2_abandon_reliability", "fig7_rounds_vs_rollouts", "fig9_informed_priors"}
    assert {p.stem for p in tmp_path.iterdir()} == chosen
    for name in chosen:  # same seed -> identical data, whatever else was drawn
        assert (tmp_path / f"{name}.csv").read_bytes() == (out / f"{name}.csv").read_bytes()


def test_fig10_without_results_is_skipped_with_the_reason(tmp_path, monkeypatch, capsys):
    """The main job draws fig10 from committed results only; never from made-up data."""
    monkeypatch.setattr(paper_figs._common, "LEARNING", tmp_path / "absent.csv")
    timings = run(tmp_path / "figs", only="10,1")
    assert "fig10_real_learning" not in timings and "fig1_p_eff" in timings
    assert f"skipped: {tmp_path / 'absent.csv'} not found" in capsys.readouterr().out
    assert not list((tmp_path / "figs").glob("fig10*"))


def test_fig10_missing_learning_csv_is_one_line_exit_2(tmp_path):
    proc = run_figs(tmp_path, "--only", "10", "--learning", str(tmp_path / "nope.csv"))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "--learning" in proc.stderr and "nope.csv" in proc.stderr


@pytest.mark.integration
def test_seed_changes_only_the_simulated_rows(main_job, tmp_path):
    out, _ = main_job
    assert run_figs(tmp_path, "--seed", "1", "--only", "2").returncode == 0
    a, b = csv(out, "fig2_abandon_reliability"), csv(tmp_path, "fig2_abandon_reliability")
    ex = a["source"] == "exact"
    pd.testing.assert_frame_equal(a[ex], b[ex])
    assert not a[~ex]["false_abandons"].equals(b[~ex]["false_abandons"])


def test_select_names():
    assert select(None) == list(FIGURES)
    assert select("3,fig1_p_eff,fig3") == ["fig3_rollout_savings", "fig1_p_eff"]
    with pytest.raises(ParameterError, match="--only"):
        select("fig99")


def test_bad_only_is_one_line_exit_2(tmp_path):
    proc = run_figs(tmp_path, "--only", "nope")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--only" in proc.stderr


def test_sara_sim_figures_subcommand(tmp_path, capsys):
    assert sara_sim_main(["figures", "--out", str(tmp_path), "--only", "1"]) == 0
    assert (tmp_path / "fig1_p_eff.png").is_file() and (tmp_path / "fig1_p_eff.csv").is_file()
    assert "fig1_p_eff" in capsys.readouterr().out
    assert sara_sim_main(["figures", "--out", str(tmp_path), "--only", "99"]) == 2


# --- the data behind each figure shows what its caption claims ------------------------------
@pytest.mark.integration
def test_fig1_closed_form_and_monotone(main_job):
    df = csv(main_job[0], "fig1_p_eff")
    uni = df[df["prior"] == "Beta(1,1)"]
    np.testing.assert_allclose(uni["p_eff"], uni["closed_form_uniform"], atol=1e-12)
    for _, g in df.groupby(["prior", "k", "side"]):
        assert (np.diff(g.sort_values("n")["p_eff"]) <= 1e-12).all()


@pytest.mark.integration
def test_fig2_bound_holds_when_matched_and_fails_when_not(main_job):
    df = csv(main_job[0], "fig2_abandon_reliability")
    ex = df[(df["source"] == "exact") & df["reliability"].notna()]
    matched = ex[ex["scenario"].str.startswith("matched")]
    assert (matched["reliability"] < matched["tau_low"]).all()
    mis = ex[ex["scenario"].str.startswith("misspecified")]
    assert (mis["reliability"] > mis["tau_low"] + 0.3).any()
    sim = df[df["source"] == "simulated"]
    assert len(sim) >= 10
    for r in sim.itertuples():  # the simulator agrees with the exact value at that tau
        e = ex[(ex["scenario"] == r.scenario) & np.isclose(ex["tau_low"], r.tau_low, atol=3e-3)]
        if len(e):
            assert r.ci_low - 0.03 <= e["reliability"].iloc[0] <= r.ci_high + 0.03, r


@pytest.mark.integration
def test_fig3_optimal_dominates_and_uniform_law_gains_nothing(main_job):
    df = csv(main_job[0], "fig3_rollout_savings")
    piv = df.pivot_table(index=["law", "k"], columns="policy", values="savings_vs_ds_pct")
    fixed, best, bayes = (piv.filter(like=key).iloc[:, 0] for key in ("τ_low=", "best", "Bayes"))
    assert (bayes >= best - 1e-6).all() and (best >= fixed - 1e-6).all() and (best >= -1e-6).all()
    uniform = piv.loc[[i for i in piv.index if i[0].startswith("uniform")]]
    assert np.allclose(uniform.filter(like="best"), 0) and np.allclose(
        uniform.filter(like="Bayes"), 0
    )
    polar = df[df["law"].str.startswith("polarised") & df["policy"].str.startswith("Bayes")]
    assert polar.set_index("k").loc[32, "savings_vs_ds_pct"] > 15


@pytest.mark.integration
def test_fig4_sara_yields_at_least_uniform(main_job):
    df = csv(main_job[0], "fig4_fixed_budget_yield")
    for _, g in df.groupby(["panel", "budget"]):
        e = g.set_index("strategy")["exact_effective_groups"]
        assert e["sara"] >= e["uniform"] - 1e-9 and e["sara-auto"] >= e["uniform"] - 1e-9
    top = df[df["budget"] == df["budget"].max()].set_index(["panel", "strategy"])
    for panel in df["panel"].unique():
        m = top.loc[panel, "effective_groups_mean"]
        assert m["sara"] > m["uniform"] and m["sara-auto"] > m["uniform"]


@pytest.mark.integration
def test_fig5_proxy_above_bound(main_job):
    df = csv(main_job[0], "fig5_gradient_link")
    ex = df[df["source"] == "exact"]
    assert (ex["proxy_per_1k_rollouts"] >= ex["bound_per_1k_rollouts"] - 1e-9).all()
    sim = df[df["source"] == "simulated"]
    assert len(sim) > 0
    assert (sim["proxy_per_1k_rollouts"] + sim["proxy_ci95"] >= sim["bound_per_1k_rollouts"]).all()


@pytest.mark.integration
def test_fig6_bayes_optimal_is_the_floor(main_job):
    df = csv(main_job[0], "fig6_optimal_vs_tau")
    for k, g in df.groupby("k"):
        ref = g.set_index("series")["cost_per_effective_group"]
        rules = g[g["tau_low_from"].notna()]
        bayes = ref["Bayes-optimal (sara-auto)"]
        assert bayes <= rules["cost_per_effective_group"].min() + 1e-9, k
        assert bayes < ref["dynamic sampling (DS)"], k
        assert rules.groupby("series")["is_best"].sum().eq(1).all(), k


@pytest.mark.integration
def test_fig7_full_probe_is_ds_and_overshoot_costs(main_job):
    df = csv(main_job[0], "fig7_rounds_vs_rollouts")
    auto = df[df["increment"] == 0].set_index("probe")
    costs = auto["exact_cost_per_effective_group"]
    assert costs.loc[16] == pytest.approx(costs.max())  # probing all k at once = DS
    assert costs.loc[1] == pytest.approx(costs.min())  # sequential decisions cost the least
    assert (auto["exact_rounds_per_prompt"].loc[16] <= auto["exact_rounds_per_prompt"]).all()


@pytest.mark.integration
def test_fig8_every_strategy_with_intervals(main_job):
    from sara_sim.sim.strategies import STRATEGIES

    df = csv(main_job[0], "fig8_replay_strategies")
    assert set(STRATEGIES) <= set(df["strategy"])
    for col in ("cost_per_effective_group", "tokens_per_effective_group"):
        assert np.isfinite(df[col]).all() and (df[col] > 0).all()
        assert (df[col + "_ci95"].fillna(0) >= 0).all()
    sara = df[df["family"] == "sara"]
    ds = df.set_index("label").loc["ds"]
    assert (sara["cost_per_effective_group"] < ds["cost_per_effective_group"]).all()


@pytest.mark.integration
def test_fig9_informed_priors_save_and_guards_limit_starvation(main_job):
    from sara_sim.sim.replay import INFORMED_DEFAULTS

    df = csv(main_job[0], "fig9_informed_priors")
    s = df[df["panel"] == "summary"].set_index("label")
    assert {"ds", "sara-history", "sara-mopps", "sara-dps", "sara-history, no guards"} <= set(
        s.index
    )
    assert np.isfinite(s["cost_per_effective_group"]).all()
    assert (s["cost_per_effective_group_ci95"] >= 0).all()
    ds = s.loc["ds", "cost_per_effective_group"]
    for name in ("sara-history", "sara-mopps", "sara-dps"):  # the informed strategies save >= 30 %
        assert s.loc[name, "cost_per_effective_group"] < 0.7 * ds, name
        assert s.loc[name, "savings_vs_ds_pct"] == pytest.approx(
            100 * (1 - s.loc[name, "cost_per_effective_group"] / ds)
        )
    # ds and sara never skip a visit: nothing learnable goes unsampled, nothing starves
    for name in ("ds", "sara (τ_low = 0.5)"):
        assert s.loc[name, "starved_learnable_visit_share"] == 0
        assert s.loc[name, "longest_starvation_epochs"] == 0
    assert s.loc["ds", "expected_false_abandons"] == 0
    # the guards bound starvation: a probe after max_skip skips in a row
    on, off = s.loc["sara-history"], s.loc["sara-history, no guards"]
    assert on["longest_starvation_epochs"] <= INFORMED_DEFAULTS["max_skip"]
    assert on["longest_starvation_epochs"] < off["longest_starvation_epochs"]
    assert on["starved_learnable_visit_share"] < off["starved_learnable_visit_share"]
    assert on["starving_prompt_share"] <= off["starving_prompt_share"]
    # panel B: one distribution per compared strategy over the mixed rates 1/8 .. 7/8
    rates = df[df["panel"] == "committed rates"]
    assert set(rates["label"]) == {"ds", "sara-history", "sara-dps"}
    for label, g in rates.groupby("label"):
        assert g["share"].sum() == pytest.approx(1.0)
        assert ((g["success_rate"] > 0) & (g["success_rate"] < 1)).all()  # committed = mixed
        assert g["groups"].sum() == s.loc[label, "committed_groups"]
        mean = (g["success_rate"] * g["share"]).sum()
        assert mean == pytest.approx(s.loc[label, "committed_rate_mean"])


@pytest.mark.integration
def test_fig11_wallclock_ratios_and_occupancy(main_job):
    df = csv(main_job[0], "fig11_wallclock")
    assert set(df["k"]) == {4, 6, 8} and (df["steps"] == 12).all()
    assert (df.loc[df["strategy"] == "ds", "wall_ratio_vs_ds"] == 1.0).all()
    assert df["utilisation"].between(0, 1, inclusive="right").all()
    by = df.set_index(["schedule", "strategy", "k"])
    # a round barrier: SARA takes more rounds per step than uniform's single round
    rounds = by.loc["rounds", "rounds_per_step"]
    assert (rounds.loc["uniform"] == 1).all() and (rounds.loc["sara"] > 1).all()
    # streamed: no rounds, and no barrier idles the engine as rounds do
    stream = by.loc["stream"]
    assert set(stream.index.get_level_values(0)) == {"ds", "sara", "sara-auto", "sara-history"}
    assert stream["rounds_per_step"].isna().all()
    util = by["time_utilisation"]
    assert (util.loc["stream"] > util.loc["rounds"].loc[stream.index]).all()


@pytest.mark.integration
def test_fig12_selectors_degrade_under_fast_drift_sara_does_not(main_job):
    from paper_figs.fig12_selection_drift import GROUPS, LAWS, SEEDS, STEPS, STRATEGIES, K

    df = csv(main_job[0], "fig12_selection_drift")
    assert set(df["strategy"]) == set(STRATEGIES) and set(df["law"]) == set(LAWS)
    assert len(df) == len(LAWS) * len(STRATEGIES) * SEEDS * STEPS
    assert (df["groups"] == GROUPS).all()  # every step fills its batch (the pool comes round)
    whole = df[df["strategy"].isin(["uniform", "mopps", "dps"])]
    assert (whole["rollouts"] == K * GROUPS).all()  # whole groups, one round, no stopping
    sara = df[df["strategy"].isin(["sara", "sara-dps"])]
    assert (sara["effective_fraction"] == 1.0).all()  # only mixed groups are committed
    table = pd.read_csv(main_job[0] / "fig12_selection_drift_early_late.csv")
    fast = table[table["law"] == LAWS[1]].set_index("strategy")
    assert (fast.loc[["mopps", "dps"], "change"] < -0.1).all()  # stale posteriors: degrade
    slow = table[table["law"] == LAWS[0]].set_index("strategy")
    assert (slow.loc[["mopps", "dps"], "change"] > -0.05).all()  # at the README's pace: not


def test_fig12_collectors_agree_with_the_simulator_kernels():
    """The peers' selectors as collectors (fig12's path) and as the simulator's Numba kernels
    (their own random streams, so no draw-for-draw identity) on the fast drifting law: the same
    effective fraction early and late, within ~4 standard errors."""
    from paper_figs import fig12_selection_drift as f12
    from sara_sim.sim.laws import parse_sim_law
    from sara_sim.sim.simulate import simulate

    spec = f12.LAWS[1]
    for name in ("uniform", "mopps", "dps"):
        rows = [r for s in range(8) for r in f12.run(name, spec, 100 + s)]
        ours = pd.DataFrame(rows).groupby("step")[["effective_groups", "groups"]].sum()
        law, size = parse_sim_law(spec), {"k": f12.K, "groups": f12.GROUPS, "steps": f12.STEPS}
        frame = simulate(name, law, replicates=32, seed=1, **size).frame
        sim = frame.groupby("step")[["effective", "groups"]].sum()
        for part in (slice(0, 10), slice(f12.STEPS - 10, f12.STEPS)):
            a = ours["effective_groups"].iloc[part].sum() / ours["groups"].iloc[part].sum()
            b = sim["effective"].iloc[part].sum() / sim["groups"].iloc[part].sum()
            assert abs(a - b) < 0.08, (name, part, a, b)
