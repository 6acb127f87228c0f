"""Plans priced in tokens wherever the real loop runs: every driver — the native loop's rounds and
stream, the TRL adapter's rounds and stream — tells the collector each rollout's length, so
sara-auto's plan is priced at the run's own mean lengths from its second step on (its metrics line
says at which: `priced_lengths`); a driver that tells none is refused, never priced in rollouts in
silence."""

import pytest

from real.io.runlog import read_metrics

RUNS = [("native", "rounds"), ("native", "stream"), ("trl", "rounds"), ("trl", "stream")]


@pytest.mark.integration
@pytest.mark.parametrize("trainer, schedule", RUNS)
def test_every_driver_tells_the_lengths_a_plan_is_priced_at(
    trainer, schedule, tiny_dir, engine, hf_model, tmp_path, monkeypatch
):
    import real.rollout.collect
    from real.app.cli import main

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    argv = ["validate", "--trainer", trainer, "--schedule", schedule, "--strategy", "sara-auto",
            "--model", str(tiny_dir), "--k", "8", "--groups", "4", "--steps", "3",
            "--eval-every", "3", "--eval-problems", "8", "--no-progress"]  # fmt: skip
    try:
        assert main([*argv, "--priced-in", "tokens", "--out", str(tmp_path / "tok")]) == 0
        assert main([*argv, "--out", str(tmp_path / "roll")]) == 0
    finally:
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    tok, roll = (read_metrics(tmp_path / d / "metrics.jsonl") for d in ("tok", "roll"))
    assert tok[0]["priced_lengths"] is None  # nothing decided yet: priced in rollouts
    for r in tok[1:]:
        lp, lf = r["priced_lengths"]
        assert 0 < lp <= 16 and 0 < lf <= 16  # mean tokens of a pass / fail (max_tokens 16)
    assert all(r["priced_lengths"] is None for r in roll)  # the default: rollouts


def test_a_driver_that_tells_no_length_is_refused():
    """A collector priced in tokens whose driver never calls observe_lengths: one line naming
    priced_in at the first step's end, not a plan quietly priced in rollouts."""
    from sara_sim.collect.collectors import make_collector
    from sara_sim.core.difficulty import BetaLaw
    from sara_sim.core.errors import ParameterError
    from sara_sim.sim.wallclock_run import OutcomeSource

    src = OutcomeSource(BetaLaw(0.5, 0.5), 0, pool=100)
    col = make_collector("sara-auto", k=8, groups=4, priced_in="tokens")
    with pytest.raises(ParameterError, match="^priced_in: tokens needs each rollout's length"):
        col.collect_step(src.prompts(), src)
    told = make_collector("sara-auto", k=8, groups=4, priced_in="tokens")

    def sample(requests):  # a driver that tells them
        out = src(requests)
        for r, o in zip(requests, out, strict=True):
            told.observe_lengths(r.visit, [10 if x else 30 for x in o])
        return out

    told.collect_step(src.prompts(), sample)
    assert told.collect_step(src.prompts(), sample).lengths == (10.0, 30.0)


def test_a_replay_refuses_tokens_before_it_starts():
    from sara_sim.core.difficulty import load_history
    from sara_sim.core.errors import ParameterError
    from sara_sim.sim.replay import replay

    frame = load_history("deepscaler")
    with pytest.raises(ParameterError, match="^priced_in: a replay"):
        replay(frame, "sara-auto", range(0, 1), priced_in="tokens")
