"""Shared, session-scoped fixtures for the real-model tests: one test-sized tiny model and one
in-process vLLM engine (building either costs tens of seconds on 2 cores)."""

import pytest

import real.base.env  # noqa: F401  (env vars before torch / vllm)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    from real.models.tiny import TinySettings, build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny") / "model", TinySettings.test())


@pytest.fixture(scope="session")
def engine(tiny_dir):
    from real.sampling.engine import VLLMEngine

    return VLLMEngine(tiny_dir, seed=0)


@pytest.fixture(scope="module")
def server_url(request, tiny_dir, tmp_path_factory):
    """One real vLLM server of the tiny model for the test module that asks for it (started by
    pid in its own process group, stopped with the whole group): its URL. ~1 min to start. A
    module's ``SERVER_ARGS`` dict, if any, goes to `start_server` (e.g. max_num_seqs)."""
    from real.sampling.serve import free_port, start_server, stop_server, wait_ready

    log = tmp_path_factory.mktemp("server") / "server.log"
    port = free_port()
    proc = start_server(tiny_dir, port, log=log, **getattr(request.module, "SERVER_ARGS", {}))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log=log)
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def hf_model(tiny_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_dir, dtype="float32")


@pytest.fixture(autouse=True)
def _no_log_handler_on_a_closed_stream():
    """Libraries bind logging handlers to the sys.stdout / sys.stderr of the moment they configure
    logging; under pytest that can be a capture stream, closed when its test ends, and every later
    log record then prints a 'Logging error' traceback into whatever test is running. Drop such
    handlers before each test (an artefact of one process running many captured tests: a user's
    process keeps its streams)."""
    import logging

    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for lg in loggers:
        for h in list(getattr(lg, "handlers", ())):
            if getattr(getattr(h, "stream", None), "closed", False):
                lg.removeHandler(h)
