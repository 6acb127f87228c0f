"""Round-free collection through TRL (`SaraRollout(..., schedule="stream")`): TRL's
real GRPOTrainer on the in-process vLLM engine of the test tiny model, CPU. Every group TRL trains
on is k rollouts of one prompt from one weights version; cancelled rollouts and their tokens are
counted once, in the adapter's metrics and TRL's logs; `sara-real --trainer trl --schedule stream`
runs and resumes. (Bad values of `schedule`: test_trl.py and test_real_cli.py.)"""

import os

import pytest
from test_trl import GROUPS, K, Spy, _args, _dataset, _trainer  # beside this file (rootdir import)

pytestmark = pytest.mark.integration

trl = pytest.importorskip("trl", reason="the trl extra is not installed")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _stamp_versions(sara, engine, monkeypatch):
    """Tag each rollout the adapter lands with the weights version it was sampled under (one
    per push), each step's stream engine and the groups it hands TRL; the books the test reads."""
    books = {"version": 0, "stamp": {}, "engines": [], "groups": [], "landed": []}
    push, land, open_stream, claim = (
        engine.push_weights,
        sara.land,
        sara.open_stream,
        sara.store.claim,
    )

    def pushed(model):
        push(model)
        books["version"] += 1

    def landed(finished):
        for _, c in finished:  # the sample keeps this very list: its id stays its own
            books["stamp"][id(c.token_ids)] = (c.token_ids, books["version"])
        books["landed"][-1] += sum(c.n_tokens for _, c in finished)
        return land(finished)

    def opened():
        books["engines"].append(open_stream())
        books["landed"].append(0)
        return books["engines"][-1]

    def claimed(*a, **kw):
        books["groups"].append(claim(*a, **kw))
        return books["groups"][-1]

    monkeypatch.setattr(engine, "push_weights", pushed)
    for name, f in (("land", landed), ("open_stream", opened)):
        monkeypatch.setattr(sara, name, f)
    monkeypatch.setattr(sara.store, "claim", claimed)
    return books


@pytest.mark.parametrize("strategy", ["sara", "ds"])
def test_trl_streams_groups_of_one_prompt_from_one_policy_version(
    tiny_dir, engine, hf_model, tmp_path, monkeypatch, strategy
):
    """schedule="stream" through TRL's real GRPOTrainer on the in-process engine: every group TRL
    trains on is k rollouts of one prompt from one weights version, mixed; the cancelled rollouts
    and their tokens are each step's stream engine's own counts (once), in TRL's logs too."""
    from real.trl.adapter import SaraRollout

    ds, spy = _dataset(), Spy()
    args = _args(tmp_path / "out", 2)
    sara = SaraRollout(args, ds, [spy.correct], strategy, engine=engine, schedule="stream")
    books = _stamp_versions(sara, engine, monkeypatch)
    try:
        tr = _trainer(tiny_dir, args, sara, spy, ds)
        tr.train()
    finally:
        monkeypatch.undo()
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    assert tr.state.global_step == 2 and len(books["groups"]) == 2 == len(books["engines"])
    for step, groups in enumerate(books["groups"]):
        assert len(groups) == GROUPS
        for g in groups:
            ids = [x[0] for x in g["samples"][:K]]
            versions = {books["stamp"][id(x)][1] for x in ids}
            assert len(ids) == K and len(versions) == 1  # one weights version (carried: older)
            assert versions <= set(range(1, step + 2))  # pushed before the step that sampled
            assert 0 < sum(x[3] for x in g["samples"][:K]) < K
    for rewards, names in zip(spy.batches, spy.prompts, strict=True):  # TRL's own view of its batch
        assert len(names) == GROUPS * K and all(
            len(set(names[i : i + K])) == 1 for i in range(0, GROUPS * K, K)
        )
        assert all(0 < sum(rewards[i : i + K]) < K for i in range(0, GROUPS * K, K))
    logs = [h for h in tr.state.log_history if "loss" in h]
    for h, row, st, landed in zip(
        logs, sara.step_log, books["engines"], books["landed"], strict=True
    ):
        assert row["padded"] == 0 and row["effective_groups"] == GROUPS and row["round_s"] == []
        # every token generated in the step, once: the landed rollouts' and the aborted partials
        assert row["tokens"] == st.tokens and row["cancelled"] == st.aborted
        assert row["cancelled_tokens"] == st.tokens - landed
        assert row["rollouts"] == st.finished + st.aborted  # every rollout sent, once
        assert h["sara/cancelled"] == row["cancelled"] and h["frac_reward_zero_std"] == 0.0
    assert sum(r["cancelled"] for r in sara.step_log) > 0  # the stream did abort rollouts


@pytest.mark.parametrize(
    "strategy, extra",
    [("ds", []), ("sara-mopps", ["--task-size", "12", "--priced-in", "tokens"])],
)
def test_cli_trl_schedule_stream_runs_and_resumes(
    strategy, extra, tiny_dir, engine, hf_model, tmp_path, monkeypatch
):
    """`sara-real validate --trainer trl --schedule stream`: streamed steps with their cancelled
    rollouts in the native lines; a --resume restores the adapter's state (the stream driver's;
    sara-mopps's histories, selector, queue and the lengths its plan priced in tokens learned)
    and samples what an uninterrupted run does, step for step."""
    import torch

    import real.rollout.collect
    from real.app.cli import main
    from real.io.runlog import read_metrics
    from real.trl.backends import STATE_FILE

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    argv = ["validate", "--trainer", "trl", "--schedule", "stream", "--strategy", strategy,
            "--model", str(tiny_dir), "--k", "8", "--groups", "4", "--eval-every", "3",
            "--eval-problems", "8", "--no-progress", *extra]  # fmt: skip
    try:
        assert main([*argv, "--steps", "3", "--out", str(tmp_path / "ref")]) == 0
        assert main([*argv, "--steps", "2", "--out", str(tmp_path / "t")]) == 0
        assert main([*argv, "--steps", "3", "--resume", "--out", str(tmp_path / "t")]) == 0
    finally:
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    rows, ref = (read_metrics(tmp_path / d / "metrics.jsonl") for d in ("t", "ref"))
    assert [r["step"] for r in rows] == [0, 1, 2]
    for r in rows:
        assert r["trainer"] == "trl" and r["effective_groups"] == 4 and r["round_sizes"] == []
        assert 0 <= r["cancelled_tokens"] <= r["tokens"] and r["cancelled"] <= r["rollouts"]
    keys = ("rollouts", "tokens", "cancelled", "cancelled_tokens", "abandoned")
    assert [[r[x] for x in keys] for r in rows] == [[r[x] for x in keys] for r in ref]
    if strategy == "ds":
        assert sum(r["cancelled"] for r in rows) > 0  # DS streamed aborts its surplus groups
        return
    states = []
    for d in ("ref", "t"):  # the newest checkpoint's adapter state (checkpoint-N: N updates)
        last = max((tmp_path / d / "trl").glob("checkpoint-*"), key=lambda p: int(p.name[11:]))
        states.append(torch.load(last / STATE_FILE.format(rank=0), weights_only=False))
    states = [x["collector"] for x in states]
    assert states[0]["informed"] == states[1]["informed"] and states[0]["informed"]["evidence"]
    assert states[0]["selector"]["last_state"] == states[1]["selector"]["last_state"]
    assert list(states[0]["queue"]) == list(states[1]["queue"])
    assert states[0]["step_lengths"] == states[1]["step_lengths"] is not None
