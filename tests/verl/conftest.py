"""verl's tests run in verl's own environment (`bash scripts/setup.sh --verl`: .venv-verl), with
the tiny model served by a real vLLM server of the project's main environment (.venv, or the
python named by SARA_MAIN_PYTHON), started and stopped here by pid; the two talk over 127.0.0.1."""

import sys

import pytest

from real.verl.toy import main_server, main_tiny


@pytest.fixture(scope="session")
def tiny_dir():
    """The test-size tiny model, built (or found in the project cache) by the main environment."""
    return main_tiny("--test-size")


@pytest.fixture(scope="session")
def server_url(tiny_dir, tmp_path_factory):
    """One real vLLM server of the tiny model (main environment), stopped with its process group."""
    from real.sampling.serve import free_port, stop_server, wait_ready

    log = tmp_path_factory.mktemp("server") / "server.log"
    port = free_port()
    proc = main_server(tiny_dir, port, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log=log)
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def ray_session():
    """A local Ray (and TransferQueue, once a trainer starts it), shut down after the test."""
    from real.verl import toy

    toy.start_ray()
    try:
        yield
    finally:
        toy.stop_ray()


@pytest.fixture
def dataset(tmp_path):
    from real.verl import toy

    return toy.write_dataset(tmp_path / "train.parquet", 64)


sys.dont_write_bytecode = True
