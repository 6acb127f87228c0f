"""Round-free collection on the real in-process vLLM engine: the request-level stream
(`VLLMEngine.open_stream`: seeded rollouts — single or a group in one request — equal `generate`'s,
aborted ones (a group whole) stop and are counted once, the round path refuses while a stream runs),
the streamed collection step (groups of k rollouts of one prompt from one policy version; cancelled
rollouts in the step's counts; the same per-prompt decisions as rounds given the same per-rollout
seeds), and the flags (their bad values: tests/real/test_real_cli.py)."""

import pytest

from real.app.cli import build_parser, run_config
from real.rollout.collect import RolloutDriver
from real.rollout.streamed import rollout_seed
from real.tasks import PromptSource, make_task
from sara_sim.collect.collectors import make_collector
from sara_sim.core.errors import ParameterError

PROMPTS = ["12+7=", "3*4=", "99-5=", "8+8="]
LONG = "12345678"  # hot (temperature 2), some rollouts run on for a while (below)


@pytest.mark.integration
def test_a_seeded_rollout_streams_what_generate_samples(engine):
    seeds = [[11], [12], [13], [14]]
    ref = engine.generate(PROMPTS, [1] * 4, max_tokens=24, seeds=seeds)
    with engine.open_stream(24) as st:
        ids = [st.add(p, seed=s[0]) for p, s in zip(PROMPTS, seeds)]
        got = {}
        while st.in_flight:
            got |= {f.rid: f for f in st.poll()}
        assert st.poll() == [] and st.finished == 4 and st.aborted == 0
    for i, r in zip(ids, ref):
        a, b = got[i].completion, r.completions[0]
        assert (a.token_ids, a.logprobs, a.text) == (b.token_ids, b.logprobs, b.text)
        assert got[i].prompt_token_ids == r.prompt_token_ids
    assert st.tokens == sum(len(f.completion.token_ids) for f in got.values())


@pytest.mark.integration
def test_a_token_id_prompt_streams_what_its_text_streams(engine):
    """StreamEngine.add takes a prompt's token ids (TRL's templated prompts) as well as text:
    with the same seed, the ids of a text sample what the text samples."""
    ids = [engine.tokenizer(p)["input_ids"] for p in PROMPTS]
    with engine.open_stream(24) as st:
        by_text = {st.add(p, seed=21 + i): i for i, p in enumerate(PROMPTS)}
        by_ids = {st.add(x, seed=21 + i): i for i, x in enumerate(ids)}
        got = {}
        while st.in_flight:
            got |= {f.rid: f for f in st.poll()}
        for bad in ([], [1.5, 2], [-1], [True]):
            with pytest.raises(ValueError, match="token-id prompt"):
                st.add(bad)
        for bad in (7, b"12+7="):
            with pytest.raises(TypeError, match="text or a sequence of token ids"):
                st.add(bad)
    assert st.finished == 8 and st.in_flight == 0
    for (a, i), (b, j) in zip(by_text.items(), by_ids.items(), strict=True):
        assert i == j and got[a].prompt_token_ids == got[b].prompt_token_ids == ids[i]
        x, y = got[a].completion, got[b].completion
        assert (x.token_ids, x.logprobs, x.text) == (y.token_ids, y.logprobs, y.text)


def _counted_steps(core, monkeypatch):
    """A one-item list counting the engine's iterations (``LLMEngine.step`` calls) from now."""
    count, step = [0], core.step

    def counted():
        count[0] += 1
        return step()

    monkeypatch.setattr(core, "step", counted)
    return count


@pytest.mark.integration
def test_an_aborted_rollout_stops_and_its_tokens_count_once(engine, monkeypatch):
    """An aborted rollout's tokens are what the engine made, though its outputs come only at the
    first token and the end: 8 rollouts start together (prefill and first token in iteration 1,
    then one token per iteration), so after j iterations each one still running made j."""
    core = engine.llm.llm_engine
    # a hot temperature and a digit string keep the tiny model from its end-of-answer token for a
    # while: these seeds' rollouts make 1, 2, 2, 9, 13, 20, 74 and 96 tokens
    with engine.open_stream(96, temperature=2.0) as st:
        ids = [st.add(LONG, seed=100 + i) for i in range(8)]
        steps, finished = _counted_steps(core, monkeypatch), {}
        while steps[0] < 4 and st.in_flight:  # the first to finish; the rest run on
            finished |= {f.rid: f for f in st.poll()}
        running = sorted(st.live)
        assert len(running) >= 2 and steps[0] >= 4, "nothing ran on long enough to abort"
        assert all(len(st.live[r].token_ids) == 1 for r in running)  # the first token only
        partial = {r: steps[0] for r in running}  # what each made: one token per iteration
        with pytest.raises(RuntimeError, match="in flight"):
            engine.generate(["1+1="], [1], max_tokens=4)  # would take the stream's outputs
        made = st.abort(running)
        assert made == sum(partial.values()) and core.get_num_unfinished_requests() == 0
        with pytest.raises(ValueError):
            st.abort(running[:1])  # aborted already: never counted twice
        assert st.poll() == [] and core.step() == []  # it stopped: nothing more comes back
        done = sum(len(f.completion.token_ids) for f in finished.values())
        assert st.tokens == done + made and st.aborted == len(running)
        assert st.finished + st.aborted == len(ids)
    assert engine.greedy(["1+1="], 4)  # the engine is free again once nothing is in flight


def same_as_round(got, groups, singles, ref) -> None:
    """Each group's rollout i and the single add seeded as it are the round's rollout i (tokens,
    text, finish; logprobs within 1e-5; the prompt as tokenised). Also used by the served tests."""
    for g, one, r in zip(groups, singles, ref, strict=True):
        for i, want in enumerate(r.completions):
            for rid in (g[i], one[i]):
                c, fields = got[rid].completion, (want.token_ids, want.text, want.finish_reason)
                assert (c.token_ids, c.text, c.finish_reason) == fields
                assert c.logprobs == pytest.approx(want.logprobs, abs=1e-5)
                assert got[rid].prompt_token_ids == r.prompt_token_ids


@pytest.mark.integration
def test_a_group_streams_what_generate_and_single_adds_sample(engine):
    """add_group(p, s, n) is ONE engine request with n samples (vLLM's children seeded s + i):
    each of its rollouts samples what `generate` and a single add seeded s + i sample."""
    core, n = engine.llm.llm_engine, 4
    seeds = [[40 + 10 * j + i for i in range(n)] for j in range(len(PROMPTS))]
    ref = engine.generate(PROMPTS, [n] * len(PROMPTS), max_tokens=24, seeds=seeds)
    with engine.open_stream(24) as st:
        groups = [st.add_group(p, s[0], n) for p, s in zip(PROMPTS, seeds, strict=True)]
        assert core.get_num_unfinished_requests() == len(PROMPTS) * n  # n children each ...
        assert len(core.output_processor.parent_requests) == len(PROMPTS)  # ... of one request
        singles = [[st.add(p, sd) for sd in s] for p, s in zip(PROMPTS, seeds, strict=True)]
        got = {}
        while st.in_flight:
            got |= {f.rid: f for f in st.poll()}
    assert st.finished == 2 * len(PROMPTS) * n and st.aborted == 0
    same_as_round(got, groups, singles, ref)
    assert st.tokens == 2 * sum(c.n_tokens for r in ref for c in r.completions)


@pytest.mark.integration
def test_a_part_finished_group_is_aborted_whole_and_stops(engine, monkeypatch):
    """A group whose first rollouts have finished: naming only some of the rest is a
    ValueError; aborting all of them aborts the request's children still running (by its id),
    each counted once with what it had made (the engine's count: j tokens after j iterations)."""
    core = engine.llm.llm_engine
    with engine.open_stream(96, temperature=2.0) as st:  # hot: some run on for a while
        ids = st.add_group(LONG, 100, 8)  # children seeded 100 + i: as the single adds above
        steps, finished = _counted_steps(core, monkeypatch), {}
        while steps[0] < 4 and st.in_flight:  # the first to finish; the rest run on
            finished |= {f.rid: f for f in st.poll()}
        running = sorted(st.live)
        assert len(running) >= 2 and finished and steps[0] >= 4, "the group did not finish in part"
        with pytest.raises(ValueError, match="part of a group with 1 more in flight"):
            st.abort(running[1:])
        with pytest.raises(ValueError, match="not in flight"):
            st.abort([*running, next(iter(finished))])
        assert all(len(st.live[r].token_ids) == 1 for r in running)  # the first token only
        partial = {r: steps[0] for r in running}  # what each made: one token per iteration
        made = st.abort(running)
        assert made == sum(partial.values()) and core.get_num_unfinished_requests() == 0
        assert not core.output_processor.parent_requests  # the request is gone whole
        assert st.poll() == [] and core.step() == []  # it stopped: nothing more comes back
        done = sum(len(f.completion.token_ids) for f in finished.values())
        assert st.tokens == done + made and st.aborted == len(running)
        assert st.finished + st.aborted == len(ids) and st.in_flight == 0
    assert engine.greedy(["1+1="], 4)  # the engine is free again


def _arith(n=512):
    return make_task("arithmetic", seed=0, size=n)


def _stamped(rc, version):
    """Tag every stored sample with the policy version (`version[0]`) it was sampled under."""
    live, stamp = rc.driver.live, {}
    poll = live.poll

    def stamped_poll():
        out = poll()
        for visit, *_ in out:  # a poll may return several rollouts of one visit
            for s in rc.store.entries[visit]["samples"]:
                stamp.setdefault(id(s), (s, version[0]))  # the sample kept: its id stays its own
        return out

    live.poll = stamped_poll
    return stamp


@pytest.mark.integration
@pytest.mark.parametrize("name", ["sara", "ds"])
def test_streamed_groups_are_k_rollouts_of_one_prompt_from_one_policy_version(engine, name):
    task, k = _arith(), 4
    col = make_collector(name, k=k, groups=3, seed=0, schedule="stream", tau_low=0.3)
    rc = RolloutDriver(engine, task, col, k, seed=5, max_tokens=16, schedule="stream")
    version, prompts, seen = [0], PromptSource(task, seed=0), set()
    stamp = _stamped(rc, version)
    for step in range(4):
        version[0] = step  # the weights a real run pushes between steps
        batch = rc.collect(prompts)
        res = batch.result
        assert len(batch.groups) == 3 and res.n_effective == 3
        assert res.rounds > 0 and batch.round_s == []  # rounds: the engine waits
        for g in batch.groups:
            assert len(g.samples) == k and 0 < sum(s.reward for s in g.samples) < k
            assert all(stamp[id(s)][0] is s for s in g.samples)
            assert len({stamp[id(s)][1] for s in g.samples}) == 1  # one policy version
        visits = rc.driver.group_visits
        assert len(set(visits)) == 3 and not seen & set(visits)
        seen |= set(visits)
        # every rollout sent finished or was cancelled, and its tokens count once
        assert engine.busy() is False and batch.cancelled <= res.rollouts
        assert batch.tokens >= batch.cancelled_tokens
        assert not rc.store.entries.keys() - rc.driver.held_visits()


@pytest.mark.integration
def test_stream_and_rounds_decide_every_prompt_alike_with_the_same_seeds(engine):
    """max_inflight 0: a prompt's decision depends on its own rollouts only; with rollout i of
    visit v seeded rollout_seed(seed, v) + i in both schedules, both see the same completions."""
    task, k, seed = _arith(), 4, 9
    got = []
    for schedule in ("rounds", "stream"):
        decided = {}
        col = make_collector("sara", k=k, groups=3, seed=0, tau_low=0.3, schedule=schedule)
        col.observer = lambda d, out=decided: out.setdefault(d.prompt_id, (d.decision, d.n, d.s))
        rc = RolloutDriver(engine, task, col, k, seed=seed, max_tokens=16, schedule=schedule)
        if schedule == "rounds":
            rc._generate = _visit_seeded(rc, seed)
        prompts = PromptSource(task, seed=0)
        for _ in range(4):
            rc.collect(prompts)
        got.append(decided)
    both = got[0].keys() & got[1].keys()
    assert len(both) >= 12 and all(got[0][p] == got[1][p] for p in both)


def _visit_seeded(rc, seed):
    """rc._generate with the stream's per-visit seeds (a round's requests name their visits
    through the store's entries, in request order)."""
    sent, generate = {}, rc._generate

    def gen(entries, ns, bases):
        visits = {id(e): v for v, e in rc.store.entries.items()}
        out = []
        for e, n in zip(entries, ns):
            v = visits[id(e)]
            j = sent.get(v, 0)
            sent[v] = j + n
            out.append(rollout_seed(seed, v) + j)
        return generate(entries, ns, out)

    return gen


def test_schedule_flags_reach_the_collector():
    from real.app.run import check_config

    a = build_parser().parse_args(
        ["validate", "--out", "/tmp/unused", "--schedule", "stream", "--max-inflight", "2"]
    )
    cfg = run_config(a)
    col = check_config(cfg).collector
    assert cfg.knobs.schedule == "stream" and col.rc.max_inflight == 2
    a = build_parser().parse_args(["validate", "--out", "/tmp/unused", "--overprovision", "1.5"])
    assert check_config(run_config(a)).collector.rc.overprovision == 1.5
    a = build_parser().parse_args(
        ["validate", "--out", "/tmp/unused", "--schedule", "stream", "--overprovision", "2"]
    )
    assert check_config(run_config(a)).collector.rc.overprovision == 2.0  # the stream's fill


STREAMED_RUNS = {  # strategy: its flags (the history ones on a finite pool, revisited)
    "sara": [],
    "sara-history": ["--task-size", "10", "--priced-in", "tokens"],
    "sara-mopps": ["--task-size", "10"],
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(STREAMED_RUNS))
def test_sara_real_validate_streams_end_to_end_and_resumes(
    name, tiny_dir, engine, hf_model, tmp_path, monkeypatch, capsys
):
    """`sara-real validate --schedule stream` at toy size: steps with cancelled counts in their
    lines; a resumed run samples what an uninterrupted one does — per-prompt histories, the
    selector and the lengths a plan priced in tokens learned included (the checkpoints' collector
    states are equal); a changed schedule is refused."""
    import json

    import torch

    import real.rollout.collect
    from real.app.cli import main
    from real.io.runlog import read_metrics

    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    argv = ["validate", "--strategy", name, "--schedule", "stream", "--model", str(tiny_dir),
            "--k", "4", "--groups", "3", "--eval-every", "3", "--eval-problems", "8",
            "--eval-samples", "1", "--no-progress", "--seed", "4"]  # fmt: skip
    argv += STREAMED_RUNS[name]
    try:
        assert main([*argv, "--steps", "3", "--out", str(tmp_path / "ref")]) == 0
        assert main([*argv, "--steps", "2", "--out", str(tmp_path / "cut")]) == 0
        capsys.readouterr()
        assert (
            main(
                [
                    *argv,
                    *"--steps 3 --out".split(),
                    str(tmp_path / "cut"),
                    *"--schedule rounds --resume".split(),
                ]
            )
            == 2
        )
        assert "schedule" in capsys.readouterr().err
        assert main([*argv, "--steps", "3", "--out", str(tmp_path / "cut"), "--resume"]) == 0
        line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert line["steps"] == 3 and line["effective_fraction"] == 1.0
    finally:
        engine.push_weights(hf_model)  # later tests expect the untrained weights
    ref, cut = (read_metrics(tmp_path / d / "metrics.jsonl") for d in ("ref", "cut"))
    assert [r["step"] for r in cut] == [0, 1, 2]
    keys = ("rollouts", "tokens", "cancelled", "cancelled_tokens", "rounds", "reward_mean")
    assert [[r[x] for x in keys] for r in cut] == [[r[x] for x in keys] for r in ref]
    for r in ref:
        assert r["effective_groups"] == 3 and r["round_sizes"] == []
        assert r["tokens"] >= r["cancelled_tokens"] and r["rollouts"] >= r["cancelled"]
    states = [
        torch.load(tmp_path / d / "checkpoint.pt", weights_only=False)["collector"]["collector"]
        for d in ("ref", "cut")
    ]
    assert _comparable(states[0]) == _comparable(states[1])
    if name != "sara":  # it learned per prompt, and it was checkpointed
        assert states[0]["informed"]["evidence"]
    if "tokens" in STREAMED_RUNS[name]:
        assert states[0]["lengths_window"] and states[0]["step_lengths"] is not None


def _comparable(x):
    """A checkpointed state as plain nested lists and dicts (arrays, deques, objects)."""
    if isinstance(x, dict):
        return {k: _comparable(v) for k, v in x.items()}
    if isinstance(x, list | tuple) or type(x).__name__ == "deque":
        return [_comparable(v) for v in x]
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return {type(x).__name__: _comparable(vars(x))}
    return x


def test_stream_benchmark_refuses_bad_arguments_in_one_line(tmp_path, script, capsys):
    """benchmarks/stream_real.py: exit 2 and one line naming the flag, before any engine starts."""
    main = script("benchmarks/stream_real.py").main
    cases = [
        (["--model", str(tmp_path / "none")], "--model: must be a model directory"),
        (["--model", str(tmp_path), "--k", "1"], "--k: must be an integer in [2, 1024], got 1"),
        (["--model", str(tmp_path), "--task", "nope"], "--task"),
        (["--model", str(tmp_path), "--serve", "--engine-url", "http://x:1"], "--serve"),
        (["--model", str(tmp_path), "--out", str(tmp_path / "o.json")], "--out: "),
        (["--model", str(tmp_path), "--strategies", "sara stream,nope"], "--strategies: labels"),
        (["--model", str(tmp_path), "--strategies", ","], "--strategies: labels"),
        # history learns from revisits: a finite pool, on a task that takes one
        (["--model", str(tmp_path), "--strategies", "tokens"], "--task-size: sara-history stream,"),
        (["--model", str(tmp_path), "--task-size", "0"], "--task-size: must be an integer in [1,"),
        (["--model", str(tmp_path), "--task", "math", "--task-size", "8"], "--task-size: tasks"),
    ]
    (tmp_path / "o.json").write_text("{}")  # a result already written: kept without --overwrite
    for argv, want in cases:
        rc, r = main(argv), capsys.readouterr()
        assert rc == 2 and r.out == "", (argv, r.out, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and want in lines[0], (argv, r.err)


def test_stream_benchmark_labels_presets_and_rows(script):
    """benchmarks/stream_real.py's --strategies: the default is every STRATEGIES row, the preset
    "tokens" the token goal's rows (DS streamed, the reference, among them), labels of either
    list in ROWS' order, DS by rounds always first; each row prices its plan as its label says."""
    bench = script("benchmarks/stream_real.py")
    assert bench.chosen(None) == bench.STRATEGIES
    tokens = [s[0] for s in bench.chosen("tokens")]
    assert tokens[0] == "ds rounds" and "ds stream" in tokens and "sara-auto stream" in tokens
    assert set(tokens) == {"ds rounds", *bench.PRESETS["tokens"]}
    assert set(tokens) >= {"sara-history stream", "sara-history stream tokens"}
    picked = bench.chosen(" sara-history stream tokens,sara stream ")
    assert [s[0] for s in picked] == ["ds rounds", "sara stream", "sara-history stream tokens"]
    for label, name, schedule, *rest in bench.ROWS:
        assert label.split()[:2] == [name, schedule], label
        priced = rest[3] if len(rest) > 3 else "rollouts"
        assert (priced == "tokens") == label.endswith(" tokens"), label
    with pytest.raises(ParameterError, match="--strategies: labels from .*tokens"):
        bench.chosen("tokens,nope")


def test_stream_benchmark_prints_each_strategy_against_ds_streamed(script, capsys):
    """The token goal's table from a small synthetic run: ratios to DS streamed with their
    interval, the goal met only when the whole interval is at or below 0.70 and every group
    returned is effective, '-' where undefined."""
    bench = script("benchmarks/stream_real.py")

    def row(roll, tok, eff=4, groups=None):
        n = len(roll)
        return {
            "step_rollouts": roll, "step_tokens": tok, "step_eff": [eff] * n,
            "rollouts": sum(roll), "tokens": sum(tok), "eff": eff * n,
            "groups": eff * n if groups is None else groups,
        }  # fmt: skip

    roll, tok = [50, 60, 55, 45], [1500, 1900, 1600, 1400]
    rows = {
        "ds rounds": row([64] * 4, [2000] * 4),
        "ds stream": row(roll, tok),
        "good": row([0.8 * r for r in roll], [0.6 * t for t in tok]),
        "wasteful": row([0.8 * r for r in roll], [0.6 * t for t in tok], groups=32),
        "near": row([r for r in roll], [0.7 * t + d for t, d in zip(tok, (30, -30, 40, -40))]),
        "empty": row([8, 8], [100, 100], eff=0, groups=0),
    }
    bench.streamed_table(rows)
    out = capsys.readouterr().out.strip().splitlines()
    assert "4 steps" in out[0] and "tokens <= 0.70x" in out[0] and len(out) == 2 + len(rows)
    got = {line[:28].strip(): line[28:].split() for line in out[2:]}
    assert got["ds stream"][-7:] == ["1.00", "[1.00,", "1.00]", "1.00", "[1.00,", "1.00]", "-"]
    assert got["good"][:3] == ["10.50", "240.0", "1.00"]  # 168 / 16, 3840 / 16
    assert got["good"][-4:] == ["0.60", "[0.60,", "0.60]", "met"]
    assert got["wasteful"][2] == "0.50" and got["wasteful"][-1] == "MISSED"  # not all effective
    assert got["near"][-1] == "undecided" and got["ds rounds"][-1] == "MISSED"
    assert got["empty"] == ["-", "-", "-", "-", "-", "MISSED"]
    bench.streamed_table({k: v for k, v in rows.items() if k != "ds stream"})
    assert capsys.readouterr().out == ""  # no DS streamed in the run: no such table


def test_step_cost_benchmark_refuses_bad_arguments_in_one_line(tmp_path, script, capsys):
    """benchmarks/investigations/stream_fill/step_cost.py: exit 2 and one line naming the flag,
    before any engine starts."""
    main = script("benchmarks/investigations/stream_fill/step_cost.py").main
    model = ["--model", str(tmp_path)]
    cases = [
        (["--model", str(tmp_path / "none")], "--model"),
        ([*model, "--batches", "0,16"], "--batches"),
        ([*model, "--batches", "a"], "--batches"),
        ([*model, "--tokens", "1"], "--tokens"),
        ([*model, "--repeats", "0"], "--repeats"),
        ([*model, "--task", "nope"], "--task"),
    ]
    for argv, want in cases:
        rc, r = main(argv), capsys.readouterr()
        assert rc == 2 and r.out == "", (argv, r.out, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and want in lines[0], (argv, r.err)


@pytest.mark.integration
def test_stream_benchmark_measures_every_strategy_at_toy_size(engine, capsys):
    """benchmarks/stream_real.py's measurement (`measure`, its table) and stream_predict's
    prediction on the run's own laws, end to end at toy size on the session engine: every
    strategy commits its groups, DS by rounds is the reference (ratio 1), undefined is '-'."""
    import argparse
    import runpy
    from pathlib import Path

    from sara_sim.sim import stream_predict

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    real_bench = runpy.run_path(str(bench / "stream_real.py"), run_name="stream_real")
    args = argparse.Namespace(k=4, groups=2, steps=2, warmup=0, seed=0, max_tokens=16)
    core = engine.llm.llm_engine
    run = real_bench["measure"](engine, _arith(), args)
    assert not {"step", "add_request"} & set(vars(core))  # the counters are taken off again
    rows = run["rows"]
    assert list(rows) == [label for label, *_ in real_bench["STRATEGIES"]]
    for label, t in rows.items():
        assert 2 <= t["eff"] <= 4 and t["groups"] == t["eff"], (label, t)  # all effective
        assert t["rollouts"] >= t["eff"] * 4 and t["tokens"] >= t["rollouts"], label
        assert t["cancelled"] == 0 or t["schedule"] == "stream", label
        # a rollout of up to 16 tokens takes >= 1 engine iteration per token it made, and a step
        # never makes more tokens than (its iterations) x (the engine's slots)
        assert t["iterations"] >= t["tokens"] / t["rollouts"], label
        assert t["tokens"] <= t["iterations"] * core.vllm_config.scheduler_config.max_num_seqs
        assert len(t["step_wall"]) == len(t["step_eff"]) == 2, label
        # engine requests: a round sends each seeded rollout alone, a stream a visit's planned
        # rollouts as one request (DS: the whole group)
        if t["schedule"] == "rounds":
            assert t["requests"] == t["rollouts"], label
        elif t["strategy"] == "ds":
            assert t["requests"] * 4 == t["rollouts"], label
        else:
            assert 0 < t["requests"] < t["rollouts"], label
        assert "api_cpu" not in t  # the server's CPU: --serve only
    assert (
        rows["sara stream eager"]["max_inflight"] == 4 and rows["sara stream"]["max_inflight"] == 0
    )
    one = real_bench["measure"](
        engine,
        _arith(),
        argparse.Namespace(**{**vars(args), "steps": 1, "strategies": "sara stream"}),
    )
    assert list(one["rows"]) == ["ds rounds", "sara stream"]  # DS by rounds: always the reference
    # the token goal's rows: history on the task's finite pool (ids epoch * size + index), its
    # plan priced in tokens, per-step counts that add up, against DS streamed
    hist = real_bench["measure"](
        engine,
        _arith(8),
        argparse.Namespace(**{**vars(args), "strategies": "sara-history stream tokens,ds stream"}),
    )
    h = hist["rows"]
    assert list(h) == ["ds rounds", "ds stream", "sara-history stream tokens"]
    t = h["sara-history stream tokens"]
    assert (t["strategy"], t["priced_in"], h["ds stream"]["priced_in"]) == (
        "sara-history",
        "tokens",
        "rollouts",
    )
    for row in h.values():
        assert sum(row["step_tokens"]) == row["tokens"] > 0
        assert sum(row["step_rollouts"]) == row["rollouts"] and len(row["step_rollouts"]) == 2
        assert row["prompts_drawn"] >= row["eff"] == row["groups"]  # a draw, at most a group
    got = real_bench["against_streamed"](h)
    assert got["ds stream"]["tokens"][0] == 1.0
    assert got["sara-history stream tokens"]["tokens"] is not None
    ds = rows["ds rounds"]
    assert real_bench["ratio"](ds, ds, "rollouts") == 1.0
    assert len(run["law"]["lengths"]) == ds["rollouts"] and run["law"]["prompts"]
    real_bench["table"](rows)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + len(rows) and out[1].split()[:2] == ["ds", "rounds"]
    real_bench["books_table"](rows)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "" and len(out) == 2 + len(rows), out
    assert out[2].split()[:4] == ["ds", "rounds", out[2].split()[2], "1.00"]  # 1 rollout/request
    meta = {"k": 4, "groups": 2, "steps": 1, "max_num_seqs": 256}
    pred = stream_predict.predict(meta, run, seeds=1)
    assert set(pred) == set(rows) and all(p["wall"] > 0 for p in pred.values())
    err = stream_predict.errors(rows, pred)
    assert err["ds rounds"] == (1.0, 1.0, 0.0)


@pytest.mark.integration
def test_step_cost_benchmark_measures_each_batch_at_toy_size(engine, capsys, script):
    """benchmarks/investigations/stream_fill/step_cost.py's measurement end to end on the session
    engine: every batch size gets a row, each rollout runs exactly --tokens tokens (one prefill step
    then the decode steps), the largest batch is the reference (ratio 1.00), and the engine is left
    idle."""
    bench = script("benchmarks/investigations/stream_fill/step_cost.py")
    core = engine.llm.llm_engine
    first, decode, total = bench.run_batch(core, ["1+2=", "3+4="], 4, "toy-steps")
    assert len(decode) >= 3 and first > 0 and total >= first + sum(decode)  # 4 tokens: 1 + 3
    seqs, rows = bench.measure(engine, make_task("reasoning", seed=0), [2, 4], 3, 1)
    assert seqs == core.vllm_config.scheduler_config.max_num_seqs and sorted(rows) == [2, 4]
    assert all(f > 0 and d > 0 and t >= f for f, d, t in rows.values())
    assert not core.has_unfinished_requests()
    bench.table(seqs, rows, 3)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[2].split()[0] == "4" and out[2].split()[-1] == "1.00"
