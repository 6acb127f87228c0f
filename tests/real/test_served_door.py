"""Served models checked at the door (real/sampling/served.py) and weight pushes that fail: one real
`vllm serve` of the tiny model for the module (started and stopped by process group), a plain
`python -m http.server` as a server that is not vLLM, and the fake server of fake_vllm.py for the
one protocol path no real server shows (a served folder this machine cannot read)."""

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import time

import httpx
import pytest
import torch
from fake_vllm import FakeVLLM  # beside this file (rootdir import mode)

from real.sampling.client import ServerEngine, ServerError
from real.sampling.serve import free_port, stop_server
from real.sampling.served import PROBE, check_servers
from sara_sim.core.errors import ParameterError

PROMPTS = ["12+34=", "7*8=", "123+456="]
SEEDS = [[1, 2, 3], [40, 41, 42], [7, 8, 9]]


def _refused(capsys, want: str, *args) -> None:
    """`sara-real ARGS` exits 2 with exactly one stderr line: the error the user reads, nothing
    dumped after it."""
    from real.app.cli import main

    rc, err = main(list(args)), capsys.readouterr().err
    assert rc == 2, err[-2000:]
    assert err.splitlines() == [f"sara-real: error: {want}"], err[-2000:]


# ---------------------------------------------------------------- servers that are not vLLM


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """A plain HTTP file server: /v1/models is a 404 page at its root, an HTML page under /html
    and an OpenAI-style model list without vLLM's fields under /openai."""
    www = tmp_path_factory.mktemp("www")
    (www / "html" / "v1").mkdir(parents=True)
    (www / "html" / "v1" / "models").write_text("<html><body><h1>Welcome</h1></body></html>\n")
    (www / "openai" / "v1").mkdir(parents=True)
    card = {"id": "gpt-x", "object": "model", "owned_by": "openai"}
    (www / "openai" / "v1" / "models").write_text(json.dumps({"object": "list", "data": [card]}))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=www,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # up when its root listing answers
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, "http.server failed"
                time.sleep(0.1)
        yield url
    finally:
        stop_server(proc)


def test_a_server_that_is_not_vllm_is_one_line_naming_the_url(web, tmp_path, capsys):
    out = tmp_path / "run"
    want = f"--engine-url: {web} is not a vLLM server: GET /v1/models answered HTTP 404"
    _refused(capsys, want, "validate", "--engine-url", web, "--no-progress", "--out", str(out))
    assert not out.exists()  # refused before anything started
    audit = ["audit", "--engine-url", web, "--prompts", "3", "--k", "4", "--out", str(out)]
    _refused(capsys, want, *audit)
    with pytest.raises(ParameterError, match=r"html is not a vLLM server: .* not a model list"):
        check_servers(f"{web}/html")
    with pytest.raises(ParameterError, match=r"openai is not a vLLM server: .*no max_model_len"):
        ServerEngine(f"{web}/openai")


def test_an_empty_engine_url_element_is_an_error_not_dropped():
    for text, i in (("http://a:1,,http://b:2", 2), ("http://a:1,", 2), (",http://a:1", 1)):
        with pytest.raises(ParameterError, match=f"--engine-url: element {i} of .* is empty"):
            check_servers(text)


@pytest.mark.integration
def test_a_push_that_cannot_be_checked_is_refused_before_the_server_pauses(tiny_dir):
    """The fake serves a folder this machine cannot read: the policy's shape cannot be compared,
    so no control call reaches the server."""
    from transformers import AutoModelForCausalLM

    fake = FakeVLLM()
    try:
        eng = ServerEngine(fake.url)
        model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)
        with pytest.raises(ParameterError, match="--engine-url: cannot check the weights to push"):
            eng.push_weights(model)
        assert not fake.posts  # no /pause, nothing to undo
    finally:
        fake.close()


# ---------------------------------------------------------------- a real vLLM server


@pytest.fixture(scope="module")
def server(server_url):
    return server_url  # conftest: one server for this module


@pytest.fixture(scope="module")
def other_dir(tiny_dir, tmp_path_factory):
    """A model of another architecture: the tiny model's tokenizer, three layers instead of two."""
    from real.models.tiny import TinySettings
    from real.models.tiny_net import make_model, make_tokenizer

    out = tmp_path_factory.mktemp("other")
    s = dataclasses.replace(TinySettings.test(), layers=3)
    make_model(s).save_pretrained(out)
    make_tokenizer(s.max_len).save_pretrained(out)
    return out


def _original(tiny_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)


def _sample(eng):
    res = eng.generate(PROMPTS, [3] * len(PROMPTS), max_tokens=6, seeds=SEEDS)
    return [[(c.token_ids, c.logprobs) for c in r.completions] for r in res]


def _serving(url) -> bool:
    return httpx.get(f"{url}/is_paused").json() == {"is_paused": False}


@pytest.mark.integration
def test_a_model_of_another_architecture_is_refused_at_the_door(
    server, tiny_dir, other_dir, tmp_path, capsys
):
    out = tmp_path / "run"
    argv = ["validate", "--engine-url", server, "--model", str(other_dir), "--k", "4"]
    argv += ["--groups", "2", "--steps", "1", "--no-progress", "--out", str(out)]
    want = (
        f"--model: {other_dir} does not fit the model served at {server} ({tiny_dir}): "
        "num_hidden_layers 3 here, 2 served"
    )
    _refused(capsys, want, *argv)
    assert not out.exists()  # before any step, before the run folder
    bigger = tmp_path / "vocab"  # the same layers over a larger vocabulary
    shutil.copytree(tiny_dir, bigger)
    cfg = json.loads((bigger / "config.json").read_text())
    (bigger / "config.json").write_text(json.dumps(cfg | {"vocab_size": 120}))
    with pytest.raises(ParameterError, match="--model: .* vocab_size 120 here, 99 served"):
        ServerEngine(server, model=bigger)
    assert _serving(server)


@pytest.mark.integration
def test_a_different_tokenizer_is_refused_at_the_door(server, tiny_dir, tmp_path):
    """Same config, two characters' ids swapped: the ids the client would send mean other text."""
    swapped = tmp_path / "swapped"
    shutil.copytree(tiny_dir, swapped)
    tok = json.loads((swapped / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    vocab["1"], vocab["2"] = vocab["2"], vocab["1"]
    (swapped / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(ParameterError, match=r"--model: .*swapped's tokenizer differs") as err:
        ServerEngine(server, model=swapped)
    assert repr(PROBE) in str(err.value)
    ids = re.search(r"is (\d+) here, (\d+) served$", str(err.value)).groups()
    assert sorted(int(x) for x in ids) == sorted([vocab["1"], vocab["2"]])  # the swapped pair
    ServerEngine(server, model=tiny_dir).close()  # its own tokenizer passes


@pytest.mark.integration
def test_a_policy_that_does_not_fit_is_refused_before_the_server_pauses(
    server, tiny_dir, other_dir
):
    from transformers import AutoModelForCausalLM

    eng = ServerEngine(server, model=tiny_dir)
    eng.push_weights(_original(tiny_dir))
    before = _sample(eng)
    other = AutoModelForCausalLM.from_pretrained(other_dir, dtype=torch.float32)
    with pytest.raises(ParameterError, match="num_hidden_layers 3 here, 2 served"):
        eng.push_weights(other)
    assert _serving(server) and _sample(eng) == before
    eng.close()


@pytest.mark.integration
def test_a_failed_push_reports_the_servers_error_and_the_server_keeps_serving(server, tiny_dir):
    """A reload the door cannot foresee (a weight vLLM's model does not have) fails inside vLLM
    half-way: the error is the server's own, and the server serves the weights it held — the
    last pushed snapshot, or on a first push the folder it loaded."""
    eng = ServerEngine(server, model=tiny_dir)
    model = _original(tiny_dir)
    eng.push_weights(model)
    base = _sample(eng)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p, generator=torch.Generator().manual_seed(3)))
    eng.push_weights(model)
    pushed = _sample(eng)
    assert pushed != base
    model.model.layers[1].register_parameter("extra", torch.nn.Parameter(torch.zeros(3)))
    with pytest.raises(ServerError) as err:
        eng.push_weights(model)
    msg = str(err.value)
    assert "\n" not in msg and "<html" not in msg
    assert msg.startswith(f"vLLM server {server}: weight push failed: /collective_rpc answered ")
    assert "There is no module or parameter named 'layers.1.extra'" in msg  # vLLM's own words
    assert "the server reloaded the weights it held" in msg
    assert _serving(server) and _sample(eng) == pushed  # serving, with the weights it held
    fresh = ServerEngine(server, model=tiny_dir)  # a first push that fails: the served folder
    with pytest.raises(ServerError, match=f"reloaded the weights it held \\({tiny_dir}\\)"):
        fresh.push_weights(model)
    assert _serving(server) and _sample(fresh) == base
    eng.push_weights(_original(tiny_dir))  # and the next good push goes through
    assert _sample(eng) == base
    eng.close()
    fresh.close()
